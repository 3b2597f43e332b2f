//! Conversation threads over HTTP, the `/threads` routes:
//! `GET /threads` (the caller's threads, newest first, `limit` + `cursor`),
//! `GET /threads/{thread_id}` (its turns, `after` + `limit`) and `DELETE /threads/{thread_id}`
//! (204; the thread, its turns and its runs' checkpoints). Another caller's thread is 404; a
//! run request naming a busy thread is refused by the run life cycle (409 `thread_busy`).

use super::refusal::Reply;
use super::status::{error_field, json_response, ApiError};
use crate::clock::utc_seconds;
use crate::entry::App;
use crate::rag::validate_thread_id;
use crate::rag::Caller;
use crate::runs::{ThreadHead, TurnRecord};
use base64::engine::general_purpose::URL_SAFE_NO_PAD as CURSOR;
use base64::Engine as _;
use lambda_http::http::StatusCode;
use lambda_http::{Body, Request, RequestExt, Response};
use serde::Serialize;
use serde_json::json;

/// Default and largest page of threads or turns.
const DEFAULT_LIMIT: usize = 20;
const MAX_LIMIT: usize = 100;

/// A thread as listed.
#[derive(Serialize)]
struct Summary<'a> {
    thread_id: &'a str,
    turns: u32,
    created_at: String,
    updated_at: String,
    active_run_id: Option<&'a str>,
}

impl<'a> Summary<'a> {
    fn of(head: &'a ThreadHead) -> Self {
        Self {
            thread_id: &head.thread_id,
            turns: head.turns,
            created_at: utc_seconds(head.created_at_ms),
            updated_at: utc_seconds(head.updated_at_ms),
            active_run_id: head.active_run(),
        }
    }
}

/// `GET /threads?limit=&cursor=`.
pub(super) async fn list(app: &App, caller: &Caller, request: &Request) -> Reply {
    let limit = limit(request)?;
    let cursor = match query(request, "cursor") {
        None => None,
        Some(c) => Some(
            CURSOR
                .decode(c.as_bytes())
                .ok()
                .and_then(|b| String::from_utf8(b).ok())
                .filter(|c| is_sort_key(c))
                .ok_or_else(|| {
                    error_field(
                        StatusCode::BAD_REQUEST,
                        "cursor",
                        "is not a cursor this API gave out: pass the next_cursor of the \
                         previous page unchanged, or leave it out for the first page",
                    )
                })?,
        ),
    };
    let page = app
        .runs()
        .thread_list(caller, limit, cursor.as_deref())
        .await?;
    let threads: Vec<Summary> = page.threads.iter().map(Summary::of).collect();
    let next_cursor = page.next_cursor.map(|c| CURSOR.encode(c.as_bytes()));
    Ok(json_response(
        StatusCode::OK,
        &json!({ "threads": threads, "next_cursor": next_cursor }),
    ))
}

/// `GET /threads/{thread_id}?after=&limit=`.
pub(super) async fn show(app: &App, caller: &Caller, id: &str, request: &Request) -> Reply {
    check_id(id)?;
    let limit = limit(request)?;
    let after = match query(request, "after") {
        None => 0,
        Some(a) => a.parse::<u32>().map_err(|_| {
            error_field(
                StatusCode::BAD_REQUEST,
                "after",
                "must be a turn number (0 or more): the turns after it are returned",
            )
        })?,
    };
    let (head, turns) = app.runs().thread(caller, id, after, limit).await?;
    let next_after = turns
        .last()
        .filter(|t| turns.len() == limit && t.turn < head.turns)
        .map(|t| t.turn);
    let turns: &[TurnRecord] = &turns;
    let summary = Summary::of(&head);
    Ok(json_response(
        StatusCode::OK,
        &json!({
            "thread_id": summary.thread_id,
            "turn_count": summary.turns,
            "created_at": summary.created_at,
            "updated_at": summary.updated_at,
            "active_run_id": summary.active_run_id,
            "turns": turns,
            "next_after": next_after,
        }),
    ))
}

/// `DELETE /threads/{thread_id}`: 204, then nothing of the thread can be read.
pub(super) async fn delete(app: &App, caller: &Caller, id: &str) -> Reply {
    check_id(id)?;
    app.runs().delete_thread(caller, id).await?;
    let mut response = Response::new(Body::Empty);
    *response.status_mut() = StatusCode::NO_CONTENT;
    Ok(response)
}

/// The shape of a listing's sort key (`<15 digits>#<thread id>`), which a cursor encodes.
fn is_sort_key(text: &str) -> bool {
    text.split_once('#').is_some_and(|(ms, id)| {
        ms.len() == 15 && ms.bytes().all(|b| b.is_ascii_digit()) && validate_thread_id(id).is_ok()
    })
}

fn check_id(id: &str) -> Result<(), ApiError> {
    validate_thread_id(id).map_err(|m| error_field(StatusCode::BAD_REQUEST, "thread_id", &m))
}

fn query(request: &Request, name: &str) -> Option<String> {
    request
        .query_string_parameters_ref()
        .and_then(|q| q.first(name).map(str::to_owned))
}

fn limit(request: &Request) -> Result<usize, ApiError> {
    let Some(limit) = query(request, "limit") else {
        return Ok(DEFAULT_LIMIT);
    };
    limit
        .parse::<usize>()
        .ok()
        .filter(|n| (1..=MAX_LIMIT).contains(n))
        .ok_or_else(|| {
            error_field(
                StatusCode::BAD_REQUEST,
                "limit",
                &format!("must be between 1 and {MAX_LIMIT}"),
            )
        })
}
