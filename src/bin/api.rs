//! The HTTP Lambda function (API Gateway HTTP API and function URLs): builds the clients once,
//! then serves requests.
use bounded_rag::entry::{api, logging, App, AsIs};
use lambda_http::{service_fn, Error, Request};

#[tokio::main]
async fn main() -> Result<(), Error> {
    logging::init_lambda();
    let app = &App::from_env().await?;
    lambda_http::run(service_fn(move |request: Request| async move {
        Ok::<_, Error>(AsIs(api::handle(app, app.work_queue(), request).await))
    }))
    .await
}
