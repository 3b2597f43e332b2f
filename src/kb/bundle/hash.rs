//! The content hash of a knowledge base: SHA-256 over the format, every indexed document (kind,
//! id, title, url, content; length-prefixed, in corpus order) and the embedding model and
//! dimensions. Build times, file layout and tantivy's segment names are left out, so the same
//! sources ingested the same way always hash the same. Documents with metadata extend it
//! ([`with_metadata`]).
use crate::kb::bundle::format::{FORMAT, FORMAT_VERSION};
use crate::knowledge::Document;
use crate::knowledge::EmbeddingInfo;
use crate::knowledge::MetaTable;
use crate::knowledge::{hex, hex_digest};
use sha2::{Digest, Sha256};

/// The content hash of `docs` with vectors from `embedding`.
pub(crate) fn content_hash(docs: &[Document], embedding: Option<&EmbeddingInfo>) -> String {
    let mut hash = Sha256::new();
    let mut field = |bytes: &[u8]| {
        hash.update((bytes.len() as u64).to_le_bytes());
        hash.update(bytes);
    };
    field(format!("{FORMAT}/{FORMAT_VERSION}").as_bytes());
    for doc in docs {
        let kind = serde_json::to_string(&doc.kind).unwrap_or_default();
        for part in [&kind, &doc.id, &doc.title, &doc.url, &doc.content] {
            field(part.as_bytes());
        }
    }
    match embedding {
        Some(e) => {
            // Another provider's vectors differ; an OpenAI-compatible one's hash as before.
            if e.provider() != "openai" {
                field(e.provider().as_bytes());
            }
            field(e.model.as_bytes());
            field(e.dimensions.to_string().as_bytes());
            field(e.quantization.as_bytes());
            // Prefixes change the vectors; without them the hash is what it always was.
            if !(e.query_prefix.is_empty() && e.passage_prefix.is_empty()) {
                field(e.query_prefix.as_bytes());
                field(e.passage_prefix.as_bytes());
            }
        }
        None => field(b"no vectors"),
    }
    hex(&hash.finalize())
}

/// The content hash `hash` of the documents, extended with their metadata: unchanged
/// without metadata, so bundles without it keep the version they always had.
pub(crate) fn with_metadata(hash: String, meta: &MetaTable) -> String {
    if meta.is_empty() {
        return hash;
    }
    let json = serde_json::to_vec(meta).expect("metadata serializes");
    let mut digest = Sha256::new();
    digest.update(hash.as_bytes());
    digest.update(&json);
    hex_digest(digest)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(id: &str, content: &str) -> Document {
        Document::passage(id, "t", format!("kb://{id}"), content)
    }

    #[test]
    fn hash_follows_content_order_and_model_only() {
        let a = [doc("a", "x"), doc("b", "y")];
        let h = content_hash(&a, None);
        assert_eq!(h.len(), 64);
        let mut scored = a.clone();
        scored[0].score = 7.0;
        assert_eq!(content_hash(&scored, None), h, "scores are not content");
        assert_ne!(content_hash(&[doc("a", "xy"), doc("b", "")], None), h);
        assert_ne!(content_hash(&[a[1].clone(), a[0].clone()], None), h);
        let model = EmbeddingInfo {
            provider: String::new(),
            model: "m".into(),
            dimensions: 3,
            quantization: "int8".into(),
            query_prefix: String::new(),
            passage_prefix: String::new(),
        };
        assert_ne!(content_hash(&a, Some(&model)), h);
        let prefixed = EmbeddingInfo {
            passage_prefix: "passage: ".into(),
            ..model.clone()
        };
        assert_ne!(
            content_hash(&a, Some(&prefixed)),
            content_hash(&a, Some(&model))
        );
        let openai = EmbeddingInfo {
            provider: "openai".into(),
            ..model.clone()
        };
        assert_eq!(
            content_hash(&a, Some(&openai)),
            content_hash(&a, Some(&model))
        );
        let bedrock = EmbeddingInfo {
            provider: "bedrock".into(),
            ..model.clone()
        };
        assert_ne!(
            content_hash(&a, Some(&bedrock)),
            content_hash(&a, Some(&model))
        );
    }
}
