//! Checkpoint cost per run against moto's DynamoDB: writes per run versus steps, and bytes per
//! write, through a counting decorator around the real [`DynamoStore`].

use super::llm_server::LlmServer;
use super::moto;
use async_trait::async_trait;
use aws_sdk_dynamodb::types::AttributeValue;
use bounded_rag::clock::{Clock, SystemClock};
use bounded_rag::engine::Budget;
use bounded_rag::rag::{RagGraph, RunRequest};
use bounded_rag::runs::Workflow;
use bounded_rag::store::{CheckpointStore, DynamoStore, Lease, StoreError, Versioned};
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

/// One conditional write as DynamoDB stored it.
#[derive(Debug, Clone, Copy)]
pub struct Write {
    /// The checkpoint JSON handed to the store.
    pub body_bytes: usize,
    /// The stored head item's size by DynamoDB's rules (attribute names + values), after
    /// the store's own compression.
    pub item_bytes: usize,
}

/// The cost of one run.
#[derive(Debug, Clone)]
pub struct RunCost {
    /// What was run.
    pub label: &'static str,
    /// Steps of the run.
    pub steps: usize,
    /// Model calls.
    pub calls: u64,
    /// Every write of the run, in order.
    pub writes: Vec<Write>,
}

impl RunCost {
    /// Largest stored item.
    pub fn max_item(&self) -> usize {
        self.writes.iter().map(|w| w.item_bytes).max().unwrap_or(0)
    }
    /// Total stored bytes over the run.
    pub fn total_item_bytes(&self) -> usize {
        self.writes.iter().map(|w| w.item_bytes).sum()
    }
    /// Write capacity units consumed (1 per started KB of item, per write).
    pub fn wcu(&self) -> usize {
        self.writes
            .iter()
            .map(|w| w.item_bytes.div_ceil(1024))
            .sum()
    }
}

/// Counts the writes of the wrapped store and reads each written item back (uncounted) to
/// size it.
struct Counting {
    inner: DynamoStore,
    client: aws_sdk_dynamodb::Client,
    table: String,
    writes: Mutex<Vec<Write>>,
}

#[async_trait]
impl CheckpointStore for Counting {
    async fn get(&self, key: &str) -> Result<Option<Versioned>, StoreError> {
        self.inner.get(key).await
    }

    async fn put(
        &self,
        key: &str,
        expected: u64,
        body: &[u8],
        lease: Option<&Lease>,
    ) -> Result<u64, StoreError> {
        let version = self.inner.put(key, expected, body, lease).await?;
        let item = self
            .client
            .get_item()
            .table_name(&self.table)
            .key("pk", AttributeValue::S(key.to_owned()))
            .key("sk", AttributeValue::S("head".to_owned()))
            .consistent_read(true)
            .send()
            .await
            .expect("read the written item back")
            .item
            .expect("the written item");
        self.writes.lock().unwrap().push(Write {
            body_bytes: body.len(),
            item_bytes: item_size(&item),
        });
        Ok(version)
    }

    fn name(&self) -> &'static str {
        "counting-dynamodb"
    }
}

/// DynamoDB's item size: UTF-8 attribute names plus values (strings and binaries by length,
/// numbers roughly one byte per two digits plus one).
fn item_size(item: &HashMap<String, AttributeValue>) -> usize {
    item.iter()
        .map(|(name, value)| {
            name.len()
                + match value {
                    AttributeValue::S(s) => s.len(),
                    AttributeValue::N(n) => n.len().div_ceil(2) + 1,
                    AttributeValue::B(b) => b.as_ref().len(),
                    AttributeValue::Bool(_) | AttributeValue::Null(_) => 1,
                    other => format!("{other:?}").len(), // not used by the store
                }
        })
        .sum()
}

/// Runs the typical 7-call workflow and a long one (an answer never grounded: 3
/// regenerations) with checkpoints in moto's DynamoDB.
pub async fn measure(server: &LlmServer) -> Vec<RunCost> {
    let moto = moto::moto().await;
    let table = moto.create_table().await;
    let sdk = moto.sdk_config().await;
    let client = aws_sdk_dynamodb::Client::from_conf(DynamoStore::client_config(
        &sdk,
        Duration::from_secs(5),
    ));
    let mut costs = Vec::new();
    for (label, model) in [
        ("typical run (7 model calls)", "bench"),
        ("long run (3 regenerations)", "bench-ungrounded"),
    ] {
        let store = Counting {
            inner: DynamoStore::new(
                client.clone(),
                table.clone(),
                Duration::from_secs(7 * 86_400),
            ),
            client: client.clone(),
            table: table.clone(),
            writes: Mutex::new(Vec::new()),
        };
        let graph: RagGraph = super::e2e::graph(server, model);
        let workflow = Workflow::new(&graph, &store, &SystemClock);
        let budget = Budget::new(50, SystemClock.now_ms() + 60_000);
        let before = server.stats();
        let response = workflow
            .run_new(
                &format!("checkpoint-{model}"),
                RunRequest::new(super::e2e::QUESTION),
                &budget,
            )
            .await
            .expect("run on DynamoDB");
        costs.push(RunCost {
            label,
            steps: response.workflow_steps.len(),
            calls: (server.stats() - before).requests,
            writes: store.writes.into_inner().unwrap(),
        });
    }
    costs
}
