//! Where documents' metadata comes from (see `search::filter` for its use):
//!
//! - Markdown front matter: a block between `---` lines at the very top, one `key: value` per
//!   line (quotes around a value are dropped; `true`/`false` and numbers are typed; lists,
//!   nesting and comments are skipped). The block is removed before the text is indexed.
//! - A sidecar `NAME.meta.json` beside a document: `guide.md.meta.json` or `guide.meta.json`
//!   for `guide.md`, a JSON object of strings, numbers and booleans. It wins over front
//!   matter key by key.
//! - The `metadata` object of a `nodes.jsonl`, `edges.jsonl` or `communities.jsonl` record.
use super::jsonl::JsonlFile;
use super::source_file::SourceFile;
use crate::ingest::IngestError;
use crate::knowledge::Meta;
use serde_json::Value;
use std::collections::HashMap;

/// The suffix of a sidecar file.
const SIDECAR: &str = ".meta.json";

/// Whether `rel` is a sidecar metadata file.
pub(crate) fn is_sidecar(rel: &str) -> bool {
    rel.len() > SIDECAR.len() && rel.to_ascii_lowercase().ends_with(SIDECAR)
}

/// The sidecars among `files`, by the relative path they are named after (without
/// `.meta.json`); a sidecar that is not a JSON object of scalars is an error naming it.
pub(crate) fn sidecars(files: &[SourceFile]) -> Result<HashMap<String, Meta>, IngestError> {
    let mut out = HashMap::new();
    for file in files.iter().filter(|f| is_sidecar(&f.rel)) {
        let invalid = |message: String| IngestError::Invalid {
            path: file.path.clone(),
            message,
        };
        let value: Value = serde_json::from_str(&file.text)
            .map_err(|e| invalid(format!("not JSON metadata: {e}")))?;
        let meta = object(value).map_err(invalid)?;
        out.insert(file.rel[..file.rel.len() - SIDECAR.len()].to_owned(), meta);
    }
    Ok(out)
}

/// A JSON object of strings, numbers and booleans as metadata.
fn object(value: Value) -> Result<Meta, String> {
    let Value::Object(map) = value else {
        return Err("metadata must be a JSON object of strings, numbers and booleans".into());
    };
    let mut meta = Meta::new();
    for (key, value) in map {
        match value {
            Value::String(_) | Value::Number(_) | Value::Bool(_) => {
                meta.insert(key, value);
            }
            Value::Null => {}
            _ => {
                return Err(format!(
                    "metadata `{key}` must be a string, number or boolean"
                ))
            }
        }
    }
    Ok(meta)
}

/// A text document's metadata and its text without front matter.
pub(crate) fn of_document<'a>(
    file: &'a SourceFile,
    sidecars: &HashMap<String, Meta>,
) -> (Meta, &'a str) {
    let markdown = [".md", ".markdown"]
        .iter()
        .any(|ext| file.rel.to_ascii_lowercase().ends_with(ext));
    let (mut meta, text) = if markdown {
        front_matter(&file.text)
    } else {
        (Meta::new(), file.text.as_str())
    };
    let stem = file
        .rel
        .rsplit_once('.')
        .map_or(file.rel.as_str(), |(s, _)| s);
    if let Some(side) = sidecars.get(&file.rel).or_else(|| sidecars.get(stem)) {
        meta.extend(side.clone());
    }
    (meta, text)
}

/// The `key: value` front matter at the top of `text`, and the text after it.
pub(crate) fn front_matter(text: &str) -> (Meta, &str) {
    let body = text.strip_prefix('\u{feff}').unwrap_or(text);
    let Some(rest) = body
        .strip_prefix("---\n")
        .or_else(|| body.strip_prefix("---\r\n"))
    else {
        return (Meta::new(), text);
    };
    let mut meta = Meta::new();
    let mut offset = 0;
    for line in rest.split_inclusive('\n') {
        offset += line.len();
        let line = line.trim_end();
        if line == "---" || line == "..." {
            return (meta, &rest[offset..]);
        }
        if line.starts_with([' ', '\t', '-', '#']) {
            continue; // nesting, list items and comments: not simple metadata
        }
        if let Some((key, value)) = line.split_once(':') {
            let key = key.trim();
            if !key.is_empty() && !value.trim().is_empty() {
                meta.insert(key.to_owned(), typed(value.trim()));
            }
        }
    }
    (Meta::new(), text) // never closed: not front matter
}

