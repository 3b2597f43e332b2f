//! Amazon Bedrock's `Rerank` (`RERANK_PROVIDER=bedrock`, `RERANK_MODEL` a rerank model id such as
//! `amazon.rerank-v1:0` or `cohere.rerank-v3-5:0`, or its ARN): the query and the documents
//! inline, `numberOfResults` = `top_n`. The answer is checked as the HTTP client's is (indices
//! in range and distinct, finite scores) and sorted best first. Failures are classified once
//! ([`crate::bedrock_client::failure`]) into the same [`RerankError`] kinds, so the workflow's node
//! policy retries the transient ones and never a permanent one.
use super::client::ranked;
use super::error::RerankError;
use super::reranker::{Ranked, Reranker};
use crate::bedrock_client::{failure, Failure, Purpose};
use async_trait::async_trait;
use aws_sdk_bedrockagentruntime::types::{
    BedrockRerankingConfiguration, BedrockRerankingModelConfiguration, RerankDocument,
    RerankDocumentType, RerankQuery, RerankQueryContentType, RerankSource, RerankSourceType,
    RerankTextDocument, RerankingConfiguration, RerankingConfigurationType,
};
use aws_sdk_bedrockagentruntime::Client;
use std::time::Duration;

/// A Bedrock rerank model. Built once; clones share the client.
#[derive(Debug, Clone)]
pub struct BedrockReranker {
    client: Client,
    model_arn: String,
}

impl BedrockReranker {
    /// Reranks with `model` (an id, made an ARN in `region`, or an ARN as given).
    pub(crate) fn new(client: Client, model: &str, region: &str) -> Self {
        Self {
            client,
            model_arn: model_arn(model, region),
        }
    }
}

/// `arn:aws:bedrock:REGION::foundation-model/ID` for a model id; an ARN as given.
fn model_arn(model: &str, region: &str) -> String {
    if model.starts_with("arn:") {
        model.to_owned()
    } else {
        format!("arn:aws:bedrock:{region}::foundation-model/{model}")
    }
}

fn text(text: &str) -> RerankTextDocument {
    RerankTextDocument::builder().text(text).build()
}

#[async_trait]
impl Reranker for BedrockReranker {
    async fn rerank(
        &self,
        query: &str,
        documents: &[String],
        top_n: usize,
        timeout: Duration,
    ) -> Result<Vec<Ranked>, RerankError> {
        let query = RerankQuery::builder()
            .r#type(RerankQueryContentType::Text)
            .text_query(text(query))
            .build()
            .expect("type is set");
        let sources = documents.iter().map(|d| {
            let document = RerankDocument::builder()
                .r#type(RerankDocumentType::Text)
                .text_document(text(d))
                .build()
                .expect("type is set");
            RerankSource::builder()
                .r#type(RerankSourceType::Inline)
                .inline_document_source(document)
                .build()
                .expect("type and document are set")
        });
        let model = BedrockRerankingModelConfiguration::builder()
            .model_arn(&self.model_arn)
            .build()
            .expect("model ARN is set");
        let configuration = RerankingConfiguration::builder()
            .r#type(RerankingConfigurationType::BedrockRerankingModel)
            .bedrock_reranking_configuration(
                BedrockRerankingConfiguration::builder()
                    .number_of_results(top_n.min(documents.len()).max(1) as i32)
                    .model_configuration(model)
                    .build(),
            )
            .build()
            .expect("type is set");
        let call = self
            .client
            .rerank()
            .queries(query)
            .set_sources(Some(sources.collect()))
            .reranking_configuration(configuration)
            .send();
        let output = match tokio::time::timeout(timeout, call).await {
            Err(_) => return Err(RerankError::Timeout { after: timeout }),
            Ok(Err(err)) => {
                return Err(match failure(&err, Purpose::Rerank) {
                    Failure::Timeout => RerankError::Timeout { after: timeout },
                    Failure::Connect(m) | Failure::Broken(m) => RerankError::Connect(m),
                    Failure::Config(m) => RerankError::Config(m),
                    Failure::Service {
                        status, message, ..
                    } => RerankError::Http {
                        status,
                        message,
                        retry_after: None,
                    },
                })
            }
            Ok(Ok(output)) => output,
        };
        let pairs = output.results().iter().map(|r| {
            (
                usize::try_from(r.index()).unwrap_or(usize::MAX),
                r.relevance_score(),
            )
        });
        ranked(pairs, documents.len(), top_n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_model_id_becomes_its_foundation_model_arn_and_an_arn_is_kept() {
        assert_eq!(
            model_arn("amazon.rerank-v1:0", "us-west-2"),
            "arn:aws:bedrock:us-west-2::foundation-model/amazon.rerank-v1:0"
        );
        let arn = "arn:aws:bedrock:eu-central-1::foundation-model/cohere.rerank-v3-5:0";
        assert_eq!(model_arn(arn, "us-west-2"), arn);
    }
}
