//! `suite cold-start`: the cold start of any function binary (another revision's, another
//! build's), measured as the suite measures its own (`runtime_api`), for comparing builds:
//!
//! ```sh
//! cargo bench --bench suite -- cold-start --bin /tmp/api-before --runs 20
//! cargo bench --bench suite -- cold-start --bin target/release/api \
//!     --env OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318
//! ```

use super::process::Samples;
use super::runtime_api::{lambda_once_with, LambdaRun};
use std::path::Path;

/// Measures `runs` cold starts of `bin` (plus two dropped first, as the suite does) with `env`
/// added, and prints medians and p90s.
pub fn run(bin: &Path, function: &str, runs: usize, env: &[String]) -> Result<(), String> {
    if !bin.is_file() {
        return Err(format!("--bin {}: no such file", bin.display()));
    }
    if runs == 0 {
        return Err("--runs 0: at least one run".to_owned());
    }
    let event = match function {
        "api" => "events/apigw-run.json",
        "worker" => "events/sqs-new-run.json",
        other => return Err(format!("--function {other}: api or worker")),
    };
    let event = std::fs::read_to_string(super::root().join(event)).map_err(|e| e.to_string())?;
    let env = env
        .iter()
        .map(|pair| {
            pair.split_once('=')
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
                .ok_or_else(|| format!("--env {pair}: NAME=VALUE"))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let state = tempfile::tempdir().map_err(|e| e.to_string())?;
    let samples: Vec<LambdaRun> = (0..runs + 2)
        .map(|i| {
            let dir = state.path().join(format!("{function}-{i}"));
            lambda_once_with(bin, function, &event, &dir, &env)
        })
        .skip(2)
        .collect();
    let ms = |f: fn(&LambdaRun) -> f64| Samples::new(samples.iter().map(f).collect());
    let poll = ms(|r| r.to_first_poll.as_secs_f64() * 1e3);
    let answer = ms(|r| r.to_first_response.as_secs_f64() * 1e3);
    let rss = ms(|r| r.max_rss_kib as f64 / 1024.0);
    println!(
        "{} ({function}, {runs} runs): first poll median {:.1} ms p90 {:.1} ms; first answer median {:.1} ms p90 {:.1} ms; peak RSS median {:.1} MiB max {:.1} MiB",
        bin.display(),
        poll.median(),
        poll.p90(),
        answer.median(),
        answer.p90(),
        rss.median(),
        rss.max()
    );
    Ok(())
}
