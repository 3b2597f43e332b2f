//! The knowledge a function serves from S3 (`KB_URI`): loaded at cold start, re-checked on a
//! warm instance at most every `KB_REFRESH_SECONDS`, and swapped between runs.
//!
//! A run takes a [`Retriever::snapshot`] when it starts and searches that version until it
//! ends, so a swap never lands inside a step (nor inside a run). The check that is due is
//! started in the background by the snapshot that finds it due: the pointer is read and, when
//! it names another version, that bundle is downloaded, checked and swapped in for the runs
//! that start afterwards. Any failure (missing, corrupt, incompatible) leaves the last good
//! version serving and is logged with its reason.
use super::knowledge_base::KnowledgeBase;
use super::s3::BundleStore;
use crate::clock::{Clock, SystemClock};
use crate::config::{
    DEFAULT_KB_CACHE_DIR, DEFAULT_KB_MEMORY_LIMIT, DEFAULT_KB_REFRESH,
    DEFAULT_MAX_PASSAGES_PER_DOCUMENT,
};
use crate::kb::retriever::{Explained, Retriever};
use crate::knowledge::Document;
use crate::knowledge::EmbeddingInfo;
use crate::search::RetrievalError;
use crate::search::RetrievalOptions;
use async_trait::async_trait;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

/// How a bundle is loaded and kept fresh.
#[derive(Debug, Clone)]
pub struct LoadOptions {
    /// Bundles of at most this many bytes are held in memory; larger ones go to `cache_dir`.
    pub memory_limit: u64,
    /// Folder for bundles too large for memory (Lambda: under `/tmp`).
    pub cache_dir: PathBuf,
    /// The configured embedding model (`EMBEDDINGS_MODEL`): a bundle whose vectors come from
    /// another model is incompatible (its vectors and the query's would not compare).
    pub embedding_model: Option<String>,
    /// The configured embeddings provider (`EMBEDDINGS_PROVIDER`) and the dimensions it
    /// returns, when known: a bundle of another provider or size is incompatible too.
    pub embedding_provider: Option<(String, Option<usize>)>,
    /// `KB_REFRESH_SECONDS`: how often a warm instance checks the pointer; `None` = never.
    pub refresh_every: Option<Duration>,
    /// Tells when a refresh is due.
    pub clock: Arc<dyn Clock>,
    /// `KB_MAX_PASSAGES_PER_DOCUMENT` (see [`KnowledgeBase::with_max_passages_per_document`]).
    pub max_passages_per_document: usize,
}

impl Default for LoadOptions {
    /// Config's defaults (`config/knowledge.rs`), no embeddings check, the system clock.
    fn default() -> Self {
        Self {
            memory_limit: DEFAULT_KB_MEMORY_LIMIT,
            cache_dir: std::env::temp_dir().join(DEFAULT_KB_CACHE_DIR),
            embedding_model: None,
            embedding_provider: None,
            refresh_every: Some(DEFAULT_KB_REFRESH),
            clock: Arc::new(SystemClock),
            max_passages_per_document: DEFAULT_MAX_PASSAGES_PER_DOCUMENT,
        }
    }
}

/// What a refresh did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RefreshOutcome {
    /// The pointer still names the version being served.
    Unchanged(String),
    /// A new version now serves the runs that start from here on.
    Swapped {
        /// The version served before.
        from: String,
        /// The version served now.
        to: String,
    },
}

/// A bundle on S3, loaded, and swapped for newer ones between runs.
#[derive(Clone)]
pub struct LiveKnowledge {
    inner: Arc<Inner>,
}

struct Inner {
    store: BundleStore,
    options: LoadOptions,
    current: RwLock<Arc<KnowledgeBase>>,
    /// When the pointer was last checked (epoch milliseconds).
    last_check_ms: AtomicU64,
    refreshing: AtomicBool,
}

impl std::fmt::Debug for LiveKnowledge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LiveKnowledge")
            .field("location", &self.inner.store.location().to_string())
            .field("version", &self.current().version())
            .finish_non_exhaustive()
    }
}

