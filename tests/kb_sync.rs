//! `kb sync` on moto's S3 with a scripted embeddings server counting every passage embedded:
//! a first sync, then an added, a modified (one paragraph) and a deleted document, then no
//! change; the same version hash as `ingest` of the same documents, from a folder and from
//! `s3://`; a poisoned file failed with its typed reason while the rest publish; the cache
//! shared by a machine with no sync state; the `--json` summary's field names.
use crate::support;

use bounded_rag::aws::S3Location;
use bounded_rag::embed::EmbeddingsClient;
use bounded_rag::ingest::sync::{sync, FailReason, SyncSource, SyncSummary};
use bounded_rag::ingest::{ingest, IngestOptions};
use bounded_rag::kb::s3::{self, BundleStore};
use bounded_rag::retry::RetryPolicy;
use std::fs;
use std::path::Path;
use std::time::Duration;
use support::embeddings_server::ScriptedEmbeddings;
use support::moto::{moto, unique_name};

const MODEL: &str = "concepts-7";

/// A section of 90 words (a passage closes at 80 words and a new heading).
fn section(heading: &str, words: &str) -> String {
    let body: Vec<&str> = words.split(' ').cycle().take(90).collect();
    format!("## {heading}\n\n{}.\n\n", body.join(" "))
}

/// Three sections: three passages.
fn guide() -> String {
    format!(
        "# Durian guide\n\n{}{}{}",
        section("Canker", "dark lesions form on the trunk bark"),
        section("Mealybugs", "white insects cluster on fruit stalks"),
        section("Drainage", "raised beds keep roots out of standing water"),
    )
}

fn options(embedder: &EmbeddingsClient) -> IngestOptions<'_> {
    IngestOptions {
        embedder: Some(embedder),
        batch_size: 4,
        retry: RetryPolicy {
            max_retries: 1,
            base_delay: Duration::ZERO,
            max_delay: Duration::ZERO,
        },
        ..IngestOptions::default()
    }
}

/// Passages the server embedded so far.
fn embedded(server: &ScriptedEmbeddings) -> usize {
    server.batches().iter().map(Vec::len).sum()
}

async fn bucket(client: &aws_sdk_s3::Client) -> String {
    let bucket = unique_name("sync").to_lowercase();
    client.create_bucket().bucket(&bucket).send().await.unwrap();
    bucket
}

async fn dest() -> (BundleStore, aws_sdk_s3::Client) {
    let client = s3::client(&moto().await.sdk_config().await);
    let bucket = bucket(&client).await;
    let location: S3Location = format!("s3://{bucket}/kb/durian").parse().unwrap();
    (BundleStore::new(client.clone(), location), client)
}

/// The version an `ingest` of `dir` with the same embedder gives.
async fn ingest_version(dir: &Path, embedder: &EmbeddingsClient) -> String {
    let out = tempfile::tempdir().unwrap();
    let target = out.path().join("bundle");
    let summary = ingest(dir, &target, &options(embedder)).await.unwrap();
    assert_eq!(
        bounded_rag::ingest::load_kb(&target).unwrap().version(),
        summary.manifest.content_hash
    );
    summary.manifest.content_hash
}

fn set_modified(path: &Path, at: std::time::SystemTime) {
    fs::File::options()
        .write(true)
        .open(path)
        .unwrap()
        .set_modified(at)
        .unwrap();
}

fn counts(s: &SyncSummary) -> [usize; 7] {
    [
        s.scanned,
        s.new,
        s.modified,
        s.deleted,
        s.unchanged,
        s.embedded_passages,
        s.cached_passages,
    ]
}

