//! The knowledge graph of a knowledge base: `nodes.jsonl`, `edges.jsonl`, `communities.jsonl`.
//!
//! One JSON object per line (blank lines are skipped, unknown fields ignored):
//!
//! - nodes: `{"id", "name", "type", "summary"}` → [`DocKind::Node`]
//! - edges: `{"source", "target", "relation", "fact"}` → [`DocKind::Edge`], titled
//!   "source — relation — target" with node names
//! - communities: `{"id", "name", "summary", "members": [node ids]}` → [`DocKind::Community`]
//!
//! Every line is validated; the first bad line is reported as `file:line: problem`. When any
//! nodes are given, edges and community members must refer to known node ids.
use crate::ingest::IngestError;
use crate::knowledge::{DocKind, Document};
use serde::de::DeserializeOwned;
use serde::Deserialize;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// One JSONL source file: its path for errors, its `kb://` path for citations, and its text.
pub(crate) struct JsonlFile<'a> {
    pub path: PathBuf,
    pub rel: String,
    pub text: &'a str,
}

#[derive(Deserialize)]
struct NodeLine {
    id: String,
    name: String,
    #[serde(rename = "type", default)]
    kind: String,
    #[serde(default)]
    summary: String,
}

#[derive(Deserialize)]
struct EdgeLine {
    source: String,
    target: String,
    relation: String,
    fact: String,
}

#[derive(Deserialize)]
struct CommunityLine {
    id: String,
    name: String,
    summary: String,
    #[serde(default)]
    members: Vec<String>,
}

/// Parses the non-blank lines of a JSONL file, reporting the first bad one as `file:line`.
fn parse_lines<T: DeserializeOwned>(file: &JsonlFile) -> Result<Vec<(usize, T)>, IngestError> {
    let mut out = Vec::new();
    for (i, line) in file.text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let value = serde_json::from_str(line).map_err(|err| parse_error(file, i + 1, &err))?;
        out.push((i + 1, value));
    }
    Ok(out)
}

fn parse_error(file: &JsonlFile, line: usize, err: &serde_json::Error) -> IngestError {
    // serde_json appends "at line 1 column N"; the line is ours, the column is still useful.
    let text = err.to_string();
    let message = text
        .rsplit_once(" at line ")
        .map_or(text.as_str(), |(m, _)| m);
    invalid_line(file, line, format!("{message} (column {})", err.column()))
}

fn invalid_line(file: &JsonlFile, line: usize, message: impl Into<String>) -> IngestError {
    IngestError::Parse {
        path: file.path.clone(),
        line,
        message: message.into(),
    }
}

fn require(file: &JsonlFile, line: usize, field: &str, value: &str) -> Result<(), IngestError> {
    if value.trim().is_empty() {
        return Err(invalid_line(
            file,
            line,
            format!("field `{field}` is empty"),
        ));
    }
    Ok(())
}

/// Node names by id, to title edges and communities and to validate references.
type Names = HashMap<String, String>;

fn check_known(
    names: &Names,
    file: &JsonlFile,
    line: usize,
    what: &str,
    id: &str,
) -> Result<(), IngestError> {
    if names.is_empty() || names.contains_key(id) {
        return Ok(());
    }
    Err(invalid_line(
        file,
        line,
        format!("{what} `{id}` is not a node id in nodes.jsonl"),
    ))
}

/// Parses and validates the graph files into documents, nodes first.
pub(crate) fn documents(
    nodes: &[JsonlFile],
    edges: &[JsonlFile],
    communities: &[JsonlFile],
) -> Result<Vec<Document>, IngestError> {
    let mut docs = Vec::new();
    let mut names = Names::new();
    for file in nodes {
        for (line, node) in parse_lines::<NodeLine>(file)? {
            require(file, line, "id", &node.id)?;
            require(file, line, "name", &node.name)?;
            if names.insert(node.id.clone(), node.name.clone()).is_some() {
                let msg = format!("duplicate node id `{}`", node.id);
                return Err(invalid_line(file, line, msg));
            }
            let content = match (node.kind.trim(), node.summary.trim()) {
                ("", summary) => format!("{}: {summary}", node.name),
                (kind, summary) => format!("{} ({kind}): {summary}", node.name),
            };
            docs.push(doc(
                &node.id,
                &node.name,
                url(&file.rel, &node.id),
                content,
                DocKind::Node,
            ));
        }
    }
    for file in edges {
        for (line, edge) in parse_lines::<EdgeLine>(file)? {
            for (field, value) in [
                ("source", &edge.source),
                ("target", &edge.target),
                ("relation", &edge.relation),
                ("fact", &edge.fact),
            ] {
                require(file, line, field, value)?;
            }
            check_known(&names, file, line, "source", &edge.source)?;
            check_known(&names, file, line, "target", &edge.target)?;
            let name = |id: &String| names.get(id).unwrap_or(id).clone();
            let title = format!(
                "{} — {} — {}",
                name(&edge.source),
                edge.relation.replace('_', " "),
                name(&edge.target)
            );
            let id = format!("{}|{}|{}", edge.source, edge.relation, edge.target);
            let url = url(&file.rel, &line.to_string());
            docs.push(doc(&id, &title, url, edge.fact, DocKind::Edge));
        }
    }
    let mut community_ids = HashMap::new();
    for file in communities {
        for (line, community) in parse_lines::<CommunityLine>(file)? {
            require(file, line, "id", &community.id)?;
            require(file, line, "name", &community.name)?;
            require(file, line, "summary", &community.summary)?;
            if community_ids.insert(community.id.clone(), line).is_some() {
                let msg = format!("duplicate community id `{}`", community.id);
                return Err(invalid_line(file, line, msg));
            }
            let mut content = community.summary.trim().to_owned();
            for member in &community.members {
                check_known(&names, file, line, "member", member)?;
            }
            if !community.members.is_empty() {
                let members: Vec<&str> = community
                    .members
                    .iter()
                    .map(|id| names.get(id).map_or(id.as_str(), String::as_str))
                    .collect();
                content.push_str(&format!("\nMembers: {}.", members.join(", ")));
            }
            let url = url(&file.rel, &community.id);
            let kind = DocKind::Community;
            docs.push(doc(&community.id, &community.name, url, content, kind));
        }
    }
    Ok(docs)
}

