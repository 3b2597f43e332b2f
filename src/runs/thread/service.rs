//! [`Threads`]: the thread operations every entry point shares.
//!
//! - **Start a turn** ([`Threads::begin`]): one conditional head write marks the turn
//!   active. A head that already has an unfinished turn answers [`ThreadError::Busy`], so two
//!   concurrent requests can never both start a turn: the loser of the write race reads the
//!   head again and finds it busy. An active turn whose run has in fact ended (its invocation
//!   died before recording it) is recorded first; one whose run never got stored is dropped
//!   after [`CREATE_GRACE`].
//! - **Record a finished turn** (`record.rs`, called by the workflow when a thread's run
//!   ends): the turn item, then the head (window of recent turns, active cleared).
//! - Read, list and delete (the HTTP routes and the CLI).
//!
//! Cost per turn: one turn write and two head writes, whatever the thread's length.

use super::error::ThreadError;
use super::head::{ActiveTurn, ThreadHead, TurnRecord};
use super::heads::{corrupt, encode, Heads, ATTEMPTS};
use super::record::{ended, turn_record};
use super::window;
use crate::clock::Clock;
use crate::config::ThreadSettings;
use crate::engine::Session;
use crate::rag::ThreadContext;
use crate::rag::{Caller, RagCheckpoint};
use crate::runs::active::CREATE_GRACE;
use crate::store::{CheckpointStore, StoreError, ThreadKey};

/// Longest `Retry-After` suggested for a busy thread.
const MAX_RETRY_AFTER_MS: u64 = 30_000;
/// Shortest `Retry-After` suggested for a busy thread.
const MIN_RETRY_AFTER_MS: u64 = 1_000;

/// One page of a caller's threads.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ThreadPage {
    /// Heads, most recently updated first.
    pub threads: Vec<ThreadHead>,
    /// Pass back as `cursor` for the next page; `None` on the last.
    pub next_cursor: Option<String>,
}

/// The thread operations over a checkpoint store.
#[derive(Clone, Copy)]
pub struct Threads<'a> {
    store: &'a dyn CheckpointStore,
    heads: Heads<'a>,
    clock: &'a dyn Clock,
    settings: ThreadSettings,
}

/// What became of a turn marked active.
enum Settled {
    /// Its run ended: record it.
    Ended(TurnRecord),
    /// Its run never got stored: forget it.
    Gone,
    /// Still going: busy until (epoch ms).
    Going(u64),
}

impl<'a> Threads<'a> {
    /// The threads kept in `store`.
    pub(crate) fn new(
        store: &'a dyn CheckpointStore,
        clock: &'a dyn Clock,
        settings: ThreadSettings,
    ) -> Self {
        Self {
            store,
            heads: Heads::new(store),
            clock,
            settings,
        }
    }

    /// Starts turn `run_id` of `caller`'s thread `thread_id` (creating the thread), or answers
    /// [`ThreadError::Busy`] while another turn is unfinished. Starting the same run again is
    /// a no-op that returns the same context.
    pub async fn begin(
        &self,
        caller: &Caller,
        thread_id: &str,
        run_id: &str,
        question: &str,
    ) -> Result<ThreadContext, ThreadError> {
        let owner = caller.digest();
        let key = ThreadKey {
            owner: &owner,
            thread_id,
        };
        let ttl_secs = self.settings.ttl.as_secs();
        for _ in 0..ATTEMPTS {
            let now_ms = self.clock.now_ms();
            let (version, mut head) = match self.heads.read(key).await? {
                Some(found) => found,
                None => (0, ThreadHead::new(thread_id, now_ms)),
            };
            if let Some(active) = head.active.clone() {
                if active.run_id == run_id {
                    return Ok(self.context(&head, active.turn, question));
                }
                match self.settle(&active, now_ms).await? {
                    Settled::Going(until_ms) => {
                        return Err(ThreadError::Busy {
                            thread_id: thread_id.to_owned(),
                            run_id: active.run_id,
                            retry_at_ms: until_ms
                                .clamp(now_ms + MIN_RETRY_AFTER_MS, now_ms + MAX_RETRY_AFTER_MS),
                        })
                    }
                    Settled::Gone => head.active = None,
                    Settled::Ended(record) => {
                        self.heads
                            .threads()?
                            .put_turn(
                                key,
                                record.turn,
                                &encode(&record)?,
                                now_ms + ttl_secs * 1_000,
                            )
                            .await?;
                        head.append(record, self.settings.history_turns, now_ms);
                    }
                }
            }
            let turn = head.turns + 1;
            head.active = Some(ActiveTurn {
                run_id: run_id.to_owned(),
                turn,
                started_at_ms: now_ms,
            });
            head.updated_at_ms = now_ms;
            match self.heads.write(key, version, &head, ttl_secs).await {
                Ok(_) => return Ok(self.context(&head, turn, question)),
                Err(StoreError::Conflict { .. }) => continue,
                Err(e) => return Err(e.into()),
            }
        }
        Err(StoreError::Transient(format!(
            "{ATTEMPTS} concurrent requests kept changing thread {thread_id}"
        ))
        .into())
    }

    fn context(&self, head: &ThreadHead, turn: u32, question: &str) -> ThreadContext {
        let earlier: Vec<TurnRecord> = head
            .recent
            .iter()
            .filter(|t| t.turn < turn)
            .cloned()
            .collect();
        ThreadContext {
            thread_id: head.thread_id.clone(),
            turn,
            question: question.to_owned(),
            history: window::select(
                &earlier,
                self.settings.history_turns,
                self.settings.history_tokens,
            ),
            standalone_question: None,
            keep_turns: self.settings.history_turns,
            ttl_secs: self.settings.ttl.as_secs(),
        }
    }

