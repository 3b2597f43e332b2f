//! The streaming HTTP handler (a function URL in `RESPONSE_STREAM` mode): `POST /workflow/run`
//! answers with server-sent events while the run goes on — `step` after each checkpointed
//! step, `token` pieces of the answer, `discarded` when an attempt is rejected — and ends with
//! `final` (the body `POST /workflow/run` answers with) or `suspended` (its 202 body). Every
//! other route, and every error found before the run starts, is answered as by [`super::http`].
//!
//! `GET /workflow/runs/{run_id}/events` resumes a dropped stream (`stream_resume`): every event
//! has an `id` (`sse.rs`) and `Last-Event-ID` names where to pick up.
//!
//! The run does not depend on the caller: it runs in its own task, so a client that
//! disconnects only stops receiving; the run is checkpointed as usual and can be read with
//! `GET /workflow/runs/{run_id}` (the id is in the `x-run-id` response header).

use super::sse::{buffered, event_stream, last_event, send, sse, EventIds};
use super::{api, caller, App};
use crate::rag::{Events, RunEvent};
use crate::runs::WorkQueue;
use lambda_http::http::Method;
use lambda_http::{Request, RequestExt, Response};
use lambda_runtime::streaming::{channel, Body, Sender};

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
        return super::stream_resume::events(app, request, run_id).await;
    }
    let is_run = request.method() == Method::POST && path == "/workflow/run";
    if !is_run {
        return buffered(api::handle(app, queue, request).await);
    }
    let runs = app.runs();
    // Everything that can refuse the request (rate, body, Idempotency-Key, the active-run
    // limit, a busy thread) answers before the stream starts, with its own status code.
    let input = api::input::read(app, &request);
    let admitted = match runs.admit(caller::of(&request), input).await {
        Ok(admitted) => admitted,
        Err(refusal) => {
            return buffered(api::refused(refusal, runs.clock().now_ms()).into());
        }
    };
    let run_id = admitted.run_id().to_owned();
    let budget = runs.budget(request.lambda_context_ref());
    let (sender, body) = channel();
    tokio::spawn(async move {
        let (events, receiver) = Events::channel();
        // The run's event channel closes when it returns.
        let run = async {
            match runs.run(admitted, &budget, queue, events).await {
                Ok(answer) => api::respond(answer, runs.clock().now_ms()),
                Err(refusal) => api::refused(refusal, runs.clock().now_ms()).into(),
            }
        };
        let (answer, (mut sender, ids)) = tokio::join!(run, forward(receiver, sender));
        let body = api::body_json(&answer);
        send(&mut sender, last_event(&ids.last(), answer.status(), &body)).await;
        crate::otlp::flush().await;
    });
    event_stream(body, &run_id)
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
