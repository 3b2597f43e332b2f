//! The response cache: [`CachingModel`] replays a stored reply for a request it has already
//! seen instead of calling the model again (`LLM_CACHE_TTL_SECONDS`).
//!
//! The key (`cache_key`, in `cache_key.rs`) is `cache#` and the hex SHA-256 of the model's
//! [`ChatModel::cache_scope`] (provider, endpoint, model), the task's schema name and JSON
//! schema, the call's output cap, and every message's role and content, each field length-prefixed so two different
//! requests can never frame to the same bytes. The typed [`super::TaskInputs`] and the timeout
//! are left out: the messages are rendered from the inputs, and a timeout does not change an
//! answer.
//!
//! Only a reply that succeeded and is whole is stored: a decision that is a JSON object of the
//! task's reply type, or an answer that is not empty; never an error, never a reply that
//! [`super::ask`] would re-ask (malformed, fenced or chatty), never a reply cut at its cap. The
//! cache is best effort: a store that fails on read or write is logged at warn (without the
//! reply) and the call goes on as a miss, so the cache never fails a call and never retries
//! one. Store calls are bounded by the store's own timeouts (the DynamoDB client's operation
//! timeout, the file store's lock timeout).

use super::cache_key::{cache_key, well_formed};
use super::{ChatModel, ChatRequest, Completion, DeltaSink, Finish, LlmError, Task};
use crate::store::CacheStore;
use async_trait::async_trait;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

/// A [`ChatModel`] that answers repeated requests from a [`CacheStore`].
///
/// A hit returns the stored content as a [`Completion`] with `cached: true` and no tokens
/// (metered as a cache hit: no model call, no tokens); a miss calls the inner model and stores
/// a well-formed reply for `ttl`.
pub(crate) struct CachingModel {
    inner: Arc<dyn ChatModel>,
    store: Arc<dyn CacheStore>,
    ttl: Duration,
}

impl CachingModel {
    /// Caches `inner`'s replies in `store`, each for `ttl` after it was stored.
    pub(crate) fn new(
        inner: Arc<dyn ChatModel>,
        store: Arc<dyn CacheStore>,
        ttl: Duration,
    ) -> Self {
        Self { inner, store, ttl }
    }

    /// The stored reply for `key`, if there is a usable one. Failures and unusable items are
    /// logged and read as a miss.
    async fn lookup(&self, key: &str, task: Task) -> Option<Completion> {
        let schema = task.schema_name();
        let body = match self.store.get_cached(key).await {
            Ok(body) => body?,
            Err(error) => {
                tracing::warn!(schema, %error, "response cache read failed; calling the model");
                return None;
            }
        };
        match String::from_utf8(body) {
            Ok(content) if well_formed(task, &content) => {
                tracing::debug!(schema, "response cache hit");
                Some(Completion {
                    content,
                    reasoning: String::new(),
                    finish: Finish::Stop,
                    tokens: None,
                    cached: true,
                })
            }
            _ => {
                tracing::warn!(schema, "unusable response cache item; calling the model");
                None
            }
        }
    }

    /// Stores `completion` under `key` when it is well formed and whole; failures are logged
    /// only.
    async fn remember(&self, key: &str, task: Task, completion: &Completion) {
        if completion.finish == Finish::Length || !well_formed(task, &completion.content) {
            return;
        }
        let body = completion.content.as_bytes();
        if let Err(error) = self.store.put_cached(key, body, self.ttl).await {
            let schema = task.schema_name();
            tracing::warn!(schema, %error, "response cache write failed; reply not cached");
        }
    }
}

impl fmt::Debug for CachingModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CachingModel")
            .field("inner", &self.inner.name())
            .field("ttl", &self.ttl)
            .finish_non_exhaustive()
    }
}

#[async_trait]
impl ChatModel for CachingModel {
    async fn complete(&self, request: &ChatRequest<'_>) -> Result<Completion, LlmError> {
        let key = cache_key(&self.inner.cache_scope(), request);
        if let Some(hit) = self.lookup(&key, request.task).await {
            return Ok(hit);
        }
        let completion = self.inner.complete(request).await?;
        self.remember(&key, request.task, &completion).await;
        Ok(completion)
    }

