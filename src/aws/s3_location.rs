//! `s3://BUCKET/PREFIX` locations (`KB_URI`, the CLI's `kb` commands): a bucket and a key prefix,
//! parsed and checked once.
use std::fmt;
use std::str::FromStr;

/// A bucket and a key prefix (no leading or trailing `/`; may be empty).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct S3Location {
    /// Bucket name.
    pub bucket: String,
    /// Key prefix, without slashes at either end.
    pub prefix: String,
}

impl S3Location {
    /// The key of `rel` under the prefix.
    pub(crate) fn key(&self, rel: &str) -> String {
        if self.prefix.is_empty() {
            rel.to_owned()
        } else {
            format!("{}/{rel}", self.prefix)
        }
    }

    /// `s3://bucket/key`.
    pub(crate) fn url(&self, key: &str) -> String {
        format!("s3://{}/{key}", self.bucket)
    }
}

impl FromStr for S3Location {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let rest = s
            .trim()
            .strip_prefix("s3://")
            .ok_or_else(|| "expected s3://BUCKET/PREFIX".to_owned())?;
        let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
        let bucket_ok = (3..=63).contains(&bucket.len())
            && bucket
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.');
        if !bucket_ok {
            return Err(format!(
                "`{bucket}` is not a bucket name (3..=63 of a-z 0-9 - .)"
            ));
        }
        let prefix = prefix.trim_matches('/');
        if prefix.split('/').any(|p| p == "." || p == "..") || prefix.contains("//") {
            return Err(format!("`{prefix}` is not a usable key prefix"));
        }
        Ok(Self {
            bucket: bucket.to_owned(),
            prefix: prefix.to_owned(),
        })
    }
}

impl fmt::Display for S3Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.prefix.is_empty() {
            write!(f, "s3://{}", self.bucket)
        } else {
            write!(f, "s3://{}/{}", self.bucket, self.prefix)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locations_parse_and_build_keys() {
        let loc: S3Location = "s3://my-kb/team/durian/".parse().unwrap();
        assert_eq!(
            (loc.bucket.as_str(), loc.prefix.as_str()),
            ("my-kb", "team/durian")
        );
        assert_eq!(loc.key("current.json"), "team/durian/current.json");
        assert_eq!(loc.to_string(), "s3://my-kb/team/durian");
        let bare: S3Location = "s3://my-kb".parse().unwrap();
        assert_eq!(bare.key("current.json"), "current.json");
        assert_eq!(bare.url("k"), "s3://my-kb/k");
        for bad in [
            "my-kb/x",
            "s3://",
            "s3://UPPER/x",
            "s3://ab",
            "s3://kb-1/a/../b",
        ] {
            assert!(bad.parse::<S3Location>().is_err(), "{bad}");
        }
    }
}
