//! Reading a run's JSON body as the API, the CLI's `--json` and the playground give it.

use serde_json::Value;
use std::process::Output;

/// The names of the run's `workflow_steps`, in order.
pub fn step_names(run: &Value) -> Vec<&str> {
    run["workflow_steps"]
        .as_array()
        .expect("workflow_steps")
        .iter()
        .map(|s| s["name"].as_str().expect("a step's name"))
        .collect()
}

/// The JSON a `bounded-rag ... --json` run printed (its stdout and stderr shown if not JSON).
pub fn stdout_json(o: &Output) -> Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
        panic!(
            "{e}: {} {}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        )
    })
}
