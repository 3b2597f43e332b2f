//! `bounded-rag thread show ID | list | delete ID`: the local caller's conversation threads
//! (the CLI asks as the anonymous caller, as its runs are), through the same calls of the run
//! life cycle as the HTTP routes.

use super::output::{fail, fail_refusal};
use crate::clock::utc_seconds;
use crate::entry::App;
use crate::rag::Caller;
use crate::runs::ThreadHead;
use clap::Subcommand;
use std::process::ExitCode;

/// `thread` sub-commands.
#[derive(Debug, Subcommand)]
pub(crate) enum ThreadCommand {
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
    let runs = app.runs();
    let me = Caller::Anonymous;
    match command {
        ThreadCommand::Show { thread_id, json } => {
            match runs.thread(&me, &thread_id, 0, usize::MAX).await {
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
                Err(e) => fail_refusal(&e),
            }
        }
        ThreadCommand::List { limit, json } => {
            match runs.thread_list(&me, usize::from(limit), None).await {
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
                Err(e) => fail_refusal(&e),
            }
        }
        ThreadCommand::Delete { thread_id } => match runs.delete_thread(&me, &thread_id).await {
            Ok(()) => {
                println!("deleted thread {thread_id}");
                ExitCode::SUCCESS
            }
            Err(e) => fail_refusal(&e),
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
