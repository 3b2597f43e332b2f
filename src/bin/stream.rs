//! The streaming HTTP Lambda function (a function URL in `RESPONSE_STREAM` mode): builds the
//! clients once, then answers `POST /workflow/run` with server-sent events.
use bounded_rag::entry::{logging, stream_function, App};
use lambda_http::{service_fn, Error, Request};

#[tokio::main]
async fn main() -> Result<(), Error> {
    logging::init_lambda();
    // Runs outlive the response stream (a caller may disconnect), so the app lives as long as
    // the process.
    let app: &'static App = Box::leak(Box::new(App::from_env().await?));
    lambda_http::run_with_streaming_response(service_fn(move |request: Request| async move {
        Ok::<_, Error>(stream_function::handle(app, app.work_queue(), request).await)
    }))
    .await
}
