//! Every shape of key the checkpoint stores hold (DynamoDB's `pk`, the memory map's key, the
//! file store's file name): one type builds them all and reads them back, so no two kinds of
//! item can ever share a key. The strings are a contract with stored data: never change them.

use std::fmt;

/// A key of the checkpoint store: a kind and an id, written `kind#id`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StoreKey<'a> {
    /// A run's checkpoint: `run#<run id>`.
    Run(&'a str),
    /// A caller's idempotency key: `idem#<hex sha256 of the caller digest and the key>`.
    Idempotency(&'a str),
    /// A caller's active-run slots: `active#<caller digest>`.
    ActiveRuns(&'a str),
    /// A cached model reply: `cache#<hex sha256 of the request>`.
    Cache(&'a str),
    /// A conversation thread's head: `thread#<caller digest>#<thread id>`.
    Thread(&'a str),
    /// One turn of a thread in the local stores: `turn#<caller digest>#<thread id>#<turn>`
    /// (DynamoDB keeps turns under the thread's own `pk` instead).
    ThreadTurn(&'a str),
    /// The claim on a run's completion event: `finished#<run id>`.
    Finished(&'a str),
    /// A caller's request counter: `rate#<caller digest>` (one per caller), or on DynamoDB
    /// `rate#<caller digest>#<minute>` (one per caller and window).
    Rate(&'a str),
}

impl<'a> StoreKey<'a> {
    /// The key's kind, up to and including the `#`.
    fn prefix(self) -> &'static str {
        match self {
            StoreKey::Run(_) => "run#",
            StoreKey::Idempotency(_) => "idem#",
            StoreKey::ActiveRuns(_) => "active#",
            StoreKey::Cache(_) => "cache#",
            StoreKey::Thread(_) => "thread#",
            StoreKey::ThreadTurn(_) => "turn#",
            StoreKey::Finished(_) => "finished#",
            StoreKey::Rate(_) => "rate#",
        }
    }

    /// The id after the prefix.
    fn id(self) -> &'a str {
        match self {
            StoreKey::Run(id)
            | StoreKey::Idempotency(id)
            | StoreKey::ActiveRuns(id)
            | StoreKey::Cache(id)
            | StoreKey::Thread(id)
            | StoreKey::ThreadTurn(id)
            | StoreKey::Finished(id)
            | StoreKey::Rate(id) => id,
        }
    }

    /// Reads a stored key back; `None` for a key of no known kind.
    pub(crate) fn parse(key: &'a str) -> Option<Self> {
        let (kind, id) = key.split_once('#')?;
        Some(match kind {
            "run" => StoreKey::Run(id),
            "idem" => StoreKey::Idempotency(id),
            "active" => StoreKey::ActiveRuns(id),
            "cache" => StoreKey::Cache(id),
            "thread" => StoreKey::Thread(id),
            "turn" => StoreKey::ThreadTurn(id),
            "finished" => StoreKey::Finished(id),
            "rate" => StoreKey::Rate(id),
            _ => return None,
        })
    }
}

impl fmt::Display for StoreKey<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.prefix())?;
        f.write_str(self.id())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_keep_their_stored_shape_and_read_back() {
        for (key, text) in [
            (StoreKey::Run("r-1"), "run#r-1"),
            (StoreKey::Idempotency("ab12"), "idem#ab12"),
            (StoreKey::ActiveRuns("c0ffee"), "active#c0ffee"),
            (StoreKey::Cache("00ff"), "cache#00ff"),
            (StoreKey::Thread("c0#t-1"), "thread#c0#t-1"),
            (
                StoreKey::ThreadTurn("c0#t-1#0000000001"),
                "turn#c0#t-1#0000000001",
            ),
            (StoreKey::Finished("r-1"), "finished#r-1"),
            (StoreKey::Rate("c0ffee#29000000"), "rate#c0ffee#29000000"),
        ] {
            assert_eq!(key.to_string(), text);
            assert_eq!(StoreKey::parse(text), Some(key));
        }
        assert_eq!(StoreKey::parse("run#a#b"), Some(StoreKey::Run("a#b")));
        assert_eq!(StoreKey::parse("lease#x"), None);
        assert_eq!(StoreKey::parse("run"), None);
    }
}
