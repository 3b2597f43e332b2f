//! `bounded-rag thread show ID | list | delete ID`: the local caller's conversation threads
//! (the CLI asks as the anonymous caller, as its runs are), over the same [`Threads`] service
//! as the HTTP routes.

use super::output::{fail, fail_engine};
use crate::entry::App;
use crate::engine::utc_seconds;
use crate::runs::thread::{ThreadError, ThreadHead};
use crate::rag::Caller;
use clap::Subcommand;
use std::process::ExitCode;

/// `thread` sub-commands.
#[derive(Debug, Subcommand)]
pub enum ThreadCommand {
    /// Show a thread's turns.
    Show {
        /// The thread id (as given to `ask --thread`).
        thread_id: String,
        /// Print the turns as JSON.
        #[arg(long)]
        json: bool,
    },
    /// List the threads, most recently updated first.
    List {
        /// Most threads to list.
        #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u16).range(1..=100))]
        limit: u16,
        /// Print the threads as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Delete a thread, its turns and its runs' checkpoints.
    Delete {
        /// The thread id.
        thread_id: String,
    },
}

/// Runs a `thread` sub-command.
pub(crate) async fn thread_command(command: ThreadCommand) -> ExitCode {
    let app = match App::from_env().await {
        Ok(app) => app,
        Err(e) => return fail(2, &e.to_string()),
    };
    let threads = app.runs().threads();
    let me = Caller::Anonymous;
    match command {
        ThreadCommand::Show { thread_id, json } => {
            match threads.show(&me, &thread_id, 0, usize::MAX).await {
                Ok((head, turns)) if json => {
                    let body = serde_json::json!({ "thread_id": head.thread_id, "turns": turns });
                    println!("{body:#}");
                    ExitCode::SUCCESS
                }
                Ok((head, turns)) => {
                    println!("{}", summary(&head));
                    for t in turns {
                        println!("\n[{}] {} ({:?})", t.turn, t.question, t.status);
                        if t.standalone_question != t.question {
                            println!("    searched as: {}", t.standalone_question);
                        }
                        println!("{}", t.answer);
                        for c in &t.citations {
                            println!("  - {} ({})", c.title, c.url);
                        }
                    }
                    ExitCode::SUCCESS
                }
                Err(e) => fail_thread(&e),
            }
        }
        ThreadCommand::List { limit, json } => {
            match threads.list(&me, usize::from(limit), None).await {
                Ok(page) if json => {
                    let ids: Vec<serde_json::Value> = page
                        .threads
                        .iter()
                        .map(|h| serde_json::json!({"thread_id": h.thread_id, "turns": h.turns, "updated_at": utc_seconds(h.updated_at_ms)}))
                        .collect();
                    println!("{:#}", serde_json::Value::Array(ids));
                    ExitCode::SUCCESS
                }
                Ok(page) => {
                    for head in &page.threads {
                        println!("{}", summary(head));
                    }
                    ExitCode::SUCCESS
                }
                Err(e) => fail_thread(&e),
            }
        }
        ThreadCommand::Delete { thread_id } => match threads.delete(&me, &thread_id).await {
            Ok(()) => {
                println!("deleted thread {thread_id}");
                ExitCode::SUCCESS
            }
            Err(e) => fail_thread(&e),
        },
    }
}

fn summary(head: &ThreadHead) -> String {
    let busy = head
        .active_run()
        .map(|r| format!(", turn running: {r}"))
        .unwrap_or_default();
    format!(
        "{}  {} turns, updated {}{busy}",
        head.thread_id,
        head.turns,
        utc_seconds(head.updated_at_ms)
    )
}

/// Reports a thread error and its exit code (1: busy or not found; store errors as runs').
pub(crate) fn fail_thread(e: &ThreadError) -> ExitCode {
    match e {
        ThreadError::Engine(e) => fail_engine(e),
        ThreadError::Busy { run_id, .. } => fail(
            1,
            &format!("{e}: wait for it to finish (bounded-rag status {run_id}), then ask again"),
        ),
        ThreadError::NotFound { .. } | ThreadError::Unsupported { .. } => fail(1, &e.to_string()),
    }
}
