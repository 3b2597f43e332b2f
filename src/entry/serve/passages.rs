//! `GET /playground/runs/{run_id}/passages`, a route of the playground only (not of the
//! functions, not in `openapi.yaml`): the passages a run's answer cites, with their text, so a
//! citation opens to the passage it stands for. The caller, the run id check and every refusal
//! are the API's own (`entry::caller`, `http::check_run_id`, `http::refused`).

use crate::entry::api::{check_run_id, refused};
use crate::entry::{caller, App};
use hyper::body::Bytes;
use lambda_http::http::header::CONTENT_TYPE;
use lambda_http::http::{HeaderValue, Response};
use serde_json::json;

/// The route's path segments before and after the run id.
pub(super) fn run_id_of(path: &str) -> Option<&str> {
    let id = path
        .strip_prefix("/playground/runs/")?
        .strip_suffix("/passages")?;
    (!id.is_empty() && !id.contains('/')).then_some(id)
}

/// The cited passages of `run_id`, as JSON: `{run_id, passages: [{url, title, text}]}`.
pub(super) async fn passages(
    app: &App,
    request: &lambda_http::Request,
    run_id: &str,
) -> Response<Bytes> {
    let runs = app.runs();
    let answer: Response<lambda_http::Body> = match check_run_id(run_id) {
        Err(e) => e.into(),
        Ok(()) => match runs.passages(&caller::of(request), run_id).await {
            Err(refusal) => refused(refusal, runs.clock().now_ms()).into(),
            Ok(passages) => {
                let body = json!({ "run_id": run_id, "passages": passages });
                let mut response = Response::new(lambda_http::Body::from(body.to_string()));
                response
                    .headers_mut()
                    .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
                response
            }
        },
    };
    answer.map(|body| Bytes::from(body.to_vec()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_passages_path_names_a_run() {
        assert_eq!(run_id_of("/playground/runs/r-1/passages"), Some("r-1"));
        assert_eq!(run_id_of("/playground/runs//passages"), None);
        assert_eq!(run_id_of("/playground/runs/a/b/passages"), None);
        assert_eq!(run_id_of("/workflow/runs/r-1"), None);
    }
}
