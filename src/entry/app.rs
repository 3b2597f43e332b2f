//! Builds every client once from [`Settings`]: model, knowledge base, web search, checkpoint
//! store (which also holds the response cache when `LLM_CACHE_TTL_SECONDS` is set), work queue.
//! The CLI and the Lambda functions share this wiring; [`App`] is what `main` builds with it.

use super::adapters::{EventBridgeSink, SqsQueue};
use crate::aws;
use crate::clock::{Clock, SystemClock};
use crate::config::{EmbeddingsProvider, LlmProvider, RerankProvider, Settings};
use crate::embed::{BedrockEmbeddings, Embedder, EmbeddingsClient, EmbeddingsConfig};
use crate::engine::Budget;
use crate::kb::Retriever;
use crate::llm::{
    BedrockConfig, BedrockModel, CachingModel, ChatModel, OfflineModel, OpenAiConfig, OpenAiModel,
};
use crate::rag::{RagGraph, RagLimits};
use crate::runs::{CompletionEvents, WorkQueue};
use crate::runs::{RunIndexer, Runs, Workflow};
use crate::search::{
    BedrockReranker, RerankClient, RerankConfig, Reranker, TavilyClient, TavilyConfig, WebSearch,
};
use crate::secrets::{SecretBundle, SecretsProvider};
use crate::store::{CacheStore, CheckpointStore, DynamoStore, FileStore};
use std::sync::Arc;

pub use super::startup_error::StartupError;

/// The dependencies of every entry point, built once per process (in `main`): the run life
/// cycle ([`Runs`]: the workflow's clients, budget rules and admission limits), the largest
/// HTTP body read, and the work queue. Handlers get this by reference and read only the part
/// they use.
pub struct App {
    runs: Runs,
    /// `MAX_BODY_BYTES`.
    max_body_bytes: usize,
    queue: Option<SqsQueue>,
}

impl App {
    /// Reads the environment and builds the application.
    pub async fn from_env() -> Result<Self, StartupError> {
        Self::build(Settings::from_env()?).await
    }

    /// Builds the application from settings. AWS is touched only when a table, queue or
    /// secret is configured, so the offline CLI starts without any AWS call.
    pub async fn build(settings: Settings) -> Result<Self, StartupError> {
        let aws = if settings.aws.checkpoint_table.is_some()
            || settings.aws.work_queue_url.is_some()
            || settings.aws.secrets_id.is_some()
            || settings.kb_uri.is_some()
            || uses_bedrock(&settings)
            || settings.aws.event_bus_name.is_some()
        {
            Some(crate::tls::aws_sdk_config().await)
        } else {
            None
        };
        let secrets = read_secrets(&settings, aws.as_ref()).await?;
        let embedder = build_embedder(&settings, &secrets, aws.as_ref()).await?;
        let kb = build_kb(&settings, aws.as_ref()).await?;
        warn_on_prefix_mismatch(kb.as_ref(), &settings);
        let web = build_web(&settings, &secrets)?;
        let limits = RagLimits {
            max_query_rewrites: settings.limits.max_query_rewrites,
            max_regenerations: settings.limits.max_regenerations,
        };
        // One store holds the checkpoints and the cached replies, as two views of one client.
        let (store, cache): (Arc<dyn CheckpointStore>, Arc<dyn CacheStore>) =
            match (&settings.aws.checkpoint_table, &aws) {
                (Some(table), Some(sdk)) => {
                    let store = Arc::new(dynamo_store(&settings, sdk, table));
                    (store.clone(), store)
                }
                _ => {
                    let store = FileStore::open(&settings.state_dir)?;
                    let store = store
                        .with_ttl(settings.aws.run_ttl)
                        .with_indexer(Arc::new(RunIndexer));
                    let store = Arc::new(store);
                    (store.clone(), store)
                }
            };
        let mut model = build_model(&settings, &secrets, aws.as_ref())?;
        if let Some(ttl) = settings.llm.cache_ttl {
            model = Arc::new(CachingModel::new(model, cache, ttl));
        }
        let mut graph = RagGraph::new(model, kb, web, limits)
            .with_tenant_key(settings.kb_tenant_key.clone())
            .with_kb_description(settings.kb_description.clone())
            .with_speculation(settings.speculation)
            .with_interrupts(settings.interrupts.clone())
            .with_model_window(settings.llm.window);
        if let Some(embedder) = embedder {
            graph = graph.with_embedder(embedder);
        }
        let queue = aws.as_ref().and_then(|sdk| work_queue(&settings, sdk));
        if let Some(reranker) = build_reranker(&settings, &secrets, aws.as_ref())? {
            graph = graph.with_reranker(reranker);
        }
        let events = aws
            .as_ref()
            .and_then(|sdk| completion_events(&settings, sdk));
        let mut app = Self::from_parts(settings, graph, store, Arc::new(SystemClock));
        if let Some(events) = events {
            app.runs = app.runs.with_completion_events(events);
        }
        Ok(Self { queue, ..app })
    }

