//! The SQS Lambda function: builds the clients once, then processes batches.
use aws_lambda_events::event::sqs::SqsEvent;
use bounded_rag::entry::{logging, sqs, App};
use lambda_runtime::{service_fn, Error, LambdaEvent};

#[tokio::main]
async fn main() -> Result<(), Error> {
    logging::init_lambda();
    let app = &App::from_env().await?;
    lambda_runtime::run(service_fn(move |event: LambdaEvent<SqsEvent>| async move {
        let (batch, invocation) = (event.payload, event.context);
        let answer = sqs::handle_batch(app, app.work_queue(), batch, Some(&invocation)).await;
        Ok::<_, Error>(answer)
    }))
    .await
}
