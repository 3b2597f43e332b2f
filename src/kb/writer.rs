//! Where ingest and sync write, opened from one location (`ingest --out`, `kb sync`'s DEST) as
//! [`open_store`](super::open_store) opens the store a run reads: the caller names a place and
//! gets a writer; it never parses a store's location itself.
use super::bundle::s3::{self, BundleStore};
use super::mirror::Mirror;
use super::postgres::{connect, PgMirror, SqlLocation, WRITE_TIMEOUT};
use crate::aws::S3Location;
use crate::search::RetrievalError;
use std::path::PathBuf;

/// A place to write knowledge to, opened.
pub(crate) enum Writer {
    /// A bundle folder (`ingest --out DIR`), written by [`BundleFolder`](super::BundleFolder).
    Folder(PathBuf),
    /// Bundles published on S3 (`s3://BUCKET/PREFIX`), behind their pointer.
    Bundles(BundleStore),
    /// A store kept as a mirror of the source: PostgreSQL (`postgres://...`, `rds-data://...`).
    Store(Box<dyn Mirror>),
}

/// A place to write knowledge to, read from its text and not yet opened (nothing contacted,
/// no AWS configuration loaded), so a caller can refuse a kind it does not write first.
pub(crate) enum WriteLocation {
    /// A bundle folder.
    Folder(PathBuf),
    /// Bundles published on S3.
    Bundles(S3Location),
    /// A database kept as a mirror of the source.
    Store(StoreLocation),
}

/// Where a mirrored store is (its password, if any, never shown).
pub(crate) struct StoreLocation(SqlLocation);

/// Why a location names no place to write.
#[derive(Debug, thiserror::Error)]
pub(crate) enum WriterError {
    /// The location names a store but is malformed.
    #[error("{0}")]
    Location(String),
    /// The location has a scheme no writer knows.
    #[error("`{scheme}://` locations are not known here")]
    Scheme {
        /// The scheme, without `://`.
        scheme: String,
    },
}

impl WriteLocation {
    /// `postgres://` or `rds-data://` a PostgreSQL store, `s3://` published bundles, any other
    /// text without a scheme a bundle folder.
    pub(crate) fn parse(location: &str) -> Result<Self, WriterError> {
        if let Some(parsed) = SqlLocation::parse(location) {
            let at = parsed.map_err(WriterError::Location)?;
            return Ok(Self::Store(StoreLocation(at)));
        }
        if location.starts_with("s3://") {
            return location
                .parse()
                .map(Self::Bundles)
                .map_err(WriterError::Location);
        }
        match scheme_of(location) {
            Some(scheme) => Err(WriterError::Scheme {
                scheme: scheme.to_owned(),
            }),
            None => Ok(Self::Folder(PathBuf::from(location))),
        }
    }
}

impl StoreLocation {
    /// The store, opened for writing (the direct path reads its secret now). `aws` is used for
    /// the Data API and secrets (loaded from the environment when `None` and needed).
    pub(crate) async fn open(
        self,
        aws: Option<&aws_config::SdkConfig>,
    ) -> Result<Box<dyn Mirror>, RetrievalError> {
        let sql = connect(&self.0, aws, WRITE_TIMEOUT).await?;
        Ok(Box::new(PgMirror::new(sql, self.0)))
    }
}

/// The writer of `location`; `aws` is used for S3, the Data API and secrets (loaded from the
/// environment when `None` and needed).
pub(crate) async fn open_writer(
    location: WriteLocation,
    aws: Option<&aws_config::SdkConfig>,
) -> Result<Writer, RetrievalError> {
    Ok(match location {
        WriteLocation::Folder(path) => Writer::Folder(path),
        WriteLocation::Bundles(at) => {
            let client = match aws {
                Some(sdk) => s3::client(sdk),
                None => s3::client(&crate::tls::aws_sdk_config().await),
            };
            Writer::Bundles(BundleStore::new(client, at))
        }
        WriteLocation::Store(at) => Writer::Store(at.open(aws).await?),
    })
}

/// The scheme of a `SCHEME://...` location (letters, digits, `+ - .`), or `None` for a path.
fn scheme_of(location: &str) -> Option<&str> {
    let (scheme, _) = location.split_once("://")?;
    let valid = !scheme.is_empty()
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c));
    valid.then_some(scheme)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_location_names_its_place_without_opening_it() {
        assert!(matches!(
            WriteLocation::parse("out/kb"),
            Ok(WriteLocation::Folder(p)) if p == std::path::Path::new("out/kb")
        ));
        assert!(matches!(
            WriteLocation::parse("s3://bucket/kb"),
            Ok(WriteLocation::Bundles(at)) if at.to_string() == "s3://bucket/kb"
        ));
        assert!(matches!(
            WriteLocation::parse("postgres://user@db:5432/kb"),
            Ok(WriteLocation::Store(_))
        ));
        assert!(matches!(
            WriteLocation::parse("ftp://host/kb"),
            Err(WriterError::Scheme { scheme }) if scheme == "ftp"
        ));
        assert!(matches!(
            WriteLocation::parse("rds-data://not-an-arn"),
            Err(WriterError::Location(_))
        ));
        assert!(matches!(
            WriteLocation::parse("s3://"),
            Err(WriterError::Location(_))
        ));
        // A path with a colon is a folder, not a scheme.
        assert!(matches!(
            WriteLocation::parse("C:/kb"),
            Ok(WriteLocation::Folder(_))
        ));
    }
}
