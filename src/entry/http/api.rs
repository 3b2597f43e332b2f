//! What the HTTP route handlers are given: the runs, what the API admits and the work queue,
//! and nothing else of the application.

use super::limits::HttpLimits;
use crate::entry::app::App;
use crate::runs::Runs;
use crate::runs::WorkQueue;

/// What the HTTP handlers use: the runs, what the API admits, and the work queue (continuations
/// and asynchronous runs; `None` when `WORK_QUEUE_URL` is not set).
#[derive(Clone, Copy)]
pub(crate) struct Api<'a> {
    pub(crate) runs: &'a Runs,
    pub(crate) limits: &'a HttpLimits,
    pub(crate) queue: Option<&'a dyn WorkQueue>,
}

impl<'a> Api<'a> {
    /// The parts of `app` the HTTP handlers use, with `queue`.
    pub(crate) fn new(app: &'a App, queue: Option<&'a dyn WorkQueue>) -> Self {
        Self {
            runs: app.runs(),
            limits: app.http_limits(),
            queue,
        }
    }
}