    /// An app from ready-made parts, without a work queue (tests, benchmarks, embedding in
    /// another binary).
    pub fn from_parts(
        settings: Settings,
        graph: RagGraph,
        store: Arc<dyn CheckpointStore>,
        clock: Arc<dyn Clock>,
    ) -> Self {
        Self {
            max_body_bytes: settings.max_body_bytes,
            runs: Runs::new(&settings, graph, store, clock),
            queue: None,
        }
    }

    /// The same app sending run events (`Run Finished`, `Run Waiting`) as `events` says.
    pub fn with_completion_events(mut self, events: crate::runs::CompletionEvents) -> Self {
        self.runs = self.runs.with_completion_events(events);
        self
    }

    /// This app with another `MAX_ACTIVE_RUNS_PER_CALLER` (tests).
    pub fn with_max_active_runs_per_caller(mut self, limit: Option<u32>) -> Self {
        self.runs = self.runs.with_max_active_runs_per_caller(limit);
        self
    }

    /// This app with another `MAX_REQUESTS_PER_CALLER_PER_MINUTE` (tests).
    pub fn with_max_requests_per_caller_per_minute(mut self, limit: Option<u32>) -> Self {
        self.runs = self.runs.with_max_requests_per_caller_per_minute(limit);
        self
    }

    /// The run life cycle: every entry point's calls.
    pub fn runs(&self) -> &Runs {
        &self.runs
    }

    /// `MAX_BODY_BYTES`: the largest HTTP body read.
    pub(crate) fn max_body_bytes(&self) -> usize {
        self.max_body_bytes
    }

    /// The SQS work queue, when `WORK_QUEUE_URL` is set.
    pub fn work_queue(&self) -> Option<&dyn WorkQueue> {
        self.queue.as_ref().map(|q| q as &dyn WorkQueue)
    }

    /// The run driver over this app's clients ([`Runs::workflow`]).
    pub fn workflow(&self) -> Workflow<'_> {
        self.runs.workflow()
    }

    /// The budget of one invocation ([`Runs::budget`]).
    pub fn budget(&self, invocation: Option<&lambda_runtime::Context>) -> Budget {
        self.runs.budget(invocation)
    }
}

impl AsRef<Runs> for App {
    fn as_ref(&self) -> &Runs {
        &self.runs
    }
}

/// The checkpoint table of `settings` (the run's store, the response cache and the sweeper's
/// lease index); each call, SDK retries included, is bounded like every AWS call during a run.
pub(crate) fn dynamo_store(
    settings: &Settings,
    sdk: &aws_config::SdkConfig,
    table: &str,
) -> DynamoStore {
    let timeout = aws::run_call_timeout(settings.budgets.deadline_margin);
    let config = DynamoStore::client_config(sdk, timeout);
    let client = aws_sdk_dynamodb::Client::from_conf(config);
    DynamoStore::new(client, table.to_owned(), settings.aws.run_ttl)
        .with_indexer(Arc::new(RunIndexer))
}

/// True when the chat model or the embeddings are Bedrock's (so the AWS configuration is read).
fn uses_bedrock(settings: &Settings) -> bool {
    settings.llm.provider == LlmProvider::Bedrock
        || settings
            .embeddings
            .as_ref()
            .is_some_and(|e| matches!(e.provider, EmbeddingsProvider::Bedrock { .. }))
        || settings
            .rerank
            .as_ref()
            .is_some_and(|r| r.provider == RerankProvider::Bedrock)
}