#[tokio::test]
async fn first_sync_then_add_modify_delete_and_no_change_embed_exactly_what_changed() {
    let server = ScriptedEmbeddings::start([]).await;
    let embedder = server.client(MODEL);
    let (store, _) = dest().await;
    let work = tempfile::tempdir().unwrap();
    let src = work.path().join("src");
    fs::create_dir_all(&src).unwrap();
    fs::write(src.join("guide.md"), guide()).unwrap();
    fs::write(src.join("borer.md"), "# Stem borer\n\nLarvae dig tunnels.").unwrap();
    fs::write(src.join("notes.txt"), "Prune after harvest.").unwrap();
    fs::write(src.join("photo.png"), [0u8, 1, 2]).unwrap();
    // Written an hour ago: its fingerprint alone tells it unchanged (see the last step).
    let an_hour_ago = std::time::SystemTime::now() - Duration::from_secs(3600);
    set_modified(&src.join("notes.txt"), an_hour_ago);
    let source = SyncSource::Folder(src.clone());
    let opts = options(&embedder);

    // First sync: 3 + 1 + 1 passages embedded, one publish, the ingest's version.
    let first = sync(&source, &store, &opts).await.unwrap();
    assert_eq!(counts(&first), [4, 3, 0, 0, 0, 5, 0]);
    assert_eq!(embedded(&server), 5);
    assert!(first.published);
    assert_eq!(first.skipped.len(), 1, "{:?}", first.skipped);
    assert_eq!(first.skipped[0].path, "photo.png");
    assert!(first.failed.is_empty());
    let v1 = first.version.clone().unwrap();
    assert_eq!(store.pointer().await.unwrap().version, v1);

    // Add a document of two passages: only those two are embedded.
    fs::write(
        src.join("rot.md"),
        format!(
            "# Fruit rot\n\n{}{}",
            section("Husk", "the husk darkens before ripening"),
            section("Leaf spot", "brown spots spread across the leaves"),
        ),
    )
    .unwrap();
    let added = sync(&source, &store, &opts).await.unwrap();
    assert_eq!(counts(&added), [5, 1, 0, 0, 3, 2, 0]);
    assert_eq!(embedded(&server), 7);
    let v2 = added.version.clone().unwrap();
    assert_ne!(v2, v1);

    // One paragraph of the guide changes: that passage is embedded, the other two cached.
    fs::write(
        src.join("guide.md"),
        guide().replacen("## Drainage\n\nraised", "## Drainage\n\npuddles raised", 1),
    )
    .unwrap();
    let modified = sync(&source, &store, &opts).await.unwrap();
    assert_eq!(counts(&modified), [5, 0, 1, 0, 3, 1, 2]);
    assert_eq!(embedded(&server), 8);
    let last = server.batches().last().unwrap().clone();
    assert_eq!(last.len(), 1);
    assert!(
        last[0].contains("Drainage") && last[0].contains("puddles"),
        "{last:?}"
    );

    // Delete a document: nothing embedded, its passages gone from the published version.
    fs::remove_file(src.join("borer.md")).unwrap();
    let deleted = sync(&source, &store, &opts).await.unwrap();
    assert_eq!(counts(&deleted), [4, 0, 0, 1, 3, 0, 0]);
    assert_eq!(embedded(&server), 8);
    let v4 = deleted.version.clone().unwrap();
    let published = store.list().await.unwrap();
    let current = published.iter().find(|p| p.current).unwrap();
    assert_eq!(current.version, v4);
    let paths: Vec<&str> = current
        .manifest
        .documents
        .iter()
        .map(|d| d.path.as_str())
        .collect();
    assert_eq!(paths, ["guide.md", "notes.txt", "rot.md"]);
    assert_eq!(current.manifest.counts.passages, 6);
    assert_eq!(v4, ingest_version(&src, &embedder).await);

    // No change: nothing read, embedded or published. A file rewritten with its size and
    // modification time kept is not read (its fingerprint did not move).
    let notes = src.join("notes.txt");
    fs::write(&notes, "XXXXXXXXXXXXXXXXXXXX").unwrap();
    set_modified(&notes, an_hour_ago);
    let calls = server.total_calls();
    let again = sync(&source, &store, &opts).await.unwrap();
    assert_eq!(counts(&again), [4, 0, 0, 0, 3, 0, 0]);
    assert!(!again.published);
    assert_eq!(again.version.as_deref(), Some(v4.as_str()));
    assert_eq!(server.total_calls(), calls);
    assert_eq!(
        store.list().await.unwrap().len(),
        4,
        "four versions published"
    );
}

