//! The store's common direction for the vector ranking's hubness correction (as a bundle's,
//! [`CommonDirection`]): the mean of up to [`SAMPLE`] stored passages' unit vectors, read once
//! when the store is opened, one statement.
use super::sql::{first_text, Sql, SqlError, Statement};
use crate::search::CommonDirection;

/// Passages averaged: the mean direction of 8,192 unit vectors is within about 0.01 of the
/// whole store's, and reading them stays one short scan however large the store grows.
const SAMPLE: u32 = 8_192;

/// The statement: the mean of the first `SAMPLE` passages' unit vectors, as text.
fn statement() -> Statement {
    Statement::new(
        format!(
            "SELECT CAST(avg(l2_normalize(s.embedding)) AS text) FROM \
             (SELECT p.embedding FROM bounded_rag_passages p \
              WHERE p.kind = 'episode' AND p.embedding IS NOT NULL LIMIT {SAMPLE}) s"
        ),
        vec![],
    )
}

/// SQLSTATE of a missing function: `l2_normalize` before pgvector 0.7.
const UNDEFINED_FUNCTION: &str = "42883";

/// The common direction of the store's vectors; `None` when it holds none, or when its
/// pgvector is older than 0.7 (the ranking is then plain cosine, as before; logged).
pub(super) async fn read(sql: &dyn Sql) -> Result<Option<CommonDirection>, SqlError> {
    let rows = match sql.query(&statement()).await {
        Err(e) if e.code.as_deref() == Some(UNDEFINED_FUNCTION) => {
            tracing::warn!(
                store = sql.name(),
                "pgvector older than 0.7 (no l2_normalize): vectors ranked by plain cosine"
            );
            return Ok(None);
        }
        other => other?,
    };
    let Some(text) = first_text(&rows) else {
        return Ok(None);
    };
    let mean = parse(text).ok_or_else(|| {
        SqlError::permanent(format!(
            "the passages' mean vector is not a vector: {text:.40}"
        ))
    })?;
    Ok(Some(CommonDirection::of_mean(&mean)))
}

/// pgvector's text form, `[0.1,0.2,...]`.
fn parse(text: &str) -> Option<Vec<f32>> {
    let inner = text.trim().strip_prefix('[')?.strip_suffix(']')?;
    inner.split(',').map(|x| x.trim().parse().ok()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_pgvector_text() {
        assert_eq!(parse("[0.5,-1,2e-3]"), Some(vec![0.5, -1.0, 0.002]));
        assert_eq!(parse("[0.5,x]"), None);
        assert_eq!(parse("0.5,1"), None);
    }
}