/// A front-matter value: a boolean, a number, or a string without its quotes.
fn typed(value: &str) -> Value {
    match value {
        "true" => return Value::Bool(true),
        "false" => return Value::Bool(false),
        _ => {}
    }
    for quote in ['"', '\''] {
        if let Some(inner) = value
            .strip_prefix(quote)
            .and_then(|v| v.strip_suffix(quote))
        {
            return Value::String(inner.to_owned());
        }
    }
    if let Ok(n) = value.parse::<i64>() {
        return Value::from(n);
    }
    match value.parse::<f64>() {
        Ok(x) if x.is_finite() && value.bytes().any(|b| b.is_ascii_digit()) => Value::from(x),
        _ => Value::String(value.to_owned()),
    }
}

/// The metadata of every record of the graph files, in the order their documents are made
/// (nodes, edges, communities; line by line, blank lines skipped).
pub(crate) fn of_records(files: &[&[JsonlFile]]) -> Result<Vec<Meta>, IngestError> {
    let mut out = Vec::new();
    for file in files.iter().flat_map(|f| f.iter()) {
        for (i, line) in file.text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            // The line parsed already as a record; only its `metadata` is read here.
            let value: Value = serde_json::from_str(line).unwrap_or_default();
            let meta = match value.get("metadata") {
                None | Some(Value::Null) => Meta::new(),
                Some(m) => object(m.clone()).map_err(|message| IngestError::Parse {
                    path: file.path.clone(),
                    line: i + 1,
                    message,
                })?,
            };
            out.push(meta);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::path::PathBuf;

    fn file(rel: &str, text: &str) -> SourceFile {
        SourceFile::text(PathBuf::from("kb").join(rel), rel, text.to_owned())
    }

    #[test]
    fn front_matter_is_read_typed_and_removed() {
        let text = "---\ntenant: acme\nyear: 2024\nscore: 0.5\npublic: true\ntitle: \"A: B\"\ntags:\n  - x\n# note\n---\n# Guide\n\nBody.";
        let (meta, body) = front_matter(text);
        assert_eq!(
            serde_json::to_value(&meta).unwrap(),
            json!({"tenant": "acme", "year": 2024, "score": 0.5, "public": true, "title": "A: B"})
        );
        assert_eq!(body, "# Guide\n\nBody.");
        let (meta, body) = front_matter("---\nnot closed: x\n# Guide");
        assert!(meta.is_empty());
        assert_eq!(body, "---\nnot closed: x\n# Guide");
        assert!(front_matter("# Guide\n---\na: b\n---").0.is_empty());
    }

    #[test]
    fn sidecars_win_over_front_matter_and_bad_ones_are_named() {
        let files = [
            file("a.md", "---\ntenant: x\nyear: 1\n---\nText"),
            file("a.md.meta.json", r#"{"tenant": "acme", "draft": null}"#),
            file("b.txt", "Text"),
            file("b.meta.json", r#"{"tenant": "beta"}"#),
        ];
        let side = sidecars(&files).unwrap();
        let (meta, text) = of_document(&files[0], &side);
        assert_eq!(
            serde_json::to_value(&meta).unwrap(),
            json!({"tenant": "acme", "year": 1})
        );
        assert_eq!(text, "Text");
        let (meta, _) = of_document(&files[2], &side);
        assert_eq!(meta["tenant"], "beta");
        assert!(is_sidecar("x/B.META.JSON") && !is_sidecar(".meta.json"));
        let bad = [file("c.meta.json", r#"{"tags": ["a"]}"#)];
        let err = sidecars(&bad).unwrap_err().to_string();
        assert!(
            err.contains("c.meta.json") && err.contains("`tags`"),
            "{err}"
        );
    }

    #[test]
    fn records_carry_their_metadata_object() {
        let nodes = [JsonlFile {
            path: PathBuf::from("nodes.jsonl"),
            rel: "nodes.jsonl".into(),
            text: "{\"id\":\"a\",\"name\":\"A\",\"metadata\":{\"tenant\":\"acme\"}}\n\n{\"id\":\"b\",\"name\":\"B\"}",
        }];
        let metas = of_records(&[&nodes, &[]]).unwrap();
        assert_eq!(metas.len(), 2);
        assert_eq!(metas[0]["tenant"], "acme");
        assert!(metas[1].is_empty());
    }
}
