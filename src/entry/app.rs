//! Builds every client once from [`Settings`]: model, knowledge base, web search, checkpoint
//! store (which also holds the response cache when `LLM_CACHE_TTL_SECONDS` is set). The CLI and
//! both Lambda functions share this wiring.

use crate::aws;
use crate::config::{LlmProvider, Settings};
use crate::engine::{Budget, Clock, SystemClock};
use crate::llm::{CachingModel, ChatModel, OfflineModel, OpenAiConfig, OpenAiModel};
use crate::rag::{RagGraph, RagLimits, Workflow};
use crate::retrieval::s3::{self, BundleStore};
use crate::retrieval::{
    Embedder, EmbeddingsClient, EmbeddingsConfig, KnowledgeBase, LiveKnowledge, LoadOptions,
    Retriever, TavilyClient, TavilyConfig, WebSearch,
};
use crate::secrets::{SecretBundle, SecretsProvider};
use crate::store::{CacheStore, CheckpointStore, DynamoStore, FileStore};
use std::sync::Arc;

/// Why the application could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartupError {
    /// Bad configuration.
    #[error(transparent)]
    Config(#[from] crate::config::ConfigError),
    /// The knowledge base could not be loaded.
    #[error(
        "knowledge base: {0}; check KB_PATH (a folder of documents, or the output of \
         `bounded-rag ingest`), or unset it for the bundled sample"
    )]
    Kb(#[from] crate::retrieval::RetrievalError),
    /// A model client could not be built.
    #[error("model client: {0}; check LLM_PROVIDER, LLM_BASE_URL and LLM_MODEL")]
    Llm(#[from] crate::llm::LlmError),
    /// The checkpoint store could not be opened.
    #[error("checkpoint store: {0}; check that STATE_DIR is a writable folder")]
    Store(#[from] crate::store::StoreError),
    /// Secrets Manager could not be read.
    #[error(
        "secrets: {0}; check SECRETS_ID, the AWS region and credentials, and that the secret \
         is a JSON object"
    )]
    Secrets(#[from] crate::secrets::SecretsError),
}

/// Everything a run needs, built once per process.
pub struct App {
    /// Validated settings.
    pub settings: Settings,
    /// The graph with its clients.
    pub graph: RagGraph,
    /// Checkpoint store.
    pub store: Arc<dyn CheckpointStore>,
    /// Time source.
    pub clock: Arc<dyn Clock>,
    /// AWS configuration, loaded only when an AWS service is configured.
    pub aws: Option<aws_config::SdkConfig>,
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
        {
            Some(aws_config::load_defaults(aws_config::BehaviorVersion::latest()).await)
        } else {
            None
        };
        let secrets = read_secrets(&settings, aws.as_ref()).await?;
        let embedder = build_embedder(&settings, &secrets)?;
        let kb = build_kb(&settings, aws.as_ref()).await?;
        let web = build_web(&settings, &secrets)?;
        let limits = RagLimits {
            max_retries: settings.limits.max_retries,
            max_regenerations: settings.limits.max_regenerations,
        };
        // One store holds the checkpoints and the cached replies, as two views of one client.
        let (store, cache): (Arc<dyn CheckpointStore>, Arc<dyn CacheStore>) =
            match (&settings.aws.checkpoint_table, &aws) {
                (Some(table), Some(sdk)) => {
                    let timeout = aws::run_call_timeout(settings.budgets.deadline_margin);
                    let config = DynamoStore::client_config(sdk, timeout);
                    let client = aws_sdk_dynamodb::Client::from_conf(config);
                    let store = Arc::new(DynamoStore::new(
                        client,
                        table.clone(),
                        settings.aws.run_ttl,
                    ));
                    (store.clone(), store)
                }
                _ => {
                    let store = FileStore::open(&settings.state_dir)?;
                    let store = Arc::new(store.with_ttl(settings.aws.run_ttl));
                    (store.clone(), store)
                }
            };
        let mut model = build_model(&settings, &secrets)?;
        if let Some(ttl) = settings.llm.cache_ttl {
            model = Arc::new(CachingModel::new(model, cache, ttl));
        }
        let mut graph = RagGraph::new(model, kb, web, limits);
        if let Some(embedder) = embedder {
            graph = graph.with_embedder(embedder);
        }
        Ok(Self {
            graph,
            settings,
            store,
            clock: Arc::new(SystemClock),
            aws,
        })
    }

    /// The workflow service over this app's clients.
    pub fn workflow(&self) -> Workflow<'_> {
        Workflow {
            graph: &self.graph,
            store: self.store.as_ref(),
            clock: self.clock.as_ref(),
            continue_on_deadline: self.settings.aws.work_queue_url.is_some(),
            lease_grace: aws::lease_grace(self.settings.budgets.deadline_margin),
        }
    }

    /// The budget of one invocation: the deadline (if any) minus the margin, capped by
    /// `RUN_TIMEOUT_MS`, with the configured step limit and `MAX_TOKENS_PER_RUN` (which a
    /// request's `max_tokens` may lower).
    pub fn budget(&self, deadline_ms: Option<u64>) -> Budget {
        Budget::from_deadline(
            self.settings.limits.recursion_limit,
            deadline_ms,
            self.clock.now_ms(),
            self.settings.budgets.deadline_margin,
            self.settings.budgets.run_timeout,
        )
        .with_max_tokens(self.settings.limits.max_tokens_per_run)
    }
}

