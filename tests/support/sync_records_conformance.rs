//! Backend-agnostic conformance checks for [`SyncRecords`] (the sync function's records),
//! run against the memory, file and DynamoDB stores as [`super::store_conformance`] is for
//! checkpoints. Every check uses a fresh destination, so checks can share a long-lived table.

use bounded_rag::store::{DocPhase, DocRecord, JobRecord, PublishEnd, SyncControl, SyncRecords};
use std::sync::Arc;

/// How many writers race on one record.
const RACERS: u64 = 12;

fn fresh_dest(check: &str) -> String {
    format!("s3://conformance/{check}-{}", uuid::Uuid::new_v4())
}

fn doc(rel: &str, phase: DocPhase, rev: u64) -> DocRecord {
    DocRecord {
        rel: rel.into(),
        object_version: "v1".into(),
        sequencer: "00a1".into(),
        phase,
        hash: "ab".repeat(32),
        reason_json: None,
        attempts: 1,
        lease_until: 0,
        rev,
    }
}

/// Runs every check that needs only a shared reference.
pub async fn check_all(store: &dyn SyncRecords) {
    check_fresh_destination_is_empty(store).await;
    check_doc_writes_are_conditional_on_rev(store).await;
    check_destinations_are_apart(store).await;
    check_counters_and_schedule(store).await;
    check_publish_lease(store).await;
    check_jobs_sorted_and_replaced(store).await;
}

/// Runs the checks that race writers on separate tasks.
pub async fn check_parallel(store: Arc<dyn SyncRecords>) {
    check_one_racer_records_a_doc(Arc::clone(&store)).await;
    check_concurrent_counts_all_land(Arc::clone(&store)).await;
    check_one_racer_takes_the_lease(store).await;
}

async fn check_fresh_destination_is_empty(store: &dyn SyncRecords) {
    let dest = fresh_dest("empty");
    assert_eq!(store.doc(&dest, "a.md").await.unwrap(), None);
    assert!(store.docs(&dest).await.unwrap().is_empty());
    assert_eq!(store.control(&dest).await.unwrap(), SyncControl::default());
    assert!(store.jobs(&dest).await.unwrap().is_empty());
}

