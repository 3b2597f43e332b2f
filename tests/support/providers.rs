//! Scenarios run once per model provider: the OpenAI-compatible client against the scripted
//! chat-completions server and the Bedrock client against the scripted Converse server (one
//! script, the same counts for both), over the embedded knowledge base and a memory store.

use super::bedrock_server::{BedrockScript, ScriptedBedrock};
use super::llm_server::{Script, ScriptedLlm};
use bounded_rag::clock::{Clock, SystemClock};
use bounded_rag::engine::Budget;
use bounded_rag::llm::{BedrockConfig, BedrockModel, ChatModel, OpenAiConfig, OpenAiModel};
use bounded_rag::rag::{RagGraph, RagLimits, RunRequest, RunResponse};
use bounded_rag::retry::RetryPolicy;
use bounded_rag::runs::Workflow;
use bounded_rag::store::MemoryStore;
use std::sync::Arc;
use std::time::Duration;

/// Fast backoff so retry tests do not wait; the policy shape is the production one.
pub const FAST: RetryPolicy = RetryPolicy {
    max_retries: 3,
    base_delay: Duration::from_millis(1),
    max_delay: Duration::from_millis(5),
};

/// Which client a scenario drives.
#[derive(Debug, Clone, Copy)]
pub enum Provider {
    OpenAi,
    Bedrock,
}

/// The scripted server of a scenario, whichever provider it speaks for.
pub enum Server {
    OpenAi(ScriptedLlm),
    Bedrock(ScriptedBedrock),
}

impl Server {
    pub fn calls(&self, name: &str) -> usize {
        match self {
            Server::OpenAi(s) => s.calls(name),
            Server::Bedrock(s) => s.calls(name),
        }
    }

    pub fn total_calls(&self) -> usize {
        match self {
            Server::OpenAi(s) => s.total_calls(),
            Server::Bedrock(s) => s.total_calls(),
        }
    }

    pub fn requests(&self) -> Vec<serde_json::Value> {
        match self {
            Server::OpenAi(s) => s.requests(),
            Server::Bedrock(s) => s.requests(),
        }
    }

    pub fn recorded(&self) -> Vec<super::scripted_http::Call> {
        match self {
            Server::OpenAi(s) => s.recorded(),
            Server::Bedrock(s) => s.recorded(),
        }
    }
}

/// Runs each scenario once per provider, as the tests `NAME::openai` and `NAME::bedrock`.
#[macro_export]
macro_rules! for_each_provider {
    ($($scenario:ident),* $(,)?) => {$(
        mod $scenario {
            use $crate::support::providers::Provider;

            #[tokio::test]
            async fn openai() {
                super::$scenario(Provider::OpenAi).await
            }

            #[tokio::test]
            async fn bedrock() {
                super::$scenario(Provider::Bedrock).await
            }
        }
    )*};
}

pub struct Harness {
    pub llm: Server,
    pub graph: RagGraph,
    pub store: MemoryStore,
}

impl Harness {
    pub async fn new(provider: Provider, script: Script) -> Self {
        let (llm, model): (Server, Arc<dyn ChatModel>) = match provider {
            Provider::OpenAi => {
                let llm = ScriptedLlm::start(script).await;
                let config = OpenAiConfig::new(llm.base_url(), "test-model");
                let model = OpenAiModel::new(config).unwrap();
                (Server::OpenAi(llm), Arc::new(model))
            }
            Provider::Bedrock => {
                let llm = ScriptedBedrock::start(BedrockScript::new(script)).await;
                let config = BedrockConfig::new("anthropic.claude-3-5-haiku-20241022-v1:0");
                let model = BedrockModel::new(&llm.sdk_config(), config).unwrap();
                (Server::Bedrock(llm), Arc::new(model))
            }
        };
        let kb = bounded_rag::ingest::sample_kb().unwrap();
        let graph =
            RagGraph::new(model, Arc::new(kb), None, RagLimits::default()).with_remote_policy(FAST);
        Self {
            llm,
            graph,
            store: MemoryStore::new(),
        }
    }

    pub fn workflow(&self) -> Workflow<'_> {
        Workflow::new(&self.graph, &self.store, &SystemClock)
    }

    pub async fn run(&self, request: RunRequest, max_steps: u32) -> RunResponse {
        let budget = Budget::new(max_steps, SystemClock.now_ms() + 60_000);
        self.workflow()
            .run_new(&uuid::Uuid::new_v4().to_string(), request, &budget)
            .await
            .expect("run")
    }

    pub fn calls(&self, name: &str) -> usize {
        self.llm.calls(name)
    }
}

pub fn steps(r: &RunResponse) -> Vec<&str> {
    r.workflow_steps.iter().map(|s| s.name.as_str()).collect()
}

/// The details of the run's first step named `name`.
pub fn details(r: &RunResponse, name: &str) -> serde_json::Value {
    let step = r.workflow_steps.iter().find(|s| s.name == name);
    step.unwrap_or_else(|| panic!("no {name} step"))
        .details
        .clone()
}
