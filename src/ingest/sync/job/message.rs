//! What the sync function is told, one SQS message at a time: an S3 event notification
//! (`ObjectCreated:*`, `ObjectRemoved:*`, S3's `s3:TestEvent`), a document of a full sync's
//! fan-out, a full sync to start, or the debounced publish. Parsed once into [`SyncMessage`].
use serde::{Deserialize, Serialize};

/// One change to one object of the source bucket.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct ObjectChange {
    /// The object's key (decoded).
    pub key: String,
    /// Created (or overwritten) or removed.
    pub kind: ChangeKind,
    /// What identifies this write: the version id when the bucket is versioned, else the
    /// ETag; a change already recorded with it is a duplicate.
    pub version: String,
    /// S3's ordering of events on one key (hex); empty when not known (a fan-out message).
    pub sequencer: String,
}

/// Created or removed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum ChangeKind {
    /// `ObjectCreated:*`.
    Created,
    /// `ObjectRemoved:*` (a delete, or a delete marker).
    Removed,
}

/// A message to the sync function.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum SyncMessage {
    /// Object changes (an S3 notification may hold several records).
    Changes(Vec<ObjectChange>),
    /// List the source and fan its changed documents out over the queue.
    FullSync,
    /// Publish what changed, single-flight.
    Publish,
    /// Nothing to do (S3's test event).
    Ignore,
}

/// The bodies this crate sends itself.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum OwnMessage {
    Document(ObjectChange),
    FullSync {},
    Publish {},
}

/// Why a body is not a sync message (poison).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not a sync message: {0}")]
pub(crate) struct NotASyncMessage(pub String);

impl SyncMessage {
    /// Parses an SQS message body.
    pub(crate) fn parse(body: &str) -> Result<Self, NotASyncMessage> {
        if let Ok(own) = serde_json::from_str::<OwnMessage>(body) {
            return Ok(match own {
                OwnMessage::Document(change) => Self::Changes(vec![change]),
                OwnMessage::FullSync {} => Self::FullSync,
                OwnMessage::Publish {} => Self::Publish,
            });
        }
        let event: S3Notification =
            serde_json::from_str(body).map_err(|e| NotASyncMessage(e.to_string()))?;
        if event.event.as_deref() == Some("s3:TestEvent") {
            return Ok(Self::Ignore);
        }
        let records = event
            .records
            .ok_or_else(|| NotASyncMessage("no Records".into()))?;
        let mut changes = Vec::new();
        for r in records {
            let kind = if r.event_name.starts_with("ObjectCreated:") {
                ChangeKind::Created
            } else if r.event_name.starts_with("ObjectRemoved:") {
                ChangeKind::Removed
            } else {
                continue;
            };
            let object = r.s3.object;
            let version = object
                .version_id
                .filter(|v| !v.is_empty() && v != "null")
                .or(object.e_tag)
                .unwrap_or_else(|| {
                    format!("removed:{}", object.sequencer.clone().unwrap_or_default())
                });
            changes.push(ObjectChange {
                key: decode_key(&object.key),
                kind,
                version,
                sequencer: object.sequencer.unwrap_or_default(),
            });
        }
        Ok(Self::Changes(changes))
    }

    /// The body of a debounced publish.
    pub(crate) fn publish_body() -> String {
        serde_json::to_string(&OwnMessage::Publish {}).expect("serializes")
    }

    /// The body of one fanned-out document.
    pub(crate) fn document_body(change: ObjectChange) -> String {
        serde_json::to_string(&OwnMessage::Document(change)).expect("serializes")
    }
}

/// Keys in S3 notifications are URL-encoded, spaces as `+`.
fn decode_key(key: &str) -> String {
    let spaced = key.replace('+', " ");
    percent_encoding::percent_decode_str(&spaced)
        .decode_utf8_lossy()
        .into_owned()
}

/// Whether sequencer `a` is later than `b` (hex strings of any length; empty: unknown).
pub(crate) fn later(a: &str, b: &str) -> bool {
    if a.is_empty() || b.is_empty() {
        return false;
    }
    let width = a.len().max(b.len());
    format!("{a:0>width$}") > format!("{b:0>width$}")
}

#[derive(Deserialize)]
struct S3Notification {
    #[serde(rename = "Records")]
    records: Option<Vec<S3Record>>,
    #[serde(rename = "Event")]
    event: Option<String>,
}

#[derive(Deserialize)]
struct S3Record {
    #[serde(rename = "eventName")]
    event_name: String,
    s3: S3Entity,
}

#[derive(Deserialize)]
struct S3Entity {
    object: S3Object,
}

#[derive(Deserialize)]
struct S3Object {
    key: String,
    #[serde(rename = "eTag")]
    e_tag: Option<String>,
    #[serde(rename = "versionId")]
    version_id: Option<String>,
    sequencer: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn real_s3_events_parse_into_typed_changes() {
        let created = SyncMessage::parse(include_str!("../../../../events/s3-object-created.json"));
        assert_eq!(
            created,
            Ok(SyncMessage::Changes(vec![ObjectChange {
                key: "docs/durian care/canker.md".into(),
                kind: ChangeKind::Created,
                version: "d41d8cd98f00b204e9800998ecf8427e".into(),
                sequencer: "0055AED6DCD90281E5".into(),
            }]))
        );
        let removed = SyncMessage::parse(include_str!("../../../../events/s3-object-removed.json"));
        let Ok(SyncMessage::Changes(removed)) = removed else {
            panic!("{removed:?}")
        };
        assert_eq!(removed[0].kind, ChangeKind::Removed);
        assert_eq!(removed[0].key, "docs/old.md");
        assert_eq!(
            SyncMessage::parse(include_str!("../../../../events/s3-test-event.json")),
            Ok(SyncMessage::Ignore)
        );
        assert_eq!(
            SyncMessage::parse(&SyncMessage::publish_body()),
            Ok(SyncMessage::Publish)
        );
        assert!(SyncMessage::parse("{\"nope\":1}").is_err());
        assert!(later("0055AED6DCD90281E6", "55AED6DCD90281E5"));
        assert!(!later("", "01") && !later("01", "01"));
    }
}
