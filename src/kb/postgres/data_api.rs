//! PostgreSQL through the RDS Data API: `KB_URI=rds-data://CLUSTER_ARN/DATABASE?secret=SECRET_ARN`.
//! HTTPS and IAM, no VPC and no connection to keep, which suits Lambda and Aurora Serverless v2
//! scaled to zero.
//!
//! Statements are the ones the direct path runs: `$1` becomes the named parameter `:p1`, and
//! each [`SqlValue`] its typed field. A transaction is `BeginTransaction`, one
//! `ExecuteStatement` per statement, then `CommitTransaction` (`RollbackTransaction` when one
//! fails). A database error's SQLSTATE is read from the message (`SQLState: 42P01`), where the
//! Data API puts it.
use super::sql::{Row, Sql, SqlError, SqlValue, Statement, MAINTENANCE_TIMEOUT};
use crate::config::RdsDataLocation;
use crate::error::ErrorClass;
use async_trait::async_trait;
use aws_sdk_rdsdata::error::ProvideErrorMetadata;
use aws_sdk_rdsdata::types::{Field, SqlParameter};
use aws_sdk_rdsdata::Client;
use std::time::Duration;

/// Error codes of the Data API worth retrying besides throttling and 5xx: an Aurora Serverless
/// cluster waking from zero, a writer failing over, a statement that outlived the API's wait.
const TRANSIENT_CODES: &[&str] = &[
    "DatabaseResumingException",
    "DatabaseUnavailableException",
    "StatementTimeoutException",
    "ServiceUnavailableError",
    "InternalServerErrorException",
];

/// A database reached through the RDS Data API.
pub(crate) struct DataApiSql {
    client: Client,
    location: RdsDataLocation,
    name: String,
    timeout: Duration,
}

impl DataApiSql {
    /// The database at `location`, each call bounded by `timeout`.
    pub(crate) fn new(client: Client, location: RdsDataLocation, timeout: Duration) -> Self {
        let name = format!("rds-data://{}/{}", location.cluster_arn, location.database);
        Self {
            client,
            location,
            name,
            timeout,
        }
    }

    async fn execute(
        &self,
        statement: &Statement,
        transaction: Option<&str>,
    ) -> Result<Vec<Row>, SqlError> {
        let call = self
            .client
            .execute_statement()
            .resource_arn(&self.location.cluster_arn)
            .secret_arn(&self.location.secret_arn)
            .database(&self.location.database)
            .sql(named(&statement.sql))
            .set_parameters(Some(parameters(&statement.params)))
            .set_transaction_id(transaction.map(str::to_owned))
            .continue_after_timeout(statement.maintenance)
            .send();
        if statement.maintenance {
            return self.maintenance(call).await;
        }
        let output = self.bounded(call).await?;
        output.records().iter().map(|r| row(r)).collect()
    }

    /// A maintenance statement: the Data API gives up on a call after 45 seconds, and with
    /// `continueAfterTimeout` the database goes on (an index build finishes on its own): that
    /// timeout is no failure.
    async fn maintenance<T, E>(
        &self,
        call: impl std::future::Future<
            Output = Result<
                T,
                aws_sdk_rdsdata::error::SdkError<E, aws_smithy_runtime_api::http::Response>,
            >,
        >,
    ) -> Result<Vec<Row>, SqlError>
    where
        E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
    {
        match tokio::time::timeout(MAINTENANCE_TIMEOUT.max(self.timeout), call).await {
            Ok(Err(e)) if e.code() == Some("StatementTimeoutException") => {
                tracing::warn!(
                    store = %self.name,
                    "the Data API stopped waiting for a maintenance statement (an index build); \
                     the database goes on with it"
                );
                Ok(Vec::new())
            }
            Ok(Err(e)) => Err(self.error(&e)),
            Ok(Ok(_)) => Ok(Vec::new()),
            Err(_) => Err(SqlError::transient(format!(
                "a maintenance statement did not end within {} s",
                MAINTENANCE_TIMEOUT.max(self.timeout).as_secs()
            ))),
        }
    }

    /// Waits for `call` at most the timeout; classifies its failure.
    async fn bounded<T, E>(
        &self,
        call: impl std::future::Future<
            Output = Result<
                T,
                aws_sdk_rdsdata::error::SdkError<E, aws_smithy_runtime_api::http::Response>,
            >,
        >,
    ) -> Result<T, SqlError>
    where
        E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
    {
        match tokio::time::timeout(self.timeout, call).await {
            Err(_) => Err(SqlError::transient(format!(
                "{}: the Data API did not answer within {} ms",
                self.name,
                self.timeout.as_millis()
            ))),
            Ok(Err(e)) => Err(self.error(&e)),
            Ok(Ok(output)) => Ok(output),
        }
    }

