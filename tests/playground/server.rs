//! `bounded-rag serve` as a child process on a free loopback port (`--port 0`), with its own
//! state folder; stopped when dropped. (Shared by two test binaries; each uses part of it.)
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::thread::JoinHandle;

pub struct Serve {
    child: Child,
    /// Reads the rest of what `serve` prints (one EMF metrics line per run, then its last
    /// line), so a full pipe never blocks it.
    rest: Option<JoinHandle<Vec<String>>>,
    /// `http://127.0.0.1:PORT/`, as printed by `serve`.
    pub url: String,
    /// Every line `serve` printed before it listened.
    pub banner: Vec<String>,
    _state: tempfile::TempDir,
}

impl Serve {
    /// Starts `serve` with `env` over a clean environment, and waits for its URL line.
    pub fn start(env: &[(&str, &str)]) -> Serve {
        Self::start_with(env, &[])
    }

    /// Starts `serve ARGS` with `env` over a clean environment, and waits for its URL line.
    pub fn start_with(env: &[(&str, &str)], args: &[&str]) -> Serve {
        let state = tempfile::tempdir().unwrap();
        let mut command = Command::new(env!("CARGO_BIN_EXE_bounded-rag"));
        command
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("STATE_DIR", state.path())
            .args(["serve", "--port", "0", "--quiet"])
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        for (key, value) in env {
            command.env(key, value);
        }
        let mut child = command.spawn().expect("bounded-rag serve starts");
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut banner = Vec::new();
        // The URL line, then two more: loopback, then Ctrl-C (or, with --remote, the stack).
        for _ in 0..3 {
            let line = lines.next().expect("serve prints its URL").unwrap();
            banner.push(line);
        }
        let url = banner[0]
            .split_whitespace()
            .find(|word| word.starts_with("http://"))
            .expect("a URL in the first line")
            .to_owned();
        let rest = std::thread::spawn(move || lines.map_while(Result::ok).collect());
        Serve {
            child,
            rest: Some(rest),
            url,
            banner,
            _state: state,
        }
    }

    /// Stops the server (SIGKILL) and waits for it.
    pub fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Ctrl-C: SIGINT, then the exit status and what `serve` printed after its banner.
    pub fn interrupt(&mut self) -> (ExitStatus, Vec<String>) {
        // SAFETY: a plain kill(2) of our own child process.
        let sent = unsafe { libc::kill(self.child.id() as libc::pid_t, libc::SIGINT) };
        assert_eq!(sent, 0);
        let status = self.child.wait().unwrap();
        let rest = self.rest.take().unwrap().join().unwrap();
        (status, rest)
    }

    /// The address `host:port`.
    pub fn authority(&self) -> String {
        self.url
            .trim_start_matches("http://")
            .trim_end_matches('/')
            .to_owned()
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        self.stop();
    }
}
