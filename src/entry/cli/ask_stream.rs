//! `bounded-rag ask --stream`: the answer's text on stdout as it is generated, a note on stderr
//! when an attempt is discarded, then the sources and the summary; with `--json`, every event
//! as one JSON line (`{"event", "data"}`), the last one `final` with the full response.

use super::output::render;
use crate::rag::{Events, RunEvent, RunResponse};
use crate::runs::{Answer, Refusal};
use std::future::Future;
use std::io::Write;

/// Runs `run`, given where to send its events, printing them as they come, then the final
/// response; returns what `run` returned.
pub(crate) async fn run<F, Fut>(json: bool, run: F) -> Result<Answer, Refusal>
where
    F: FnOnce(Events) -> Fut,
    Fut: Future<Output = Result<Answer, Refusal>>,
{
    let (events, mut receiver) = Events::channel();
    let mut printer = Printer::new(json);
    let run = run(events);
    tokio::pin!(run);
    let result = loop {
        tokio::select! {
            biased;
            Some(event) = receiver.recv() => printer.event(&event),
            result = &mut run => break result,
        }
    };
    while let Ok(event) = receiver.try_recv() {
        printer.event(&event);
    }
    if let Ok(Answer::Ran(ran)) = &result {
        printer.finish(&ran.response);
    }
    result
}

/// Prints events for a person (text) or a program (JSON lines).
struct Printer {
    json: bool,
    /// Text of the current attempt, to print only what the final answer adds to it.
    shown: String,
}

impl Printer {
    fn new(json: bool) -> Self {
        Self {
            json,
            shown: String::new(),
        }
    }

    fn event(&mut self, event: &RunEvent) {
        if self.json {
            let line = serde_json::json!({"event": event.name(), "data": event.data()});
            print_flush(&format!("{line}\n"));
            return;
        }
        match event {
            RunEvent::Token { text, .. } => {
                self.shown.push_str(text);
                print_flush(text);
            }
            RunEvent::Discarded { attempt } => {
                if !self.shown.is_empty() {
                    print_flush("\n");
                }
                eprintln!("bounded-rag: answer attempt {attempt} discarded; generating another");
                self.shown.clear();
            }
            RunEvent::Step { .. } => {} // steps are on stderr through the progress log
        }
    }

    fn finish(&mut self, response: &RunResponse) {
        if self.json {
            let line = serde_json::json!({"event": "final", "data": response});
            print_flush(&format!("{line}\n"));
            return;
        }
        // The final answer may add a disclaimer to what was streamed, or differ from it (a
        // limit stopped the run after an attempt was discarded): print what is missing.
        let rest = match response.answer.strip_prefix(self.shown.as_str()) {
            Some(rest) => rest.to_owned(),
            None if self.shown.is_empty() => response.answer.clone(),
            None => format!("\n\n{}", response.answer),
        };
        let mut summary = response.clone();
        summary.answer.clear();
        print_flush(&format!("{rest}\n{}\n", render(&summary)));
    }
}

fn print_flush(text: &str) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes());
    let _ = out.flush();
}
