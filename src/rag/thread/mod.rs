//! Conversation threads, as the workflow sees them: a run with a `thread_id` is the next turn
//! of the caller's thread. Starting, recording and reading turns is the run life cycle's
//! (`crate::runs::thread`); this module holds what a turn's run carries and uses.
//!
//! | file | owns |
//! |---|---|
//! | `context.rs` | the context a turn's state carries, and the thread id rule |
//! | `earlier_turns.rs` | how earlier turns are shown to the prompts |
//! | `contextualize.rs` | the `contextualize_question` node |

mod context;
mod contextualize;
mod earlier_turns;

pub(crate) use context::validate_id;
pub(crate) use context::PastTurn;
pub use context::ThreadContext;
pub(crate) use contextualize::contextualize_question;
pub(crate) use earlier_turns::{answer_history, estimate as estimate_history};