async fn check_doc_writes_are_conditional_on_rev(store: &dyn SyncRecords) {
    let dest = fresh_dest("rev");
    let mut record = doc("dir/a b#1.md", DocPhase::Processing, 0);
    record.reason_json = Some(r#"{"kind":"unreadable"}"#.into());
    assert!(store.put_doc(&dest, &record, None).await.unwrap());
    // A second create loses: the document exists.
    assert!(!store.put_doc(&dest, &record, None).await.unwrap());
    let stored = store.doc(&dest, "dir/a b#1.md").await.unwrap().unwrap();
    assert_eq!(
        stored,
        DocRecord {
            rev: 1,
            ..record.clone()
        }
    );
    // An update from the rev read wins once; the same update again is stale.
    let done = DocRecord {
        phase: DocPhase::Done,
        reason_json: None,
        ..stored.clone()
    };
    assert!(store.put_doc(&dest, &done, Some(1)).await.unwrap());
    assert!(!store.put_doc(&dest, &done, Some(1)).await.unwrap());
    // An update of a document never written loses.
    let ghost = doc("ghost.md", DocPhase::Done, 3);
    assert!(!store.put_doc(&dest, &ghost, Some(3)).await.unwrap());
    let stored = store.doc(&dest, "dir/a b#1.md").await.unwrap().unwrap();
    assert_eq!(
        (stored.phase, stored.rev, stored.reason_json),
        (DocPhase::Done, 2, None)
    );
    assert_eq!(store.docs(&dest).await.unwrap().len(), 1);
}

async fn check_destinations_are_apart(store: &dyn SyncRecords) {
    let dest = fresh_dest("apart");
    let longer = format!("{dest}2");
    for rel in ["a.md", "b.md"] {
        assert!(store
            .put_doc(&dest, &doc(rel, DocPhase::Done, 0), None)
            .await
            .unwrap());
    }
    assert!(store
        .put_doc(&longer, &doc("c.md", DocPhase::Done, 0), None)
        .await
        .unwrap());
    store.count_change(&longer, 5, 0).await.unwrap();
    let mut rels: Vec<String> = store
        .docs(&dest)
        .await
        .unwrap()
        .into_iter()
        .map(|d| d.rel)
        .collect();
    rels.sort();
    assert_eq!(rels, ["a.md", "b.md"]);
    assert_eq!(store.docs(&longer).await.unwrap().len(), 1);
    assert_eq!(store.doc(&dest, "c.md").await.unwrap(), None);
    assert_eq!(store.control(&dest).await.unwrap().changes, 0);
}

async fn check_counters_and_schedule(store: &dyn SyncRecords) {
    let dest = fresh_dest("counters");
    store.count_change(&dest, 3, 1).await.unwrap();
    store.count_change(&dest, 2, 4).await.unwrap();
    let control = store.control(&dest).await.unwrap();
    assert_eq!(
        (control.changes, control.embedded, control.cached),
        (2, 5, 5)
    );
    assert!(
        store.schedule(&dest).await.unwrap(),
        "the first schedule is this call's"
    );
    assert!(
        !store.schedule(&dest).await.unwrap(),
        "one publish is scheduled already"
    );
    store.unschedule(&dest).await.unwrap();
    assert!(store.schedule(&dest).await.unwrap());
    // Scheduling leaves the counters alone.
    assert_eq!(store.control(&dest).await.unwrap().changes, 2);
}

async fn check_publish_lease(store: &dyn SyncRecords) {
    let dest = fresh_dest("lease");
    store.count_change(&dest, 7, 2).await.unwrap();
    assert!(store.schedule(&dest).await.unwrap());
    let taken = store
        .take_publish_lease(&dest, "one", 1_000, 2_000)
        .await
        .unwrap()
        .expect("a free lease is taken");
    assert_eq!((taken.changes, taken.embedded, taken.cached), (1, 7, 2));
    // Taking the lease cleared `scheduled`: a change now schedules another publish.
    assert!(store.schedule(&dest).await.unwrap());
    assert_eq!(
        store
            .take_publish_lease(&dest, "two", 1_500, 2_500)
            .await
            .unwrap(),
        None
    );
    assert_eq!(
        store
            .take_publish_lease(&dest, "two", 2_000, 3_000)
            .await
            .unwrap(),
        None
    );
    let end = PublishEnd {
        taken: &taken,
        version: Some("v-1"),
        published: true,
    };
    assert!(
        !store.finish_publish(&dest, "two", end).await.unwrap(),
        "not the holder"
    );
    assert!(store.finish_publish(&dest, "one", end).await.unwrap());
    let control = store.control(&dest).await.unwrap();
    assert_eq!(control.publishes, 1);
    assert_eq!(control.version.as_deref(), Some("v-1"));
    assert_eq!(
        (
            control.published_changes,
            control.published_embedded,
            control.published_cached
        ),
        (1, 7, 2)
    );
    // Released: anyone takes it at once; a lapsed lease is taken over and its holder's
    // finish is refused.
    assert!(store
        .take_publish_lease(&dest, "two", 1_600, 5_000)
        .await
        .unwrap()
        .is_some());
    let over = store
        .take_publish_lease(&dest, "three", 5_001, 9_000)
        .await
        .unwrap();
    assert!(over.is_some(), "a lapsed lease is taken over");
    let unpublished = PublishEnd {
        taken: &taken,
        version: None,
        published: false,
    };
    assert!(!store
        .finish_publish(&dest, "two", unpublished)
        .await
        .unwrap());
    assert!(store
        .finish_publish(&dest, "three", unpublished)
        .await
        .unwrap());
    let control = store.control(&dest).await.unwrap();
    assert_eq!(
        (control.publishes, control.version.as_deref()),
        (1, Some("v-1"))
    );
}

async fn check_jobs_sorted_and_replaced(store: &dyn SyncRecords) {
    let dest = fresh_dest("jobs");
    for number in [12, 3, 7] {
        let job = JobRecord {
            number,
            started_at: number * 10,
            finished_at: number * 10 + 5,
            summary_json: format!(r#"{{"n":{number}}}"#),
        };
        store.put_job(&dest, &job).await.unwrap();
    }
    let replaced = JobRecord {
        number: 7,
        started_at: 1,
        finished_at: 2,
        summary_json: "{}".into(),
    };
    store.put_job(&dest, &replaced).await.unwrap();
    let jobs = store.jobs(&dest).await.unwrap();
    let numbers: Vec<u64> = jobs.iter().map(|j| j.number).collect();
    assert_eq!(numbers, [3, 7, 12]);
    assert_eq!(jobs[1], replaced);
    assert_eq!(jobs[2].summary_json, r#"{"n":12}"#);
}

async fn check_one_racer_records_a_doc(store: Arc<dyn SyncRecords>) {
    let dest = fresh_dest("race-doc");
    let first = doc("a.md", DocPhase::Processing, 0);
    assert!(store.put_doc(&dest, &first, None).await.unwrap());
    let tasks: Vec<_> = (0..RACERS)
        .map(|i| {
            let (store, dest) = (Arc::clone(&store), dest.clone());
            tokio::spawn(async move {
                let mut mine = doc("a.md", DocPhase::Done, 1);
                mine.hash = format!("{i:064}");
                store.put_doc(&dest, &mine, Some(1)).await.unwrap()
            })
        })
        .collect();
    let mut wins = 0;
    for task in tasks {
        wins += u64::from(task.await.unwrap());
    }
    assert_eq!(
        wins, 1,
        "exactly one writer from rev 1 records the document"
    );
    assert_eq!(store.doc(&dest, "a.md").await.unwrap().unwrap().rev, 2);
}

async fn check_concurrent_counts_all_land(store: Arc<dyn SyncRecords>) {
    let dest = fresh_dest("race-count");
    let tasks: Vec<_> = (0..RACERS)
        .map(|i| {
            let (store, dest) = (Arc::clone(&store), dest.clone());
            tokio::spawn(async move { store.count_change(&dest, i, 1).await.unwrap() })
        })
        .collect();
    for task in tasks {
        task.await.unwrap();
    }
    let control = store.control(&dest).await.unwrap();
    assert_eq!(control.changes, RACERS);
    assert_eq!(control.embedded, (0..RACERS).sum::<u64>());
    assert_eq!(control.cached, RACERS);
}

async fn check_one_racer_takes_the_lease(store: Arc<dyn SyncRecords>) {
    let dest = fresh_dest("race-lease");
    let tasks: Vec<_> = (0..RACERS)
        .map(|i| {
            let (store, dest) = (Arc::clone(&store), dest.clone());
            tokio::spawn(async move {
                let owner = format!("owner-{i}");
                store
                    .take_publish_lease(&dest, &owner, 100, 10_000)
                    .await
                    .unwrap()
            })
        })
        .collect();
    let mut taken = 0;
    for task in tasks {
        taken += usize::from(task.await.unwrap().is_some());
    }
    assert_eq!(taken, 1, "exactly one publish holds the lease");
}