fn build_model(
    settings: &Settings,
    secrets: &SecretBundle,
    aws: Option<&aws_config::SdkConfig>,
) -> Result<Arc<dyn ChatModel>, StartupError> {
    Ok(match settings.llm.provider {
        LlmProvider::Offline => Arc::new(OfflineModel),
        LlmProvider::Bedrock => {
            let sdk = aws.ok_or_else(|| {
                crate::llm::LlmError::Config("no AWS configuration was read".into())
            })?;
            let mut config = BedrockConfig::new(&settings.llm.model);
            config.request_timeout = settings.llm.timeout;
            config.reasoning_effort = settings.llm.reasoning_effort;
            config.reasoning_tokens = settings.llm.window.reasoning_tokens;
            Arc::new(BedrockModel::new(sdk, config)?)
        }
        LlmProvider::OpenAi => {
            let mut config = OpenAiConfig::new(
                settings.llm.base_url.as_str().trim_end_matches('/'),
                &settings.llm.model,
            );
            config.request_timeout = settings.llm.timeout;
            config.reasoning_effort = settings.llm.reasoning_effort;
            config.api_key = settings
                .llm
                .api_key
                .clone()
                .or_else(|| secrets.llm_api_key.clone());
            Arc::new(OpenAiModel::new(config)?)
        }
    })
}

/// The keys in the `SECRETS_ID` secret, when one is configured.
async fn read_secrets(
    settings: &Settings,
    aws: Option<&aws_config::SdkConfig>,
) -> Result<SecretBundle, StartupError> {
    Ok(match (&settings.aws.secrets_id, aws) {
        (Some(id), Some(sdk)) => {
            let config = aws_sdk_secretsmanager::config::Builder::from(sdk)
                .timeout_config(aws::timeouts(sdk, aws::STARTUP_CALL))
                .build();
            let client = aws_sdk_secretsmanager::Client::from_conf(config);
            SecretsProvider::new(client, id.clone(), settings.aws.secrets_ttl)
                .get_json()
                .await?
        }
        _ => SecretBundle::default(),
    })
}

/// The keys in the `SECRETS_ID` secret (AWS is configured only when a secret is named).
pub(crate) async fn load_secrets(settings: &Settings) -> Result<SecretBundle, StartupError> {
    if settings.aws.secrets_id.is_none() {
        return Ok(SecretBundle::default());
    }
    read_secrets(settings, Some(&crate::tls::aws_sdk_config().await)).await
}

/// A bundle's vectors were made with the prefixes its manifest records, so queries use its
/// query prefix whatever `EMBEDDINGS_QUERY_PREFIX` says now; a different setting is reported.
fn warn_on_prefix_mismatch(kb: &dyn Retriever, settings: &Settings) {
    let configured = &settings.embeddings_tuning.query_prefix;
    if let Some(info) = kb.embedding() {
        if !configured.is_empty() && *configured != info.query_prefix {
            tracing::warn!(
                configured = %configured,
                recorded = %info.query_prefix,
                "EMBEDDINGS_QUERY_PREFIX differs from the prefix recorded in the bundle; \
                 queries use the bundle's (re-run ingest to change it)"
            );
        }
    }
}

/// The embeddings client, when `EMBEDDINGS_BASE_URL` or `EMBEDDINGS_PROVIDER=bedrock` is set;
/// Bedrock's uses `aws`, else the AWS configuration read now.
pub(crate) async fn build_embedder(
    settings: &Settings,
    secrets: &SecretBundle,
    aws: Option<&aws_config::SdkConfig>,
) -> Result<Option<Arc<dyn Embedder>>, StartupError> {
    let Some(e) = &settings.embeddings else {
        return Ok(None);
    };
    let base_url = match &e.provider {
        EmbeddingsProvider::OpenAi { base_url } => base_url,
        EmbeddingsProvider::Bedrock { dimensions } => {
            let sdk = match aws {
                Some(sdk) => sdk.clone(),
                None => crate::tls::aws_sdk_config().await,
            };
            let client = BedrockEmbeddings::new(&sdk, &e.model, *dimensions)
                .map_err(crate::search::RetrievalError::from)?;
            return Ok(Some(Arc::new(client)));
        }
    };
    let client = EmbeddingsClient::new(EmbeddingsConfig {
        base_url: base_url.as_str().trim_end_matches('/').to_owned(),
        model: e.model.clone(),
        api_key: e
            .api_key
            .clone()
            .or_else(|| secrets.embeddings_api_key.clone()),
    })
    .map_err(crate::search::RetrievalError::from)?;
    Ok(Some(Arc::new(client)))
}

