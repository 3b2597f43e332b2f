//! A fault-injecting HTTP proxy on loopback, in front of moto: point an AWS SDK client's
//! endpoint at it and a chosen share of its DynamoDB and SQS calls fail on the wire.
//!
//! Raw HTTP/1.1 over tokio sockets (keep-alive, `content-length` bodies: what the AWS SDK
//! sends), so a dropped connection really is a closed socket. Each request is forwarded to
//! the upstream with reqwest unless its fault says otherwise:
//!
//! | [`Fault`] | what the client sees | reaches moto? |
//! |---|---|---|
//! | `Throttle` | 400, DynamoDB `ThrottlingException` / `ProvisionedThroughputExceededException`, SQS `ThrottlingException` | no |
//! | `ServerError` | 500, `InternalServerError` / `InternalError` | no |
//! | `SlowUnder` | the real answer after [`FaultPlan::slow_under`] (below the client's timeout) | yes |
//! | `SlowOver` | nothing before [`FaultPlan::slow_over`] (above it); the request is applied afterwards | yes, late |
//! | `DropBefore` | the connection closes, no answer | no |
//! | `DropAfter` | the connection closes after moto applied the request (a lost answer) | yes |
//! | `Invalid` | 400, DynamoDB `ValidationException` / SQS `InvalidParameterValue` (permanent) | no |
//!
//! Which requests fail is fixed by the plan, not by timing: request indices (in arrival
//! order) come in blocks of 100, and in every block a seeded shuffle picks exactly
//! `share` × 100 faulty ones, split between the kinds in the plan's exact proportions. So
//! over N requests the number of faults of each kind is known; which call gets which index
//! depends on the interleaving of concurrent calls.
//!
//! Every request is recorded as an [`Attempt`] (service, operation, fault, upstream status).

use rand::seq::SliceRandom;
use rand::{rngs::StdRng, SeedableRng};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};

mod wire;

use wire::{
    invalid, is_hop_by_hop, read_request, server_error, target, throttle, write_response, Request,
    Response,
};

/// A kind of injected fault (see the module table).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Fault {
    /// 400 throttling error.
    Throttle,
    /// 500.
    ServerError,
    /// The answer, late but in time.
    SlowUnder,
    /// No answer in time; the request is applied afterwards.
    SlowOver,
    /// Connection closed before forwarding.
    DropBefore,
    /// Connection closed after forwarding.
    DropAfter,
    /// 400 validation error: permanent, never worth a retry.
    Invalid,
}

/// The AWS service a request was for (from `X-Amz-Target`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Service {
    /// `DynamoDB_20120810.*`.
    DynamoDb,
    /// `AmazonSQS.*`.
    Sqs,
    /// Anything else.
    Other,
}

/// What to inject.
#[derive(Debug, Clone)]
pub struct FaultPlan {
    /// Faulty requests per 100 (0..=100).
    pub per_hundred: usize,
    /// Relative weights of the kinds among the faulty requests; they must add up to
    /// `per_hundred` so every block holds exactly these numbers.
    pub mix: Vec<(Fault, usize)>,
    /// Seed of the shuffles.
    pub seed: u64,
    /// Delay of [`Fault::SlowUnder`].
    pub slow_under: Duration,
    /// Delay of [`Fault::SlowOver`].
    pub slow_over: Duration,
}

/// One request the proxy received.
#[derive(Debug, Clone)]
pub struct Attempt {
    /// The service.
    pub service: Service,
    /// The operation (`PutItem`, `SendMessage`, ...).
    pub operation: String,
    /// The injected fault, if any.
    pub fault: Option<Fault>,
    /// The upstream's status, when forwarded.
    pub upstream: Option<u16>,
}

struct Shared {
    plan: FaultPlan,
    /// The fault of each index of the current block.
    block: Vec<Option<Fault>>,
    block_start: usize,
    rng: StdRng,
    attempts: Vec<Attempt>,
}

impl Shared {
    /// The fault of the `n`-th request (0-based, arrival order).
    fn fault_of(&mut self, n: usize) -> Option<Fault> {
        while n >= self.block_start + self.block.len() {
            self.block_start += self.block.len();
            let mut block: Vec<Option<Fault>> = self
                .plan
                .mix
                .iter()
                .flat_map(|(fault, count)| std::iter::repeat_n(Some(*fault), *count))
                .collect();
            block.resize(100, None);
            block.shuffle(&mut self.rng);
            self.block = block;
        }
        self.block[n - self.block_start]
    }
}

