//! Workflow versions: which code may resume a checkpoint.
//!
//! A checkpoint names the node to run next and holds the workflow's state. Code whose graph
//! has other edges, or whose state reads differently, would resume it into the wrong node or
//! misread its counters. So every checkpoint records the [`WorkflowVersion`] of the code that
//! wrote it: a hash of the graph's [`Shape`] (nodes, edges and state format). Before a run is
//! continued, [`Versioning::check`] compares it with the running code's: an equal version, or
//! one the graph explicitly declares it resumes ([`Versioning::resumes_from`], a reviewed,
//! compatible change), resumes; any other is [`Incompatible`] and the run must end `failed`
//! instead of advancing.

use serde::{Deserialize, Serialize};

/// The version of a workflow: 16 hex digits of a stable hash of its [`Shape`].
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct WorkflowVersion(String);

impl WorkflowVersion {
    /// A version as written in a checkpoint.
    pub(crate) fn new(version: impl Into<String>) -> Self {
        Self(version.into())
    }

    /// The version's text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for WorkflowVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// What a workflow version is a hash of: the graph's nodes, its edges (`"end"` names the end
/// of the run, `"start"` its beginning) and the format of its state.
#[derive(Debug, Clone, Copy)]
pub struct Shape<'a> {
    /// Node names.
    pub nodes: &'a [&'a str],
    /// Every transition a step may choose, as `(from, to)` names.
    pub edges: &'a [(&'a str, &'a str)],
    /// Bumped whenever the state's stored form changes meaning.
    pub state_format: u32,
}

impl Shape<'_> {
    /// The shape's version. Order does not matter (nodes and edges are sorted first), and the
    /// hash (64-bit FNV-1a) is fixed, unlike `std`'s hasher, so every build of the same shape
    /// computes the same version.
    pub fn version(&self) -> WorkflowVersion {
        let mut nodes = self.nodes.to_vec();
        nodes.sort_unstable();
        let mut edges = self.edges.to_vec();
        edges.sort_unstable();
        let mut text = format!("state={};nodes=", self.state_format);
        text.push_str(&nodes.join(","));
        text.push_str(";edges=");
        for (from, to) in edges {
            text.push_str(from);
            text.push('>');
            text.push_str(to);
            text.push(',');
        }
        WorkflowVersion(format!("{:016x}", fnv1a(text.as_bytes())))
    }
}

fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, &b| {
        (hash ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// A checkpoint the running code must not resume.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "this run was started by workflow version {stored} and the deployed code runs workflow \
     version {current}, which cannot resume it (its graph or state format changed)"
)]
pub(crate) struct Incompatible {
    /// The version that wrote the checkpoint.
    pub stored: WorkflowVersion,
    /// The running code's version.
    pub current: WorkflowVersion,
}

/// The running code's version and what else it can resume.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Versioning {
    /// The version of the running code, recorded in every checkpoint it writes.
    pub current: WorkflowVersion,
    /// Older versions this code resumes too: a graph change that keeps every stored
    /// checkpoint meaningful (say, a new edge out of a new node) lists the version it replaced.
    pub resumes_from: Vec<WorkflowVersion>,
    /// The version taken for a checkpoint that records none (written before versions were
    /// recorded).
    pub unversioned: WorkflowVersion,
}

impl Versioning {
    /// Code of `current` resuming only its own checkpoints, and taking unrecorded ones to be
    /// of `unversioned`.
    pub(crate) fn new(current: WorkflowVersion, unversioned: WorkflowVersion) -> Self {
        Self {
            current,
            resumes_from: Vec::new(),
            unversioned,
        }
    }

    /// `Ok` when a checkpoint written by `stored` (`None`: no version recorded) may be
    /// resumed by this code.
    pub(crate) fn check(&self, stored: Option<&WorkflowVersion>) -> Result<(), Incompatible> {
        let stored = stored.unwrap_or(&self.unversioned);
        if *stored == self.current || self.resumes_from.contains(stored) {
            return Ok(());
        }
        Err(Incompatible {
            stored: stored.clone(),
            current: self.current.clone(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NODES: [&str; 2] = ["a", "b"];
    const EDGES: [(&str, &str); 3] = [("start", "a"), ("a", "b"), ("b", "end")];

    fn shape(edges: &[(&'static str, &'static str)], state_format: u32) -> WorkflowVersion {
        Shape {
            nodes: &NODES,
            edges,
            state_format,
        }
        .version()
    }

    #[test]
    fn the_version_is_stable_and_order_free_and_changes_with_the_shape() {
        let v = shape(&EDGES, 1);
        assert_eq!(v.as_str().len(), 16);
        let reversed: Vec<_> = EDGES.iter().rev().copied().collect();
        assert_eq!(shape(&reversed, 1), v, "order does not matter");
        assert_ne!(shape(&EDGES, 2), v, "state format counts");
        assert_ne!(shape(&EDGES[..2], 1), v, "an edge counts");
        // Pinned: a different value means the hash changed and every stored run with it.
        assert_eq!(v.as_str(), shape(&EDGES, 1).as_str());
        assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
    }

    #[test]
    fn only_equal_or_declared_versions_resume() {
        let old = shape(&EDGES[..2], 1);
        let unversioned = WorkflowVersion::new("0123456789abcdef");
        let mut v = Versioning::new(shape(&EDGES, 1), unversioned.clone());
        assert_eq!(v.check(Some(&v.current.clone())), Ok(()));
        assert_eq!(v.check(None), v.check(Some(&unversioned)));
        let err = v.check(Some(&old)).unwrap_err();
        assert_eq!((&err.stored, &err.current), (&old, &v.current));
        let text = err.to_string();
        assert!(text.contains(old.as_str()) && text.contains(v.current.as_str()));
        v.resumes_from.push(old.clone());
        assert_eq!(v.check(Some(&old)), Ok(()));
    }
}
