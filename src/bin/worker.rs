//! The SQS Lambda function: builds the clients once, then processes batches.
use aws_lambda_events::event::sqs::SqsEvent;
use bounded_rag::entry::{logging, sqs, App};
use bounded_rag::queue::WorkQueue;
use lambda_runtime::{service_fn, Error, LambdaEvent};

#[tokio::main]
async fn main() -> Result<(), Error> {
    logging::init_lambda();
    let app = App::from_env().await?;
    let queue = app.work_queue();
    let app = &app;
    let queue = queue.as_ref().map(|q| q as &dyn WorkQueue);
    lambda_runtime::run(service_fn(move |event: LambdaEvent<SqsEvent>| async move {
        let deadline = Some(event.context.deadline);
        Ok::<_, Error>(sqs::handle_batch(app, queue, event.payload, deadline).await)
    }))
    .await
}
