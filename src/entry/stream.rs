//! The streaming HTTP handler (a function URL in `RESPONSE_STREAM` mode): `POST /workflow/run`
//! answers with server-sent events while the run goes on — `step` after each checkpointed
//! step, `token` pieces of the answer, `discarded` when an attempt is rejected — and ends with
//! `final` (the body `POST /workflow/run` answers with) or `suspended` (its 202 body). Every
//! other route, and every error found before the run starts, is answered as by [`super::http`].
//!
//! `GET /workflow/runs/{run_id}/events` resumes a dropped stream (`stream_resume`): every event
//! has an `id` ([`EventIds`]) and `Last-Event-ID` names where to pick up.
//!
//! The run does not depend on the caller: it runs in its own task, so a client that
//! disconnects only stops receiving; the run is checkpointed as usual and can be read with
//! `GET /workflow/runs/{run_id}` (the id is in the `x-run-id` response header).

use super::http::{self, prepare, run_claimed, Api, Claimed};
use super::{caller, App};
use crate::engine::Budget;
use crate::runs::WorkQueue;
use crate::rag::{Events, RunEvent};
use bytes::Bytes;
use lambda_http::http::{HeaderValue, Method, StatusCode};
use lambda_http::{Request, RequestExt, Response};
use lambda_runtime::streaming::{channel, Body, Sender};
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
/// for a run that will be continued, `cancelled` for a run its caller cancelled, `final` for
/// everything else.
pub(crate) fn last_event(id: &str, status: StatusCode, body: &Value) -> String {
    let suspended = status == StatusCode::ACCEPTED && body["status"] == "suspended";
    let name = if suspended {
        "suspended"
    } else if body["status"] == "cancelled" {
        "cancelled"
    } else {
        "final"
    };
    sse(id, name, body)
}

/// Handles one request of the streaming function. Never fails: errors become JSON answers.
pub async fn handle(
    app: &'static App,
    queue: Option<&'static dyn WorkQueue>,
    request: Request,
) -> Response<Body> {
    let path = request.uri().path().trim_end_matches('/').to_owned();
    let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    if let (&Method::GET, ["workflow", "runs", run_id, "events"]) =
        (request.method(), segments.as_slice())
    {
        let run_id = (*run_id).to_owned();
        return super::stream_resume::events(app, queue, request, run_id).await;
    }
    let is_run = request.method() == Method::POST && path == "/workflow/run";
    if !is_run {
        return buffered(http::handle(app, queue, request).await);
    }
    let api = Api::new(app, queue);
    // Everything that can refuse the request (body, Idempotency-Key, the active-run limit)
    // answers before the stream starts, with its own status code.
    let claimed = match prepare(api, caller::of(&request), &request).await {
        Ok(claimed) => claimed,
        Err(e) => return buffered(e.into()),
    };
    let run_id = claimed.run.id().to_owned();
    let budget = api.runs.budget(request.lambda_context_ref());
    let (sender, body) = channel();
    tokio::spawn(async move {
        let (events, receiver) = Events::channel();
        let (answer, (mut sender, ids)) = tokio::join!(
            run_reporting(api, events, claimed, &budget),
            forward(receiver, sender)
        );
        let body = http::body_json(&answer);
        send(&mut sender, last_event(&ids.last(), answer.status(), &body)).await;
        crate::otlp::flush().await;
    });
    let mut response = Response::new(body);
    let headers = response.headers_mut();
    headers.insert(
        "content-type",
        HeaderValue::from_static("text/event-stream"),
    );
    headers.insert("cache-control", HeaderValue::from_static("no-cache"));
    // Known before the first event, so a caller who disconnects can still read the run.
    if let Ok(value) = HeaderValue::from_str(&run_id) {
        headers.insert(RUN_ID_HEADER, value);
    }
    response
}

/// Runs the request on a graph reporting to `events`; the channel closes when it returns.
async fn run_reporting(
    api: Api<'_>,
    events: Events,
    claimed: Claimed,
    budget: &Budget,
) -> Response<lambda_http::Body> {
    let graph = api.runs.graph().with_events(events);
    let workflow = api.runs.workflow_on(&graph);
    run_claimed(api, &workflow, claimed, budget)
        .await
        .unwrap_or_else(Response::from)
}

/// Sends every run event to the caller until the run's event channel closes.
async fn forward(
    mut receiver: tokio::sync::mpsc::UnboundedReceiver<RunEvent>,
    mut sender: Sender,
) -> (Sender, EventIds) {
    let mut ids = EventIds::default();
    while let Some(event) = receiver.recv().await {
        let id = ids.next(&event);
        send(&mut sender, sse(&id, event.name(), &event.data())).await;
    }
    (sender, ids)
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
