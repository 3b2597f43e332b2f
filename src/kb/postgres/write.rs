//! Writing a knowledge base into PostgreSQL (ingest and sync): each source document in one
//! transaction, its passages upserted by hash and its passages that are no longer there
//! deleted; documents gone from the source deleted at the end.
//!
//! A passage's hash covers its document, kind, title, text and the how-manieth copy of that
//! text in its document, so an unchanged passage keeps its row (and its vector) wherever it
//! moves, and two equal passages of one document stay two rows. Rows travel as one JSON array
//! per statement (`jsonb_to_recordset`), a few hundred at a time, through either transport.
use super::query::{kind_name, vector_text};
use super::sql::{Sql, SqlError, SqlValue, Statement};
use crate::knowledge::{Document, Meta};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use std::collections::HashMap;

/// Most JSON bytes in one statement (the Data API takes requests up to a few MB).
const BATCH_BYTES: usize = 512 * 1024;

/// One row to write.
pub(crate) struct Item<'a> {
    pub doc: &'a Document,
    pub meta: Option<&'a Meta>,
    pub vector: Option<&'a [f32]>,
}

/// Inserts or updates rows (`$1`, a JSON array), each row's `tenant` taken from its metadata
/// under the store's tenant key (in SQL: the key is a value of the store row, never text of a
/// statement); the words of rows new to the store count in `bounded_rag_terms` (a row updated
/// in place has the same hash, so the same words).
const UPSERT: &str = "WITH up AS (INSERT INTO bounded_rag_passages \
    (hash, document, position, kind, id, title, url, content, meta, meta_norm, tenant, embedding) \
    SELECT r.hash, r.document, r.position, r.kind, r.id, r.title, r.url, r.content, \
      COALESCE(r.meta, '{}'), COALESCE(r.meta_norm, '{}'), \
      CASE WHEN jsonb_typeof(r.meta -> s.tenant_key) = 'string' THEN r.meta ->> s.tenant_key END, \
      CAST(r.embedding AS vector) \
    FROM jsonb_to_recordset(CAST($1 AS jsonb)) AS r(hash text, document text, position int, \
      kind text, id text, title text, url text, content text, meta jsonb, meta_norm jsonb, \
      embedding text), bounded_rag_store s \
    ON CONFLICT (hash) DO UPDATE SET document = EXCLUDED.document, \
      position = EXCLUDED.position, id = EXCLUDED.id, url = EXCLUDED.url, \
      meta = EXCLUDED.meta, meta_norm = EXCLUDED.meta_norm, tenant = EXCLUDED.tenant, \
      embedding = COALESCE(EXCLUDED.embedding, bounded_rag_passages.embedding) \
    RETURNING CAST(xmax AS text) = '0' AS fresh, tsv), \
  words AS (SELECT lexeme, count(*) AS n FROM up, unnest(tsvector_to_array(up.tsv)) AS lexeme \
    WHERE up.fresh GROUP BY lexeme) \
  INSERT INTO bounded_rag_terms (lexeme, df) SELECT lexeme, n FROM words ORDER BY lexeme \
  ON CONFLICT (lexeme) DO UPDATE SET df = bounded_rag_terms.df + EXCLUDED.df";

/// Deletes rows by a condition (`WHERE` follows), taking their words out of the counts.
const DELETE: &str = "WITH gone AS (DELETE FROM bounded_rag_passages WHERE ";
const DELETE_COUNTED: &str = " RETURNING tsv), \
  words AS (SELECT lexeme, count(*) AS n FROM gone, unnest(tsvector_to_array(gone.tsv)) AS lexeme \
    GROUP BY lexeme), \
  counted AS (UPDATE bounded_rag_terms t SET df = t.df - w.n FROM words w \
    WHERE t.lexeme = w.lexeme RETURNING 1) \
  SELECT CAST(count(*) AS int8) FROM gone";

const STALE: &str = "document = CAST($1 AS text) \
    AND hash NOT IN (SELECT jsonb_array_elements_text(CAST($2 AS jsonb)))";

const OTHERS: &str = "document NOT IN (SELECT jsonb_array_elements_text(CAST($1 AS jsonb)))";

/// Recounts the rows and the average length of each kind, and forgets words no row holds,
/// after a write.
const RESTATE: &str = "WITH k AS (SELECT kind, count(*) AS n, avg(length(tsv)) AS len \
    FROM bounded_rag_passages GROUP BY kind), \
  s AS (SELECT COALESCE(sum(n), 0) AS n, \
    COALESCE(jsonb_object_agg(kind, len) FILTER (WHERE kind IS NOT NULL), '{}') AS lens FROM k), \
  forgotten AS (DELETE FROM bounded_rag_terms WHERE df <= 0 RETURNING 1) \
  UPDATE bounded_rag_store SET passages = s.n, avg_lengths = s.lens, updated_at = now() FROM s";

