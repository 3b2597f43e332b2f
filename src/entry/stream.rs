//! The streaming HTTP handler (a function URL in `RESPONSE_STREAM` mode): `POST /workflow/run`
//! answers with server-sent events while the run goes on — `step` after each checkpointed
//! step, `token` pieces of the answer, `discarded` when an attempt is rejected — and ends with
//! `final` (the body `POST /workflow/run` answers with) or `suspended` (its 202 body). Every
//! other route, and every error found before the run starts, is answered as by [`super::http`].
//!
//! The run does not depend on the caller: it runs in its own task, so a client that
//! disconnects only stops receiving; the run is checkpointed as usual and can be read with
//! `GET /workflow/runs/{run_id}` (the id is in the `x-run-id` response header).

use super::http::{self, prepare, run_claimed, Api, Claimed};
use super::{caller, App};
use crate::engine::Budget;
use crate::queue::WorkQueue;
use crate::rag::{Events, RunEvent};
use bytes::Bytes;
use lambda_http::http::{HeaderValue, Method, StatusCode};
use lambda_http::{Request, RequestExt, Response};
use lambda_runtime::streaming::{channel, Body, Sender};
use serde_json::Value;

/// Response header naming the run being streamed.
pub(crate) const RUN_ID_HEADER: &str = "x-run-id";

/// One server-sent event: `event: NAME` and one `data:` line of compact JSON.
pub(crate) fn sse(name: &str, data: &Value) -> String {
    format!("event: {name}\ndata: {data}\n\n")
}

/// The SSE frame of a run event.
pub(crate) fn sse_event(event: &RunEvent) -> String {
    sse(event.name(), &event.data())
}

/// The last event of a streamed run, from the buffered answer's status and body: `suspended`
/// for a run that will be continued, `final` for everything else.
pub(crate) fn last_event(status: StatusCode, body: &Value) -> String {
    let suspended = status == StatusCode::ACCEPTED && body["status"] == "suspended";
    sse(if suspended { "suspended" } else { "final" }, body)
}

/// Handles one request of the streaming function. Never fails: errors become JSON answers.
pub async fn handle(
    app: &'static App,
    queue: Option<&'static dyn WorkQueue>,
    request: Request,
) -> Response<Body> {
    let is_run = request.method() == Method::POST
        && request.uri().path().trim_end_matches('/') == "/workflow/run";
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
        let (answer, mut sender) = tokio::join!(
            run_reporting(api, events, claimed, &budget),
            forward(receiver, sender)
        );
        let body = http::body_json(&answer);
        send(&mut sender, last_event(answer.status(), &body)).await;
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
) -> Sender {
    while let Some(event) = receiver.recv().await {
        send(&mut sender, sse_event(&event)).await;
    }
    sender
}

/// A caller who went away is not an error: the run goes on and stays readable.
async fn send(sender: &mut Sender, frame: String) {
    if sender.send_data(Bytes::from(frame)).await.is_err() {
        tracing::debug!("the caller stopped reading the stream; the run goes on");
    }
}

/// A buffered answer as a (one-piece) streamed response.
fn buffered(response: Response<lambda_http::Body>) -> Response<Body> {
    let (parts, body) = response.into_parts();
    Response::from_parts(parts, Body::from(body.to_vec()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn frames_are_named_server_sent_events() {
        let frame = sse_event(&RunEvent::Token {
            attempt: 1,
            text: "Hi\nthere".into(),
        });
        assert_eq!(
            frame,
            "event: token\ndata: {\"attempt\":1,\"text\":\"Hi\\nthere\"}\n\n"
        );
    }

    #[test]
    fn a_suspended_answer_ends_with_suspended_everything_else_with_final() {
        let suspended = json!({"run_id": "r", "status": "suspended"});
        assert!(last_event(StatusCode::ACCEPTED, &suspended).starts_with("event: suspended\n"));
        let running = json!({"run_id": "r", "status": "running"});
        assert!(last_event(StatusCode::ACCEPTED, &running).starts_with("event: final\n"));
        let done = json!({"status": "completed"});
        assert!(last_event(StatusCode::OK, &done).starts_with("event: final\n"));
    }
}
