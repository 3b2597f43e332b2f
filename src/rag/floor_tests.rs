//! The floor's checks, one case each, on answers a small model really wrote (the prompt
//! echoed, a row of markers) and on answers it should let through.

use super::*;
use crate::llm::Task;

fn doc(title: &str, content: &str) -> Document {
    Document::passage("1", title, format!("kb://{title}.md"), content)
}

fn docs() -> Vec<Document> {
    vec![
        doc(
            "thiserror",
            "This library provides a convenient derive macro for the standard library's \
             std::error::Error trait. Use #[derive(Error)] on an enum and #[error(\"...\")] on \
             each variant to write its Display message.",
        ),
        doc(
            "anyhow",
            "This library provides anyhow::Error, a trait object based error type for easy \
             idiomatic error handling in Rust applications.",
        ),
    ]
}

const Q: &str = "How do I define my own error enum with a derive macro?";

#[test]
fn good_answers_pass() {
    for answer in [
        "Use the thiserror crate: put #[derive(Error)] on your enum and an #[error] message on \
         each variant [1].",
        "The thiserror crate's derive macro implements std::error::Error [1]; anyhow is for \
         applications [2].",
        "Use thiserror.",
        "The documents do not say how to write a procedural macro from scratch.",
        "Yes [1].",
    ] {
        assert_eq!(check(answer, Q, &docs()), Ok(()), "{answer}");
    }
    // The model alone (no documents): nothing to cite or be supported by.
    assert_eq!(
        check(
            "Rust is a systems programming language.",
            "What is Rust?",
            &[]
        ),
        Ok(())
    );
}

#[test]
fn an_answer_that_repeats_the_instructions_is_an_echo() {
    let instruction = &prompts::instructions()[Task::ALL.len()]; // the answer's, no documents
    assert!(
        instruction.starts_with("Answer the question"),
        "{instruction}"
    );
    let echoed = format!("Sure. {instruction} Thiserror.");
    assert_eq!(check(&echoed, Q, &docs()), Err(Unusable::Echo));
    let with_docs = prompts::instructions()
        .into_iter()
        .find(|i| i.contains("End each sentence with the number"))
        .unwrap();
    assert_eq!(check(&with_docs, Q, &docs()), Err(Unusable::Echo));
}

#[test]
fn an_answer_with_the_prompts_structure_or_markers_is_an_echo() {
    for answer in [
        "Thiserror [1].\nQuestion: How do I define my own error enum?",
        "Documents:\n[1] thiserror",
        "[[/Q9E8A736774AB 4]] [[/Q9E8A736774AB 5]] thiserror",
        "Answer:\n[2] anyhow (anyhow.md) and more",
        "[1] thiserror",
    ] {
        assert_eq!(check(answer, Q, &docs()), Err(Unusable::Echo), "{answer}");
    }
}

#[test]
fn a_row_of_citations_has_no_content() {
    assert_eq!(
        check("[1] [2] [1, 2].", Q, &docs()),
        Err(Unusable::NoContent)
    );
    assert_eq!(check("  \n ", Q, &docs()), Err(Unusable::NoContent));
}

#[test]
fn an_answer_that_only_restates_the_question_is_under_the_floor() {
    // Seen with Qwen2.5-Coder 1.5B: every content word is the question's.
    let q = "Which of my folders are taking up the most room on the disk?";
    let restated = "The folder taking up the most room on the disk is [1].";
    assert_eq!(
        check(restated, q, &docs()),
        Err(Unusable::RestatesTheQuestion)
    );
    assert_eq!(
        check(restated, q, &[]),
        Err(Unusable::RestatesTheQuestion),
        "with or without documents"
    );
    // One word beyond the question is something to judge.
    let named = "The du command shows which folder takes up the most room on the disk.";
    assert_ne!(check(named, q, &[]), Err(Unusable::RestatesTheQuestion));
}

#[test]
fn a_loop_of_the_same_words_is_repetition() {
    let looped = "the derive macro ".repeat(12);
    assert_eq!(check(&looped, Q, &docs()), Err(Unusable::Repetition));
    // Repeating a word now and then is not a loop.
    let once = "Use thiserror's derive macro on the enum; the derive macro writes the Error \
                impl and the Display impl from each variant's message [1].";
    assert_eq!(check(once, Q, &docs()), Ok(()));
}