/// A running proxy; stops accepting when dropped.
pub struct FaultProxy {
    addr: SocketAddr,
    shared: Arc<Mutex<Shared>>,
    in_flight: Arc<AtomicUsize>,
    accept: tokio::task::JoinHandle<()>,
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

impl FaultProxy {
    /// Listens on `127.0.0.1:0` and forwards to `upstream` (`http://127.0.0.1:PORT`).
    pub async fn start(upstream: &str, plan: FaultPlan) -> Self {
        let total: usize = plan.mix.iter().map(|(_, n)| n).sum();
        assert_eq!(
            total, plan.per_hundred,
            "the mix must add up to per_hundred"
        );
        assert!(plan.per_hundred <= 100);
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind loopback");
        let addr = listener.local_addr().expect("local addr");
        let shared = Arc::new(Mutex::new(Shared {
            rng: StdRng::seed_from_u64(plan.seed),
            plan,
            block: Vec::new(),
            block_start: 0,
            attempts: Vec::new(),
        }));
        let in_flight = Arc::new(AtomicUsize::new(0));
        let http = bounded_rag::tls::reqwest_builder()
            .no_proxy()
            .build()
            .expect("reqwest client");
        let upstream = upstream.trim_end_matches('/').to_owned();
        let accept = tokio::spawn({
            let shared = shared.clone();
            let in_flight = in_flight.clone();
            async move {
                loop {
                    let Ok((socket, _)) = listener.accept().await else {
                        continue;
                    };
                    let connection = Connection {
                        shared: shared.clone(),
                        in_flight: in_flight.clone(),
                        http: http.clone(),
                        upstream: upstream.clone(),
                    };
                    tokio::spawn(connection.serve(socket));
                }
            }
        });
        Self {
            addr,
            shared,
            in_flight,
            accept,
        }
    }

    /// `http://127.0.0.1:PORT`.
    pub fn endpoint(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Every request so far, in arrival order.
    pub fn attempts(&self) -> Vec<Attempt> {
        self.shared.lock().unwrap().attempts.clone()
    }

    /// Injected faults by kind.
    pub fn faults(&self) -> BTreeMap<Fault, usize> {
        let mut counts = BTreeMap::new();
        for attempt in self.attempts() {
            if let Some(fault) = attempt.fault {
                *counts.entry(fault).or_default() += 1;
            }
        }
        counts
    }

    /// Requests still being handled (a slow answer, a late forward).
    pub fn in_flight(&self) -> usize {
        self.in_flight.load(Ordering::SeqCst)
    }

    /// Waits (up to 30 s, polling every 20 ms) until no request is being handled, so that
    /// every late write has landed before the caller looks at the upstream.
    pub async fn settle(&self) {
        if super::wait_until(|| self.in_flight() == 0).await {
            return;
        }
        panic!("{} proxied requests still in flight", self.in_flight());
    }
}

/// Counts a request as in flight until dropped.
struct InFlight(Arc<AtomicUsize>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

struct Connection {
    shared: Arc<Mutex<Shared>>,
    in_flight: Arc<AtomicUsize>,
    http: reqwest::Client,
    upstream: String,
}

impl Connection {
    async fn serve(self, mut socket: TcpStream) {
        let mut buffer = Vec::new();
        // One request after another on a kept-alive connection, until the client closes it
        // or a fault drops it.
        while let Some(request) = read_request(&mut socket, &mut buffer).await {
            if !self.answer(&mut socket, request).await {
                return;
            }
        }
    }

    /// Handles one request; `false` when the connection must close.
    async fn answer(&self, socket: &mut TcpStream, request: Request) -> bool {
        self.in_flight.fetch_add(1, Ordering::SeqCst);
        let _guard = InFlight(self.in_flight.clone());
        let (service, operation) = target(&request);
        let (fault, index) = {
            let mut shared = self.shared.lock().unwrap();
            let n = shared.attempts.len();
            let fault = shared.fault_of(n);
            shared.attempts.push(Attempt {
                service,
                operation: operation.clone(),
                fault,
                upstream: None,
            });
            (fault, n)
        };
        let (delay, slow_over) = {
            let plan = &self.shared.lock().unwrap().plan;
            (plan.slow_under, plan.slow_over)
        };
        let response = match fault {
            Some(Fault::DropBefore) => return false,
            Some(Fault::Throttle) => throttle(service, index),
            Some(Fault::ServerError) => server_error(service),
            Some(Fault::Invalid) => invalid(service),
            Some(Fault::SlowUnder) => {
                tokio::time::sleep(delay).await;
                self.forward(&request, index).await
            }
            Some(Fault::SlowOver) => {
                tokio::time::sleep(slow_over).await;
                self.forward(&request, index).await
            }
            Some(Fault::DropAfter) => {
                self.forward(&request, index).await;
                return false;
            }
            None => self.forward(&request, index).await,
        };
        write_response(socket, &response).await.is_ok()
    }

    async fn forward(&self, request: &Request, index: usize) -> Response {
        let mut builder = self
            .http
            .post(format!("{}{}", self.upstream, request.path))
            .body(request.body.clone());
        for (name, value) in &request.headers {
            if !is_hop_by_hop(name) {
                builder = builder.header(name, value);
            }
        }
        let response = match builder.send().await {
            Ok(r) => r,
            Err(e) => {
                return Response {
                    status: 502,
                    headers: Vec::new(),
                    body: format!("proxy: upstream unreachable: {e}").into_bytes(),
                }
            }
        };
        let status = response.status().as_u16();
        self.shared.lock().unwrap().attempts[index].upstream = Some(status);
        let headers = response
            .headers()
            .iter()
            .filter(|(name, _)| !is_hop_by_hop(name.as_str()))
            .map(|(n, v)| {
                (
                    n.as_str().to_owned(),
                    String::from_utf8_lossy(v.as_bytes()).into_owned(),
                )
            })
            .collect();
        let body = response
            .bytes()
            .await
            .map(|b| b.to_vec())
            .unwrap_or_default();
        Response {
            status,
            headers,
            body,
        }
    }
}
