//! The work queue of `serve`: what SQS and the `worker` function do on AWS, in the process.
//! `POST /workflow/runs` and a suspended run's continuation send a [`WorkMessage`] here; the
//! worker task hands each one, as an SQS record, to the SQS worker's own record handler
//! ([`crate::entry::sqs::handle_record`]), so a queued run is processed exactly as the `worker`
//! function processes it. A record the handler wants back is delivered again after
//! [`REDELIVERY_DELAY`], at most [`MAX_RECEIVES`] times in all (the template's
//! `maxReceiveCount`); after that it is logged and dropped, where SQS would move it to the
//! dead-letter queue.

use crate::entry::sqs::{handle_record, RecordOutcome};
use crate::entry::App;
use crate::runs::{QueueError, WorkMessage, WorkQueue};
use async_trait::async_trait;
use aws_lambda_events::event::sqs::SqsMessage;
use std::time::Duration;
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver, UnboundedSender};

/// Deliveries of one message, at most (`maxReceiveCount` in `template.yaml`).
pub(super) const MAX_RECEIVES: u32 = 3;

/// The wait before a record the handler wants back is delivered again (SQS waits for the
/// queue's visibility timeout, minutes; a local run has no reason to).
pub(super) const REDELIVERY_DELAY: Duration = Duration::from_secs(1);

/// One delivery of a message.
#[derive(Debug)]
struct Delivery {
    message: WorkMessage,
    /// 1 for the first delivery.
    receive: u32,
}

/// The in-process queue: messages go to the worker task started with it.
#[derive(Debug)]
pub(crate) struct LocalQueue {
    sender: UnboundedSender<Delivery>,
}

#[async_trait]
impl WorkQueue for LocalQueue {
    async fn send(&self, message: &WorkMessage) -> Result<(), QueueError> {
        let delivery = Delivery {
            message: message.clone(),
            receive: 1,
        };
        self.sender
            .send(delivery)
            .map_err(|_| QueueError::Permanent("the local worker has stopped".into()))
    }
}

/// Starts the worker over `app` and gives the queue that feeds it (kept for the process's
/// life, like the app).
pub(super) fn start(app: &'static App) -> &'static LocalQueue {
    let (sender, receiver) = unbounded_channel();
    let queue: &'static LocalQueue = Box::leak(Box::new(LocalQueue { sender }));
    tokio::spawn(work(app, queue, receiver));
    queue
}

/// Processes every delivery concurrently, as Lambda scales the worker out.
async fn work(
    app: &'static App,
    queue: &'static LocalQueue,
    mut receiver: UnboundedReceiver<Delivery>,
) {
    while let Some(delivery) = receiver.recv().await {
        tokio::spawn(deliver(app, queue, delivery));
    }
}

async fn deliver(app: &'static App, queue: &'static LocalQueue, delivery: Delivery) {
    let record = record(&delivery);
    let run_id = delivery.message.run_id.clone();
    match handle_record(app, Some(queue), &record, None).await {
        RecordOutcome::Done => {}
        RecordOutcome::Retry(reason) if delivery.receive < MAX_RECEIVES => {
            tracing::warn!(
                run_id,
                reason,
                receive = delivery.receive,
                "delivering the message again"
            );
            tokio::time::sleep(REDELIVERY_DELAY).await;
            let again = Delivery {
                message: delivery.message,
                receive: delivery.receive + 1,
            };
            if queue.sender.send(again).is_err() {
                tracing::warn!(run_id, "the local worker has stopped");
            }
        }
        RecordOutcome::Retry(reason) | RecordOutcome::Poison(reason) => {
            tracing::error!(
                run_id,
                reason,
                "message dropped after {} deliveries (SQS would move it to the dead-letter queue)",
                delivery.receive
            );
        }
    }
}

/// The SQS record of `delivery`, as the worker function gets it.
fn record(delivery: &Delivery) -> SqsMessage {
    let mut record = SqsMessage::default();
    record.message_id = Some(uuid::Uuid::new_v4().to_string());
    record.body = serde_json::to_string(&delivery.message).ok();
    record.attributes.insert(
        "ApproximateReceiveCount".into(),
        delivery.receive.to_string(),
    );
    record
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_sent_message_reaches_the_worker_as_the_sqs_record_of_its_body() {
        let (sender, mut receiver) = unbounded_channel();
        let queue = LocalQueue { sender };
        let message = WorkMessage::continuation("run-1");
        queue.send(&message).await.unwrap();
        let delivery = receiver.recv().await.unwrap();
        assert_eq!((&delivery.message, delivery.receive), (&message, 1));
        let record = record(&delivery);
        let body: WorkMessage = serde_json::from_str(record.body.as_deref().unwrap()).unwrap();
        assert_eq!(body, message);
        assert_eq!(record.attributes["ApproximateReceiveCount"], "1");
        drop(receiver);
        assert!(matches!(
            queue.send(&message).await,
            Err(QueueError::Permanent(_))
        ));
    }
}
