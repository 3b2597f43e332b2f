//! PostgreSQL over its own wire protocol (tokio-postgres): `KB_URI=postgres://...`, for RDS
//! Proxy, a cluster's endpoint or any PostgreSQL with pgvector.
//!
//! One connection per process, opened on first use and opened again after it breaks. Each
//! statement is one round trip (`query_typed`: parse, bind and execute with the parameter types
//! given, no prepared statement kept). Statements share the connection one at a time; a
//! transaction holds it to its end. A function instance serves one request at a time, so one
//! connection is what it needs; a pooler (RDS Proxy) goes in front for many instances.
use super::sql::{Row, Sql, SqlError, SqlValue, Statement, MAINTENANCE_TIMEOUT};
use crate::config::{PgLocation, PgTls};
use async_trait::async_trait;
use futures::future::BoxFuture;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Mutex;
use tokio_postgres::config::SslMode;
use tokio_postgres::types::{ToSql, Type};
use tokio_postgres::{Client, Config, GenericClient};
use tokio_postgres_rustls::MakeRustlsConnect;

/// The database at `at`, not yet contacted; its user name and password read now from Secrets
/// Manager when `at` names a secret (with `sdk`, or the default chain's configuration). The
/// opener [`super::connect::enable_direct`] installs.
pub(super) fn open<'a>(
    at: &'a PgLocation,
    sdk: Option<&'a aws_config::SdkConfig>,
    timeout: Duration,
) -> BoxFuture<'a, Result<Arc<dyn Sql>, SqlError>> {
    Box::pin(async move {
        let mut config: Config = at
            .url
            .parse()
            .map_err(|e| SqlError::permanent(format!("{e}")))?;
        if let Some(secret) = &at.secret {
            let sdk = match sdk {
                Some(sdk) => sdk.clone(),
                None => crate::tls::aws_sdk_config().await,
            };
            let (user, password) = credentials(&sdk, secret).await?;
            config.user(user).password(password);
        }
        config.application_name("bounded-rag");
        config.ssl_mode(match at.tls {
            PgTls::Disable => SslMode::Disable,
            PgTls::Prefer => SslMode::Prefer,
            PgTls::Require | PgTls::VerifyCa | PgTls::VerifyFull => SslMode::Require,
        });
        let tls = super::tls::connector(at.tls, at.root_cert.as_deref())?;
        Ok(Arc::new(DirectSql::new(config, tls, timeout)) as Arc<dyn Sql>)
    })
}

/// The user name and password in secret `id` (RDS's shape: `{"username", "password"}`).
/// Messages name the secret, never its value.
async fn credentials(sdk: &aws_config::SdkConfig, id: &str) -> Result<(String, String), SqlError> {
    let config = aws_sdk_secretsmanager::config::Builder::from(sdk)
        .timeout_config(crate::aws::timeouts(sdk, crate::aws::STARTUP_CALL))
        .build();
    let client = aws_sdk_secretsmanager::Client::from_conf(config);
    let out = client
        .get_secret_value()
        .secret_id(id)
        .send()
        .await
        .map_err(|e| {
            let message = format!(
                "GetSecretValue {id}: {}",
                aws_smithy_types::error::display::DisplayErrorContext(&e)
            );
            match crate::aws::sdk_error_class(&e) {
                crate::error::ErrorClass::Transient => SqlError::transient(message),
                crate::error::ErrorClass::Permanent => SqlError::permanent(message),
            }
        })?;
    let malformed = || {
        SqlError::permanent(format!(
            "secret {id} is not a JSON object with string fields username and password"
        ))
    };
    let value: serde_json::Value = serde_json::from_str(out.secret_string().ok_or_else(malformed)?)
        .map_err(|_| malformed())?;
    let field = |name: &str| value.get(name).and_then(|v| v.as_str()).map(str::to_owned);
    match (field("username"), field("password")) {
        (Some(user), Some(password)) => Ok((user, password)),
        _ => Err(malformed()),
    }
}

/// A PostgreSQL database reached directly.
pub(crate) struct DirectSql {
    config: Config,
    name: String,
    timeout: Duration,
    tls: MakeRustlsConnect,
    client: Mutex<Option<Client>>,
}

impl DirectSql {
    /// The database at `config` (checked, not yet connected), each statement bounded by
    /// `timeout`, TLS negotiated as the config's `sslmode` says with `tls`.
    pub(crate) fn new(config: Config, tls: MakeRustlsConnect, timeout: Duration) -> Self {
        let host = config
            .get_hosts()
            .first()
            .map(|h| match h {
                tokio_postgres::config::Host::Tcp(name) => name.clone(),
                tokio_postgres::config::Host::Unix(path) => path.display().to_string(),
            })
            .unwrap_or_default();
        let port = config.get_ports().first().copied().unwrap_or(5432);
        let name = format!(
            "postgres://{host}:{port}/{}",
            config.get_dbname().unwrap_or_default()
        );
        Self {
            config,
            name,
            timeout,
            tls,
            client: Mutex::new(None),
        }
    }

