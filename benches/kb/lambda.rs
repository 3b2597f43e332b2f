//! One function process served a list of events by the benches' minimal Lambda Runtime API
//! (`benches/common/runtime_server.rs`); its peak RSS is read and it is killed at its next poll.
//!
//! The peak is the process's own `VmHWM` (`/proc/PID/status`), read while it waits for the next
//! event. Not `wait4(2)`'s `ru_maxrss`: Linux folds the parent's RSS at the moment of `exec`
//! into the child's `ru_maxrss`, and this benchmark's own process holds the whole corpus.

use super::runtime_server::{Event, RuntimeServer};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

/// What one function process did.
pub struct Served {
    /// Process start to its first poll (init, including the knowledge-base load).
    pub to_first_poll: Duration,
    /// Responses, in order.
    pub responses: Vec<String>,
    /// Peak RSS (`VmHWM`), KiB.
    pub max_rss_kib: u64,
}

/// Starts `cmd` (its environment set by the caller) against a runtime API that hands out
/// `events` one by one.
pub fn serve(mut cmd: Command, events: Vec<String>, limit: Duration) -> Served {
    let server = RuntimeServer::start("api", events);
    let started = Instant::now();
    // Reaped with wait4(2) in `kill`, which also reads the peak RSS.
    #[allow(clippy::zombie_processes)]
    let child = cmd
        .env("AWS_LAMBDA_RUNTIME_API", server.runtime_api())
        .env("AWS_LAMBDA_FUNCTION_NAME", "api")
        .env("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST")
        .env("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "512")
        .spawn()
        .expect("spawn the function");
    let mut first = None;
    let mut responses = Vec::new();
    loop {
        match server
            .events()
            .recv_timeout(limit.saturating_sub(started.elapsed()))
        {
            Ok(Event::Poll(at)) => {
                first.get_or_insert(at);
            }
            Ok(Event::Response(_, body)) => responses.push(body),
            Ok(Event::Error(request)) => eprintln!("kb bench: the function reported {request}"),
            Ok(Event::Idle) => break,
            Err(_) => {
                kill(&child);
                panic!("the function did not finish within {limit:?}");
            }
        }
    }
    let max_rss_kib = high_water_kib(child.id()).expect("the function's /proc status");
    kill(&child);
    server.stop();
    Served {
        to_first_poll: first.expect("a poll") - started,
        responses,
        max_rss_kib,
    }
}

/// `VmHWM` of a live process, KiB.
fn high_water_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn kill(child: &Child) {
    let pid = child.id() as libc::pid_t;
    // SAFETY: signalling and reaping our own child.
    unsafe { libc::kill(pid, libc::SIGKILL) };
    let mut status = 0;
    // SAFETY: rusage is plain old data; valid pointers to locals.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
}
