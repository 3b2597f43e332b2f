//! The sweeper Lambda function (an EventBridge schedule, every minute): builds the DynamoDB
//! and SQS clients once, then re-queues the runs whose lease lapsed on each scheduled event.
use bounded_rag::entry::logging;
use bounded_rag::entry::sweeper::Sweeper;
use lambda_runtime::{service_fn, Error, LambdaEvent};
use serde_json::Value;

#[tokio::main]
async fn main() -> Result<(), Error> {
    logging::init_lambda();
    let sweeper = Sweeper::from_env().await?;
    let sweeper = &sweeper;
    lambda_runtime::run(service_fn(move |event: LambdaEvent<Value>| async move {
        Ok::<_, Error>(sweeper.handle(&event.payload).await?)
    }))
    .await
}