    /// The open connection, opened now when there is none (or it broke).
    async fn connected<'a>(
        &self,
        slot: &'a mut Option<Client>,
    ) -> Result<&'a mut Client, SqlError> {
        if slot.as_ref().is_some_and(Client::is_closed) {
            *slot = None;
        }
        if slot.is_none() {
            let connect = self.config.connect(self.tls.clone());
            let (client, connection) = tokio::time::timeout(self.timeout, connect)
                .await
                .map_err(|_| {
                    SqlError::transient(format!(
                        "connecting to {} timed out after {} ms",
                        self.name,
                        self.timeout.as_millis()
                    ))
                })?
                .map_err(|e| self.error(&e))?;
            tokio::spawn(async move {
                if let Err(e) = connection.await {
                    tracing::warn!(error = %e, "the PostgreSQL connection ended");
                }
            });
            if let Err(e) = client.batch_execute(super::schema::SESSION).await {
                tracing::warn!(error = %e, "pgvector's iterative scans are off (pgvector < 0.8)");
            }
            *slot = Some(client);
        }
        Ok(slot.as_mut().expect("connected above"))
    }

    fn error(&self, e: &tokio_postgres::Error) -> SqlError {
        match e.as_db_error() {
            // The store's name is the caller's to add (`RetrievalError::Store`).
            Some(db) => SqlError::of_sqlstate(db.code().code(), db.message().to_owned()),
            // No SQLSTATE: the connection (refused, reset, closed), retried on a new one.
            None => SqlError::transient(crate::outbound::error_chain(e)),
        }
    }

    fn timed_out(&self) -> SqlError {
        SqlError::transient(format!(
            "{}: a statement took longer than {} ms",
            self.name,
            self.timeout.as_millis()
        ))
    }
}

/// The parameters of `statement` with their types, as `query_typed` takes them.
fn typed(params: &[SqlValue]) -> Vec<(Box<dyn ToSql + Sync + Send>, Type)> {
    params
        .iter()
        .map(|p| -> (Box<dyn ToSql + Sync + Send>, Type) {
            match p {
                SqlValue::Text(s) => (Box::new(s.clone()), Type::TEXT),
                SqlValue::Int(n) => (Box::new(*n), Type::INT8),
                SqlValue::Float(x) => (Box::new(*x), Type::FLOAT8),
                SqlValue::Bool(b) => (Box::new(*b), Type::BOOL),
                SqlValue::Null => (Box::new(Option::<String>::None), Type::TEXT),
            }
        })
        .collect()
}

/// A result row as [`SqlValue`]s; a column of another type than the four is a statement bug.
fn fields(row: &tokio_postgres::Row) -> Result<Row, SqlError> {
    let bad = |e: tokio_postgres::Error| SqlError::permanent(format!("reading a row: {e}"));
    (0..row.len())
        .map(|i| {
            let ty = row.columns()[i].type_().clone();
            Ok(match ty {
                Type::TEXT | Type::VARCHAR => row
                    .try_get::<_, Option<String>>(i)
                    .map_err(bad)?
                    .map_or(SqlValue::Null, SqlValue::Text),
                Type::INT8 => row
                    .try_get::<_, Option<i64>>(i)
                    .map_err(bad)?
                    .map_or(SqlValue::Null, SqlValue::Int),
                Type::FLOAT8 => row
                    .try_get::<_, Option<f64>>(i)
                    .map_err(bad)?
                    .map_or(SqlValue::Null, SqlValue::Float),
                Type::BOOL => row
                    .try_get::<_, Option<bool>>(i)
                    .map_err(bad)?
                    .map_or(SqlValue::Null, SqlValue::Bool),
                other => {
                    return Err(SqlError::permanent(format!(
                        "column {} is of type {other}: cast it to text, int8, float8 or bool",
                        row.columns()[i].name()
                    )))
                }
            })
        })
        .collect()
}

async fn run<C: GenericClient>(
    client: &C,
    statement: &Statement,
) -> Result<Vec<tokio_postgres::Row>, tokio_postgres::Error> {
    let params = typed(&statement.params);
    let refs: Vec<(&(dyn ToSql + Sync), Type)> = params
        .iter()
        .map(|(v, t)| (v.as_ref() as &(dyn ToSql + Sync), t.clone()))
        .collect();
    client.query_typed(&statement.sql, &refs).await
}

#[async_trait]
impl Sql for DirectSql {
    async fn query(&self, statement: &Statement) -> Result<Vec<Row>, SqlError> {
        let mut slot = self.client.lock().await;
        let client = self.connected(&mut slot).await?;
        let limit = if statement.maintenance {
            MAINTENANCE_TIMEOUT.max(self.timeout)
        } else {
            self.timeout
        };
        match tokio::time::timeout(limit, run(client, statement)).await {
            Err(_) => {
                // The statement may still run: this connection's state is unknown.
                *slot = None;
                Err(self.timed_out())
            }
            Ok(Err(e)) => Err(self.error(&e)),
            Ok(Ok(rows)) => rows.iter().map(fields).collect(),
        }
    }

    async fn transaction(&self, statements: &[Statement]) -> Result<(), SqlError> {
        let mut slot = self.client.lock().await;
        let client = self.connected(&mut slot).await?;
        let work = async {
            let tx = client.transaction().await?;
            for statement in statements {
                run(&tx, statement).await?;
            }
            tx.commit().await
        };
        match tokio::time::timeout(self.timeout, work).await {
            Err(_) => {
                *slot = None; // dropping the connection rolls the transaction back
                Err(self.timed_out())
            }
            Ok(Err(e)) => Err(self.error(&e)),
            Ok(Ok(())) => Ok(()),
        }
    }

    fn name(&self) -> &str {
        &self.name
    }
}
