//! The PostgreSQL locations of `KB_URI` and of `ingest --out` / `kb sync`:
//!
//! - `postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE[?sslmode=MODE&sslrootcert=PATH&secret=ID]`
//!   is a direct connection (libpq's URL form, read by tokio-postgres). With `secret=`, the
//!   user name and password come from that Secrets Manager secret (RDS's JSON shape:
//!   `{"username": ..., "password": ...}`), read at start-up. `sslmode` is libpq's ([`PgTls`]);
//!   `sslrootcert` a PEM file of the certificates to trust (RDS's `global-bundle.pem`), or
//!   `system` for the system's, which is also the default.
//! - `rds-data://CLUSTER_ARN/DATABASE?secret=SECRET_ARN` is the RDS Data API (a secret's ARN
//!   holding a `/` is written percent-encoded, `%2F`).
//!
//! Neither location prints its password: [`fmt::Display`] shows the user, host and database.
use percent_encoding::percent_decode_str;
use std::fmt;

/// A PostgreSQL database reached directly.
#[derive(Clone, PartialEq, Eq)]
pub struct PgLocation {
    /// The URL without its `secret`, `sslmode` and `sslrootcert` parameters (what
    /// tokio-postgres parses).
    pub url: String,
    /// The Secrets Manager secret holding the user name and password, if any.
    pub secret: Option<String>,
    /// TLS to the server.
    pub tls: PgTls,
    /// The PEM file of the certificates to trust (`sslrootcert`); the system's when `None`.
    pub root_cert: Option<String>,
    shown: String,
}

/// libpq's `sslmode`: whether the connection is encrypted and what of the server's certificate
/// is checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PgTls {
    /// `disable`: never TLS.
    Disable,
    /// `prefer` (the default): TLS when the server offers it, else plain; the certificate is
    /// not checked.
    #[default]
    Prefer,
    /// `require`: TLS or no connection; the certificate is not checked, unless `sslrootcert`
    /// names a file, which makes it `verify-ca` (as libpq does).
    Require,
    /// `verify-ca`: TLS, and the certificate chains to a trusted one.
    VerifyCa,
    /// `verify-full`: as `verify-ca`, and it names the host connected to.
    VerifyFull,
}

impl PgTls {
    fn parse(value: &str) -> Result<Self, String> {
        Ok(match value {
            "disable" => PgTls::Disable,
            "prefer" => PgTls::Prefer,
            "require" => PgTls::Require,
            "verify-ca" => PgTls::VerifyCa,
            "verify-full" => PgTls::VerifyFull,
            other => {
                return Err(format!(
                    "sslmode={other}: expected disable, prefer, require, verify-ca or verify-full"
                ))
            }
        })
    }
}

/// A database of an Aurora cluster reached through the RDS Data API.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RdsDataLocation {
    /// The cluster's ARN (`arn:aws:rds:REGION:ACCOUNT:cluster:NAME`).
    pub cluster_arn: String,
    /// The database name.
    pub database: String,
    /// The ARN of the secret the Data API signs in with.
    pub secret_arn: String,
}

impl PgLocation {
    /// Reads `postgres://...` (or `postgresql://...`), checked as tokio-postgres reads it.
    pub(crate) fn parse(text: &str) -> Result<Self, String> {
        let (base, query) = text.split_once('?').unwrap_or((text, ""));
        let mut kept = Vec::new();
        let mut secret = None;
        let mut tls = PgTls::default();
        let mut root_cert = None;
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            match pair.split_once('=') {
                Some(("secret", value)) if !value.is_empty() => {
                    secret = Some(decode(value)?);
                }
                Some(("secret", _)) => return Err("`secret=` needs a secret id or ARN".into()),
                Some(("sslmode", value)) => tls = PgTls::parse(value)?,
                Some(("sslrootcert", "system")) => root_cert = None,
                Some(("sslrootcert", value)) if !value.is_empty() => {
                    root_cert = Some(decode(value)?);
                }
                Some(("sslrootcert", _)) => {
                    return Err("`sslrootcert=` needs a PEM file's path, or `system`".into())
                }
                _ => kept.push(pair),
            }
        }
        if tls == PgTls::Require && root_cert.is_some() {
            tls = PgTls::VerifyCa;
        }
        let url = if kept.is_empty() {
            base.to_owned()
        } else {
            format!("{base}?{}", kept.join("&"))
        };
        let config: tokio_postgres::Config = url.parse().map_err(|e| {
            format!("not a PostgreSQL URL ({e}): expected postgres://USER@HOST:PORT/DATABASE")
        })?;
        let Some(database) = config.get_dbname() else {
            return Err(
                "the PostgreSQL URL names no database: postgres://USER@HOST:PORT/DATABASE".into(),
            );
        };
        if config.get_hosts().is_empty() {
            return Err("the PostgreSQL URL names no host".into());
        }
        let host = match &config.get_hosts()[0] {
            tokio_postgres::config::Host::Tcp(h) => h.clone(),
            tokio_postgres::config::Host::Unix(p) => p.display().to_string(),
        };
        let port = config.get_ports().first().copied().unwrap_or(5432);
        let user = config.get_user().unwrap_or("");
        let shown = format!("postgres://{user}@{host}:{port}/{database}");
        Ok(Self {
            url,
            secret,
            tls,
            root_cert,
            shown,
        })
    }
}

impl fmt::Display for PgLocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.shown)
    }
}

impl fmt::Debug for PgLocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PgLocation")
            .field("at", &self.shown)
            .field("secret", &self.secret)
            .finish_non_exhaustive()
    }
}

