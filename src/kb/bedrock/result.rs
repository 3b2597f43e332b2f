//! One Bedrock `Retrieve` result as a [`Document`]: its text, where it came from (the S3 object,
//! or the web or connector location), the page when Bedrock reports one, and its score.

use crate::knowledge::{DocKind, Document};
use aws_sdk_bedrockagentruntime::types::KnowledgeBaseRetrievalResult;
use aws_smithy_types::{Document as Value, Number};

/// Bedrock's metadata key of the source's location.
const SOURCE_URI: &str = "x-amz-bedrock-kb-source-uri";
/// Bedrock's metadata key of a passage's page in a PDF.
const PAGE: &str = "x-amz-bedrock-kb-document-page-number";
/// Bedrock's metadata key of a passage's own id.
const CHUNK_ID: &str = "x-amz-bedrock-kb-chunk-id";

/// The result at `rank` as a document; `None` for a result without text.
pub(super) fn document(result: &KnowledgeBaseRetrievalResult, rank: usize) -> Option<Document> {
    let text = result.content()?.text();
    if text.trim().is_empty() {
        return None;
    }
    let source = location(result).unwrap_or_else(|| format!("bedrock-kb:result-{rank}"));
    let page = metadata(result, PAGE).and_then(number);
    let url = match page {
        Some(page) => format!("{source}#page={page}"),
        None => source.clone(),
    };
    let id = metadata(result, CHUNK_ID)
        .and_then(|v| v.as_string().map(str::to_owned))
        .unwrap_or_else(|| url.clone());
    Some(Document {
        id,
        title: title(&source),
        url,
        content: text.to_owned(),
        score: result.score().unwrap_or_default() as f32,
        kind: DocKind::Episode,
        clear_match: false,
        from_graph: false,
        vector_rank: None,
    })
}

/// The source's location: the S3 URI, a web or connector URL, else the source-URI metadata.
fn location(result: &KnowledgeBaseRetrievalResult) -> Option<String> {
    let from_location = result.location().and_then(|l| {
        l.s3_location()
            .and_then(|s3| s3.uri())
            .or_else(|| l.web_location().and_then(|w| w.url()))
            .or_else(|| l.confluence_location().and_then(|c| c.url()))
            .or_else(|| l.share_point_location().and_then(|s| s.url()))
            .or_else(|| l.salesforce_location().and_then(|s| s.url()))
            .or_else(|| l.custom_document_location().and_then(|c| c.id()))
    });
    from_location
        .map(str::to_owned)
        .or_else(|| metadata(result, SOURCE_URI).and_then(|v| v.as_string().map(str::to_owned)))
}

fn metadata<'a>(result: &'a KnowledgeBaseRetrievalResult, key: &str) -> Option<&'a Value> {
    result.metadata()?.get(key)
}

/// A page number, as Bedrock sends it (a number, or a number in a string).
fn number(value: &Value) -> Option<u64> {
    match value {
        Value::Number(Number::PosInt(n)) => Some(*n),
        Value::Number(Number::Float(f)) if *f >= 1.0 && f.fract() == 0.0 => Some(*f as u64),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

/// The last segment of a location (`s3://b/docs/guide.pdf` → `guide.pdf`).
fn title(source: &str) -> String {
    let path = source.split(['?', '#']).next().unwrap_or(source);
    path.trim_end_matches('/')
        .rsplit('/')
        .next()
        .filter(|s| !s.is_empty())
        .unwrap_or(source)
        .to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use aws_sdk_bedrockagentruntime::types::{
        RetrievalResultContent, RetrievalResultLocation, RetrievalResultLocationType,
        RetrievalResultS3Location,
    };
    use std::collections::HashMap;

    fn result(
        text: &str,
        uri: Option<&str>,
        meta: &[(&str, Value)],
    ) -> KnowledgeBaseRetrievalResult {
        let mut builder = KnowledgeBaseRetrievalResult::builder()
            .content(RetrievalResultContent::builder().text(text).build())
            .score(0.75);
        if let Some(uri) = uri {
            builder = builder.location(
                RetrievalResultLocation::builder()
                    .r#type(RetrievalResultLocationType::S3)
                    .s3_location(RetrievalResultS3Location::builder().uri(uri).build())
                    .build()
                    .unwrap(),
            );
        }
        let meta: HashMap<String, Value> = meta
            .iter()
            .map(|(k, v)| ((*k).to_owned(), v.clone()))
            .collect();
        builder.set_metadata(Some(meta)).build()
    }

    #[test]
    fn a_pdf_passage_cites_its_object_and_page() {
        let r = result(
            "Patch canker is caused by Phytophthora.",
            Some("s3://docs/guides/field-guide.pdf"),
            &[
                (PAGE, Value::Number(Number::Float(3.0))),
                (CHUNK_ID, Value::String("chunk-7".into())),
            ],
        );
        let d = document(&r, 0).unwrap();
        assert_eq!(d.url, "s3://docs/guides/field-guide.pdf#page=3");
        assert_eq!(d.title, "field-guide.pdf");
        assert_eq!(d.id, "chunk-7");
        assert_eq!(d.score, 0.75);
        assert_eq!(d.kind, DocKind::Episode);
    }

    #[test]
    fn without_a_location_the_source_metadata_names_it_and_empty_text_is_skipped() {
        let r = result(
            "text",
            None,
            &[(
                SOURCE_URI,
                Value::String("https://wiki.example.com/page".into()),
            )],
        );
        let d = document(&r, 2).unwrap();
        assert_eq!(d.url, "https://wiki.example.com/page");
        assert_eq!(d.title, "page");
        assert!(document(&result(" ", None, &[]), 0).is_none());
        assert_eq!(
            document(&result("t", None, &[]), 4).unwrap().url,
            "bedrock-kb:result-4"
        );
    }
}