fn build_model(
    settings: &Settings,
    secrets: &SecretBundle,
) -> Result<Arc<dyn ChatModel>, StartupError> {
    Ok(match settings.llm.provider {
        LlmProvider::Offline => Arc::new(OfflineModel),
        LlmProvider::OpenAi => {
            let mut config = OpenAiConfig::new(
                settings.llm.base_url.as_str().trim_end_matches('/'),
                &settings.llm.model,
            );
            config.request_timeout = settings.llm.timeout;
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
    let sdk = aws_config::load_defaults(aws_config::BehaviorVersion::latest()).await;
    read_secrets(settings, Some(&sdk)).await
}

/// The knowledge base: `KB_URI` (S3, refreshed), else `KB_PATH`, else the bundled sample.
async fn build_kb(
    settings: &Settings,
    aws: Option<&aws_config::SdkConfig>,
) -> Result<Arc<dyn Retriever>, StartupError> {
    let model = settings.embeddings.as_ref().map(|e| e.model.clone());
    if let (Some(location), Some(sdk)) = (&settings.kb_uri, aws) {
        let store = BundleStore::new(s3::client(sdk), location.clone());
        let options = LoadOptions {
            embedding_model: model,
            refresh_every: settings.kb_refresh,
            max_passages_per_document: settings.kb_max_passages_per_document,
            ..LoadOptions::default()
        };
        return Ok(Arc::new(LiveKnowledge::open(store, options).await?));
    }
    let kb = match &settings.kb_path {
        Some(path) => KnowledgeBase::load(path)?,
        None => KnowledgeBase::embedded()?,
    }
    .with_max_passages_per_document(settings.kb_max_passages_per_document);
    crate::retrieval::check_compatible(&kb, model.as_deref())?;
    Ok(Arc::new(kb))
}

/// The embeddings client, when `EMBEDDINGS_BASE_URL` is set.
pub(crate) fn build_embedder(
    settings: &Settings,
    secrets: &SecretBundle,
) -> Result<Option<Arc<dyn Embedder>>, StartupError> {
    let Some(e) = &settings.embeddings else {
        return Ok(None);
    };
    let client = EmbeddingsClient::new(EmbeddingsConfig {
        base_url: e.base_url.as_str().trim_end_matches('/').to_owned(),
        model: e.model.clone(),
        api_key: e
            .api_key
            .clone()
            .or_else(|| secrets.embeddings_api_key.clone()),
    })
    .map_err(crate::retrieval::RetrievalError::from)?;
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

impl App {
    /// The SQS work queue, when `WORK_QUEUE_URL` is set.
    pub fn work_queue(&self) -> Option<crate::queue::SqsQueue> {
        sqs_queue(&self.settings, self.aws.as_ref()?)
    }
}

/// The SQS work queue of `settings`, when `WORK_QUEUE_URL` is set; each send (SDK retries
/// included) is bounded like every AWS call during a run.
pub(crate) fn sqs_queue(
    settings: &Settings,
    sdk: &aws_config::SdkConfig,
) -> Option<crate::queue::SqsQueue> {
    let url = settings.aws.work_queue_url.as_ref()?;
    let timeout = aws::run_call_timeout(settings.budgets.deadline_margin);
    let config = aws_sdk_sqs::config::Builder::from(sdk)
        .timeout_config(aws::timeouts(sdk, timeout))
        .build();
    Some(crate::queue::SqsQueue::new(
        aws_sdk_sqs::Client::from_conf(config),
        url.clone(),
    ))
}

impl App {
    /// An app from ready-made parts (tests, benchmarks, embedding in another binary).
    pub fn from_parts(
        settings: Settings,
        graph: RagGraph,
        store: Arc<dyn CheckpointStore>,
        clock: Arc<dyn Clock>,
    ) -> Self {
        Self {
            settings,
            graph,
            store,
            clock,
            aws: None,
        }
    }
}
