//! Knowledge bundles on S3 (moto's S3 on loopback): publish, list, load at start, swap between
//! runs while another run is in progress, and keep serving the last good version when the
//! pointer or a bundle goes bad. The CLI on a `KB_URI` is `kb_s3_cli.rs`.
use crate::support;

use async_trait::async_trait;
use bounded_rag::aws::S3Location;
use bounded_rag::clock::{Clock, SystemClock};
use bounded_rag::engine::Budget;
use bounded_rag::ingest::ingest_dir;
use bounded_rag::kb::s3::{self, BundleStore};
use bounded_rag::kb::{LiveKnowledge, LoadOptions, RefreshOutcome, Retriever};
use bounded_rag::llm::{ChatModel, ChatRequest, Completion, LlmError, OfflineModel, Task};
use bounded_rag::rag::{RagGraph, RagLimits, RunRequest, RunResponse};
use bounded_rag::runs::Workflow;
use bounded_rag::search::RetrievalMode;
use bounded_rag::store::MemoryStore;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use support::moto::{moto, unique_name};
use tokio::sync::{oneshot, Notify};

pub(crate) const QUESTION: &str = "Which durian pest is the zanthorix weevil?";

fn kb_dir() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/kb"))
}

/// Two versions of the sample: v2 adds a passage about the zanthorix weevil.
pub(crate) struct Bundles {
    _work: tempfile::TempDir,
    pub(crate) v1: PathBuf,
    pub(crate) v2: PathBuf,
}

pub(crate) fn bundles() -> Bundles {
    let work = tempfile::tempdir().unwrap();
    let src = work.path().join("src");
    fs::create_dir_all(&src).unwrap();
    for entry in fs::read_dir(kb_dir()).unwrap() {
        let entry = entry.unwrap();
        fs::copy(entry.path(), src.join(entry.file_name())).unwrap();
    }
    let v1 = work.path().join("v1");
    ingest_dir(&src, &v1).unwrap();
    fs::write(
        src.join("zanthorix.md"),
        "# Zanthorix weevil\n\nThe zanthorix weevil is a durian pest that bores into young \
         shoots; it exists only in this test.",
    )
    .unwrap();
    let v2 = work.path().join("v2");
    ingest_dir(&src, &v2).unwrap();
    Bundles {
        _work: work,
        v1,
        v2,
    }
}

pub(crate) async fn store() -> (BundleStore, aws_sdk_s3::Client) {
    let sdk = moto().await.sdk_config().await;
    let client = s3::client(&sdk);
    let bucket = unique_name("kb").to_lowercase();
    client.create_bucket().bucket(&bucket).send().await.unwrap();
    let location: S3Location = format!("s3://{bucket}/team/durian").parse().unwrap();
    (BundleStore::new(client.clone(), location), client)
}

fn options() -> LoadOptions {
    LoadOptions {
        refresh_every: None,
        ..LoadOptions::default()
    }
}

pub(crate) fn version_of(dir: &Path) -> String {
    bounded_rag::ingest::load_kb(dir)
        .unwrap()
        .version()
        .to_owned()
}

/// The offline model, except that the first routing call after [`Gated::arm`] waits for
/// the release: it holds one run in progress.
struct Gated {
    gate: Mutex<Option<oneshot::Receiver<()>>>,
    entered: Notify,
}

impl Gated {
    fn arm(&self) -> oneshot::Sender<()> {
        let (tx, rx) = oneshot::channel();
        *self.gate.lock().unwrap() = Some(rx);
        tx
    }
}

#[async_trait]
impl ChatModel for Gated {
    async fn complete(&self, request: &ChatRequest<'_>) -> Result<Completion, LlmError> {
        if request.task == Task::RouteQuery {
            let gate = self.gate.lock().unwrap().take();
            if let Some(gate) = gate {
                self.entered.notify_one();
                let _ = gate.await;
            }
        }
        OfflineModel.complete(request).await
    }

    fn name(&self) -> &'static str {
        "offline"
    }
}

/// The RAG graph with `model`, searching `live`, no web search, default limits.
fn graph_on(model: Arc<dyn ChatModel>, live: &LiveKnowledge) -> RagGraph {
    RagGraph::new(model, Arc::new(live.clone()), None, RagLimits::default())
}

async fn run(workflow: &Workflow<'_>, run_id: &str) -> RunResponse {
    let budget = Budget::new(50, SystemClock.now_ms() + 60_000);
    workflow
        .run_new(run_id, RunRequest::new(QUESTION), &budget)
        .await
        .unwrap()
}

fn sources(response: &RunResponse) -> Vec<String> {
    let step = response
        .workflow_steps
        .iter()
        .find(|s| s.name == "kg_retrieval")
        .expect("a knowledge-base step");
    serde_json::from_value(step.details["sources"].clone()).unwrap()
}

