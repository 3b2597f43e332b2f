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
            Task::RefineQuery => ("answer", json!({"type": "string"})),
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

/// `refine_query` reply: what to search for next, and whether the model wrote it as an answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "RefinedWire", into = "RefinedWire")]
pub struct Refined {
    /// What to search for next. Asked for the first sentence of a document that would answer
    /// the question (a hypothetical answer, searched for its words; on the wire `answer`):
    /// asked for search terms, Qwen2.5-Coder 1.5B repeated the question's words ("number of
    /// lines in a text file"); asked for that sentence, it named the command ("you can use the
    /// `wc` command").
    pub refined_question: String,
    /// True when the reply came as that sentence (`answer`): the model says what a document
    /// that answers holds. Replies under the earlier keys (`search_words`,
    /// `refined_question`) are search words, which claim nothing.
    pub hypothetical: bool,
}

/// [`Refined`] as the wire carries it: one of its keys.
#[derive(Serialize, Deserialize)]
struct RefinedWire {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    answer: Option<String>,
    #[serde(
        default,
        alias = "refined_question",
        skip_serializing_if = "Option::is_none"
    )]
    search_words: Option<String>,
}

impl TryFrom<RefinedWire> for Refined {
    type Error = &'static str;

    fn try_from(wire: RefinedWire) -> Result<Self, Self::Error> {
        match (wire.answer, wire.search_words) {
            (Some(text), _) => Ok(Self {
                refined_question: text,
                hypothetical: true,
            }),
            (None, Some(text)) => Ok(Self {
                refined_question: text,
                hypothetical: false,
            }),
            (None, None) => Err("missing field `answer`"),
        }
    }
}

impl From<Refined> for RefinedWire {
    fn from(refined: Refined) -> Self {
        let text = Some(refined.refined_question);
        if refined.hypothetical {
            Self {
                answer: text,
                search_words: None,
            }
        } else {
            Self {
                answer: None,
                search_words: text,
            }
        }
    }
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
        let now: Refined = serde_json::from_value(json!({"answer": "thiserror"})).unwrap();
        assert_eq!(now.refined_question, "thiserror");
        assert!(now.hypothetical, "written as an answer");
        for key in ["search_words", "refined_question"] {
            let before: Refined = serde_json::from_value(json!({ key: "thiserror" })).unwrap();
            assert_eq!(before.refined_question, "thiserror", "{key}");
            assert!(!before.hypothetical, "{key}: search words claim nothing");
        }
        assert_eq!(Task::RefineQuery.schema()["required"], json!(["answer"]));
        assert_eq!(
            serde_json::to_value(&now).unwrap(),
            json!({"answer": "thiserror"})
        );
        let words = Refined {
            hypothetical: false,
            ..now
        };
        assert_eq!(
            serde_json::to_value(&words).unwrap(),
            json!({"search_words": "thiserror"})
        );
        assert!(serde_json::from_value::<Refined>(json!({"query": "thiserror"})).is_err());
    }
}
