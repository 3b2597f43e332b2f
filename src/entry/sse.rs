//! Server-sent events as the stream function sends them: the frame of one event (`id`,
//! `event`, one `data:` line), the ids of a run's events, the last event of a streamed run, and
//! the response that carries them. Shared by a streamed run (`stream_function.rs`) and a resumed stream
//! (`stream_resume.rs`).

use crate::rag::RunEvent;
use bytes::Bytes;
use lambda_http::http::{HeaderValue, StatusCode};
use lambda_http::Response;
use lambda_runtime::streaming::{Body, Sender};
use serde_json::Value;

/// Response header naming the run being streamed.
pub(crate) const RUN_ID_HEADER: &str = "x-run-id";

/// One server-sent event: `id: ID`, `event: NAME` and one `data:` line of compact JSON.
pub(crate) fn sse(id: &str, name: &str, data: &Value) -> String {
    format!("id: {id}\nevent: {name}\ndata: {data}\n\n")
}

/// The ids of a run's events. A `step` event's id is its step number (`3`); a `token` or
/// `discarded` event is numbered after the last step (`3.17`); the last event is `3.end`. So
/// the number before the dot is always the last step a client has seen, which is what a
/// resumed stream (`Last-Event-ID`) replays after.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct EventIds {
    steps: u32,
    live: u32,
}

impl EventIds {
    /// Ids after step number `steps`.
    pub(crate) fn after(steps: u32) -> Self {
        Self { steps, live: 0 }
    }

    /// The id of `event`, the next one sent.
    pub(crate) fn next(&mut self, event: &RunEvent) -> String {
        match event {
            RunEvent::Step { counters, .. } => {
                self.steps = counters.steps;
                self.live = 0;
                self.steps.to_string()
            }
            RunEvent::Token { .. } | RunEvent::Discarded { .. } => {
                self.live += 1;
                format!("{}.{}", self.steps, self.live)
            }
        }
    }

    /// The id of the last event.
    pub(crate) fn last(&self) -> String {
        format!("{}.end", self.steps)
    }
}

/// The step number a `Last-Event-ID` names (the number before the dot; see [`EventIds`]).
pub(crate) fn last_step_seen(id: &str) -> Option<u32> {
    id.trim().split('.').next()?.parse().ok()
}

/// The last event of a streamed run, from the buffered answer's status and body: `suspended`
/// for a run that will be continued, `cancelled` for a run its caller cancelled, `interrupt`
/// for a run that waits for a person (its body says what it asks), `final` for everything
/// else.
pub(crate) fn last_event(id: &str, status: StatusCode, body: &Value) -> String {
    let suspended = status == StatusCode::ACCEPTED && body["status"] == "suspended";
    let name = if suspended {
        "suspended"
    } else if body["status"] == "cancelled" {
        "cancelled"
    } else if body["status"] == "waiting" {
        "interrupt"
    } else {
        "final"
    };
    sse(id, name, body)
}

/// A caller who went away is not an error: the run goes on and stays readable.
pub(crate) async fn send(sender: &mut Sender, frame: String) {
    if sender.send_data(Bytes::from(frame)).await.is_err() {
        tracing::debug!("the caller stopped reading the stream; the run goes on");
    }
}

/// A buffered answer as a (one-piece) streamed response.
pub(crate) fn buffered(response: Response<lambda_http::Body>) -> Response<Body> {
    let (parts, body) = response.into_parts();
    Response::from_parts(parts, Body::from(body.to_vec()))
}

/// The `text/event-stream` response around `body`, naming `run_id` (when it is a valid header
/// value) so a caller who disconnects can still read the run.
pub(crate) fn event_stream(body: Body, run_id: &str) -> Response<Body> {
    let mut response = Response::new(body);
    let headers = response.headers_mut();
    headers.insert(
        "content-type",
        HeaderValue::from_static("text/event-stream"),
    );
    headers.insert("cache-control", HeaderValue::from_static("no-cache"));
    if let Ok(value) = HeaderValue::from_str(run_id) {
        headers.insert(RUN_ID_HEADER, value);
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn frames_are_named_server_sent_events_with_ids() {
        let token = RunEvent::Token {
            attempt: 1,
            text: "Hi\nthere".into(),
        };
        let mut ids = EventIds::after(3);
        let frame = sse(&ids.next(&token), token.name(), &token.data());
        assert_eq!(
            frame,
            "id: 3.1\nevent: token\ndata: {\"attempt\":1,\"text\":\"Hi\\nthere\"}\n\n"
        );
        assert_eq!(ids.next(&RunEvent::Discarded { attempt: 1 }), "3.2");
        assert_eq!(ids.last(), "3.end");
        assert_eq!(last_step_seen("3.2"), Some(3));
        assert_eq!(last_step_seen("4"), Some(4));
        assert_eq!(last_step_seen("3.end"), Some(3));
        assert_eq!(last_step_seen("x"), None);
    }

    #[test]
    fn a_suspended_answer_ends_with_suspended_everything_else_with_final() {
        let suspended = json!({"run_id": "r", "status": "suspended"});
        assert!(last_event("0.end", StatusCode::ACCEPTED, &suspended)
            .starts_with("id: 0.end\nevent: suspended\n"));
        let running = json!({"run_id": "r", "status": "running"});
        assert!(last_event("1.end", StatusCode::ACCEPTED, &running).contains("event: final\n"));
        let done = json!({"status": "completed"});
        assert!(last_event("6.end", StatusCode::OK, &done).contains("event: final\n"));
        let cancelled = json!({"status": "cancelled"});
        assert!(last_event("2.end", StatusCode::OK, &cancelled).contains("event: cancelled\n"));
    }
}