#[test]
fn a_citation_of_a_document_not_given_is_missing() {
    assert_eq!(
        check("Use thiserror [3].", Q, &docs()),
        Err(Unusable::MissingCitation(3))
    );
    assert_eq!(
        check("Use thiserror [0].", Q, &docs()),
        Err(Unusable::MissingCitation(0))
    );
    // Without documents there is nothing to cite: not checked.
    assert_eq!(check("Use thiserror [1].", Q, &[]), Ok(()));
}

#[test]
fn an_answer_sharing_nothing_with_its_cited_documents_is_unsupported() {
    let invented = "Bananas ripen faster inside paper bags kept near apples [2].";
    assert_eq!(check(invented, Q, &docs()), Err(Unusable::Unsupported));
    // The same words cited from nowhere are judged against every document.
    let uncited = "Bananas ripen faster inside paper bags kept near apples.";
    assert_eq!(check(uncited, Q, &docs()), Err(Unusable::Unsupported));
    // Citing the wrong document of two is judged against the one cited.
    // A short answer that cites nothing is judged too (Gemma 3 270M, real-model tier, asked
    // whether a keyed hash resists hash flooding); one that names a document's word passes.
    assert_eq!(
        check("Answer: Yes.", Q, &docs()),
        Err(Unusable::Unsupported)
    );
    assert_eq!(check("Use thiserror.", Q, &docs()), Ok(()));
    assert_eq!(check("Yes [1].", Q, &docs()), Ok(()));
    let wrong = "The Display message of each variant comes from an error attribute [2].";
    assert_eq!(check(wrong, Q, &docs()), Err(Unusable::Unsupported));
    assert_eq!(check(&wrong.replace("[2]", "[1]"), Q, &docs()), Ok(()));
}

#[test]
fn citations_are_read_in_their_usual_shapes() {
    assert_eq!(citations("a [1], b [2, 3] c [1] [x] [] [4-5]"), [1, 2, 3]);
    assert_eq!(without_citations("a [1] b [2, 3]. [x]"), "a  b . [x]");
}

#[test]
fn an_answer_quoting_code_that_indexes_is_not_a_missing_citation() {
    // python-dateutil's README quoted by the extractive answer: `[0]` indexes a list.
    let readme = doc(
        "dateutil",
        "Computing of relative deltas (next month, next year). >>> year = \
         rrule(YEARLY,dtstart=now,bymonth=8)[0].year",
    );
    let quoted = "Computing of relative deltas (next month, next year) [1]. >>> year = \
                  rrule(YEARLY,dtstart=now,bymonth=8)[0].year [1]";
    assert_eq!(citations(quoted), [1]);
    let question = "How do I add relative deltas like next month?";
    assert_eq!(check(quoted, question, &[readme]), Ok(()));
}

#[test]
fn an_answer_opening_by_saying_its_documents_do_not_answer_is_told_apart() {
    // Seen with Qwen2.5-Coder 1.5B over `zipsplit`'s page, asked which folders fill the disk.
    assert!(opens_saying_they_do_not_answer(
        "The documents do not provide information on which folders are taking up the most \
         room on the disk. They only describe the `zipsplit` command [1]."
    ));
    assert!(opens_saying_they_do_not_answer(
        "The provided context doesn't mention durian trees in general [1]."
    ));
    // A claim first, a caveat after: the answer stands on its documents.
    assert!(!opens_saying_they_do_not_answer(
        "Use `du -sh *` to list each folder's size [1]. The documents do not mention `-x`."
    ));
    // A sentence about its own subject, as an extractive answer quotes it.
    assert!(!opens_saying_they_do_not_answer(
        "If the last line does not contain a newline, it is not counted [1]."
    ));
    assert!(!opens_saying_they_do_not_answer("```\nno information\n```"));
}

#[test]
fn an_answer_opening_by_declining_is_told_apart_from_a_caveat_after_a_claim() {
    assert!(opens_declining(crate::llm::NO_KNOWLEDGE_ANSWER));
    assert!(opens_declining("I don't know. Perhaps ask a gardener."));
    assert!(!opens_declining(
        "Use `du -sh *` to list each folder's size. The documents do not mention `-x`."
    ));
}
