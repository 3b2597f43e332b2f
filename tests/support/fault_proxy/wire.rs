//! The fault proxy's wire: raw HTTP/1.1 requests read off a kept-alive socket (head and
//! `content-length` body) and responses written back, which AWS service and operation a request
//! calls, and the AWS error answers the injected faults give (throttling, invalid, internal).

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::Service;

/// A parsed request.
pub(super) struct Request {
    pub(super) path: String,
    pub(super) headers: Vec<(String, String)>,
    pub(super) body: Vec<u8>,
}

impl Request {
    pub(super) fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// A response to write.
pub(super) struct Response {
    pub(super) status: u16,
    pub(super) headers: Vec<(String, String)>,
    pub(super) body: Vec<u8>,
}

pub(super) fn is_hop_by_hop(name: &str) -> bool {
    [
        "host",
        "connection",
        "keep-alive",
        "transfer-encoding",
        "content-length",
        "expect",
    ]
    .iter()
    .any(|h| name.eq_ignore_ascii_case(h))
}

/// The service and operation named by `X-Amz-Target` (`DynamoDB_20120810.PutItem`,
/// `AmazonSQS.SendMessage`), else by an SQS query-protocol `Action=`.
pub(super) fn target(request: &Request) -> (Service, String) {
    if let Some(target) = request.header("x-amz-target") {
        let (prefix, operation) = target.split_once('.').unwrap_or((target, ""));
        let service = if prefix.starts_with("DynamoDB") {
            Service::DynamoDb
        } else if prefix.starts_with("AmazonSQS") {
            Service::Sqs
        } else {
            Service::Other
        };
        return (service, operation.to_owned());
    }
    let body = String::from_utf8_lossy(&request.body);
    let action = body
        .split('&')
        .find_map(|pair| pair.strip_prefix("Action="))
        .map(str::to_owned);
    match action {
        Some(action) => (Service::Sqs, action),
        None => (Service::Other, String::new()),
    }
}

pub(super) fn json_error(status: u16, service: Service, code: &str, message: &str) -> Response {
    let namespace = match service {
        Service::DynamoDb => "com.amazonaws.dynamodb.v20120810",
        Service::Sqs | Service::Other => "com.amazonaws.sqs",
    };
    let body = serde_json::json!({"__type": format!("{namespace}#{code}"), "message": message});
    let fault = if status >= 500 { "Receiver" } else { "Sender" };
    Response {
        status,
        headers: vec![
            ("content-type".into(), "application/x-amz-json-1.0".into()),
            ("x-amzn-requestid".into(), "fault-proxy".into()),
            // SQS's JSON protocol carries the query-compatible code here too.
            ("x-amzn-query-error".into(), format!("{code};{fault}")),
        ],
        body: body.to_string().into_bytes(),
    }
}

pub(super) fn throttle(service: Service, index: usize) -> Response {
    let code = match service {
        Service::DynamoDb if index % 2 == 1 => "ProvisionedThroughputExceededException",
        _ => "ThrottlingException",
    };
    json_error(
        400,
        service,
        code,
        "Rate exceeded (injected by the fault proxy)",
    )
}

pub(super) fn invalid(service: Service) -> Response {
    let code = match service {
        Service::DynamoDb => "ValidationException",
        _ => "InvalidParameterValue",
    };
    json_error(
        400,
        service,
        code,
        "Invalid request (injected by the fault proxy)",
    )
}

pub(super) fn server_error(service: Service) -> Response {
    let code = match service {
        Service::DynamoDb => "InternalServerError",
        _ => "InternalError",
    };
    json_error(
        500,
        service,
        code,
        "Internal failure (injected by the fault proxy)",
    )
}

/// Reads one request (head and `content-length` body); `None` at end of stream or on an
/// unreadable request.
pub(super) async fn read_request(socket: &mut TcpStream, buffer: &mut Vec<u8>) -> Option<Request> {
    let head_end = loop {
        if let Some(at) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            break at;
        }
        let mut chunk = [0u8; 8192];
        let n = socket.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buffer.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buffer[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let request_line = lines.next()?;
    let path = request_line.split(' ').nth(1)?.to_owned();
    let headers: Vec<(String, String)> = lines
        .filter_map(|line| {
            let (name, value) = line.split_once(':')?;
            Some((name.trim().to_owned(), value.trim().to_owned()))
        })
        .collect();
    let length: usize = headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let body_start = head_end + 4;
    while buffer.len() < body_start + length {
        let mut chunk = [0u8; 8192];
        let n = socket.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buffer.extend_from_slice(&chunk[..n]);
    }
    let body = buffer[body_start..body_start + length].to_vec();
    buffer.drain(..body_start + length);
    Some(Request {
        path,
        headers,
        body,
    })
}

pub(super) async fn write_response(
    socket: &mut TcpStream,
    response: &Response,
) -> std::io::Result<()> {
    let mut out = format!(
        "HTTP/1.1 {} {}\r\n",
        response.status,
        reason(response.status)
    );
    for (name, value) in &response.headers {
        out.push_str(&format!("{name}: {value}\r\n"));
    }
    out.push_str(&format!("content-length: {}\r\n\r\n", response.body.len()));
    let mut bytes = out.into_bytes();
    bytes.extend_from_slice(&response.body);
    socket.write_all(&bytes).await?;
    socket.flush().await
}

pub(super) fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        _ => "Status",
    }
}
