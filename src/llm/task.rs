//! The structured-output tasks of DESIGN.md: schema names, JSON schemas and typed replies.

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

/// Every structured call the workflow makes; the wire `json_schema.name` is [`Task::schema_name`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Task {
    /// Pick the data source for a question.
    RouteQuery,
    /// Is this document relevant to the question?
    GradeDocuments,
    /// Is the answer grounded in the documents?
    GradeHallucinations,
    /// Does the answer resolve the question?
    GradeAnswer,
    /// Rewrite the question for retrieval.
    RefineQuery,
    /// Write the answer.
    GenerateAnswer,
    /// Rewrite a thread's follow-up question to stand alone.
    ContextualizeQuestion,
}

impl Task {
    /// All tasks, for tables and tests.
    pub const ALL: [Task; 7] = [
        Task::RouteQuery,
        Task::GradeDocuments,
        Task::GradeHallucinations,
        Task::GradeAnswer,
        Task::RefineQuery,
        Task::GenerateAnswer,
        Task::ContextualizeQuestion,
    ];

    /// The `response_format.json_schema.name` sent on the wire.
    pub(crate) fn schema_name(self) -> &'static str {
        match self {
            Task::RouteQuery => "route_query",
            Task::GradeDocuments => "grade_documents",
            Task::GradeHallucinations => "grade_hallucinations",
            Task::GradeAnswer => "grade_answer",
            Task::RefineQuery => "refine_query",
            Task::GenerateAnswer => "generate_answer",
            Task::ContextualizeQuestion => "contextualize_question",
        }
    }

    /// The output cap of a decision's reply: small, since a decision is a short JSON object (a
    /// route, a grade) or one rewritten question. `None` for the answer, whose cap is
    /// `LLM_MAX_ANSWER_TOKENS`.
    pub(crate) fn decision_cap(self) -> Option<u32> {
        match self {
            Task::RouteQuery => Some(64),
            Task::GradeDocuments | Task::GradeHallucinations | Task::GradeAnswer => Some(32),
            Task::RefineQuery | Task::ContextualizeQuestion => Some(256),
            Task::GenerateAnswer => None,
        }
    }

    /// True for the tasks whose reply is a JSON object of [`Task::schema`]; the answer
    /// (`generate_answer`) is plain text.
    pub fn is_structured(self) -> bool {
        self != Task::GenerateAnswer
    }

    /// A generous estimate of the reply's tokens, for token budgets before a call is made.
    pub(crate) fn expected_completion_tokens(self) -> u64 {
        match self {
            Task::RouteQuery => 16,
            Task::GradeDocuments | Task::GradeHallucinations | Task::GradeAnswer => 12,
            Task::RefineQuery | Task::ContextualizeQuestion => 64,
            Task::GenerateAnswer => 320,
        }
    }

    /// The JSON schema of a decision's reply (for the plain-text answer, a string).
    pub fn schema(self) -> Value {
        let (field, spec) = match self {
            Task::RouteQuery => (
                "data_source",
                json!({"type": "string", "enum": ["kg_retrieval", "web_search", "llm_internal"]}),
            ),
            Task::GradeDocuments | Task::GradeHallucinations | Task::GradeAnswer => (
                "binary_score",
                json!({"type": "string", "enum": ["yes", "no"]}),
            ),
            Task::RefineQuery => ("search_words", json!({"type": "string"})),
            // The answer is plain text: no object, nothing to send as a schema.
            Task::GenerateAnswer => return json!({"type": "string"}),
            Task::ContextualizeQuestion => ("standalone_question", json!({"type": "string"})),
        };
        json!({
            "type": "object",
            "properties": { field: spec },
            "required": [field],
            "additionalProperties": false
        })
    }
}

/// Where a question should be answered from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DataSource {
    /// The embedded knowledge base.
    KgRetrieval,
    /// Web search.
    WebSearch,
    /// The model alone, no context.
    LlmInternal,
}

impl DataSource {
    /// Wire name.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            DataSource::KgRetrieval => "kg_retrieval",
            DataSource::WebSearch => "web_search",
            DataSource::LlmInternal => "llm_internal",
        }
    }
}

/// `route_query` reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct RouteDecision {
    /// Chosen source.
    pub data_source: DataSource,
}

/// `yes` / `no` of the grading tasks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Answer {
    /// Yes.
    Yes,
    /// No.
    No,
}

/// `grade_*` reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct BinaryScore {
    /// The grade.
    pub binary_score: Answer,
}

impl BinaryScore {
    /// True for `yes`.
    pub fn yes(self) -> bool {
        self.binary_score == Answer::Yes
    }
}

/// `refine_query` reply.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Refined {
    /// What to search for next. On the wire `search_words`: under that key a small model
    /// writes search terms, under the earlier `refined_question` it reworded the question
    /// (Qwen2.5-Coder 1.5B named the expected tool in 5 of 19 rewrites instead of 1). Replies
    /// with the earlier key are still read.
    #[serde(rename = "search_words", alias = "refined_question")]
    pub refined_question: String,
}

/// `contextualize_question` reply.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Contextualized {
    /// The follow-up, rewritten to be understood without the conversation.
    pub standalone_question: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rewrite_is_read_under_its_key_and_the_earlier_one() {
        let now: Refined = serde_json::from_value(json!({"search_words": "thiserror"})).unwrap();
        let before: Refined =
            serde_json::from_value(json!({"refined_question": "thiserror"})).unwrap();
        assert_eq!(now, before);
        assert_eq!(now.refined_question, "thiserror");
        assert_eq!(
            Task::RefineQuery.schema()["required"],
            json!(["search_words"])
        );
        assert!(serde_json::from_value::<Refined>(json!({"query": "thiserror"})).is_err());
    }
}