#[tokio::test]
async fn publish_list_and_load_a_bundle() {
    let b = bundles();
    let (store, client) = store().await;
    let err = LiveKnowledge::open(store.clone(), options())
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("no bundle is published"), "{err}");

    let published = store.publish(&b.v1).await.unwrap();
    assert_eq!(published.version, version_of(&b.v1));
    let pointer = store.pointer().await.unwrap();
    assert_eq!(pointer.version, published.version);
    // The files sit under the content hash; the manifest is among them.
    let listed = client
        .list_objects_v2()
        .bucket(&store.location().bucket)
        .prefix(format!("team/durian/bundles/{}/", published.version))
        .send()
        .await
        .unwrap();
    let keys: Vec<&str> = listed.contents().iter().filter_map(|o| o.key()).collect();
    assert!(
        keys.iter().any(|k| k.ends_with("/kb-manifest.json")),
        "{keys:?}"
    );
    assert_eq!(keys.len(), published.manifest.files.len() + 1);

    let live = LiveKnowledge::open(store.clone(), options()).await.unwrap();
    assert_eq!(live.version(), Some(published.version.clone()));
    assert_eq!(live.current().stats(), published.manifest.counts);
    let hits = live
        .retrieve("What causes patch canker?", &Default::default())
        .await
        .unwrap();
    assert!(hits[0].url.starts_with("kb://patch-canker.md#"), "{hits:?}");

    // A second version; both stay listed, the newest current.
    let second = store.publish(&b.v2).await.unwrap();
    let list = store.list().await.unwrap();
    assert_eq!(list.len(), 2);
    assert_eq!(list.iter().filter(|p| p.current).count(), 1);
    assert!(list
        .iter()
        .any(|p| p.current && p.version == second.version));
    // Publishing the same bundle again uploads nothing new and re-points.
    store.point(&published.version).await.unwrap();
    store.publish(&b.v2).await.unwrap();
    assert_eq!(store.pointer().await.unwrap().version, second.version);
    assert_eq!(store.list().await.unwrap().len(), 2);

    // Too large for memory: downloaded to a local folder and opened from there.
    let cache = tempfile::tempdir().unwrap();
    let on_disk = LiveKnowledge::open(
        store.clone(),
        LoadOptions {
            memory_limit: 0,
            cache_dir: cache.path().to_path_buf(),
            ..options()
        },
    )
    .await
    .unwrap();
    assert_eq!(on_disk.version(), Some(second.version.clone()));
    assert!(cache
        .path()
        .join(&second.version)
        .join("kb-manifest.json")
        .is_file());
}

#[tokio::test]
async fn a_swap_lands_between_runs_never_inside_one() {
    let b = bundles();
    let (store, _) = store().await;
    let v1 = store.publish(&b.v1).await.unwrap().version;
    let live = LiveKnowledge::open(store.clone(), options()).await.unwrap();
    let model = Arc::new(Gated {
        gate: Mutex::new(None),
        entered: Notify::new(),
    });
    let graph = graph_on(model.clone(), &live);
    let checkpoints = MemoryStore::new();
    let workflow = Workflow::new(&graph, &checkpoints, &SystemClock);

    // Run A, before any swap.
    let a = run(&workflow, "a").await;
    assert_eq!(a.metadata.kb_version.as_deref(), Some(v1.as_str()));
    assert_eq!(a.metadata.retrieval, Some(RetrievalMode::Bm25));

    // Run C starts on v1 and is held at its first step.
    let release = model.arm();
    let c = run(&workflow, "c");
    let swap_then_b = async {
        model.entered.notified().await;
        let v2 = store.publish(&b.v2).await.unwrap().version;
        let outcome = live.refresh().await.unwrap();
        assert_eq!(
            outcome,
            RefreshOutcome::Swapped {
                from: v1.clone(),
                to: v2.clone()
            }
        );
        // Run B starts after the swap and runs entirely on v2.
        let b = run(&workflow, "b").await;
        release.send(()).unwrap();
        (v2, b)
    };
    let (c, (v2, b)) = tokio::join!(c, swap_then_b);

    assert_eq!(b.metadata.kb_version.as_deref(), Some(v2.as_str()));
    assert!(
        sources(&b).iter().any(|u| u == "kb://zanthorix.md#1"),
        "{:?}",
        sources(&b)
    );
    // C searched after the swap, yet on the version it started with.
    assert_eq!(c.metadata.kb_version.as_deref(), Some(v1.as_str()));
    assert!(
        !sources(&c).iter().any(|u| u.contains("zanthorix")),
        "{:?}",
        sources(&c)
    );
    // The checkpoints record the version each run used.
    for (id, version) in [("a", &v1), ("b", &v2), ("c", &v1)] {
        let stored = workflow.status(id).await.unwrap();
        assert_eq!(
            stored.metadata.kb_version.as_ref(),
            Some(version),
            "run {id}"
        );
    }
    assert_eq!(live.version(), Some(v2));
}

