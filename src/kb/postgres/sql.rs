//! The one seam both PostgreSQL transports implement ([`Sql`]): statements with positional
//! parameters, every parameter typed ([`SqlValue`]) and cast in the statement itself
//! (`CAST($1 AS int8)`), every result column cast to `text`, `int8`, `float8` or `bool` in its
//! select list. Both the wire protocol (tokio-postgres) and the RDS Data API's typed fields
//! carry exactly those four types, so a statement means the same through either.
//!
//! Statements are `&'static str`: user text only ever reaches the database as a parameter.
use crate::error::ErrorClass;
use async_trait::async_trait;

/// A parameter or a result field.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum SqlValue {
    /// `text` (also JSON and vectors, cast in the statement: `CAST($1 AS jsonb)`).
    Text(String),
    /// `int8`.
    Int(i64),
    /// `float8`.
    Float(f64),
    /// `bool`.
    Bool(bool),
    /// SQL `NULL`.
    Null,
}

impl SqlValue {
    /// The text of a `text` field; `None` for any other.
    pub(crate) fn text(&self) -> Option<&str> {
        match self {
            SqlValue::Text(s) => Some(s),
            _ => None,
        }
    }

    /// The number of an `int8` field.
    pub(crate) fn int(&self) -> Option<i64> {
        match self {
            SqlValue::Int(n) => Some(*n),
            _ => None,
        }
    }

    /// The number of a `float8` field (an `int8` one converted).
    pub(crate) fn float(&self) -> Option<f64> {
        match self {
            SqlValue::Float(x) => Some(*x),
            SqlValue::Int(n) => Some(*n as f64),
            _ => None,
        }
    }
}

impl From<&str> for SqlValue {
    fn from(s: &str) -> Self {
        SqlValue::Text(s.to_owned())
    }
}

impl From<String> for SqlValue {
    fn from(s: String) -> Self {
        SqlValue::Text(s)
    }
}

impl From<i64> for SqlValue {
    fn from(n: i64) -> Self {
        SqlValue::Int(n)
    }
}

impl From<f64> for SqlValue {
    fn from(x: f64) -> Self {
        SqlValue::Float(x)
    }
}

impl From<bool> for SqlValue {
    fn from(b: bool) -> Self {
        SqlValue::Bool(b)
    }
}

/// A row of a result: its fields in select-list order.
pub(crate) type Row = Vec<SqlValue>;

/// The text of the first field of the first row: a one-value statement's answer.
pub(crate) fn first_text(rows: &[Row]) -> Option<&str> {
    rows.first()?.first()?.text()
}

/// One statement and its parameters (`$1` is `params[0]`).
#[derive(Debug, Clone)]
pub(crate) struct Statement {
    /// The SQL: a constant of this crate, or one assembled from constants only.
    pub sql: String,
    /// Its parameters, in order.
    pub params: Vec<SqlValue>,
    /// Work over every row (an index build) that may run far past a statement's time limit:
    /// waited for up to [`MAINTENANCE_TIMEOUT`], and through the Data API left running on the
    /// database past the API's own limit.
    pub maintenance: bool,
}

/// The longest wait for a [`Statement::maintenance`] statement: building the HNSW index of a
/// million rows took about 15 minutes on two cores (docs/benchmarks-history.md, PostgreSQL at a
/// million passages), so eight times that.
pub(crate) const MAINTENANCE_TIMEOUT: std::time::Duration =
    std::time::Duration::from_secs(2 * 3600);

impl Statement {
    pub(crate) fn new(sql: impl Into<String>, params: Vec<SqlValue>) -> Self {
        Self {
            sql: sql.into(),
            params,
            maintenance: false,
        }
    }

    /// A parameterless [`Statement::maintenance`] statement.
    pub(crate) fn maintenance(sql: impl Into<String>) -> Self {
        Self {
            maintenance: true,
            ..Self::new(sql, Vec::new())
        }
    }
}

/// A failed statement, classified once.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{message}")]
pub(crate) struct SqlError {
    /// What the database or the transport said (never a parameter's value).
    pub message: String,
    /// Whether the same statement may succeed later.
    pub class: ErrorClass,
    /// The SQLSTATE, when the database answered with one.
    pub code: Option<String>,
}

impl SqlError {
    pub(crate) fn transient(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            class: ErrorClass::Transient,
            code: None,
        }
    }

    pub(crate) fn permanent(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            class: ErrorClass::Permanent,
            code: None,
        }
    }

    /// The class of a SQLSTATE: connection problems (08), lack of resources (53), operator
    /// intervention such as a restart (57) and serialization failures or deadlocks (40) may pass;
    /// anything else is the statement's own fault or the schema's.
    pub(crate) fn of_sqlstate(code: &str, message: impl Into<String>) -> Self {
        let transient = ["08", "40", "53", "57"].iter().any(|c| code.starts_with(c));
        Self {
            message: message.into(),
            class: if transient {
                ErrorClass::Transient
            } else {
                ErrorClass::Permanent
            },
            code: Some(code.to_owned()),
        }
    }
}

/// A PostgreSQL database, through one transport.
#[async_trait]
pub(crate) trait Sql: Send + Sync {
    /// Runs one statement on its own (autocommit) and returns its rows.
    async fn query(&self, statement: &Statement) -> Result<Vec<Row>, SqlError>;

    /// Runs the statements in one transaction: all of them, or none.
    async fn transaction(&self, statements: &[Statement]) -> Result<(), SqlError>;

    /// What to call the database in messages (host and database, never a password).
    fn name(&self) -> &str;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sqlstates_are_classified_once() {
        assert_eq!(
            SqlError::of_sqlstate("08006", "x").class,
            ErrorClass::Transient
        );
        assert_eq!(
            SqlError::of_sqlstate("40001", "x").class,
            ErrorClass::Transient
        );
        assert_eq!(
            SqlError::of_sqlstate("57P01", "x").class,
            ErrorClass::Transient
        );
        assert_eq!(
            SqlError::of_sqlstate("42P01", "x").class,
            ErrorClass::Permanent
        );
        assert_eq!(
            SqlError::of_sqlstate("22P02", "x").class,
            ErrorClass::Permanent
        );
    }
}