impl RdsDataLocation {
    /// Reads what follows `rds-data://`.
    pub(crate) fn parse(rest: &str) -> Result<Self, String> {
        let usage = "expected rds-data://CLUSTER_ARN/DATABASE?secret=SECRET_ARN";
        let (path, query) = rest.split_once('?').unwrap_or((rest, ""));
        let Some((cluster_arn, database)) = path.rsplit_once('/') else {
            return Err(format!("no database named: {usage}"));
        };
        if !cluster_arn.starts_with("arn:") || !cluster_arn.contains(":cluster:") {
            return Err(format!(
                "`{cluster_arn}` is not an Aurora cluster ARN: {usage}"
            ));
        }
        if database.is_empty()
            || !database
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
        {
            return Err(format!("`{database}` is not a database name: {usage}"));
        }
        let mut secret_arn = None;
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            match pair.split_once('=') {
                Some(("secret", value)) if value.starts_with("arn:") => {
                    secret_arn = Some(decode(value)?)
                }
                _ => return Err(format!("`{pair}` is not an option of rds-data://: {usage}")),
            }
        }
        let secret_arn = secret_arn.ok_or_else(|| format!("no secret: {usage}"))?;
        Ok(Self {
            cluster_arn: cluster_arn.to_owned(),
            database: database.to_owned(),
            secret_arn,
        })
    }
}

impl fmt::Display for RdsDataLocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let secret = percent_encoding::utf8_percent_encode(&self.secret_arn, SECRET);
        write!(
            f,
            "rds-data://{}/{}?secret={secret}",
            self.cluster_arn, self.database
        )
    }
}

/// What a secret ARN percent-encodes in a location (`/`, `?`, `&`, `%`, `=`).
const SECRET: &percent_encoding::AsciiSet = &percent_encoding::CONTROLS
    .add(b'/')
    .add(b'?')
    .add(b'&')
    .add(b'%')
    .add(b'=')
    .add(b' ');

fn decode(value: &str) -> Result<String, String> {
    percent_decode_str(value)
        .decode_utf8()
        .map(|s| s.into_owned())
        .map_err(|_| "the secret is not UTF-8 once decoded".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_postgres_url_keeps_its_password_out_of_messages() {
        let at = PgLocation::parse("postgres://kb:s3cret@db.internal:6432/knowledge").unwrap();
        assert_eq!(at.to_string(), "postgres://kb@db.internal:6432/knowledge");
        assert!(!format!("{at:?}").contains("s3cret"));
        assert_eq!(at.secret, None);
        let at = PgLocation::parse("postgres://kb@db/knowledge?secret=prod%2Fkb&sslmode=disable")
            .unwrap();
        assert_eq!(at.secret.as_deref(), Some("prod/kb"));
        assert_eq!(at.url, "postgres://kb@db/knowledge");
        assert_eq!(at.tls, PgTls::Disable);
    }

    #[test]
    fn sslmode_and_sslrootcert_are_libpqs() {
        let at = |q: &str| PgLocation::parse(&format!("postgres://kb@db/k{q}")).unwrap();
        assert_eq!(at("").tls, PgTls::Prefer);
        assert_eq!(at("?sslmode=require").tls, PgTls::Require);
        let full = at("?sslmode=verify-full&sslrootcert=%2Fopt%2Frds.pem");
        assert_eq!(
            (full.tls, full.root_cert.as_deref()),
            (PgTls::VerifyFull, Some("/opt/rds.pem"))
        );
        assert_eq!(full.url, "postgres://kb@db/k");
        // A root file makes `require` check the chain, as libpq does; `system` is the default.
        assert_eq!(
            at("?sslmode=require&sslrootcert=ca.pem").tls,
            PgTls::VerifyCa
        );
        assert_eq!(at("?sslmode=verify-ca&sslrootcert=system").root_cert, None);
    }

    #[test]
    fn bad_postgres_urls_are_refused() {
        for (text, says) in [
            ("postgres://kb@db", "names no database"),
            (
                "postgres://kb@db/k?sslmode=allow-maybe",
                "expected disable, prefer",
            ),
            ("postgres://kb@db/k?sslrootcert=", "needs a PEM file"),
            ("postgres://kb@db/k?secret=", "needs a secret"),
            ("postgres://kb@db/k?nonsense=1", "not a PostgreSQL URL"),
        ] {
            let err = PgLocation::parse(text).unwrap_err();
            assert!(err.contains(says), "{text}: {err}");
        }
    }

    #[test]
    fn a_data_api_location_names_cluster_database_and_secret() {
        let text = "arn:aws:rds:us-east-1:123456789012:cluster:kb/bounded_rag?secret=arn:aws:secretsmanager:us-east-1:123456789012:secret:rds%2Fkb-AbCdEf";
        let at = RdsDataLocation::parse(text).unwrap();
        assert_eq!(
            at.cluster_arn,
            "arn:aws:rds:us-east-1:123456789012:cluster:kb"
        );
        assert_eq!(at.database, "bounded_rag");
        assert_eq!(
            at.secret_arn,
            "arn:aws:secretsmanager:us-east-1:123456789012:secret:rds/kb-AbCdEf"
        );
        assert_eq!(at.to_string(), format!("rds-data://{text}"));
        for (bad, says) in [
            ("arn:aws:rds:r:1:cluster:kb/db", "no secret"),
            (
                "arn:aws:rds:r:1:db:kb/db?secret=arn:x",
                "not an Aurora cluster ARN",
            ),
            (
                "arn:aws:rds:r:1:cluster:kb/d;b?secret=arn:x",
                "not a database name",
            ),
            ("arn:aws:rds:r:1:cluster:kb", "no database named"),
            ("arn:aws:rds:r:1:cluster:kb/db?secret=nope", "not an option"),
        ] {
            let err = RdsDataLocation::parse(bad).unwrap_err();
            assert!(err.contains(says), "{bad}: {err}");
        }
    }
}
