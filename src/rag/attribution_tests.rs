use super::*;

fn doc(url: &str, title: &str, content: &str) -> Document {
    Document::passage(url, title, url, content)
}

fn docs() -> Vec<Document> {
    vec![
        doc(
            "kb://flate2/README.md#1",
            "flate2",
            "A streaming compression and decompression library for DEFLATE-based streams: \
             gzip, zlib and raw deflate, backed by miniz_oxide by default.",
        ),
        doc(
            "kb://tokio/README.md#1",
            "tokio",
            "Tokio is an asynchronous runtime for writing reliable network applications, with \
             timers, sockets and a multi-threaded scheduler.",
        ),
        doc(
            "kb://serde/README.md#1",
            "serde",
            "Serde is a framework for serializing and deserializing Rust data structures.",
        ),
    ]
}

const Q: &str = "Which Rust crate compresses data with gzip?";

#[test]
fn sentences_the_model_cited_nothing_for_are_attributed_and_numbered_in_order() {
    let answer = "Tokio schedules network timers and sockets. The flate2 crate handles gzip and \
                  zlib streams through miniz_oxide.";
    let a = attribute(answer, Q, &docs());
    assert_eq!(
        a.text,
        "Tokio schedules network timers and sockets [1]. The flate2 crate handles gzip and \
         zlib streams through miniz_oxide [2]."
    );
    let urls: Vec<&str> = a.citations.iter().map(|c| c.url.as_str()).collect();
    assert_eq!(urls, ["kb://tokio/README.md#1", "kb://flate2/README.md#1"]);
    assert!(a.citations.iter().all(|c| c.attributed));
    assert_eq!(
        a.citations[1].sentences,
        ["The flate2 crate handles gzip and zlib streams through miniz_oxide."]
    );
    assert_eq!(a.report.sentences, 2);
    assert_eq!(a.report.supported, 2);
    assert_eq!(a.report.attributed, 2);
    assert_eq!((a.report.written, a.report.repointed), (0, 0));
    assert_eq!(a.report.model_citations, 0);
    assert!(!a.report.mostly_unsupported());
}

#[test]
fn a_citation_that_does_not_support_its_sentence_is_re_pointed() {
    // [3] is serde's: it says nothing of gzip or miniz_oxide.
    let answer = "Use flate2, which handles gzip streams through miniz_oxide [3].";
    let a = attribute(answer, Q, &docs());
    assert_eq!(
        a.text,
        "Use flate2, which handles gzip streams through miniz_oxide [1]."
    );
    assert_eq!(a.citations.len(), 1);
    assert_eq!(a.citations[0].url, "kb://flate2/README.md#1");
    assert!(a.citations[0].attributed);
    assert_eq!(a.report.repointed, 1);
    assert_eq!(a.report.model_citations, 1);
    assert_eq!(a.report.model_citations_supporting, 0);
}

#[test]
fn citations_the_model_wrote_right_are_kept_as_written_and_renumbered() {
    let answer = "Serde serializes and deserializes Rust data structures [3]. For gzip, flate2 \
                  streams deflate data [1][2].";
    let a = attribute(answer, "Which crates should I use?", &docs());
    // [2] (tokio) supports nothing of the second sentence: taken out; the rest renumbered.
    assert_eq!(
        a.text,
        "Serde serializes and deserializes Rust data structures [1]. For gzip, flate2 \
         streams deflate data [2]."
    );
    assert!(a.citations.iter().all(|c| !c.attributed));
    assert_eq!(a.report.written, 2);
    assert_eq!(a.report.model_citations, 3);
    assert_eq!(a.report.model_citations_supporting, 2);
}

#[test]
fn a_sentence_no_passage_supports_is_reported_and_cites_nothing() {
    let answer = "Install it with npm install dotenv in Node.js projects [2]. Flate2 handles gzip \
                  streams.";
    let a = attribute(answer, Q, &docs());
    assert_eq!(
        a.report.unsupported,
        ["Install it with npm install dotenv in Node.js projects."]
    );
    assert_eq!(
        a.text,
        "Install it with npm install dotenv in Node.js projects. Flate2 handles gzip streams [1]."
    );
    assert_eq!(a.citations.len(), 1);
    assert_eq!((a.report.sentences, a.report.supported), (2, 1));
    assert!(!a.report.mostly_unsupported(), "one of two is not most");
    let memory = "Install it with npm install dotenv in Node.js projects.";
    assert!(judge(memory, Q, &docs()).mostly_unsupported());
}