fn url(rel: &str, fragment: &str) -> String {
    format!("kb://{rel}#{fragment}")
}

fn doc(id: &str, title: &str, url: String, content: String, kind: DocKind) -> Document {
    Document {
        id: id.to_owned(),
        title: title.to_owned(),
        url,
        content,
        score: 0.0,
        kind,
        clear_match: false,
        from_graph: false,
        vector_rank: None,
    }
}

/// The file name a graph file must have, by kind.
pub(crate) fn graph_kind(path: &Path) -> Option<DocKind> {
    match path.file_name()?.to_str()? {
        "nodes.jsonl" => Some(DocKind::Node),
        "edges.jsonl" => Some(DocKind::Edge),
        "communities.jsonl" => Some(DocKind::Community),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file<'a>(name: &str, text: &'a str) -> JsonlFile<'a> {
        JsonlFile {
            path: PathBuf::from("kb").join(name),
            rel: name.to_owned(),
            text,
        }
    }

    const NODES: &str = r#"{"id":"pp","name":"Phytophthora palmivora","type":"pathogen","summary":"A water mould."}

{"id":"pc","name":"Patch canker","type":"disease","summary":"A bark disease.","extra":1}"#;

    #[test]
    fn graph_files_become_documents_of_their_kind() {
        let edges =
            r#"{"source":"pp","target":"pc","relation":"causes","fact":"It causes patch canker."}"#;
        let communities =
            r#"{"id":"c1","name":"Phytophthora","summary":"Diseases.","members":["pp","pc"]}"#;
        let docs = documents(
            &[file("nodes.jsonl", NODES)],
            &[file("edges.jsonl", edges)],
            &[file("communities.jsonl", communities)],
        )
        .unwrap();
        assert_eq!(docs.len(), 4);
        assert_eq!(docs[1].kind, DocKind::Node);
        assert_eq!(docs[1].url, "kb://nodes.jsonl#pc");
        assert_eq!(docs[1].content, "Patch canker (disease): A bark disease.");
        assert_eq!(docs[2].kind, DocKind::Edge);
        assert_eq!(
            docs[2].title,
            "Phytophthora palmivora — causes — Patch canker"
        );
        assert_eq!(docs[2].content, "It causes patch canker.");
        assert_eq!(docs[2].url, "kb://edges.jsonl#1");
        assert_eq!(docs[3].kind, DocKind::Community);
        assert!(docs[3]
            .content
            .ends_with("Members: Phytophthora palmivora, Patch canker."));
    }

    #[test]
    fn malformed_lines_are_reported_with_file_and_line() {
        let bad = "{\"id\":\"a\",\"name\":\"A\"}\n\n{\"id\":\"b\",\"name\": }\n";
        let err = documents(&[file("nodes.jsonl", bad)], &[], &[]).unwrap_err();
        let text = err.to_string();
        assert!(text.starts_with("kb/nodes.jsonl:3: "), "{text}");
        assert!(text.contains("column"), "{text}");

        let missing = r#"{"source":"a","target":"b","relation":"r"}"#;
        let err = documents(&[], &[file("edges.jsonl", missing)], &[]).unwrap_err();
        assert!(
            err.to_string()
                .contains("edges.jsonl:1: missing field `fact`"),
            "{err}"
        );
    }

    #[test]
    fn references_and_ids_are_validated() {
        let nodes = [file("nodes.jsonl", NODES)];
        let dangling = r#"{"source":"pp","target":"zz","relation":"r","fact":"f"}"#;
        let err = documents(&nodes, &[file("edges.jsonl", dangling)], &[]).unwrap_err();
        assert!(
            err.to_string().contains(":1: target `zz` is not a node id"),
            "{err}"
        );

        let dup = "{\"id\":\"a\",\"name\":\"A\"}\n{\"id\":\"a\",\"name\":\"B\"}";
        let err = documents(&[file("nodes.jsonl", dup)], &[], &[]).unwrap_err();
        assert!(
            err.to_string().contains(":2: duplicate node id `a`"),
            "{err}"
        );

        let empty = r#"{"id":" ","name":"A"}"#;
        let err = documents(&[file("nodes.jsonl", empty)], &[], &[]).unwrap_err();
        assert!(err.to_string().contains(":1: field `id` is empty"), "{err}");

        // Without nodes, edges may name free-form entities.
        let free = r#"{"source":"x","target":"y","relation":"r","fact":"f"}"#;
        assert_eq!(
            documents(&[], &[file("edges.jsonl", free)], &[])
                .unwrap()
                .len(),
            1
        );
    }
}
