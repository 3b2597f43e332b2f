//! From a location to a database: the transport chosen by the scheme, credentials from
//! Secrets Manager when the location names a secret.
//!
//! The direct transport (`postgres://`, tokio-postgres and its TLS) is reached through
//! [`enable_direct`], which the CLI calls (ingest, sync, `serve`, `ask`) and the Lambda
//! functions never do: the stack reaches Aurora through the Data API (`rds-data://`), so the
//! wire protocol is not linked into their bootstraps. A function given `postgres://` says so.
use super::data_api::DataApiSql;
use super::sql::{Sql, SqlError};
use crate::config::{PgLocation, RdsDataLocation};
use crate::search::RetrievalError;
use futures::future::BoxFuture;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

/// Opens a `postgres://` location (the direct transport), as [`connect`] does.
type OpenDirect = for<'a> fn(
    &'a PgLocation,
    Option<&'a aws_config::SdkConfig>,
    Duration,
) -> BoxFuture<'a, Result<Arc<dyn Sql>, SqlError>>;

static DIRECT: OnceLock<OpenDirect> = OnceLock::new();

/// Makes `postgres://` locations reachable in this process. Called by the CLI, never by the
/// Lambda functions.
pub(crate) fn enable_direct() {
    DIRECT.get_or_init(|| super::direct::open);
}

/// A PostgreSQL location: `postgres://...` or `rds-data://...`.
#[derive(Debug, Clone)]
pub(crate) enum SqlLocation {
    Postgres(PgLocation),
    RdsData(RdsDataLocation),
}

impl SqlLocation {
    /// Reads `postgres://...`, `postgresql://...` or `rds-data://...`; `None` for any other text.
    pub(crate) fn parse(text: &str) -> Option<Result<Self, String>> {
        let (scheme, rest) = text.split_once("://")?;
        Some(match scheme {
            "postgres" | "postgresql" => PgLocation::parse(text).map(SqlLocation::Postgres),
            "rds-data" => RdsDataLocation::parse(rest).map(SqlLocation::RdsData),
            _ => return None,
        })
    }
}

impl std::fmt::Display for SqlLocation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SqlLocation::Postgres(l) => l.fmt(f),
            SqlLocation::RdsData(l) => l.fmt(f),
        }
    }
}

/// The database at `location`, not yet contacted (the direct path reads its secret now).
/// `sdk` is needed for the Data API and for a secret; each statement is bounded by `timeout`.
pub(crate) async fn connect(
    location: &SqlLocation,
    sdk: Option<&aws_config::SdkConfig>,
    timeout: Duration,
) -> Result<Arc<dyn Sql>, RetrievalError> {
    let fail = |e: SqlError| RetrievalError::Store {
        store: location.to_string(),
        message: e.message,
        class: e.class,
    };
    match location {
        SqlLocation::Postgres(at) => {
            let open = DIRECT.get().ok_or_else(|| {
                fail(SqlError::permanent(
                    "postgres:// is not built into the Lambda functions: they reach PostgreSQL \
                     through the RDS Data API (rds-data://CLUSTER_ARN/DATABASE?secret=SECRET_ARN); \
                     the CLI and `bounded-rag serve` connect directly"
                        .to_owned(),
                ))
            })?;
            open(at, sdk, timeout).await.map_err(fail)
        }
        SqlLocation::RdsData(at) => {
            let sdk = match sdk {
                Some(sdk) => sdk.clone(),
                None => crate::tls::aws_sdk_config().await,
            };
            let config = aws_sdk_rdsdata::config::Builder::from(&sdk)
                .timeout_config(crate::aws::timeouts(&sdk, timeout))
                .build();
            let client = aws_sdk_rdsdata::Client::from_conf(config);
            Ok(Arc::new(DataApiSql::new(client, at.clone(), timeout)))
        }
    }
}
