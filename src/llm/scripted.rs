//! A scripted in-process model for unit tests and benchmarks: replies are given per task, every
//! call is recorded, so tests assert exact numbers of calls of each kind.

use super::{ChatModel, ChatRequest, Completion, LlmError, Task};
use async_trait::async_trait;
use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

/// One scripted reply.
#[derive(Debug, Clone)]
pub(crate) enum Reply {
    /// The message content (usually JSON).
    Content(String),
    /// A failure.
    Error(LlmError),
}

#[derive(Debug, Default)]
struct Script {
    queues: HashMap<Task, VecDeque<Reply>>,
    last: HashMap<Task, Reply>,
    calls: Vec<Task>,
}

/// A model that answers from per-task queues; when a queue runs dry its last reply repeats.
#[derive(Debug, Default)]
pub(crate) struct ScriptedModel {
    script: Mutex<Script>,
}

impl ScriptedModel {
    /// An empty script (every call fails until replies are added).
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// Queues a JSON reply for `task`.
    pub(crate) fn reply(self, task: Task, json: serde_json::Value) -> Self {
        self.push(task, Reply::Content(json.to_string()))
    }

    /// Queues a raw content reply (for malformed output).
    pub(crate) fn raw(self, task: Task, content: &str) -> Self {
        self.push(task, Reply::Content(content.to_owned()))
    }

    /// Queues an error for `task`.
    pub(crate) fn fail(self, task: Task, error: LlmError) -> Self {
        self.push(task, Reply::Error(error))
    }

    fn push(self, task: Task, reply: Reply) -> Self {
        if let Ok(mut s) = self.script.lock() {
            s.queues.entry(task).or_default().push_back(reply);
        }
        self
    }

    /// Calls made for `task`.
    pub(crate) fn calls(&self, task: Task) -> usize {
        self.script
            .lock()
            .map(|s| s.calls.iter().filter(|t| **t == task).count())
            .unwrap_or(0)
    }

    /// All calls, in order.
    pub(crate) fn call_log(&self) -> Vec<Task> {
        self.script
            .lock()
            .map(|s| s.calls.clone())
            .unwrap_or_default()
    }
}

#[async_trait]
impl ChatModel for ScriptedModel {
    async fn complete(&self, request: &ChatRequest<'_>) -> Result<Completion, LlmError> {
        let reply = {
            let mut s = self
                .script
                .lock()
                .map_err(|_| LlmError::Config("script lock poisoned".into()))?;
            s.calls.push(request.task);
            let next = s
                .queues
                .get_mut(&request.task)
                .and_then(VecDeque::pop_front);
            match next {
                Some(reply) => {
                    s.last.insert(request.task, reply.clone());
                    reply
                }
                None => s.last.get(&request.task).cloned().ok_or_else(|| {
                    LlmError::Config(format!(
                        "no scripted reply for {}",
                        request.task.schema_name()
                    ))
                })?,
            }
        };
        match reply {
            Reply::Content(text) => Ok(Completion::new(text)),
            Reply::Error(e) => Err(e),
        }
    }

    fn name(&self) -> &'static str {
        "scripted"
    }
}
