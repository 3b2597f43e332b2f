//! `bounded-rag fork RUN_ID --from-step N [--question TEXT] [--mode M] [--json]`: a new run
//! from a step of a stored run, through the same call as `POST /workflow/runs/{run_id}/fork`
//! (see `runs/fork.rs`); only the steps after N run.

use super::args::ModeArg;
use super::output::{fail, fail_refusal, print_response};
use crate::entry::App;
use crate::rag::ForkChanges;
use crate::runs::{Answer, ForkInput};
use clap::Args;
use std::process::ExitCode;

/// `fork` arguments.
#[derive(Debug, Args)]
pub(crate) struct ForkArgs {
    /// The run to fork (it must have ended).
    pub run_id: String,
    /// The step to fork after: its number in `bounded-rag status RUN_ID` (0: before the
    /// first). Steps up to it are not run again and cost no model call.
    #[arg(long, value_name = "N")]
    pub from_step: u32,
    /// Ask this question instead: the fork searches again from the route the run had chosen.
    #[arg(long)]
    pub question: Option<String>,
    /// Checking preset of the fork.
    #[arg(long, value_enum)]
    pub mode: Option<ModeArg>,
    /// Print the full JSON response.
    #[arg(long)]
    pub json: bool,
}

/// Runs `fork`: 0 answered, 1 refused or failed, 2 a bad step or question.
pub(super) async fn fork_command(args: ForkArgs) -> ExitCode {
    let app = match App::from_env().await {
        Ok(app) => app,
        Err(e) => return fail(2, &e.to_string()),
    };
    let runs = app.runs();
    let input = ForkInput {
        from_step: args.from_step,
        changes: ForkChanges {
            question: args.question,
            mode: args.mode.map(ModeArg::mode),
        },
    };
    let budget = runs.budget(None);
    let answer = runs
        .fork(
            None,
            &args.run_id,
            Ok(input),
            (Ok(None), &[]),
            &budget,
            app.work_queue(),
        )
        .await;
    match answer {
        Ok(Answer::Ran(ran)) => print_response(&ran.response, args.json),
        Ok(Answer::Busy(run_id)) => fail(
            1,
            &format!("run {run_id} is being advanced elsewhere; see `bounded-rag status {run_id}`"),
        ),
        Err(refusal) => fail_refusal(&refusal),
    }
}