    /// A hit hands the whole content to `on_delta` once; a miss streams from the inner model.
    async fn complete_streaming(
        &self,
        request: &ChatRequest<'_>,
        on_delta: DeltaSink<'_>,
    ) -> Result<Completion, LlmError> {
        let key = cache_key(&self.inner.cache_scope(), request);
        if let Some(hit) = self.lookup(&key, request.task).await {
            on_delta(&hit.content);
            return Ok(hit);
        }
        let completion = self.inner.complete_streaming(request, on_delta).await?;
        self.remember(&key, request.task, &completion).await;
        Ok(completion)
    }

    fn name(&self) -> &'static str {
        self.inner.name()
    }

    fn model(&self) -> &str {
        self.inner.model()
    }

    fn cache_scope(&self) -> String {
        self.inner.cache_scope()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::FakeClock;
    use crate::llm::{ask_metered, Message, ScriptedModel, TaskInputs};
    use crate::llm::{BinaryScore, Role};
    use crate::store::{MemoryStore, StoreError};
    use crate::usage::Meter;
    use serde_json::json;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Mutex;

    const YES: &str = r#"{"binary_score":"yes"}"#;

    fn request(task: Task, user: &str) -> ChatRequest<'static> {
        ChatRequest {
            task,
            messages: vec![
                Message::new(Role::System, "grade"),
                Message::new(Role::User, user),
            ],
            inputs: TaskInputs {
                question: "question",
                documents: &[],
                answer: None,
            },
            timeout: Duration::from_secs(5),
            max_tokens: 32,
            stop: &[],
        }
    }

    fn caching(model: &Arc<ScriptedModel>, store: &Arc<MemoryStore>) -> CachingModel {
        CachingModel::new(model.clone(), store.clone(), Duration::from_secs(60))
    }

    /// The same model under another cache scope (another endpoint or model name).
    struct Scoped(Arc<ScriptedModel>, &'static str);

    #[async_trait]
    impl ChatModel for Scoped {
        async fn complete(&self, request: &ChatRequest<'_>) -> Result<Completion, LlmError> {
            self.0.complete(request).await
        }
        fn name(&self) -> &'static str {
            "scoped"
        }
        fn cache_scope(&self) -> String {
            self.1.to_owned()
        }
    }

    /// A cache store that always fails, counting its calls.
    #[derive(Default)]
    struct Broken {
        gets: AtomicUsize,
        puts: AtomicUsize,
    }

    #[async_trait]
    impl CacheStore for Broken {
        async fn get_cached(&self, _: &str) -> Result<Option<Vec<u8>>, StoreError> {
            self.gets.fetch_add(1, Ordering::SeqCst);
            Err(StoreError::Transient("throttled".into()))
        }
        async fn put_cached(&self, _: &str, _: &[u8], _: Duration) -> Result<(), StoreError> {
            self.puts.fetch_add(1, Ordering::SeqCst);
            Err(StoreError::Permanent("access denied".into()))
        }
    }

    #[tokio::test]
    async fn a_repeated_request_calls_the_model_once_and_is_metered_as_a_hit() {
        let model = Arc::new(ScriptedModel::new().raw(Task::GradeDocuments, YES));
        let store = Arc::new(MemoryStore::new());
        let cache = caching(&model, &store);
        let req = request(Task::GradeDocuments, "question");

        let first = cache.complete(&req).await.unwrap();
        let second = cache.complete(&req).await.unwrap();
        assert_eq!(model.calls(Task::GradeDocuments), 1);
        assert_eq!((first.content.as_str(), first.cached), (YES, false));
        assert_eq!(
            second,
            Completion {
                content: YES.into(),
                reasoning: String::new(),
                finish: Finish::Stop,
                tokens: None,
                cached: true
            }
        );
        let key = cache_key("scripted", &req);
        assert_eq!(
            store.get_cached(&key).await.unwrap().unwrap(),
            YES.as_bytes()
        );

        let meter = Meter::default();
        let score: BinaryScore = ask_metered(&cache, &req, &meter, None).await.unwrap();
        assert!(score.yes());
        let usage = meter.usage();
        assert_eq!(
            (usage.model_calls, usage.cache_hits, usage.total()),
            (0, 1, 0)
        );
        assert_eq!(model.calls(Task::GradeDocuments), 1);
    }

    #[tokio::test]
    async fn other_messages_schemas_and_scopes_miss() {
        let model = Arc::new(
            ScriptedModel::new()
                .raw(Task::GradeDocuments, YES)
                .raw(Task::GradeAnswer, YES)
                .reply(Task::RefineQuery, json!({"refined_question": "durian"})),
        );
        let store = Arc::new(MemoryStore::new());
        let cache = caching(&model, &store);
        let other_scope = CachingModel::new(
            Arc::new(Scoped(model.clone(), "openai http://other/v1 m")),
            store.clone(),
            Duration::from_secs(60),
        );
        let base = request(Task::GradeDocuments, "question");
        let mut reordered = base.clone();
        reordered.messages.reverse();
        let requests = [
            (&cache, base.clone()),
            (&cache, request(Task::GradeDocuments, "question 2")),
            (&cache, reordered),
            // Same schema as grade_documents, another name.
            (&cache, request(Task::GradeAnswer, "question")),
            (&cache, request(Task::RefineQuery, "question")),
            (&other_scope, base.clone()),
        ];
        for (via, req) in &requests {
            assert!(
                !via.complete(req).await.unwrap().cached,
                "{:?}",
                req.messages
            );
        }
        assert_eq!(model.call_log().len(), requests.len(), "every one a miss");
        for (via, req) in &requests {
            assert!(
                via.complete(req).await.unwrap().cached,
                "{:?}",
                req.messages
            );
        }
        assert_eq!(
            model.call_log().len(),
            requests.len(),
            "then every one a hit"
        );
    }

    #[test]
    fn keys_frame_every_field() {
        let key = |task, messages: &[(Role, &str)]| {
            let mut req = request(task, "");
            req.messages = messages.iter().map(|(r, c)| Message::new(*r, *c)).collect();
            cache_key("openai http://127.0.0.1/v1 m", &req)
        };
        let base = key(
            Task::GradeDocuments,
            &[(Role::System, "ab"), (Role::User, "c")],
        );
        assert!(base.starts_with("cache#") && base.len() == 6 + 64, "{base}");
        assert!(base[6..]
            .bytes()
            .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()));
        for other in [
            key(
                Task::GradeDocuments,
                &[(Role::System, "a"), (Role::User, "bc")],
            ),
            key(
                Task::GradeDocuments,
                &[(Role::User, "ab"), (Role::User, "c")],
            ),
            key(Task::GradeDocuments, &[(Role::System, "abc")]),
            key(
                Task::GradeDocuments,
                &[(Role::System, "ab"), (Role::User, "c"), (Role::User, "")],
            ),
            key(
                Task::GradeHallucinations,
                &[(Role::System, "ab"), (Role::User, "c")],
            ),
        ] {
            assert_ne!(base, other);
        }
        let req = request(Task::GradeDocuments, "q");
        assert_ne!(
            cache_key("openai a bc", &req),
            cache_key("openai ab c", &req)
        );
        assert_eq!(cache_key("s", &req), cache_key("s", &req.clone()));
        let mut stopped = req.clone();
        stopped.stop = &["\n\n"];
        assert_ne!(cache_key("s", &req), cache_key("s", &stopped));
        let mut framed = req.clone();
        framed.stop = &["\n", "\n"];
        assert_ne!(cache_key("s", &stopped), cache_key("s", &framed));
    }

    #[tokio::test]
    async fn errors_and_malformed_replies_are_not_cached() {
        let model = Arc::new(
            ScriptedModel::new()
                .fail(Task::GradeAnswer, LlmError::Connect("refused".into()))
                .raw(Task::GradeAnswer, "maybe?")
                .raw(
                    Task::GradeAnswer,
                    "```json\n{\"binary_score\":\"yes\"}\n```",
                )
                .raw(Task::GradeAnswer, r#"{"binary_score":"maybe"}"#)
                .raw(Task::GradeAnswer, r#"["yes"]"#)
                .raw(Task::GradeAnswer, YES),
        );
        let store = Arc::new(MemoryStore::new());
        let cache = caching(&model, &store);
        let req = request(Task::GradeAnswer, "question");
        let key = cache_key("scripted", &req);

        assert_eq!(
            cache.complete(&req).await.unwrap_err(),
            LlmError::Connect("refused".into())
        );
        assert_eq!(store.get_cached(&key).await.unwrap(), None);
        for n in 2..=5 {
            let bad = cache.complete(&req).await.unwrap();
            assert!(!bad.cached);
            assert_eq!(model.calls(Task::GradeAnswer), n);
            assert_eq!(
                store.get_cached(&key).await.unwrap(),
                None,
                "{}",
                bad.content
            );
        }
        assert!(!cache.complete(&req).await.unwrap().cached);
        assert!(cache.complete(&req).await.unwrap().cached);
        assert_eq!(model.calls(Task::GradeAnswer), 6);
    }

    #[tokio::test]
    async fn an_expired_entry_is_a_miss() {
        let now_ms = Arc::new(FakeClock::at_ms(1_700_000_000_000));
        let store = Arc::new(MemoryStore::new().with_clock(now_ms.clone()));
        let model = Arc::new(ScriptedModel::new().raw(Task::GradeDocuments, YES));
        let cache = caching(&model, &store);
        let req = request(Task::GradeDocuments, "question");

        cache.complete(&req).await.unwrap();
        now_ms.advance(Duration::from_millis(59_999));
        assert!(cache.complete(&req).await.unwrap().cached);
        assert_eq!(model.calls(Task::GradeDocuments), 1);
        now_ms.advance(Duration::from_millis(1));
        assert!(!cache.complete(&req).await.unwrap().cached);
        assert_eq!(model.calls(Task::GradeDocuments), 2);
        // The miss stored the reply again, for another full TTL.
        now_ms.advance(Duration::from_millis(59_999));
        assert!(cache.complete(&req).await.unwrap().cached);
        assert_eq!(model.calls(Task::GradeDocuments), 2);
    }

    #[tokio::test]
    async fn a_streamed_hit_hands_the_whole_content_over_once() {
        let model = Arc::new(ScriptedModel::new().raw(Task::GradeDocuments, YES));
        let store = Arc::new(MemoryStore::new());
        let cache = caching(&model, &store);
        let req = request(Task::GradeDocuments, "question");
        let deltas = Mutex::new(Vec::<String>::new());
        let sink = |delta: &str| deltas.lock().unwrap().push(delta.to_owned());

        let miss = cache.complete_streaming(&req, &sink).await.unwrap();
        assert!(!miss.cached);
        deltas.lock().unwrap().clear();
        let hit = cache.complete_streaming(&req, &sink).await.unwrap();
        assert!(hit.cached);
        assert_eq!(*deltas.lock().unwrap(), [YES]);
        assert_eq!(model.calls(Task::GradeDocuments), 1);
    }

    #[tokio::test]
    async fn store_failures_are_ignored_and_never_retried() {
        let model = Arc::new(ScriptedModel::new().raw(Task::GradeDocuments, YES));
        let store = Arc::new(Broken::default());
        let cache = CachingModel::new(model.clone(), store.clone(), Duration::from_secs(60));
        let req = request(Task::GradeDocuments, "question");
        for _ in 0..2 {
            let reply = cache.complete(&req).await.unwrap();
            assert_eq!((reply.content.as_str(), reply.cached), (YES, false));
        }
        assert_eq!(model.calls(Task::GradeDocuments), 2);
        assert_eq!(store.gets.load(Ordering::SeqCst), 2);
        assert_eq!(store.puts.load(Ordering::SeqCst), 2);
    }

    #[tokio::test]
    async fn an_unusable_item_is_a_miss_and_is_replaced() {
        let model = Arc::new(ScriptedModel::new().raw(Task::GradeDocuments, YES));
        let store = Arc::new(MemoryStore::new());
        let cache = caching(&model, &store);
        let req = request(Task::GradeDocuments, "question");
        let key = cache_key("scripted", &req);
        for garbage in [&b"\xff\xfe"[..], b"{\"answer\":\"wrong task\"}"] {
            store
                .put_cached(&key, garbage, Duration::from_secs(60))
                .await
                .unwrap();
            assert!(!cache.complete(&req).await.unwrap().cached);
            assert_eq!(
                store.get_cached(&key).await.unwrap().unwrap(),
                YES.as_bytes()
            );
        }
        assert_eq!(model.calls(Task::GradeDocuments), 2);
    }

    #[test]
    fn name_and_scope_are_the_inner_models() {
        let inner = Arc::new(Scoped(
            Arc::new(ScriptedModel::new()),
            "openai http://x/v1 m",
        ));
        let cache = CachingModel::new(inner, Arc::new(MemoryStore::new()), Duration::from_secs(1));
        assert_eq!(
            (cache.name(), cache.cache_scope().as_str()),
            ("scoped", "openai http://x/v1 m")
        );
    }
}
