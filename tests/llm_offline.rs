//! The offline provider through the public structured-call API: deterministic replies in the
//! DESIGN.md field shapes, read from the typed inputs only.

use bounded_rag::knowledge::{DocKind, Document};
use bounded_rag::llm::{
    ask, extractive_answer, write_answer, BinaryScore, ChatModel, ChatRequest, DataSource, Message,
    OfflineModel, Refined, Role, RouteDecision, Task, TaskInputs, NO_KNOWLEDGE_ANSWER,
};
use serde::de::DeserializeOwned;
use std::time::Duration;

const CAUSE: &str = "## Cause\n\nPatch canker is caused by Phytophthora palmivora, a soil-borne \
    oomycete (water mould). Although it looks and behaves like a fungus, it belongs to a \
    different group of organisms, which is why many ordinary fungicides do not control it. The \
    pathogen survives in soil, in infected roots and in fallen fruit and plant debris.";
const SPREAD: &str = "Zoospores need water to move, so the disease follows the rain. Heavy \
    rain splashes infested soil onto the lower trunk, and run-off carries spores across the \
    orchard floor. Waterlogged, poorly drained soil keeps roots and collars wet for long \
    periods and greatly increases patch canker infection.";

fn docs() -> Vec<Document> {
    [
        ("Patch canker: cause", CAUSE),
        ("Patch canker: spread", SPREAD),
    ]
    .into_iter()
    .enumerate()
    .map(|(i, (title, content))| Document {
        id: format!("patch-canker#{i}"),
        title: title.into(),
        url: format!("kb://patch-canker.md#{i}"),
        content: content.into(),
        score: 2.0 - i as f32,
        kind: DocKind::Episode,
        clear_match: false,
        from_graph: false,
        vector_rank: None,
    })
    .collect()
}

fn request<'a>(
    task: Task,
    question: &'a str,
    documents: &'a [Document],
    answer: Option<&'a str>,
) -> ChatRequest<'a> {
    ChatRequest {
        task,
        // The prose is ignored: the offline provider reads the typed inputs.
        messages: vec![Message::new(Role::User, "ignored by the offline provider")],
        inputs: TaskInputs {
            question,
            documents,
            answer,
        },
        timeout: Duration::from_secs(1),
        max_tokens: 1024,
        stop: &[],
    }
}

async fn offline<T: DeserializeOwned>(
    task: Task,
    question: &str,
    documents: &[Document],
    answer: Option<&str>,
) -> T {
    let request = request(task, question, documents, answer);
    ask(&OfflineModel, &request)
        .await
        .expect("offline never fails")
}

/// The offline answer: plain text, as every provider writes it.
async fn answer(question: &str, documents: &[Document]) -> String {
    let request = request(Task::GenerateAnswer, question, documents, None);
    let meter = bounded_rag::usage::Meter::default();
    write_answer(&OfflineModel, &request, &meter, None)
        .await
        .expect("offline never fails")
        .text
}

#[tokio::test]
async fn routes_domain_questions_to_the_knowledge_base_and_news_to_the_web() {
    let kb: RouteDecision =
        offline(Task::RouteQuery, "How does patch canker spread?", &[], None).await;
    assert_eq!(kb.data_source, DataSource::KgRetrieval);
    let web: RouteDecision =
        offline(Task::RouteQuery, "Latest news on durian exports", &[], None).await;
    assert_eq!(web.data_source, DataSource::WebSearch);
    let chat: RouteDecision = offline(Task::RouteQuery, "hello there, thanks!", &[], None).await;
    assert_eq!(chat.data_source, DataSource::LlmInternal);
}

#[tokio::test]
async fn grades_relevant_and_irrelevant_documents() {
    let docs = docs();
    let q = "How does patch canker spread in the orchard?";
    let relevant: BinaryScore = offline(Task::GradeDocuments, q, &docs[1..], None).await;
    assert!(relevant.yes());
    let q = "What is the capital of France?";
    let irrelevant: BinaryScore = offline(Task::GradeDocuments, q, &docs[1..], None).await;
    assert!(!irrelevant.yes());
}

#[tokio::test]
async fn generates_a_cited_extractive_answer_and_grades_it() {
    let docs = docs();
    let q = "What causes patch canker and how does it spread?";
    let generated = answer(q, &docs).await;
    assert_eq!(generated, extractive_answer(q, &docs));
    assert!(
        generated
            .contains("Patch canker is caused by Phytophthora palmivora, a soil-borne oomycete (water mould). [1]"),
        "{generated}"
    );
    assert!(generated.contains("[2]"), "{generated}");

    let grounded: BinaryScore =
        offline(Task::GradeHallucinations, q, &docs, Some(&generated)).await;
    assert!(grounded.yes());
    let invented = "Patch canker is caused by a virus spread by bats at midnight.";
    let grounded: BinaryScore = offline(Task::GradeHallucinations, q, &docs, Some(invented)).await;
    assert!(!grounded.yes());

    let useful: BinaryScore = offline(Task::GradeAnswer, q, &docs, Some(&generated)).await;
    assert!(useful.yes());
}

#[tokio::test]
async fn without_documents_it_says_it_has_no_knowledge_source() {
    let q = "What causes patch canker?";
    let generated = answer(q, &[]).await;
    assert_eq!(generated, NO_KNOWLEDGE_ANSWER);
    let useful: BinaryScore = offline(Task::GradeAnswer, q, &[], Some(&generated)).await;
    assert!(!useful.yes());
}

#[tokio::test]
async fn refines_to_distinct_content_words() {
    let q = "What are the main causes of patch canker, and what causes it to spread?";
    let refined: Refined = offline(Task::RefineQuery, q, &[], None).await;
    assert_eq!(refined.refined_question, "main causes patch canker spread");
}

#[tokio::test]
async fn replies_are_deterministic_and_in_the_design_shapes() {
    let docs = docs();
    let q = "What causes patch canker?";
    for task in Task::ALL {
        let request = ChatRequest {
            task,
            messages: Vec::new(),
            inputs: TaskInputs {
                question: q,
                documents: &docs,
                answer: Some("Patch canker is caused by Phytophthora palmivora [1]."),
            },
            timeout: Duration::from_secs(1),
            max_tokens: 1024,
            stop: &[],
        };
        let first = OfflineModel.complete(&request).await.unwrap().content;
        assert_eq!(
            first,
            OfflineModel.complete(&request).await.unwrap().content
        );
        if !task.is_structured() {
            // The answer is plain text, not an object.
            assert!(
                serde_json::from_str::<serde_json::Value>(&first).is_err(),
                "{first}"
            );
            continue;
        }
        let value: serde_json::Value = serde_json::from_str(&first).unwrap();
        let schema = task.schema();
        let field = schema["required"][0].as_str().unwrap();
        // Its rewrite is search words, not an answer it imagines: it says so under the key
        // the rewrite's reader takes for them (`Refined::hypothetical` false).
        let field = if task == Task::RefineQuery {
            let refined: Refined = serde_json::from_value(value.clone()).unwrap();
            assert!(!refined.hypothetical, "{first}");
            "search_words"
        } else {
            field
        };
        let object = value.as_object().unwrap();
        assert_eq!(object.len(), 1, "{task:?}: {first}");
        assert!(object[field].is_string(), "{task:?}: {first}");
        if let Some(allowed) = schema["properties"][field]["enum"].as_array() {
            assert!(allowed.contains(&object[field]), "{task:?}: {first}");
        }
    }
    assert_eq!(OfflineModel.name(), "offline");
}
