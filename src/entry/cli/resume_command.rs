//! `bounded-rag resume RUN_ID (--answer TEXT | --approve | --deny) [--json]`: answers a run
//! that waits for a person, through the same call as `POST /workflow/runs/{run_id}/resume`
//! (see `runs/resume.rs`); and `ask` on a terminal, which asks the person itself when its run
//! waits, then goes on.

use super::output::{fail, fail_refusal, print_response, render};
use crate::entry::App;
use crate::rag::{Interrupt, Reply, RunResponse, RunStatus};
use crate::runs::{Answer, ResumeInput};
use clap::Args;
use std::io::{BufRead, IsTerminal, Write};
use std::process::ExitCode;

/// `resume` arguments.
#[derive(Debug, Args)]
#[command(group = clap::ArgGroup::new("reply").required(true).args(["answer", "approve", "deny"]))]
pub(crate) struct ResumeArgs {
    /// The waiting run (`bounded-rag status RUN_ID` shows what it asks).
    pub run_id: String,
    /// The answer to the run's clarifying question.
    #[arg(long)]
    pub answer: Option<String>,
    /// Consent to the step the run waits to run.
    #[arg(long)]
    pub approve: bool,
    /// Refuse it: the run goes on without that step.
    #[arg(long)]
    pub deny: bool,
    /// Print the full JSON response.
    #[arg(long)]
    pub json: bool,
}

impl ResumeArgs {
    fn reply(&self) -> Reply {
        match &self.answer {
            Some(answer) => Reply::Answer(answer.clone()),
            None => Reply::Approve(self.approve),
        }
    }
}

/// Runs `resume`: 0 answered, 1 refused or failed, 2 an answer that does not fit.
pub(super) async fn resume_command(args: ResumeArgs) -> ExitCode {
    let app = match App::from_env().await {
        Ok(app) => app,
        Err(e) => return fail(2, &e.to_string()),
    };
    match answer(&app, &args.run_id, args.reply()).await {
        Ok(response) => print_response(&response, args.json),
        Err(code) => code,
    }
}

/// Answers the waiting run `run_id` with `reply`: the run as it then stands, or the exit of a
/// refusal (already reported).
pub(super) async fn answer(app: &App, run_id: &str, reply: Reply) -> Result<RunResponse, ExitCode> {
    let runs = app.runs();
    let budget = runs.budget(None);
    let input = ResumeInput {
        reply: Ok(reply),
        key: Ok(None),
        body: &[],
    };
    match runs
        .answer(None, run_id, input, &budget, app.work_queue())
        .await
    {
        Ok(Answer::Ran(ran)) => Ok(ran.response),
        Ok(Answer::Busy(run_id)) => Err(fail(
            1,
            &format!("run {run_id} is being advanced elsewhere; see `bounded-rag status {run_id}`"),
        )),
        Err(refusal) => Err(fail_refusal(&refusal)),
    }
}

/// While `response` waits and a person is at the terminal (stdin and stderr are terminals),
/// shows what it asks, reads the answer from stdin and goes on; the run as it ends up. Off a
/// terminal the waiting run is returned as it is (`bounded-rag resume` answers it later).
pub(super) async fn ask_on_terminal(
    app: &App,
    mut response: RunResponse,
) -> Result<RunResponse, ExitCode> {
    let at_terminal = std::io::stdin().is_terminal() && std::io::stderr().is_terminal();
    while at_terminal && response.status == RunStatus::Waiting {
        let Some(waiting) = &response.interrupt else {
            break;
        };
        eprint!("{}", render(&response));
        let reply = match &waiting.interrupt {
            Interrupt::Clarify { .. } => {
                let Some(line) = read_line("your answer: ") else {
                    break;
                };
                Reply::Answer(line)
            }
            Interrupt::Approve { .. } => {
                let Some(line) = read_line("approve? [y/N]: ") else {
                    break;
                };
                Reply::Approve(matches!(line.to_ascii_lowercase().as_str(), "y" | "yes"))
            }
        };
        response = answer(app, &response.run_id.clone(), reply).await?;
    }
    Ok(response)
}

/// A trimmed line from stdin after `prompt` on stderr; `None` at the end of input or for an
/// empty line.
fn read_line(prompt: &str) -> Option<String> {
    eprint!("{prompt}");
    std::io::stderr().flush().ok();
    let mut line = String::new();
    std::io::stdin().lock().read_line(&mut line).ok()?;
    let line = line.trim().to_owned();
    (!line.is_empty()).then_some(line)
}
