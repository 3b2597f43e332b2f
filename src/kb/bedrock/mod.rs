//! An Amazon Bedrock knowledge base as the knowledge store (`KB_URI=bedrock-kb://ID`): every
//! knowledge-base step is one `Retrieve` call, with `numberOfResults`, the search type asked
//! for (`?search=hybrid|semantic`) and our filters as Bedrock's (see [`retrieval_filter`]).
//!
//! Bedrock holds text passages only: a request's entity, relation and community retrieval find
//! nothing there, as in a bundle ingested without JSONL entities. The per-document cap is kept
//! by asking for more results and capping them here. Failures are classified once
//! ([`crate::bedrock_client::failure`]); the workflow's node policy retries the transient ones, as
//! for every remote call.
//!
//! Citations name the source's location (`s3://bucket/key`, or a web or connector URL) and,
//! when Bedrock reports it, the page (`#page=N`).

mod result;
mod retrieval_filter;

use crate::bedrock_client::{failure, Failure, Purpose};
use crate::config::{BedrockKbLocation, BedrockSearch};
use crate::error::ErrorClass;
use crate::kb::retriever::Retriever;
use crate::knowledge::Document;
use crate::search::RetrievalError;
use crate::search::RetrievalOptions;
use crate::search::{per_source, source_key};
use async_trait::async_trait;
use aws_sdk_bedrockagentruntime::types::{
    KnowledgeBaseQuery, KnowledgeBaseRetrievalConfiguration,
    KnowledgeBaseVectorSearchConfiguration, SearchType,
};
use aws_sdk_bedrockagentruntime::Client;
use std::time::Duration;

/// Results asked for per result wanted when a per-document cap may skip some.
const OVERSAMPLE: usize = 3;
/// Most results one `Retrieve` returns.
const MAX_RESULTS: usize = 100;

/// A Bedrock knowledge base, searched through `Retrieve`. Built once; cheap to call.
#[derive(Debug, Clone)]
pub struct BedrockKnowledgeBase {
    client: Client,
    location: BedrockKbLocation,
    max_per_document: usize,
    timeout: Duration,
}

impl BedrockKnowledgeBase {
    /// The knowledge base at `location`, each call bounded by `timeout`.
    pub(crate) fn new(client: Client, location: BedrockKbLocation, timeout: Duration) -> Self {
        Self {
            client,
            location,
            max_per_document: crate::config::DEFAULT_MAX_PASSAGES_PER_DOCUMENT,
            timeout,
        }
    }

    /// Caps the passages of one source document in every result list (0: no cap).
    pub(crate) fn with_max_passages_per_document(mut self, max: usize) -> Self {
        self.max_per_document = max;
        self
    }

    fn error(&self, message: String, class: ErrorClass) -> RetrievalError {
        RetrievalError::Store {
            store: format!("bedrock-kb://{}", self.location.id),
            message,
            class,
        }
    }
}

#[async_trait]
impl Retriever for BedrockKnowledgeBase {
    async fn retrieve(
        &self,
        query: &str,
        options: &RetrievalOptions,
    ) -> Result<Vec<Document>, RetrievalError> {
        if !options.episodes || options.limit == 0 {
            return Ok(Vec::new());
        }
        let filter = match &options.filter {
            Some(f) => {
                retrieval_filter::to_bedrock(f).map_err(|e| self.error(e, ErrorClass::Permanent))?
            }
            None => None,
        };
        let wanted = if self.max_per_document == 0 {
            options.limit
        } else {
            options.limit * OVERSAMPLE
        };
        let search = KnowledgeBaseVectorSearchConfiguration::builder()
            .number_of_results(wanted.min(MAX_RESULTS) as i32)
            .set_override_search_type(self.location.search.map(|s| match s {
                BedrockSearch::Hybrid => SearchType::Hybrid,
                BedrockSearch::Semantic => SearchType::Semantic,
            }))
            .set_filter(filter)
            .build();
        let call = self
            .client
            .retrieve()
            .knowledge_base_id(&self.location.id)
            .retrieval_query(KnowledgeBaseQuery::builder().text(query).build())
            .retrieval_configuration(
                KnowledgeBaseRetrievalConfiguration::builder()
                    .vector_search_configuration(search)
                    .build(),
            )
            .send();
        let output = match tokio::time::timeout(self.timeout, call).await {
            Err(_) => {
                return Err(self.error(
                    format!("Retrieve timed out after {} ms", self.timeout.as_millis()),
                    ErrorClass::Transient,
                ))
            }
            Ok(Err(err)) => {
                let (message, class) = match failure(&err, Purpose::Knowledge) {
                    Failure::Timeout => ("Retrieve timed out".to_owned(), ErrorClass::Transient),
                    Failure::Connect(m) | Failure::Broken(m) => (m, ErrorClass::Transient),
                    Failure::Config(m) => (m, ErrorClass::Permanent),
                    Failure::Service { message, class, .. } => (message, class),
                };
                return Err(self.error(message, class));
            }
            Ok(Ok(output)) => output,
        };
        let documents = output
            .retrieval_results()
            .iter()
            .enumerate()
            .filter_map(|(rank, r)| result::document(r, rank));
        Ok(per_source(
            documents,
            |d| source_key(d.url.split('#').next().unwrap_or_default()),
            self.max_per_document,
            options.limit,
        ))
    }

    fn is_remote(&self) -> bool {
        true
    }
}