#[tokio::test]
async fn a_bad_pointer_or_bundle_keeps_the_last_good_version_serving() {
    let b = bundles();
    let (store, client) = store().await;
    let v1 = store.publish(&b.v1).await.unwrap().version;
    let live = LiveKnowledge::open(store.clone(), options()).await.unwrap();
    let graph = graph_on(Arc::new(OfflineModel), &live);
    let checkpoints = MemoryStore::new();
    let workflow = Workflow::new(&graph, &checkpoints, &SystemClock);
    let bucket = store.location().bucket.clone();
    let put = |key: &str, body: &[u8]| {
        client
            .put_object()
            .bucket(&bucket)
            .key(key)
            .body(body.to_vec().into())
            .send()
    };

    // A pointer that is not JSON.
    put("team/durian/current.json", b"{not json").await.unwrap();
    let err = live.refresh().await.unwrap_err().to_string();
    assert!(
        err.contains("current.json") && err.contains("not valid"),
        "{err}"
    );
    assert_eq!(live.version(), Some(v1.clone()));
    let served = run(&workflow, "after-bad-pointer").await;
    assert_eq!(served.metadata.kb_version.as_deref(), Some(v1.as_str()));

    // A pointer to a version that was never published.
    let missing = "0".repeat(64);
    let pointer = format!(
        "{{\"format\":\"bounded-rag-kb-pointer\",\"version\":\"{missing}\",\"published_at\":\"x\"}}"
    );
    put("team/durian/current.json", pointer.as_bytes())
        .await
        .unwrap();
    let err = live.refresh().await.unwrap_err().to_string();
    assert!(err.contains("is published"), "{err}");
    assert_eq!(live.version(), Some(v1.clone()));

    // A published bundle whose file was damaged after upload.
    let v2 = store.publish(&b.v2).await.unwrap();
    let damaged = &v2.manifest.files[0];
    put(
        &format!("team/durian/bundles/{}/{}", v2.version, damaged.path),
        b"garbage",
    )
    .await
    .unwrap();
    let err = live.refresh().await.unwrap_err().to_string();
    assert!(err.contains("corrupt"), "{err}");
    assert_eq!(live.version(), Some(v1.clone()));
    // ... and the same damage is a clear error at start-up.
    let err = LiveKnowledge::open(store.clone(), options())
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("corrupt"), "{err}");

    // A rollback is re-pointing: v1 is still there.
    store.point(&v1).await.unwrap();
    assert_eq!(
        live.refresh().await.unwrap(),
        RefreshOutcome::Unchanged(v1.clone())
    );
    let served = run(&workflow, "after-rollback").await;
    assert_eq!(served.metadata.kb_version.as_deref(), Some(v1.as_str()));
}

#[tokio::test]
async fn a_bundle_of_another_embedding_model_is_refused() {
    let b = bundles();
    let (store, _) = store().await;
    store.publish(&b.v1).await.unwrap();
    // v1 has no vectors: any model may serve it (BM25 only).
    let live = LiveKnowledge::open(
        store.clone(),
        LoadOptions {
            embedding_model: Some("all-minilm".into()),
            ..options()
        },
    )
    .await
    .unwrap();
    assert!(live.embedding().is_none());
}

/// The CLI with moto's endpoint and dummy credentials, nothing else from this environment.
#[tokio::test]
async fn a_warm_instance_checks_in_the_background_and_swaps_between_runs() {
    let b = bundles();
    let (store, _) = store().await;
    let v1 = store.publish(&b.v1).await.unwrap().version;
    // Due at every run: the run that finds the check due starts it and keeps its version.
    let live = LiveKnowledge::open(
        store.clone(),
        LoadOptions {
            refresh_every: Some(std::time::Duration::ZERO),
            ..options()
        },
    )
    .await
    .unwrap();
    let graph = graph_on(Arc::new(OfflineModel), &live);
    let checkpoints = MemoryStore::new();
    let workflow = Workflow::new(&graph, &checkpoints, &SystemClock);
    let v2 = store.publish(&b.v2).await.unwrap().version;

    let first = run(&workflow, "first").await;
    assert_eq!(first.metadata.kb_version.as_deref(), Some(v1.as_str()));
    // The background check swaps v2 in; wait for it (bounded).
    for _ in 0..200 {
        if live.version().as_deref() == Some(v2.as_str()) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
    assert_eq!(live.version(), Some(v2.clone()));
    let second = run(&workflow, "second").await;
    assert_eq!(second.metadata.kb_version.as_deref(), Some(v2.as_str()));
}
