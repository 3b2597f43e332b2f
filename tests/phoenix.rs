//! Traces in a real LLM observability tool: Arize Phoenix (`scripts/phoenix.sh`, PyPI
//! `arize-phoenix`) receives runs' spans over OTLP/HTTP and they are read back through its own
//! REST API, as a team watching the service would see them:
//! - the CLI, offline and with a scripted OpenAI-compatible model: one LLM span per model call
//!   with the model's name and token counts that add up to the run's `usage`, a retriever span
//!   whose documents hold every cited source;
//! - the API function under `cargo lambda watch`, as deployed (its `OTEL_EXPORTER_OTLP_ENDPOINT`
//!   pointed at Phoenix): the same, under the request's span;
//! - a run suspended by its deadline and continued from the queue: one trace in Phoenix.
//!
//! Cost: the first run installs Phoenix into `.local/venv-phoenix` (about 1.5 min, 850 MB);
//! each test process starts one server (about 25 s).

mod support;

use crate::support::happy_path::QUESTION;
use bounded_rag::entry::{api, sqs};
use bounded_rag::otlp::{ExportSettings, Exporter, SpanContext};
use bounded_rag::runs::MemoryQueue;
use serde_json::Value;
use std::time::Duration;
use support::lambda_watch::LambdaWatch;
use support::llm_server::{Script, ScriptedLlm};
use support::moto::moto;
use support::phoenix::{document_sources, of_kind, project, server_url, spans_until};
use tracing_subscriber::layer::SubscriberExt;

const RUN: &str = include_str!("../events/apigw-run.json");

/// The checks every answered run's spans must pass in Phoenix: as many LLM spans as model
/// calls, of `model`, whose tokens add up to the run's; a retriever span holding every cited
/// source; one trace.
fn check_run(spans: &[Value], response: &Value, model: &str) {
    let meta = &response["metadata"];
    let llm = of_kind(spans, "LLM");
    assert_eq!(
        llm.len() as u64,
        meta["model_calls"].as_u64().unwrap(),
        "one LLM span per model call: {llm:#?}"
    );
    let steps: Vec<&Value> = of_kind(spans, "CHAIN")
        .into_iter()
        .map(|s| &s["context"]["span_id"])
        .collect();
    let mut prompt = 0;
    let mut completion = 0;
    for span in &llm {
        assert!(
            steps.contains(&&span["parent_id"]),
            "a model call outside any step: {span:#}"
        );
        let a = &span["attributes"];
        assert_eq!(a["gen_ai.request.model"], model, "{span:#}");
        assert_eq!(
            a["llm.model_name"], model,
            "Phoenix reads the model: {span:#}"
        );
        prompt += a["llm.token_count.prompt"].as_u64().unwrap();
        completion += a["llm.token_count.completion"].as_u64().unwrap();
    }
    assert_eq!(prompt, meta["tokens"]["prompt"].as_u64().unwrap());
    assert_eq!(completion, meta["tokens"]["completion"].as_u64().unwrap());
    let retrievers = of_kind(spans, "RETRIEVER");
    assert_eq!(retrievers.len(), 1, "{retrievers:#?}");
    let sources = document_sources(retrievers[0]);
    let citations = response["citations"].as_array().unwrap();
    assert!(!citations.is_empty(), "{response:#}");
    for citation in citations {
        let url = citation["url"].as_str().unwrap();
        assert!(
            sources.iter().any(|s| s == url),
            "cited {url} not among the retrieved {sources:?}"
        );
    }
    let trace = &spans[0]["context"]["trace_id"];
    assert!(spans.iter().all(|s| &s["context"]["trace_id"] == trace));
    assert_eq!(of_kind(spans, "AGENT").len(), 1, "one workflow span");
}