/// Replaces what the store holds of `document` with `items`, in one transaction.
pub(crate) async fn write_document(
    sql: &dyn Sql,
    document: &str,
    items: &[Item<'_>],
) -> Result<(), SqlError> {
    let hashes = row_hashes(document, items.iter().map(|i| i.doc));
    let mut rows = Vec::with_capacity(items.len());
    for ((position, item), key) in items.iter().enumerate().zip(&hashes) {
        let kind = kind_name(item.doc.kind);
        rows.push(json!({
            "hash": key,
            "document": document,
            "position": position,
            "kind": kind,
            "id": item.doc.id,
            "title": item.doc.title,
            "url": item.doc.url,
            "content": item.doc.content,
            "meta": item.meta.map(|m| json!(m)),
            "meta_norm": item.meta.map(super::filter_sql::normalised),
            "embedding": item.vector.map(vector_text),
        }));
    }
    let mut statements = vec![Statement::new(
        format!("{DELETE}{STALE}{DELETE_COUNTED}"),
        vec![document.into(), json!(hashes).to_string().into()],
    )];
    statements.extend(batches(rows).map(|batch| Statement::new(UPSERT, vec![batch.into()])));
    sql.transaction(&statements).await
}

/// The row keys of `document`'s items, in order (see the module docs).
pub(crate) fn row_hashes<'a>(
    document: &str,
    docs: impl Iterator<Item = &'a Document>,
) -> Vec<String> {
    let mut seen: HashMap<String, usize> = HashMap::new();
    docs.map(|doc| {
        let base = hash(&[document, kind_name(doc.kind), &doc.title, &doc.content]);
        let copy = seen.entry(base.clone()).or_insert(0);
        *copy += 1;
        if *copy == 1 {
            base
        } else {
            hash(&[&base, &copy.to_string()])
        }
    })
    .collect()
}

/// Which of `hashes` the store holds with a vector (so a sync embeds only the others).
pub(crate) async fn with_vectors(
    sql: &dyn Sql,
    hashes: &[String],
) -> Result<std::collections::HashSet<String>, SqlError> {
    let mut out = std::collections::HashSet::new();
    for chunk in hashes.chunks(5_000) {
        let rows = sql
            .query(&Statement::new(
                "SELECT hash FROM bounded_rag_passages WHERE embedding IS NOT NULL \
                 AND hash IN (SELECT jsonb_array_elements_text(CAST($1 AS jsonb)))",
                vec![json!(chunk).to_string().into()],
            ))
            .await?;
        out.extend(
            rows.iter()
                .filter_map(|r| r.first().and_then(SqlValue::text).map(str::to_owned)),
        );
    }
    Ok(out)
}

/// Deletes every document but `keep` (those gone from the source); returns how many rows went.
pub(crate) async fn keep_only(sql: &dyn Sql, keep: &[&str]) -> Result<i64, SqlError> {
    let rows = sql
        .query(&Statement::new(
            format!("{DELETE}{OTHERS}{DELETE_COUNTED}"),
            vec![json!(keep).to_string().into()],
        ))
        .await?;
    Ok(rows
        .first()
        .and_then(|r| r.first())
        .and_then(SqlValue::int)
        .unwrap_or(0))
}

/// Brings the store's row count, average length and word counts up to date, builds the vector
/// index when missing, creates and drops the tenants' own vector indexes (tenants of at least
/// `tenant_index_rows` rows, [`super::schema::tenant_indexes`]) and refreshes the planner's
/// statistics (after writing).
pub(crate) async fn restate(sql: &dyn Sql, tenant_index_rows: u64) -> Result<(), SqlError> {
    sql.query(&Statement::new(RESTATE, vec![])).await?;
    sql.query(&Statement::maintenance(super::schema::VECTOR_INDEX))
        .await?;
    sql.query(&super::schema::tenant_indexes(tenant_index_rows))
        .await?;
    // Fresh statistics, or the planner may not pick the vector index after a large load.
    sql.query(&Statement::new("ANALYZE bounded_rag_passages", vec![]))
        .await
        .map(|_| ())
}

/// Records the router's description of the knowledge.
pub(crate) async fn describe(sql: &dyn Sql, description: Option<&str>) -> Result<(), SqlError> {
    sql.query(&Statement::new(
        "UPDATE bounded_rag_store SET description = CAST($1 AS text), updated_at = now()",
        vec![description.map_or(SqlValue::Null, SqlValue::from)],
    ))
    .await
    .map(|_| ())
}

/// The rows as JSON arrays of at most [`BATCH_BYTES`] each.
fn batches(rows: Vec<Value>) -> impl Iterator<Item = String> {
    let mut out = Vec::new();
    let mut current = String::from("[");
    for row in rows {
        let text = row.to_string();
        if current.len() > 1 && current.len() + text.len() > BATCH_BYTES {
            current.push(']');
            out.push(std::mem::replace(&mut current, String::from("[")));
        }
        if current.len() > 1 {
            current.push(',');
        }
        current.push_str(&text);
    }
    if current.len() > 1 {
        current.push(']');
        out.push(current);
    }
    out.into_iter()
}

fn hash(parts: &[&str]) -> String {
    let mut h = Sha256::new();
    for part in parts {
        h.update(part.as_bytes());
        h.update([0]);
    }
    h.finalize()
        .iter()
        .take(16)
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_are_sent_in_bounded_batches() {
        let rows: Vec<Value> = (0..3000)
            .map(|i| json!({"hash": i, "content": "x".repeat(500)}))
            .collect();
        let batches: Vec<String> = batches(rows).collect();
        assert!(batches.len() > 1);
        let total: usize = batches
            .iter()
            .map(|b| serde_json::from_str::<Vec<Value>>(b).unwrap().len())
            .sum();
        assert_eq!(total, 3000);
        assert!(batches.iter().all(|b| b.len() <= BATCH_BYTES + 600));
    }
}
