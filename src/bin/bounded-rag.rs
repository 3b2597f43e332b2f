//! The `bounded-rag` CLI binary.
use bounded_rag::entry::{cli, logging};
use clap::Parser;
use std::process::ExitCode;

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let args = cli::Cli::parse();
    logging::init_cli(args.quiet);
    cli::run(args).await
}
