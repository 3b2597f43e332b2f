//! Child processes: spawn-to-event timings and peak RSS.
//!
//! Peak RSS is the kernel's `ru_maxrss` of the child, read with `wait4(2)` when it is reaped
//! (the same number `/usr/bin/time -v` prints as "Maximum resident set size").

use std::io::{self, Read};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How a reaped child ended.
#[derive(Debug, Clone, Copy)]
pub struct Reaped {
    /// True when it exited with status 0.
    pub success: bool,
    /// Peak resident set size, KiB.
    pub max_rss_kib: u64,
}

/// Reaps `child` (which must not have been waited for) and reads its peak RSS.
pub fn reap(child: &Child) -> io::Result<Reaped> {
    let pid = child.id() as libc::pid_t;
    let mut status: libc::c_int = 0;
    // SAFETY: rusage is plain old data, for which all zeroes is a valid value.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: valid pointers to locals of the right types; pid is our own unreaped child.
        let rc = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
        if rc == pid {
            break;
        }
        let err = io::Error::last_os_error();
        if err.kind() != io::ErrorKind::Interrupted {
            return Err(err);
        }
    }
    Ok(Reaped {
        success: libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        // Linux reports ru_maxrss in KiB.
        max_rss_kib: u64::try_from(usage.ru_maxrss).unwrap_or(0),
    })
}

/// A command for one of our binaries on the offline provider: an empty environment but for
/// `LLM_PROVIDER=offline` and a fresh `STATE_DIR`, no stdin.
pub fn offline(bin: &Path, state_dir: &Path) -> Command {
    let mut cmd = Command::new(bin);
    cmd.env_clear()
        .env("LLM_PROVIDER", "offline")
        .env("STATE_DIR", state_dir)
        .stdin(Stdio::null());
    cmd
}

/// One run of the CLI: process start to the first byte of the answer on stdout, to exit.
#[derive(Debug, Clone, Copy)]
pub struct CliRun {
    /// Spawn to the first stdout bytes (the answer's first line).
    pub to_answer: Duration,
    /// Spawn to exit.
    pub to_exit: Duration,
    /// Peak RSS, KiB.
    pub max_rss_kib: u64,
}

/// Runs `bounded-rag -q ask QUESTION` offline with a fresh state folder.
pub fn cli_once(bin: &Path, question: &str, state_dir: &Path) -> CliRun {
    let started = Instant::now();
    let mut child = offline(bin, state_dir)
        .args(["-q", "ask", question])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn the CLI");
    let mut stdout = child.stdout.take().expect("stdout");
    let mut first = [0u8; 1];
    let n = stdout.read(&mut first).expect("read the answer");
    let to_answer = started.elapsed();
    let mut rest = Vec::new();
    stdout.read_to_end(&mut rest).expect("read the rest");
    let reaped = reap(&child).expect("reap the CLI");
    let to_exit = started.elapsed();
    assert!(
        n == 1 && reaped.success,
        "the CLI did not answer: {}",
        String::from_utf8_lossy(&rest)
    );
    CliRun {
        to_answer,
        to_exit,
        max_rss_kib: reaped.max_rss_kib,
    }
}

/// Sorted samples with the usual summaries.
#[derive(Debug, Clone)]
pub struct Samples(Vec<f64>);

impl Samples {
    /// From unsorted values.
    pub fn new(mut values: Vec<f64>) -> Self {
        assert!(!values.is_empty(), "no samples");
        values.sort_by(f64::total_cmp);
        Self(values)
    }

    /// The q-quantile (nearest rank).
    pub fn quantile(&self, q: f64) -> f64 {
        let rank = (q * self.0.len() as f64).ceil() as usize;
        self.0[rank.clamp(1, self.0.len()) - 1]
    }

    /// Median.
    pub fn median(&self) -> f64 {
        self.quantile(0.5)
    }

    /// 90th percentile.
    pub fn p90(&self) -> f64 {
        self.quantile(0.9)
    }

    /// Largest.
    pub fn max(&self) -> f64 {
        *self.0.last().unwrap()
    }

    /// Mean.
    pub fn mean(&self) -> f64 {
        self.0.iter().sum::<f64>() / self.0.len() as f64
    }

    /// Number of samples.
    pub fn len(&self) -> usize {
        self.0.len()
    }
}

/// Milliseconds of a duration, as f64.
pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}
