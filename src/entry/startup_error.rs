//! Why the application could not start ([`StartupError`]), each cause with what to check.

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
    Kb(#[from] crate::search::RetrievalError),
    /// The `KB_PATH` folder (or the sample) could not be read.
    #[error(
        "knowledge base: {0}; check KB_PATH (a folder of documents, or the output of \
         `bounded-rag ingest`), or unset it for the bundled sample"
    )]
    KbSources(#[from] crate::ingest::IngestError),
    /// The knowledge base published at `KB_URI` could not be loaded.
    #[error(
        "knowledge base: cannot load KB_URI={uri}: {source}; check the AWS credentials, the region and \
         endpoint (AWS_REGION, AWS_ENDPOINT_URL), and that a bundle was published there with \
         `bounded-rag kb publish`"
    )]
    KbUri {
        /// `KB_URI` as set.
        uri: String,
        /// What failed, naming the `s3://bucket/key` tried.
        source: crate::search::RetrievalError,
    },
    /// The PostgreSQL store at `KB_URI` could not be opened.
    #[error(
        "knowledge base: cannot open KB_URI={uri}: {source}; check that the database is \
         reachable, its user and password (in the URL or its `secret=`), its TLS (`sslmode=`, \
         `sslrootcert=`), and that `bounded-rag ingest DIR --out URL` wrote it"
    )]
    KbStore {
        /// `KB_URI`, without its password.
        uri: String,
        /// What failed.
        source: crate::search::RetrievalError,
    },
    /// The web search client could not be built.
    #[error("web search: {0}; check WEB_SEARCH_BASE_URL")]
    WebSearch(#[from] crate::search::WebSearchError),
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

impl From<crate::kb::OpenError> for StartupError {
    fn from(e: crate::kb::OpenError) -> Self {
        use crate::kb::OpenError;
        match e {
            OpenError::Bundle { uri, source } => Self::KbUri { uri, source },
            OpenError::Store { uri, source } => Self::KbStore { uri, source },
        }
    }
}