/// The rerank client, when `RERANK_BASE_URL` is set.
fn build_reranker(
    settings: &Settings,
    secrets: &SecretBundle,
    aws: Option<&aws_config::SdkConfig>,
) -> Result<Option<Arc<dyn Reranker>>, StartupError> {
    let Some(r) = &settings.rerank else {
        return Ok(None);
    };
    let base_url = match (&r.provider, aws) {
        (RerankProvider::Http { base_url }, _) => base_url,
        (RerankProvider::Bedrock, Some(sdk)) => {
            let client = crate::bedrock_client::agent_client(
                sdk,
                crate::config::DEFAULT_LLM_CONNECT_TIMEOUT,
            );
            let region = sdk.region().map_or("us-east-1", |r| r.as_ref());
            let model = r.model.as_deref().unwrap_or_default();
            return Ok(Some(Arc::new(BedrockReranker::new(client, model, region))));
        }
        (RerankProvider::Bedrock, None) => unreachable!("uses_bedrock reads the AWS config"),
    };
    let client = RerankClient::new(RerankConfig {
        base_url: base_url.as_str().trim_end_matches('/').to_owned(),
        model: r.model.clone(),
        api_key: r.api_key.clone().or_else(|| secrets.rerank_api_key.clone()),
    })
    .map_err(crate::search::RetrievalError::from)?;
    Ok(Some(Arc::new(client)))
}

fn build_web(
    settings: &Settings,
    secrets: &SecretBundle,
) -> Result<Option<Arc<dyn WebSearch>>, StartupError> {
    let Some(web) = &settings.web else {
        return Ok(None);
    };
    let client = TavilyClient::new(TavilyConfig {
        base_url: web.base_url.as_str().trim_end_matches('/').to_owned(),
        api_key: web
            .api_key
            .clone()
            .or_else(|| secrets.web_search_api_key.clone()),
    })?;
    Ok(Some(Arc::new(client)))
}

/// `Run Finished` events on the EventBridge bus of `settings`, when `EVENT_BUS_NAME` is set;
/// each put (SDK retries included) is bounded like every AWS call during a run.
fn completion_events(settings: &Settings, sdk: &aws_config::SdkConfig) -> Option<CompletionEvents> {
    let bus = settings.aws.event_bus_name.clone()?;
    let timeout = aws::run_call_timeout(settings.budgets.deadline_margin);
    let config = aws_sdk_eventbridge::config::Builder::from(sdk)
        .timeout_config(aws::timeouts(sdk, timeout))
        .build();
    let client = aws_sdk_eventbridge::Client::from_conf(config);
    let sink = EventBridgeSink::new(
        client.clone(),
        bus.clone(),
        crate::events::EventKind::RunFinished,
    );
    let waiting = EventBridgeSink::new(client, bus, crate::events::EventKind::RunWaiting);
    Some(CompletionEvents::new(Box::new(sink)).with_waiting(Box::new(waiting)))
}

/// The SQS work queue of `settings`, when `WORK_QUEUE_URL` is set; each send (SDK retries
/// included) is bounded like every AWS call during a run.
pub fn work_queue(settings: &Settings, sdk: &aws_config::SdkConfig) -> Option<SqsQueue> {
    let url = settings.aws.work_queue_url.as_ref()?;
    let timeout = aws::run_call_timeout(settings.budgets.deadline_margin);
    let config = aws_sdk_sqs::config::Builder::from(sdk)
        .timeout_config(aws::timeouts(sdk, timeout))
        .build();
    Some(SqsQueue::new(
        aws_sdk_sqs::Client::from_conf(config),
        url.clone(),
    ))
}

/// The knowledge store named by the settings ([`crate::kb::open_store`]), with ingest reading
/// a `KB_PATH` folder of sources or the compiled-in sample.
pub(crate) async fn build_kb(
    settings: &Settings,
    aws: Option<&aws_config::SdkConfig>,
) -> Result<std::sync::Arc<dyn crate::kb::Retriever>, StartupError> {
    if let Some(store) = crate::kb::open_store(settings, aws).await? {
        return Ok(store);
    }
    let kb = match settings.kb_path.as_deref() {
        Some(path) => crate::ingest::load_kb(path)?,
        None => crate::ingest::sample_kb()?,
    };
    Ok(crate::kb::serve_local(kb, settings)?)
}
