//! `tracing` set-up: compact progress on stderr for the CLI, JSON for Lambda when
//! `AWS_LAMBDA_LOG_FORMAT=JSON`.

use tracing_subscriber::EnvFilter;

fn filter(default: &str) -> EnvFilter {
    EnvFilter::try_from_env("RUST_LOG").unwrap_or_else(|_| EnvFilter::new(default))
}

/// CLI logging: one short line per step and per retry on stderr; `quiet` keeps warnings only.
pub fn init_cli(quiet: bool) {
    let default = if quiet {
        "warn"
    } else {
        "bounded_rag=info,warn"
    };
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter(default))
        .with_writer(std::io::stderr)
        .with_target(false)
        .without_time()
        .compact()
        .try_init();
}