/// `bounded-rag ask --json` exporting to Phoenix's `project`, off the runtime's thread (the
/// scripted server runs on it).
async fn cli_ask(project: &str, server: Vec<(&'static str, String)>) -> Value {
    let attributes = format!("openinference.project.name={project}");
    let out = tokio::task::spawn_blocking(move || {
        let dir = tempfile::tempdir().unwrap();
        let env = [
            ("OTEL_EXPORTER_OTLP_ENDPOINT", server_url()),
            ("OTEL_RESOURCE_ATTRIBUTES", attributes.as_str()),
        ];
        support::bin::run(dir.path(), &server, &env, &["ask", "--json", QUESTION])
    })
    .await
    .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[tokio::test]
async fn cli_runs_reach_phoenix_with_model_tokens_and_cited_documents() {
    let offline = project("cli-offline");
    let response = cli_ask(&offline, Vec::new()).await;
    assert_eq!(response["status"], "completed", "{response:#}");
    let calls = response["metadata"]["model_calls"].as_u64().unwrap() as usize;
    let spans = spans_until(&offline, |s| {
        of_kind(s, "LLM").len() >= calls && !of_kind(s, "AGENT").is_empty()
    })
    .await;
    check_run(&spans, &response, "offline");

    let llm = ScriptedLlm::start(Script::defaults()).await;
    let server = vec![
        ("LLM_PROVIDER", "openai".to_owned()),
        ("LLM_BASE_URL", llm.base_url()),
        ("LLM_MODEL", "scripted-model".to_owned()),
        ("LLM_API_KEY", "sk-never-in-a-span".to_owned()),
    ];
    let scripted = project("cli-scripted");
    let response = cli_ask(&scripted, server).await;
    assert_eq!(response["status"], "completed", "{response:#}");
    let calls = response["metadata"]["model_calls"].as_u64().unwrap() as usize;
    let spans = spans_until(&scripted, |s| {
        of_kind(s, "LLM").len() >= calls && !of_kind(s, "AGENT").is_empty()
    })
    .await;
    check_run(&spans, &response, "scripted-model");
    for span in of_kind(&spans, "LLM") {
        assert_eq!(
            span["attributes"]["llm.token_count.prompt"], 100,
            "{span:#}"
        );
        assert_eq!(
            span["attributes"]["llm.token_count.completion"], 10,
            "{span:#}"
        );
        assert_eq!(span["attributes"]["llm.provider"], "openai", "{span:#}");
    }
    let all = serde_json::to_string(&spans).unwrap();
    assert!(
        !all.contains("sk-never-in-a-span"),
        "the model key in a span"
    );
    assert!(
        !all.contains(QUESTION),
        "content capture is off: no question in a span"
    );
}

#[tokio::test]
async fn the_api_function_under_cargo_lambda_watch_exports_its_run_to_phoenix() {
    let moto = moto().await;
    let table = moto.create_table().await;
    let name = project("lambda");
    let mut env = moto.function_env();
    env.extend([
        ("CHECKPOINT_TABLE", table),
        ("LLM_PROVIDER", "offline".to_owned()),
        ("OTEL_EXPORTER_OTLP_ENDPOINT", server_url().to_owned()),
        (
            "OTEL_RESOURCE_ATTRIBUTES",
            format!("openinference.project.name={name}"),
        ),
    ]);
    let watch = LambdaWatch::start(&env).await;
    let answer = watch
        .invoke("api", &serde_json::from_str(RUN).unwrap())
        .await;
    let response: Value = serde_json::from_str(answer["body"].as_str().unwrap()).unwrap();
    assert_eq!(response["status"], "completed", "{response:#}");
    let calls = response["metadata"]["model_calls"].as_u64().unwrap() as usize;
    let spans = spans_until(&name, |s| {
        of_kind(s, "LLM").len() >= calls && s.iter().any(|s| s["name"] == "POST /workflow/run")
    })
    .await;
    check_run(&spans, &response, "offline");
    let request = spans
        .iter()
        .find(|s| s["name"] == "POST /workflow/run")
        .unwrap();
    // The request's parent is the invocation's X-Ray segment (not exported by us): every
    // other span descends from the request.
    let ids: Vec<&Value> = spans.iter().map(|s| &s["context"]["span_id"]).collect();
    assert!(!ids.contains(&&request["parent_id"]), "{request:#}");
    let orphans: Vec<&Value> = spans
        .iter()
        .filter(|s| s["name"] != "POST /workflow/run" && !ids.contains(&&s["parent_id"]))
        .collect();
    assert!(
        orphans.is_empty(),
        "spans outside the request's tree: {orphans:#?}"
    );
}

#[tokio::test(flavor = "current_thread")]
async fn a_suspended_and_continued_run_is_one_trace_in_phoenix() {
    let name = project("resumed");
    let mut settings = ExportSettings::new(server_url(), "resumed-test");
    settings.resource = vec![("openinference.project.name".into(), name.clone())];
    let (exporter, layer) = Exporter::with_settings(Some(settings));
    let _guard = tracing::subscriber::set_default(tracing_subscriber::registry().with(layer));
    let llm = ScriptedLlm::start(Script::defaults()).await;
    // Model calls of 200 ms in a 1 s budget: suspended before generate, continued by a worker.
    let (app, _clock) =
        support::app::timed_app(&llm, Duration::from_millis(200), Duration::from_secs(1));
    let queue = MemoryQueue::default();
    let request = lambda_http::request::from_str(RUN).unwrap();
    assert_eq!(
        api::handle(&app, Some(&queue), request)
            .await
            .status()
            .as_u16(),
        202
    );
    exporter.flush().await;
    let first = spans_until(&name, |s| {
        s.iter().any(|s| s["name"] == "POST /workflow/run")
    })
    .await;
    let request = first
        .iter()
        .find(|s| s["name"] == "POST /workflow/run")
        .unwrap();
    let trace = request["context"]["trace_id"].as_str().unwrap().to_owned();
    let handed_on = SpanContext {
        trace_id: u128::from_str_radix(&trace, 16).unwrap(),
        span_id: u64::from_str_radix(request["context"]["span_id"].as_str().unwrap(), 16).unwrap(),
    };
    let body = serde_json::to_string(&queue.sent()[0]).unwrap();
    let sqs_event = support::otlp_receiver::continuation(body, handed_on);
    let result = sqs::handle_batch(&app, Some(&queue), sqs_event, None).await;
    assert!(result.batch_item_failures.is_empty());
    exporter.flush().await;
    // Both invocations' workflow spans, and every model call of both (4 + 3), in one trace.
    let spans = spans_until(&name, |s| {
        of_kind(s, "AGENT").len() >= 2 && of_kind(s, "LLM").len() >= 7
    })
    .await;
    assert!(
        spans
            .iter()
            .all(|s| s["context"]["trace_id"] == trace.as_str()),
        "{spans:#?}"
    );
    assert_eq!(of_kind(&spans, "AGENT").len(), 2);
    assert_eq!(of_kind(&spans, "LLM").len(), 7);
    let record = spans.iter().find(|s| s["name"] == "sqs_record").unwrap();
    assert_eq!(record["parent_id"], request["context"]["span_id"]);
}
