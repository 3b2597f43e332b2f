//! A loopback proxy in front of `serve` that drops the first streamed run: the response to the
//! first `POST /workflow/run` is cut after its first chunk (its first server-sent event), before
//! the body's end, as a broken connection ends it; everything else passes through
//! ([`CutProxy::recording`] cuts nothing). It records each request line and `Last-Event-ID`
//! header it forwards. (Shared by two test binaries; each uses part of it.)
#![allow(dead_code)]

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

pub struct CutProxy {
    /// `http://127.0.0.1:PORT/`.
    pub url: String,
    seen: Arc<Mutex<Vec<String>>>,
}

impl CutProxy {
    /// Starts the proxy in front of `upstream` (`host:port`).
    pub async fn start(upstream: String) -> CutProxy {
        Self::start_with(upstream, true).await
    }

    /// A proxy that cuts nothing: it only records.
    pub async fn recording(upstream: String) -> CutProxy {
        Self::start_with(upstream, false).await
    }

    async fn start_with(upstream: String, cut_first: bool) -> CutProxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/", listener.local_addr().unwrap());
        let seen = Arc::new(Mutex::new(Vec::new()));
        // Set once the cut is made (from the start: none is).
        let cut = Arc::new(AtomicBool::new(!cut_first));
        let (seen2, upstream) = (seen.clone(), Arc::new(upstream));
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let (seen, cut, upstream) = (seen2.clone(), cut.clone(), upstream.clone());
                tokio::spawn(async move {
                    if let Ok(server) = TcpStream::connect(upstream.as_str()).await {
                        relay(client, server, seen, cut).await;
                    }
                });
            }
        });
        CutProxy { url, seen }
    }

    /// Request lines and `Last-Event-ID` headers forwarded so far, in order.
    pub fn seen(&self) -> Vec<String> {
        self.seen.lock().unwrap().clone()
    }
}

async fn relay(
    client: TcpStream,
    server: TcpStream,
    seen: Arc<Mutex<Vec<String>>>,
    cut: Arc<AtomicBool>,
) {
    let (mut client_read, mut client_write) = client.into_split();
    let (mut server_read, mut server_write) = server.into_split();
    let cut_this = Arc::new(AtomicBool::new(false));
    let cut_here = cut_this.clone();
    let up = async move {
        let mut buf = vec![0u8; 16 * 1024];
        loop {
            let n = match client_read.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => n,
            };
            let text = String::from_utf8_lossy(&buf[..n]).into_owned();
            for line in text.lines() {
                let lower = line.to_ascii_lowercase();
                if line.starts_with("GET ")
                    || line.starts_with("POST ")
                    || lower.starts_with("last-event-id:")
                {
                    seen.lock().unwrap().push(line.to_owned());
                }
            }
            if text.starts_with("POST /workflow/run ") && !cut.swap(true, Ordering::SeqCst) {
                cut_here.store(true, Ordering::SeqCst);
            }
            if server_write.write_all(&buf[..n]).await.is_err() {
                return;
            }
        }
    };
    let down = async move {
        let mut buf = vec![0u8; 16 * 1024];
        let mut pending: Vec<u8> = Vec::new();
        loop {
            let n = match server_read.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => n,
            };
            if !cut_this.load(Ordering::SeqCst) {
                if client_write.write_all(&buf[..n]).await.is_err() {
                    return;
                }
                continue;
            }
            pending.extend_from_slice(&buf[..n]);
            // The head, then the body's first chunk (`SIZE\r\nDATA\r\n`): its first event.
            let Some(head) = find(&pending, b"\r\n\r\n") else {
                continue;
            };
            let body = head + 4;
            let Some(line) = find(&pending[body..], b"\r\n") else {
                continue;
            };
            let size_text = String::from_utf8_lossy(&pending[body..body + line]).into_owned();
            let size = usize::from_str_radix(size_text.trim(), 16).expect("a chunked body");
            let end = body + line + 2 + size + 2;
            if pending.len() < end {
                continue;
            }
            let _ = client_write.write_all(&pending[..end]).await;
            // A connection breaks some time after its last bytes arrived: the page has read
            // them by then (a break in the same instant can lose them in the browser).
            tokio::time::sleep(std::time::Duration::from_millis(500)).await;
            let _ = client_write.shutdown().await;
            return;
        }
    };
    tokio::select! {
        _ = up => {}
        _ = down => {}
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}
