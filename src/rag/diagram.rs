//! The workflow graph drawn from the definition the engine runs and versions: the nodes and
//! edges of [`super::version`] (hashed into every checkpoint's workflow version), the branches
//! of the speculation fork ([`super::speculation`]), and the two bounded loops with the counter
//! and the setting that bound them. `bounded-rag graph` prints it as Mermaid or Graphviz DOT;
//! the playground draws it from [`json`].

use super::speculation::FORK;
use super::version::{EDGES, NODES};
use super::RagNode;
use crate::engine::NodeId;
use serde_json::{json, Value};

/// A loop of the workflow: every edge into its node is taken only while its counter is under
/// its limit, so it runs a bounded number of times.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Loop {
    /// Rewriting the query (`transform_query`), then searching or answering again.
    QueryRewrite,
    /// Answering again after an answer was not grounded.
    Regeneration,
}

impl Loop {
    /// Both loops.
    pub(crate) const ALL: [Loop; 2] = [Loop::QueryRewrite, Loop::Regeneration];

    /// The counter in the run's state (and in every `step` event's `counters`).
    pub(crate) fn counter(self) -> &'static str {
        match self {
            Loop::QueryRewrite => "query_transformation_retry_count",
            Loop::Regeneration => "hallucination_retry_count",
        }
    }

    /// The setting that bounds the counter.
    pub(crate) fn limit(self) -> &'static str {
        match self {
            Loop::QueryRewrite => "MAX_RETRIES",
            Loop::Regeneration => "MAX_REGENERATIONS",
        }
    }

    /// The loop an edge enters, if any: every way into `transform_query` is a rewrite (it
    /// counts them); `grade_hallucinations -> generate` is a regeneration.
    pub(crate) fn of(from: &str, to: &str) -> Option<Loop> {
        if to == RagNode::TransformQuery.name() {
            Some(Loop::QueryRewrite)
        } else if (from, to)
            == (
                RagNode::GradeHallucinations.name(),
                RagNode::Generate.name(),
            )
        {
            Some(Loop::Regeneration)
        } else {
            None
        }
    }

    /// `counter < LIMIT`, the edge's guard.
    fn guard(self) -> String {
        format!("{} < {}", self.counter(), self.limit())
    }
}

/// A diagram format of `bounded-rag graph`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Format {
    /// Mermaid `flowchart`, rendered by GitHub in Markdown.
    Mermaid,
    /// Graphviz DOT.
    Dot,
}

/// The graph in `format`.
pub(crate) fn render(format: Format) -> String {
    match format {
        Format::Mermaid => mermaid(),
        Format::Dot => dot(),
    }
}

/// The graph as the playground draws it: nodes, edges (each with its loop, if any), the fork
/// and its branches, and the loops with their counters and limits.
pub(crate) fn json() -> Value {
    let edges: Vec<Value> = EDGES
        .iter()
        .map(|(from, to)| {
            let guard = Loop::of(from, to).map(|l| l.counter());
            json!({ "from": from, "to": to, "loop": guard })
        })
        .collect();
    let loops: Vec<Value> = Loop::ALL
        .iter()
        .map(|l| json!({ "counter": l.counter(), "limit": l.limit() }))
        .collect();
    json!({
        "nodes": NODES.map(NodeId::name),
        "edges": edges,
        "fork": { "at": RagNode::Speculate.name(), "branches": FORK.map(NodeId::name) },
        "loops": loops,
    })
}

/// Mermaid has `end` as a keyword: the end of the run is `finish`, labelled `end`.
fn mermaid_id(name: &str) -> &str {
    if name == "end" {
        "finish"
    } else {
        name
    }
}

fn mermaid() -> String {
    let mut out = String::from("flowchart TD\n    start([start])\n    finish([end])\n");
    for node in NODES {
        let name = node.name();
        if node == RagNode::Speculate {
            out.push_str(&format!("    {name}{{{{{name}: fork}}}}\n"));
        } else {
            out.push_str(&format!("    {name}[{name}]\n"));
        }
    }
    for (from, to) in EDGES {
        let (a, b) = (mermaid_id(from), mermaid_id(to));
        match Loop::of(from, to) {
            Some(l) => out.push_str(&format!("    {a} -->|\"{}\"| {b}\n", l.guard())),
            None => out.push_str(&format!("    {a} --> {b}\n")),
        }
    }
    let fork = RagNode::Speculate.name();
    for branch in FORK {
        out.push_str(&format!("    {fork} -.->|branch| {}\n", branch.name()));
    }
    out
}

fn dot() -> String {
    let mut out = String::from(
        "digraph bounded_rag {\n    rankdir=TB;\n    node [shape=box, fontname=\"sans-serif\"];\n    \
         start [shape=oval];\n    end [shape=oval];\n",
    );
    let fork = RagNode::Speculate.name();
    out.push_str(&format!(
        "    {fork} [shape=hexagon, label=\"{fork}: fork\"];\n"
    ));
    for (from, to) in EDGES {
        match Loop::of(from, to) {
            Some(l) => out.push_str(&format!(
                "    {from} -> {to} [label=\"{}\", style=bold];\n",
                l.guard()
            )),
            None => out.push_str(&format!("    {from} -> {to};\n")),
        }
    }
    for branch in FORK {
        out.push_str(&format!(
            "    {fork} -> {} [style=dashed, label=\"branch\"];\n",
            branch.name()
        ));
    }
    out.push_str("}\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_edge_and_branch_of_the_definition_is_drawn_once() {
        let text = mermaid();
        for (from, to) in EDGES {
            let (a, b) = (mermaid_id(from), mermaid_id(to));
            let plain = format!("    {a} --> {b}\n");
            let guarded =
                Loop::of(from, to).map(|l| format!("    {a} -->|\"{}\"| {b}\n", l.guard()));
            let drawn =
                text.matches(&plain).count() + guarded.map_or(0, |g| text.matches(&g).count());
            assert_eq!(drawn, 1, "{from} -> {to}");
        }
        assert_eq!(text.matches(" -.->|branch| ").count(), FORK.len());
        assert_eq!(
            text.lines().filter(|l| l.contains("-->")).count(),
            EDGES.len()
        );
        let dot = dot();
        assert_eq!(dot.matches(" -> ").count(), EDGES.len() + FORK.len());
        assert!(dot.starts_with("digraph bounded_rag {") && dot.ends_with("}\n"));
    }

    #[test]
    fn the_loops_are_the_bounded_edges_of_the_graph() {
        let guarded: Vec<_> = EDGES
            .iter()
            .filter_map(|(from, to)| Loop::of(from, to).map(|l| (*from, l)))
            .collect();
        assert_eq!(
            guarded,
            [
                ("speculate", Loop::QueryRewrite),
                ("kg_retrieval", Loop::QueryRewrite),
                ("grade_documents", Loop::QueryRewrite),
                ("generate", Loop::QueryRewrite),
                ("grade_hallucinations", Loop::Regeneration),
                ("grade_answer", Loop::QueryRewrite),
            ]
        );
        let value = json();
        assert_eq!(value["nodes"].as_array().unwrap().len(), NODES.len());
        assert_eq!(value["edges"].as_array().unwrap().len(), EDGES.len());
        assert_eq!(
            value["fork"]["branches"],
            json!(["route_question", "grade_documents", "generate"])
        );
        assert_eq!(value["loops"][1]["limit"], "MAX_REGENERATIONS");
    }
}
