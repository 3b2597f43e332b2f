//! `bounded-rag serve`: a local HTTP server in front of the same handlers the Lambda functions
//! run, plus the playground: its page (`GET /`) and its one route of its own, a run's cited
//! passages (`passages.rs`). Every other request is turned into the API Gateway
//! (payload v2) request the functions get (`request.rs`) and answered by a function's handler:
//! `POST /workflow/run` by the `stream` function's ([`super::stream_function::handle`], server-sent
//! events) when the client accepts `text/event-stream`, else by the `api` function's
//! ([`super::api::handle`], one JSON body); `GET /workflow/runs/{run_id}/events` by the stream
//! function's (a resumed stream); every other route by the stream function's, which answers it
//! as the `api` function does. Asynchronous runs and continuations go to an in-process
//! work queue whose worker calls the SQS worker's record handler (`queue.rs`).
//!
//! With `--remote URL` ([`Backend::Remote`]) no handler runs here: every request but the page
//! is signed and sent on to the deployed stack at URL (`remote/`), and the page names it.
//!
//! | file | owns |
//! |---|---|
//! | `mod.rs` | binding, the accept loop, Ctrl-C, which requests the page answers |
//! | `request.rs` | an HTTP request as the Lambda event the handlers read |
//! | `body.rs` | the body of every answer |
//! | `queue.rs` | the in-process work queue and its worker |
//! | `page.rs`, `playground/` | the playground page (markup, style, scripts), compiled into the binary |
//! | `passages.rs` | the playground's one route of its own: a run's cited passages |
//! | `remote/` | `--remote`: requests signed with SigV4 and sent on to a deployed stack |

mod body;
mod page;
mod passages;
mod queue;
pub(crate) mod remote;
mod request;

use super::App;
use body::{full, BoxError, ServeBody};
use http_body_util::BodyExt;
use hyper::body::{Bytes, Incoming};
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use lambda_http::http::{Method, Response};
use std::convert::Infallible;
use std::net::SocketAddr;
use tokio::net::TcpListener;

/// What answers the API. One per process, moved once into `serve`: its size does not matter.
#[allow(clippy::large_enum_variant)]
pub(crate) enum Backend {
    /// This process's handlers, over the stores and model of `App`.
    Local(App),
    /// A deployed stack, every request signed and sent on.
    Remote(remote::Remote),
}

/// What answers one request, for the process's life.
#[derive(Clone, Copy)]
enum Handlers {
    Local(&'static App, &'static queue::LocalQueue),
    Remote(&'static remote::Remote),
}

/// Serves `backend` on `addr` until Ctrl-C. Prints the URL once the socket is bound (the line
/// a script or test waits for), says when it listens beyond loopback, and names a remote stack.
pub(crate) async fn serve(backend: Backend, addr: SocketAddr) -> std::io::Result<()> {
    let listener = TcpListener::bind(addr).await?;
    let bound = listener.local_addr()?;
    // Runs outlive a response stream (a caller may disconnect), as in the stream function.
    let (handlers, page) = match backend {
        Backend::Local(app) => {
            let app: &'static App = Box::leak(Box::new(app));
            (Handlers::Local(app, queue::start(app)), page::render(None))
        }
        Backend::Remote(remote) => {
            let page = page::render(Some(remote.target()));
            (Handlers::Remote(Box::leak(Box::new(remote))), page)
        }
    };
    let page: &'static str = Box::leak(page.into_boxed_str());
    println!("bounded-rag: serving http://{bound}/ (playground at /, the API under /workflow and /threads)");
    if bound.ip().is_loopback() {
        println!(
            "bounded-rag: listening on loopback only; --host 0.0.0.0 listens on every interface"
        );
    } else {
        println!(
            "bounded-rag: listening on {}, reachable from other machines, without authentication",
            bound.ip()
        );
    }
    if let Handlers::Remote(remote) = handlers {
        let target = remote.target();
        println!(
            "bounded-rag: every API call goes to the deployed stack at {}, signed with SigV4 \
             ({}, {}) by this process",
            target.url(),
            target.service().as_str(),
            target.region()
        );
    }
    println!("bounded-rag: press Ctrl-C to stop");
    let shutdown = tokio::signal::ctrl_c();
    tokio::pin!(shutdown);
    loop {
        let (stream, _) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    // Out of file descriptors, say: wait a little instead of spinning.
                    tracing::warn!(error = %e, "could not accept a connection");
                    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                    continue;
                }
            },
            _ = &mut shutdown => break,
        };
        tokio::spawn(async move {
            let service = service_fn(move |request| answer(handlers, page, request));
            let connection = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service);
            if let Err(e) = connection.await {
                tracing::debug!(error = %e, "connection ended");
            }
        });
    }
    println!("bounded-rag: stopped");
    Ok(())
}

/// Answers one request: the page at `GET /`, a run's passages, everything else from a
/// function's handler (or, with `--remote`, from the deployed stack).
async fn answer(
    handlers: Handlers,
    page: &'static str,
    request: hyper::Request<Incoming>,
) -> Result<Response<ServeBody>, Infallible> {
    if request.method() == Method::GET && request.uri().path() == "/" {
        return Ok(page::response(page).map(full));
    }
    let (app, queue) = match handlers {
        Handlers::Local(app, queue) => (app, queue),
        Handlers::Remote(remote) => return Ok(remote.forward(request).await),
    };
    let now_ms = app.runs().clock().now_ms();
    let request = match request::read(request, now_ms).await {
        Ok(request) => request,
        Err(refused) => return Ok(refused.response().map(full)),
    };
    if request.method() == Method::GET {
        if let Some(run_id) = passages::run_id_of(request.uri().path()).map(str::to_owned) {
            let response = passages::passages(app, &request, &run_id).await;
            return Ok(response.map(full));
        }
    }
    if is_buffered_run(&request) {
        let response = super::api::handle(app, Some(queue), request).await;
        return Ok(response.map(|body| full(Bytes::from(body.to_vec()))));
    }
    let response = super::stream_function::handle(app, Some(queue), request).await;
    Ok(response.map(|body| body.map_err(BoxError::from).boxed_unsync()))
}

/// `POST /workflow/run` from a client that does not ask for `text/event-stream` is answered
/// as the `api` function answers it (one JSON body); with that `Accept`, as the `stream`
/// function does. Every other route is answered alike by both.
fn is_buffered_run(request: &lambda_http::Request) -> bool {
    let events = request
        .headers()
        .get_all(lambda_http::http::header::ACCEPT)
        .iter()
        .any(|v| v.to_str().is_ok_and(|v| v.contains("text/event-stream")));
    request.method() == Method::POST
        && request.uri().path().trim_end_matches('/') == "/workflow/run"
        && !events
}
