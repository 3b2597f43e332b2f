//! Prompt text for each task. The question is always passed verbatim.

use crate::llm::{Message, Role, Task};
use crate::search::Document;
use std::fmt::Write;

/// Renders the system and user messages of `task`.
pub fn messages(
    task: Task,
    question: &str,
    documents: &[Document],
    answer: Option<&str>,
) -> Vec<Message> {
    let system = match task {
        Task::RouteQuery => {
            "You route a user question to a data source. Use `kg_retrieval` for questions about durian cultivation, pests, diseases and anything the knowledge base covers; `web_search` for recent events or facts outside it; `llm_internal` for small talk or general knowledge that needs no sources. Reply as JSON."
        }
        Task::GradeDocuments => {
            "You grade whether a retrieved document is relevant to a user question. It is relevant if it contains keywords or meaning related to the question. Reply `yes` or `no` as JSON."
        }
        Task::GradeHallucinations => {
            "You grade whether an answer is grounded in and supported by a set of documents. Reply `yes` if it is, `no` otherwise, as JSON."
        }
        Task::GradeAnswer => {
            "You grade whether an answer addresses and resolves a question. Reply `yes` or `no` as JSON."
        }
        Task::RefineQuery => {
            "You rewrite a question into a better version for search retrieval, keeping its meaning. Reply with the rewritten question as JSON."
        }
        Task::ContextualizeQuestion => {
            "You rewrite the user's latest question, a follow-up in a conversation, into a standalone question that can be understood and searched without the conversation: replace words such as `it` or `this` with what they refer to, and keep everything else as asked. If it already stands alone, return it unchanged. Reply as JSON."
        }
        Task::GenerateAnswer => {
            "You answer questions using the numbered context documents. Cite the documents you use with their numbers in square brackets, like [1]. If the context does not contain the answer, say so. Be concise (at most five sentences). Reply as JSON."
        }
    };
    let mut user = format!("Question: {question}\n");
    match task {
        Task::RouteQuery | Task::RefineQuery => {}
        Task::ContextualizeQuestion => {
            // The earlier turns come as documents: the question searched, then the answer.
            user.push_str("\nConversation so far:\n");
            for doc in documents {
                let _ = write!(user, "User: {}\nAssistant: {}\n", doc.title, doc.content);
            }
        }
        Task::GradeDocuments => {
            if let Some(doc) = documents.first() {
                let _ = write!(user, "\nDocument:\n{}\n{}\n", doc.title, doc.content);
            }
        }
        Task::GenerateAnswer | Task::GradeHallucinations => {
            user.push_str("\nContext documents:\n");
            for (i, doc) in documents.iter().enumerate() {
                let _ = write!(user, "[{}] {}\n{}\n\n", i + 1, doc.title, doc.content);
            }
            if documents.is_empty() {
                user.push_str("(none)\n");
            }
            if let Some(answer) = answer {
                let _ = write!(user, "\nAnswer to grade:\n{answer}\n");
            }
        }
        Task::GradeAnswer => {
            if let Some(answer) = answer {
                let _ = write!(user, "\nAnswer:\n{answer}\n");
            }
        }
    }
    vec![
        Message::new(Role::System, system),
        Message::new(Role::User, user),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn question_is_verbatim_in_every_task() {
        let q = "What causes *patch canker* in durian? {\"x\": 1}";
        for task in Task::ALL {
            let m = messages(task, q, &[], Some("a"));
            assert!(m[1].content.contains(q), "{task:?}");
        }
    }
}
