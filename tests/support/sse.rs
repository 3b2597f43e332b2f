//! Server-sent events read from a streamed HTTP body as they arrive (`reqwest::Response::chunk`):
//! each `\n\n`-terminated frame's `id:`, `event:` and JSON `data:`, as a client reads them.

use serde_json::Value;

/// One server-sent event.
#[derive(Debug, Clone)]
pub struct Event {
    /// The frame's `id:` (empty when it has none).
    pub id: String,
    /// The frame's `event:` (empty when it has none).
    pub name: String,
    /// The frame's `data:` lines, joined and parsed as JSON.
    pub data: Value,
}

/// Reads server-sent events from a streamed body as they arrive.
pub struct Events {
    response: reqwest::Response,
    buffer: String,
}

impl Events {
    pub fn new(response: reqwest::Response) -> Self {
        Self {
            response,
            buffer: String::new(),
        }
    }

    /// The next event, or `None` at the end of the body.
    pub async fn next(&mut self) -> Option<Event> {
        loop {
            if let Some(end) = self.buffer.find("\n\n") {
                let frame: String = self.buffer.drain(..end + 2).collect();
                let (mut id, mut name, mut data) = (String::new(), String::new(), String::new());
                for line in frame.lines() {
                    if let Some(v) = line.strip_prefix("id: ") {
                        id = v.to_owned();
                    } else if let Some(v) = line.strip_prefix("event: ") {
                        name = v.to_owned();
                    } else if let Some(v) = line.strip_prefix("data: ") {
                        data.push_str(v);
                    }
                }
                let data = serde_json::from_str(&data)
                    .unwrap_or_else(|e| panic!("event {name} data is not JSON ({e}): {data}"));
                return Some(Event { id, name, data });
            }
            let chunk = self.response.chunk().await.expect("read the stream")?;
            self.buffer
                .push_str(std::str::from_utf8(&chunk).expect("UTF-8 stream"));
        }
    }

    /// Every event to the end of the body; panics on trailing bytes that make no frame.
    pub async fn all(mut self) -> Vec<Event> {
        let mut events = Vec::new();
        while let Some(event) = self.next().await {
            events.push(event);
        }
        assert!(
            self.buffer.trim().is_empty(),
            "trailing bytes: {:?}",
            self.buffer
        );
        events
    }
}