impl LiveKnowledge {
    /// Loads the version the pointer names. Any problem is an error: a function must not
    /// start without its knowledge.
    pub async fn open(store: BundleStore, options: LoadOptions) -> Result<Self, RetrievalError> {
        let kb = load(&store, &options, None).await?;
        let now_ms = options.clock.now_ms();
        Ok(Self {
            inner: Arc::new(Inner {
                store,
                options,
                current: RwLock::new(Arc::new(kb)),
                last_check_ms: AtomicU64::new(now_ms),
                refreshing: AtomicBool::new(false),
            }),
        })
    }

    /// The version serving new runs.
    pub fn current(&self) -> Arc<KnowledgeBase> {
        match self.inner.current.read() {
            Ok(kb) => kb.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// Checks the pointer now and swaps in the version it names if that is another one.
    /// On an error the current version keeps serving.
    pub async fn refresh(&self) -> Result<RefreshOutcome, RetrievalError> {
        let now_ms = self.inner.options.clock.now_ms();
        self.inner.last_check_ms.store(now_ms, Ordering::Release);
        let current = self.current();
        let from = current.version().to_owned();
        let pointer = self.inner.store.pointer().await?;
        if pointer.version == from {
            return Ok(RefreshOutcome::Unchanged(from));
        }
        let kb = load(
            &self.inner.store,
            &self.inner.options,
            Some(&pointer.version),
        )
        .await?;
        let to = kb.version().to_owned();
        match self.inner.current.write() {
            Ok(mut slot) => *slot = Arc::new(kb),
            Err(poisoned) => *poisoned.into_inner() = Arc::new(kb),
        }
        tracing::info!(from = %from, to = %to, "knowledge base swapped in");
        // A bundle downloaded to disk is no longer needed there: runs still searching it keep
        // their memory maps (Linux unlinks the files only when the last map goes).
        if let Some(dir) = current.origin() {
            if dir.starts_with(&self.inner.options.cache_dir) {
                if let Err(error) = std::fs::remove_dir_all(dir) {
                    tracing::warn!(%error, dir = %dir.display(), "could not remove an old bundle");
                }
            }
        }
        Ok(RefreshOutcome::Swapped { from, to })
    }

    /// Starts a background refresh when one is due and none is running.
    fn refresh_if_due(&self) {
        let Some(every) = self.inner.options.refresh_every else {
            return;
        };
        let last_ms = self.inner.last_check_ms.load(Ordering::Acquire);
        let since = self.inner.options.clock.now_ms().saturating_sub(last_ms);
        let due = Duration::from_millis(since) >= every;
        if !due || self.inner.refreshing.swap(true, Ordering::AcqRel) {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            self.inner.refreshing.store(false, Ordering::Release);
            return;
        };
        let this = self.clone();
        runtime.spawn(async move {
            match this.refresh().await {
                Ok(RefreshOutcome::Unchanged(_)) | Ok(RefreshOutcome::Swapped { .. }) => {}
                Err(error) => tracing::warn!(
                    %error,
                    serving = %this.current().version(),
                    "knowledge base refresh failed; the last good version keeps serving"
                ),
            }
            this.inner.refreshing.store(false, Ordering::Release);
        });
    }
}

/// Loads `version` (or the pointer's) and checks it fits this function's embeddings.
async fn load(
    store: &BundleStore,
    options: &LoadOptions,
    version: Option<&str>,
) -> Result<KnowledgeBase, RetrievalError> {
    let version = match version {
        Some(v) => v.to_owned(),
        None => store.pointer().await?.version,
    };
    let fetched = store
        .fetch(&version, options.memory_limit, &options.cache_dir)
        .await?;
    let (provider, dimensions) = match &options.embedding_provider {
        Some((provider, dimensions)) => (Some(provider.as_str()), *dimensions),
        None => (None, None),
    };
    check_embedding(
        &fetched.kb,
        provider,
        options.embedding_model.as_deref(),
        dimensions,
    )?;
    tracing::info!(
        location = %store.location(),
        version = %version,
        bytes = fetched.bytes,
        in_memory = fetched.in_memory,
        stats = %fetched.kb.stats(),
        "knowledge base loaded"
    );
    Ok(fetched
        .kb
        .with_max_passages_per_document(options.max_passages_per_document))
}

/// A bundle with vectors of another model than the configured one cannot serve hybrid
/// queries: refuse it rather than rank by meaningless similarities.
pub fn check_compatible(
    kb: &KnowledgeBase,
    configured_model: Option<&str>,
) -> Result<(), RetrievalError> {
    check_embedding(kb, None, configured_model, None)
}

/// Like [`check_compatible`], and also refuses a bundle whose vectors come from another
/// provider (`EMBEDDINGS_PROVIDER`) or have another size than the configured embeddings'
/// (`EMBEDDINGS_DIMENSIONS`); `None` checks nothing about that setting.
pub(crate) fn check_embedding(
    kb: &KnowledgeBase,
    provider: Option<&str>,
    model: Option<&str>,
    dimensions: Option<usize>,
) -> Result<(), RetrievalError> {
    let origin = kb.origin().map(PathBuf::from).unwrap_or_default();
    check_vectors(kb.embedding(), &origin, provider, model, dimensions)
}

/// [`check_embedding`] for any store: `recorded` is what its vectors were made with, `origin`
/// names the store in the message.
pub(crate) fn check_vectors(
    recorded: Option<&EmbeddingInfo>,
    origin: &std::path::Path,
    provider: Option<&str>,
    model: Option<&str>,
    dimensions: Option<usize>,
) -> Result<(), RetrievalError> {
    let Some(bundle) = recorded else {
        return Ok(());
    };
    let mismatch = |what: &str, recorded: &str, var: &str, configured: &str| {
        Err(RetrievalError::Invalid {
            path: origin.to_path_buf(),
            message: format!(
                "incompatible bundle: its vectors come from {what} `{recorded}` but {var} is \
                 `{configured}`; ingest with the same settings or change {var}"
            ),
        })
    };
    if let Some(provider) = provider.filter(|p| *p != bundle.provider()) {
        return mismatch(
            "provider",
            bundle.provider(),
            "EMBEDDINGS_PROVIDER",
            provider,
        );
    }
    if let Some(model) = model.filter(|m| *m != bundle.model) {
        return mismatch("model", &bundle.model, "EMBEDDINGS_MODEL", model);
    }
    if let Some(dimensions) = dimensions.filter(|d| *d != bundle.dimensions) {
        return mismatch(
            "a model of",
            &format!("{} dimensions", bundle.dimensions),
            "EMBEDDINGS_DIMENSIONS",
            &dimensions.to_string(),
        );
    }
    Ok(())
}

#[async_trait]
impl Retriever for LiveKnowledge {
    async fn retrieve(
        &self,
        query: &str,
        options: &RetrievalOptions,
    ) -> Result<Vec<Document>, RetrievalError> {
        self.current().search(query, options)
    }

    async fn retrieve_hybrid(
        &self,
        query: &str,
        vector: &[f32],
        options: &RetrievalOptions,
    ) -> Result<Vec<Document>, RetrievalError> {
        self.current().search_hybrid(query, vector, options)
    }

    async fn explain(
        &self,
        query: &str,
        vector: Option<&[f32]>,
        options: &RetrievalOptions,
    ) -> Result<Vec<Explained>, RetrievalError> {
        self.current().search_explained(query, vector, options)
    }

    fn embedding(&self) -> Option<EmbeddingInfo> {
        self.current().embedding().cloned()
    }

    fn description(&self) -> Option<String> {
        self.current().description().map(str::to_owned)
    }

    fn version(&self) -> Option<String> {
        Some(self.current().version().to_owned())
    }

    fn snapshot(&self) -> Option<Arc<dyn Retriever>> {
        self.refresh_if_due();
        Some(self.current())
    }
}
