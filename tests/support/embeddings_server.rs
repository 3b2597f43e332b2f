//! A scripted OpenAI-compatible embeddings server on loopback (`POST /v1/embeddings`).
//!
//! [`EmbedReply::vectors`] answers every input with [`concept_vector`] (or, for a model named
//! `hashed…`, the weak [`hashed_vector`]): a deterministic
//! embedding that counts, per concept, the words of the text that belong to it. Words that
//! share no letters (`bark` and `canker`) thus land on the same axis, which is what a real
//! model does and BM25 cannot. Replies are served in order, the last one repeating; every
//! request is recorded, so tests count batches and read their inputs.

use super::scripted_http::{next_in, Call, Payload, Replies, Reply, Scripted};
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};
use std::collections::VecDeque;

/// The concepts and their words; one dimension each, plus one for everything else.
pub const CONCEPTS: &[&[&str]] = &[
    &[
        "canker",
        "bark",
        "trunk",
        "lesion",
        "ooze",
        "phosphonate",
        "phytophthora",
    ],
    &[
        "insect",
        "insects",
        "pest",
        "pests",
        "bug",
        "bugs",
        "mealybug",
        "mealybugs",
        "ants",
    ],
    &["fruit", "fruits", "rot", "husk", "ripening"],
    &["water", "drainage", "rain", "waterlogged", "wet", "mulch"],
    &["leaf", "leaves", "spot", "foliage", "anthracnose"],
    &["borer", "larvae", "caterpillar", "tunnels", "grub", "grubs"],
];

/// Dimensions of [`concept_vector`].
pub const DIMS: usize = 7;

/// The deterministic embedding of `text` (see the module docs).
pub fn concept_vector(text: &str) -> Vec<f32> {
    let mut v = vec![0.0f32; DIMS];
    for word in text
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
    {
        let word = word.to_lowercase();
        match CONCEPTS.iter().position(|c| c.contains(&word.as_str())) {
            Some(i) => v[i] += 1.0,
            None => v[DIMS - 1] += 0.05,
        }
    }
    v
}

/// Dimensions of [`hashed_vector`].
pub const HASHED_DIMS: usize = 64;

/// Weak vectors, as a model that never saw a corpus's words gives: each word of `text` hashed
/// (FNV-1a of its lower case) onto one of [`HASHED_DIMS`] axes and counted. Texts that share
/// words point alike, but so do texts that share only common ones, and every word shares its
/// axis with many unrelated words. A request whose `model` starts with `hashed` gets these.
pub fn hashed_vector(text: &str) -> Vec<f32> {
    let mut v = vec![0.0f32; HASHED_DIMS];
    for word in text
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
    {
        let hash = word
            .to_lowercase()
            .bytes()
            .fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
                (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
            });
        v[(hash % HASHED_DIMS as u64) as usize] += 1.0;
    }
    v
}

/// What a reply carries: answer with the concept vectors of the inputs.
#[derive(Debug, Clone)]
pub struct ConceptVectors;

/// What the server does with one request.
pub type EmbedReply = Reply<ConceptVectors>;

/// A running scripted embeddings server; stops on drop.
pub type ScriptedEmbeddings = Scripted<VecDeque<EmbedReply>>;

impl Payload for ConceptVectors {
    fn error_body(status: u16) -> String {
        json!({"error": {"message": format!("scripted HTTP {status}")}}).to_string()
    }

    fn respond(self, request: &Value, _: usize) -> Response {
        let inputs: Vec<String> =
            serde_json::from_value(request["input"].clone()).unwrap_or_default();
        let hashed = request["model"]
            .as_str()
            .is_some_and(|m| m.starts_with("hashed"));
        let embed = |text: &str| match hashed {
            true => hashed_vector(text),
            false => concept_vector(text),
        };
        let data: Vec<Value> = inputs
            .iter()
            .enumerate()
            .rev() // out of order on purpose: clients must sort by index
            .map(|(i, text)| json!({"object": "embedding", "index": i, "embedding": embed(text)}))
            .collect();
        let tokens: usize = inputs.iter().map(|t| t.split_whitespace().count()).sum();
        axum::Json(json!({
            "object": "list",
            "model": request["model"],
            "data": data,
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
        }))
        .into_response()
    }
}

impl EmbedReply {
    /// 200 with the concept vectors of the inputs.
    pub fn vectors() -> Self {
        Reply::Ok(ConceptVectors)
    }
}

impl Replies for VecDeque<EmbedReply> {
    type Payload = ConceptVectors;

    fn next(&mut self, _: &Call) -> EmbedReply {
        next_in(self).unwrap_or_else(EmbedReply::vectors)
    }
}

impl ScriptedEmbeddings {
    /// Binds `127.0.0.1:0` on the current runtime and serves `replies` until dropped.
    pub async fn start(replies: impl IntoIterator<Item = EmbedReply>) -> Self {
        Scripted::serve("/v1/embeddings", replies.into_iter().collect()).await
    }

    /// `http://127.0.0.1:PORT/v1`, the value for `EMBEDDINGS_BASE_URL`.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr())
    }

    /// The environment that points `ingest`, `kb search` and `ask` at this server, with
    /// `model` as the embedding model's name.
    pub fn env(&self, model: &str) -> Vec<(&'static str, String)> {
        vec![
            ("EMBEDDINGS_BASE_URL", self.base_url()),
            ("EMBEDDINGS_MODEL", model.to_owned()),
        ]
    }

    /// A client of this server for `model`.
    pub fn client(&self, model: &str) -> bounded_rag::embed::EmbeddingsClient {
        bounded_rag::embed::EmbeddingsClient::new(bounded_rag::embed::EmbeddingsConfig {
            base_url: self.base_url(),
            model: model.into(),
            api_key: None,
        })
        .unwrap()
    }

    /// `src` ingested into the bundle folder `out` with this server's vectors for `model` (no
    /// retries), and opened.
    pub async fn ingest_bundle(
        &self,
        model: &str,
        src: &std::path::Path,
        out: &std::path::Path,
    ) -> bounded_rag::kb::KnowledgeBase {
        let embedder = self.client(model);
        let options = bounded_rag::ingest::IngestOptions {
            embedder: Some(&embedder),
            retry: bounded_rag::retry::RetryPolicy {
                max_retries: 0,
                base_delay: std::time::Duration::ZERO,
                max_delay: std::time::Duration::ZERO,
            },
            ..bounded_rag::ingest::IngestOptions::default()
        };
        bounded_rag::ingest::ingest(src, out, &options)
            .await
            .unwrap();
        bounded_rag::ingest::load_kb(out).unwrap()
    }

    /// Replaces the reply queue while the server runs.
    pub fn script(&self, replies: impl IntoIterator<Item = EmbedReply>) {
        self.edit_script(|queue| *queue = replies.into_iter().collect());
    }

    /// The `input` arrays of the requests to `/v1/embeddings`, in arrival order.
    pub fn batches(&self) -> Vec<Vec<String>> {
        self.recorded()
            .iter()
            .filter(|c| c.path == "/v1/embeddings")
            .map(|c| serde_json::from_value(c.body["input"].clone()).unwrap_or_default())
            .collect()
    }
}

/// Retries of a failed embeddings batch, two, without waiting (the ingest tests' policy).
pub fn no_wait() -> bounded_rag::retry::RetryPolicy {
    bounded_rag::retry::RetryPolicy {
        max_retries: 2,
        base_delay: std::time::Duration::ZERO,
        max_delay: std::time::Duration::ZERO,
    }
}
