//! The sync Lambda function (S3 event notifications through SQS): builds the clients once,
//! then hands each batch to the sync job.
use aws_lambda_events::event::sqs::SqsEvent;
use bounded_rag::entry::logging;
use bounded_rag::entry::sync_function::{handle_batch, SyncFunction};
use lambda_runtime::{service_fn, Error, LambdaEvent};

#[tokio::main]
async fn main() -> Result<(), Error> {
    logging::init_lambda();
    let function = SyncFunction::from_env().await?;
    let job = &function.job();
    lambda_runtime::run(service_fn(move |event: LambdaEvent<SqsEvent>| async move {
        Ok::<_, Error>(handle_batch(job, event.payload).await)
    }))
    .await
}
