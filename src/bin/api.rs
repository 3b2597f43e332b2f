//! The HTTP Lambda function (API Gateway HTTP API and function URLs): builds the clients once,
//! then serves requests.
use bounded_rag::entry::{http, logging, App};
use bounded_rag::queue::WorkQueue;
use lambda_http::{service_fn, Error, Request};

#[tokio::main]
async fn main() -> Result<(), Error> {
    logging::init_lambda();
    let app = App::from_env().await?;
    let queue = app.work_queue();
    let app = &app;
    let queue = queue.as_ref().map(|q| q as &dyn WorkQueue);
    lambda_http::run(service_fn(move |request: Request| async move {
        Ok::<_, Error>(http::handle(app, queue, request).await)
    }))
    .await
}