#[tokio::test]
async fn a_folder_and_s3_source_give_the_ingest_version_and_a_poisoned_file_fails_alone() {
    let server = ScriptedEmbeddings::start([]).await;
    let embedder = server.client(MODEL);
    let work = tempfile::tempdir().unwrap();
    let src = work.path().join("src");
    fs::create_dir_all(src.join("sub")).unwrap();
    fs::write(src.join("guide.md"), guide()).unwrap();
    fs::write(
        src.join("sub/borer.md"),
        "# Stem borer\n\nLarvae dig tunnels.",
    )
    .unwrap();
    let expected = ingest_version(&src, &embedder).await;

    // The same documents in a bucket, plus a file that is not UTF-8 text.
    let (store, s3c) = dest().await;
    let source_bucket = bucket(&s3c).await;
    for (key, body) in [
        ("docs/guide.md", guide().into_bytes()),
        (
            "docs/sub/borer.md",
            b"# Stem borer\n\nLarvae dig tunnels.".to_vec(),
        ),
        ("docs/bad.txt", vec![0xff, 0xfe, b'x']),
    ] {
        s3c.put_object()
            .bucket(&source_bucket)
            .key(key)
            .body(body.into())
            .send()
            .await
            .unwrap();
    }
    let source = SyncSource::S3 {
        client: s3c.clone(),
        location: format!("s3://{source_bucket}/docs").parse().unwrap(),
    };
    let before = embedded(&server);
    let summary = sync(&source, &store, &options(&embedder)).await.unwrap();
    assert_eq!(summary.version.as_deref(), Some(expected.as_str()));
    assert_eq!(summary.failed.len(), 1);
    assert_eq!(summary.failed[0].path, "bad.txt");
    assert!(
        matches!(summary.failed[0].reason, FailReason::Unreadable { .. }),
        "{:?}",
        summary.failed[0]
    );
    // Ingest embedded these passages already, but into its own staging: the bucket's cache
    // is empty, so all four are embedded once.
    assert_eq!(summary.embedded_passages, 4);
    assert_eq!(embedded(&server) - before, 4);

    // A folder synced to another destination of the same bucket: the same version.
    let folder_dest = BundleStore::new(
        s3c.clone(),
        format!("s3://{source_bucket}/folder-kb").parse().unwrap(),
    );
    let folder = sync(&SyncSource::Folder(src), &folder_dest, &options(&embedder))
        .await
        .unwrap();
    assert_eq!(folder.version.as_deref(), Some(expected.as_str()));

    // The poisoned file stays failed until it changes; fixed, it is read and published.
    s3c.put_object()
        .bucket(&source_bucket)
        .key("docs/bad.txt")
        .body(b"Mulch keeps the soil wet.".to_vec().into())
        .send()
        .await
        .unwrap();
    let fixed = sync(&source, &store, &options(&embedder)).await.unwrap();
    assert_eq!(counts(&fixed), [3, 0, 1, 0, 2, 1, 0]);
    assert!(fixed.failed.is_empty());
    assert!(fixed.published);
}

#[tokio::test]
async fn the_cache_serves_another_machine_with_no_sync_state() {
    let server = ScriptedEmbeddings::start([]).await;
    let embedder = server.client(MODEL);
    let (store, s3c) = dest().await;
    let work = tempfile::tempdir().unwrap();
    let src = work.path().join("src");
    fs::create_dir_all(&src).unwrap();
    fs::write(src.join("guide.md"), guide()).unwrap();
    let source = SyncSource::Folder(src);
    let first = sync(&source, &store, &options(&embedder)).await.unwrap();
    assert_eq!(first.embedded_passages, 3);
    // Another machine: no state, no snapshot of the last version; only the cache objects.
    let loc = store.location().clone();
    s3c.delete_object()
        .bucket(&loc.bucket)
        .key(format!("{}/.sync/state.json.gz", loc.prefix))
        .send()
        .await
        .unwrap();
    let gone = s3c
        .get_object()
        .bucket(&loc.bucket)
        .key(format!("{}/.sync/state.json.gz", loc.prefix))
        .send()
        .await;
    assert!(gone.is_err(), "{gone:?}");

    let listed = s3c
        .list_objects_v2()
        .bucket(&loc.bucket)
        .prefix(format!("{}/.sync/vectors-", loc.prefix))
        .send()
        .await
        .unwrap();
    for object in listed.contents() {
        s3c.delete_object()
            .bucket(&loc.bucket)
            .key(object.key().unwrap())
            .send()
            .await
            .unwrap();
    }
    let calls = server.total_calls();
    let second = sync(&source, &store, &options(&embedder)).await.unwrap();
    assert_eq!(counts(&second), [1, 1, 0, 0, 0, 0, 3]);
    assert_eq!(server.total_calls(), calls);
    assert_eq!(second.version, first.version);
    assert!(!second.published, "the same version is already current");
}

#[tokio::test]
async fn kb_sync_json_has_the_summary_fields() {
    let server = ScriptedEmbeddings::start([]).await;
    let (store, _) = dest().await;
    let work = tempfile::tempdir().unwrap();
    let src = work.path().join("src");
    fs::create_dir_all(&src).unwrap();
    fs::write(src.join("guide.md"), guide()).unwrap();
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_bounded-rag"));
    cmd.args(["kb", "sync"])
        .arg(&src)
        .arg(store.location().to_string())
        .arg("--json")
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("EMBEDDINGS_BASE_URL", server.base_url())
        .env("EMBEDDINGS_MODEL", MODEL);
    for (key, value) in moto().await.function_env() {
        cmd.env(key, value);
    }
    let out = tokio::task::spawn_blocking(move || cmd.output().unwrap())
        .await
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut keys: Vec<&str> = json
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        [
            "cached_passages",
            "deleted",
            "embedded_passages",
            "failed",
            "modified",
            "new",
            "published",
            "scanned",
            "skipped",
            "unchanged",
            "version"
        ]
    );
    assert_eq!(json["new"], 1);
    assert_eq!(json["embedded_passages"], 3);
    assert_eq!(embedded(&server), 3);
}