#[test]
fn an_extractive_answer_is_left_as_it_is() {
    let docs = docs();
    let quoted = "Tokio is an asynchronous runtime for writing reliable network applications. [2] \
                  Serde is a framework for serializing and deserializing Rust data structures. [3]";
    let a = attribute(quoted, "What are tokio and serde?", &docs);
    assert_eq!(
        a.text,
        "Tokio is an asynchronous runtime for writing reliable network applications. [1] \
         Serde is a framework for serializing and deserializing Rust data structures. [2]"
    );
    assert_eq!(a.report.written, 2);
    assert_eq!(a.report.sentences, 2);
    let unchanged = "Tokio is an asynchronous runtime for writing reliable network applications. \
                     [1] Serde is a framework for serializing and deserializing Rust data \
                     structures. [2]";
    let two = [docs[1].clone(), docs[2].clone()];
    assert_eq!(
        attribute(unchanged, "What are tokio and serde?", &two).text,
        unchanged
    );
}

#[test]
fn code_and_short_labels_are_kept_as_written_and_not_judged() {
    let answer =
        "Example:\n\n```rust\nlet x = v[1];\nfoo(). bar [2]\n```\n\nFlate2 handles gzip streams.";
    let a = attribute(answer, Q, &docs());
    assert_eq!(
        a.text,
        "Example:\n\n```rust\nlet x = v[1];\nfoo(). bar [2]\n```\n\nFlate2 handles gzip streams [1]."
    );
    assert_eq!(a.report.sentences, 1);
}

#[test]
fn passages_of_one_source_share_its_number_and_invalid_numbers_are_dropped() {
    let mut docs = docs();
    docs.push(doc(
        "kb://flate2/README.md#1",
        "flate2",
        "Gzip and zlib encoders and decoders.",
    ));
    let a = attribute("Flate2 has gzip encoders [4]. Ok [9].", Q, &docs);
    assert_eq!(a.text, "Flate2 has gzip encoders [1]. Ok.");
    assert_eq!(a.citations.len(), 1);
}

#[test]
fn a_short_answer_that_cites_nothing_cites_the_passage_holding_its_words() {
    let a = attribute("Answer: Flate2.", Q, &docs());
    assert_eq!(a.text, "Answer: Flate2 [1].");
    assert_eq!(a.citations.len(), 1);
    assert_eq!(a.citations[0].url, "kb://flate2/README.md#1");
    assert!(a.citations[0].attributed);
    assert_eq!(a.report.sentences, 0);
    // A name no passage holds cites nothing.
    let none = attribute("Answer: Brotli.", Q, &docs());
    assert_eq!(none.text, "Answer: Brotli.");
    assert!(none.citations.is_empty());
    // A short answer the model cited is kept as written.
    let cited = attribute("Use serde [3].", Q, &docs());
    assert_eq!(cited.text, "Use serde [1].");
    assert!(!cited.citations[0].attributed);
}

#[test]
fn an_answer_of_code_under_a_label_cites_the_passage_holding_its_code_at_the_label() {
    let docs = vec![
        docs().remove(1),
        doc(
            "kb://async-stream/README.md#2",
            "async-stream",
            "```rust\nuse async_stream::stream;\n\nlet s = stream! {\n    for i in 0..3 {\n        \
             yield i;\n    }\n};\npin_mut!(s);\n```",
        ),
    ];
    let q = "How can I write an async stream with yield?";
    let answer = "Answer:\n```rust\nuse async_stream::stream;\nlet s = stream! { for i in 0..3 { yield i; } };\npin_mut!(s);\n```\n";
    let a = attribute(answer, q, &docs);
    assert_eq!(
        a.text,
        "Answer [1]:\n```rust\nuse async_stream::stream;\nlet s = stream! { for i in 0..3 { yield i; } };\npin_mut!(s);\n```\n"
    );
    assert_eq!(a.citations.len(), 1);
    assert_eq!(a.citations[0].url, "kb://async-stream/README.md#2");
    assert_eq!(a.citations[0].sentences, ["Answer:"]);
    assert_eq!(a.report.sentences, 0);
    // Only code: the marker goes on a line after the closing fence.
    let code = &answer["Answer:\n".len()..];
    let c = attribute(code, q, &docs);
    assert_eq!(
        c.text,
        "```rust\nuse async_stream::stream;\nlet s = stream! { for i in 0..3 { yield i; } };\npin_mut!(s);\n```\n[1]\n"
    );
    assert_eq!(c.citations[0].url, "kb://async-stream/README.md#2");
    assert!(c.citations[0].sentences.is_empty());
    // Code no passage holds cites nothing.
    let other = attribute("```rust\nlet z = brotli::compress(buf);\n```", q, &docs);
    assert!(other.citations.is_empty());
    assert_eq!(other.text, "```rust\nlet z = brotli::compress(buf);\n```");
}