    fn error<E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static>(
        &self,
        e: &aws_sdk_rdsdata::error::SdkError<E, aws_smithy_runtime_api::http::Response>,
    ) -> SqlError {
        let message = e.message().map(str::to_owned).unwrap_or_else(|| {
            aws_smithy_types::error::display::DisplayErrorContext(e).to_string()
        });
        // The store's name is the caller's to add (`RetrievalError::Store`).
        if let Some(state) = sqlstate(&message) {
            return SqlError::of_sqlstate(&state, message);
        }
        let transient = e.code().is_some_and(|c| TRANSIENT_CODES.contains(&c));
        match (transient, crate::aws::sdk_error_class(e)) {
            (true, _) | (_, ErrorClass::Transient) => SqlError::transient(message),
            _ => SqlError::permanent(message),
        }
    }
}

/// `$1` → `:p1`: the statements are this crate's, with no `$` but before a parameter number.
fn named(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len() + 8);
    let mut chars = sql.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '$' && chars.peek().is_some_and(char::is_ascii_digit) {
            out.push_str(":p");
        } else {
            out.push(c);
        }
    }
    out
}

fn parameters(params: &[SqlValue]) -> Vec<SqlParameter> {
    params
        .iter()
        .enumerate()
        .map(|(i, value)| {
            let field = match value {
                SqlValue::Text(s) => Field::StringValue(s.clone()),
                SqlValue::Int(n) => Field::LongValue(*n),
                SqlValue::Float(x) => Field::DoubleValue(*x),
                SqlValue::Bool(b) => Field::BooleanValue(*b),
                SqlValue::Null => Field::IsNull(true),
            };
            SqlParameter::builder()
                .name(format!("p{}", i + 1))
                .value(field)
                .build()
        })
        .collect()
}

fn row(fields: &[Field]) -> Result<Row, SqlError> {
    fields
        .iter()
        .map(|f| match f {
            Field::StringValue(s) => Ok(SqlValue::Text(s.clone())),
            Field::LongValue(n) => Ok(SqlValue::Int(*n)),
            Field::DoubleValue(x) => Ok(SqlValue::Float(*x)),
            Field::BooleanValue(b) => Ok(SqlValue::Bool(*b)),
            Field::IsNull(_) => Ok(SqlValue::Null),
            other => Err(SqlError::permanent(format!(
                "the Data API returned a field of an unexpected kind: {other:?}"
            ))),
        })
        .collect()
}

/// The SQLSTATE in a Data API error message (`...; SQLState: 42P01`).
fn sqlstate(message: &str) -> Option<String> {
    let at = message.find("SQLState: ")? + "SQLState: ".len();
    let code: String = message[at..].chars().take(5).collect();
    (code.len() == 5 && code.chars().all(|c| c.is_ascii_alphanumeric())).then_some(code)
}

#[async_trait]
impl Sql for DataApiSql {
    async fn query(&self, statement: &Statement) -> Result<Vec<Row>, SqlError> {
        self.execute(statement, None).await
    }

    async fn transaction(&self, statements: &[Statement]) -> Result<(), SqlError> {
        let begin = self
            .client
            .begin_transaction()
            .resource_arn(&self.location.cluster_arn)
            .secret_arn(&self.location.secret_arn)
            .database(&self.location.database)
            .send();
        let id = self
            .bounded(begin)
            .await?
            .transaction_id()
            .map(str::to_owned)
            .ok_or_else(|| SqlError::transient("BeginTransaction returned no transaction id"))?;
        for statement in statements {
            if let Err(e) = self.execute(statement, Some(&id)).await {
                let rollback = self
                    .client
                    .rollback_transaction()
                    .resource_arn(&self.location.cluster_arn)
                    .secret_arn(&self.location.secret_arn)
                    .transaction_id(&id)
                    .send();
                // The Data API ends an abandoned transaction itself; the first error is the news.
                if let Err(r) = self.bounded(rollback).await {
                    tracing::warn!(error = %r, "rolling back a Data API transaction failed");
                }
                return Err(e);
            }
        }
        let commit = self
            .client
            .commit_transaction()
            .resource_arn(&self.location.cluster_arn)
            .secret_arn(&self.location.secret_arn)
            .transaction_id(&id)
            .send();
        self.bounded(commit).await.map(|_| ())
    }

    fn name(&self) -> &str {
        &self.name
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positional_parameters_become_named_ones() {
        assert_eq!(
            named("SELECT CAST($1 AS text), $12::int8 WHERE a = '$x'"),
            "SELECT CAST(:p1 AS text), :p12::int8 WHERE a = '$x'"
        );
    }

    #[test]
    fn the_sqlstate_is_read_from_the_message() {
        assert_eq!(
            sqlstate("ERROR: relation \"x\" does not exist; SQLState: 42P01").as_deref(),
            Some("42P01")
        );
        assert_eq!(sqlstate("Communications link failure"), None);
    }
}
