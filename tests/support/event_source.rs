//! Lambda's SQS event source, played on a real (moto) queue: receive up to 10 messages, hand
//! them to the worker's record handler concurrently, delete what succeeded, let a failure come
//! back at once (its visibility timeout, shortened) up to 3 receives, then dead-letter it.

use super::fault_proxy::FaultProxy;
use super::moto::sqs_event;
use aws_sdk_sqs::types::Message;
use bounded_rag::entry::sqs::{handle_record, RecordOutcome};
use bounded_rag::entry::App;
use bounded_rag::runs::WorkQueue;
use std::collections::HashMap;

/// The event source, with a direct (fault-free) moto client.
pub struct EventSource {
    sqs: aws_sdk_sqs::Client,
    url: String,
    receives: HashMap<String, u32>,
    /// Messages dropped after 3 failed receives.
    pub dead_lettered: usize,
    /// Messages handed to the worker, redeliveries included.
    pub deliveries: usize,
}

impl EventSource {
    /// The event source of the queue at `url`.
    pub fn new(sqs: aws_sdk_sqs::Client, url: &str) -> Self {
        Self {
            sqs,
            url: url.to_owned(),
            receives: HashMap::new(),
            dead_lettered: 0,
            deliveries: 0,
        }
    }

    async fn receive(&self) -> Vec<Message> {
        self.sqs
            .receive_message()
            .queue_url(&self.url)
            .max_number_of_messages(10)
            .send()
            .await
            .expect("ReceiveMessage on moto")
            .messages
            .unwrap_or_default()
    }

    /// Feeds the queue to the worker until it is empty and nothing is in flight: a record
    /// that fails comes back at once (its visibility timeout, shortened), at most 3 receives,
    /// then it is dead-lettered.
    pub async fn pump(&mut self, worker: &App, queue: &dyn WorkQueue, proxy: &FaultProxy) {
        for _ in 0..2_000 {
            let mut messages = self.receive().await;
            if messages.is_empty() {
                proxy.settle().await; // a late SendMessage may still land
                messages = self.receive().await;
                if messages.is_empty() {
                    return;
                }
            }
            self.deliveries += messages.len();
            let event = sqs_event(&messages);
            let outcomes = futures::future::join_all(
                event
                    .records
                    .iter()
                    .map(|record| handle_record(worker, Some(queue), record, None)),
            )
            .await;
            for (message, outcome) in messages.iter().zip(outcomes) {
                let id = message.message_id().unwrap().to_owned();
                let handle = message.receipt_handle().unwrap();
                match outcome {
                    RecordOutcome::Done => self.delete(handle).await,
                    RecordOutcome::Poison(reason) => panic!("poison under faults: {reason}"),
                    RecordOutcome::Retry(_) => {
                        let receives = self.receives.entry(id).or_default();
                        *receives += 1;
                        if *receives >= 3 {
                            self.dead_lettered += 1;
                            self.delete(handle).await;
                        } else {
                            self.sqs
                                .change_message_visibility()
                                .queue_url(&self.url)
                                .receipt_handle(handle)
                                .visibility_timeout(0)
                                .send()
                                .await
                                .expect("ChangeMessageVisibility on moto");
                        }
                    }
                }
            }
        }
        panic!("the queue never ran dry");
    }

    async fn delete(&self, handle: &str) {
        self.sqs
            .delete_message()
            .queue_url(&self.url)
            .receipt_handle(handle)
            .send()
            .await
            .expect("DeleteMessage on moto");
    }
}