    /// Where the run of an active turn stands.
    async fn settle(&self, active: &ActiveTurn, now_ms: u64) -> Result<Settled, ThreadError> {
        let Some(loaded) = Session::load::<RagCheckpoint>(self.store, &active.run_id).await? else {
            let grace_end = active.started_at_ms + CREATE_GRACE.as_millis() as u64;
            return Ok(if now_ms < grace_end {
                Settled::Going(grace_end)
            } else {
                Settled::Gone
            });
        };
        let cp = &loaded.checkpoint;
        if ended(cp) {
            return Ok(Settled::Ended(turn_record(cp, active, now_ms)));
        }
        let until = loaded
            .lease
            .filter(|l| l.is_live(now_ms))
            .map_or(now_ms, |l| l.expires_at_ms);
        Ok(Settled::Going(until))
    }

    /// Forgets turn `run_id` of `caller`'s thread if it is still the active one (its run
    /// could not be started), so the thread is not busy for nothing.
    pub(crate) async fn abandon(&self, caller: &Caller, thread_id: &str, run_id: &str) {
        let owner = caller.digest();
        let key = ThreadKey {
            owner: &owner,
            thread_id,
        };
        let result: Result<(), ThreadError> = async {
            let Some((version, mut head)) = self.heads.read(key).await? else {
                return Ok(());
            };
            if head.active_run() != Some(run_id) {
                return Ok(());
            }
            head.active = None;
            self.heads
                .write(key, version, &head, self.settings.ttl.as_secs())
                .await?;
            Ok(())
        }
        .await;
        if let Err(e) = result {
            tracing::warn!(run_id, error = %e, "could not release the thread's turn");
        }
    }

    /// `caller`'s thread: its head and up to `limit` turns after turn `after`.
    pub(crate) async fn show(
        &self,
        caller: &Caller,
        thread_id: &str,
        after: u32,
        limit: usize,
    ) -> Result<(ThreadHead, Vec<TurnRecord>), ThreadError> {
        let owner = caller.digest();
        let key = ThreadKey {
            owner: &owner,
            thread_id,
        };
        let (_, head) = self
            .heads
            .read(key)
            .await?
            .ok_or_else(|| ThreadError::NotFound {
                thread_id: thread_id.to_owned(),
            })?;
        let bodies = self
            .heads
            .threads()?
            .turns(key, after, head.turns, limit)
            .await?;
        let turns = bodies
            .iter()
            .map(|b| serde_json::from_slice(b).map_err(|e| corrupt(key, e)))
            .collect::<Result<_, _>>()?;
        Ok((head, turns))
    }

    /// Up to `limit` of `caller`'s threads, most recently updated first, after `cursor`.
    pub(crate) async fn list(
        &self,
        caller: &Caller,
        limit: usize,
        cursor: Option<&str>,
    ) -> Result<ThreadPage, ThreadError> {
        let owner = caller.digest();
        let listed = self.heads.threads()?.list(&owner, limit, cursor).await?;
        let next_cursor = (listed.len() == limit)
            .then(|| listed.last().map(|h| h.sort.clone()))
            .flatten();
        let key = ThreadKey {
            owner: &owner,
            thread_id: "",
        };
        let threads = listed
            .iter()
            .map(|h| serde_json::from_slice(&h.body).map_err(|e| corrupt(key, e)))
            .collect::<Result<_, _>>()?;
        Ok(ThreadPage {
            threads,
            next_cursor,
        })
    }

    /// Deletes `caller`'s thread, its turns and its runs' checkpoints. Refused with
    /// [`ThreadError::Busy`] while a turn is unfinished (its run would write again).
    pub(crate) async fn delete(&self, caller: &Caller, thread_id: &str) -> Result<(), ThreadError> {
        let owner = caller.digest();
        let key = ThreadKey {
            owner: &owner,
            thread_id,
        };
        let now_ms = self.clock.now_ms();
        let (version, head) = self
            .heads
            .read(key)
            .await?
            .ok_or_else(|| ThreadError::NotFound {
                thread_id: thread_id.to_owned(),
            })?;
        let mut runs = Vec::new();
        if let Some(active) = &head.active {
            match self.settle(active, now_ms).await? {
                Settled::Going(until_ms) => {
                    return Err(ThreadError::Busy {
                        thread_id: thread_id.to_owned(),
                        run_id: active.run_id.clone(),
                        retry_at_ms: until_ms
                            .clamp(now_ms + MIN_RETRY_AFTER_MS, now_ms + MAX_RETRY_AFTER_MS),
                    })
                }
                Settled::Ended(_) | Settled::Gone => runs.push(active.run_id.clone()),
            }
        }
        let store = self.heads.threads()?;
        let mut after = 0;
        loop {
            let page = store.turns(key, after, head.turns, 100).await?;
            if page.is_empty() {
                break;
            }
            for body in &page {
                let turn: TurnRecord = serde_json::from_slice(body).map_err(|e| corrupt(key, e))?;
                after = after.max(turn.turn);
                runs.push(turn.run_id);
            }
        }
        match store.delete(key, version, head.turns, &runs).await {
            Err(StoreError::Conflict { .. }) => Err(ThreadError::Busy {
                thread_id: thread_id.to_owned(),
                run_id: head.active_run().unwrap_or_default().to_owned(),
                retry_at_ms: now_ms + MIN_RETRY_AFTER_MS,
            }),
            other => Ok(other?),
        }
    }
}
