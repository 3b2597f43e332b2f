//! `KB_URI`: which knowledge store the workflow searches, chosen by the location's scheme.
//!
//! - `s3://BUCKET/PREFIX`: a bundle published to S3 (refreshed, searched in memory);
//! - `bedrock-kb://KNOWLEDGE_BASE_ID[?search=hybrid|semantic]`: an Amazon Bedrock knowledge base,
//!   searched through its `Retrieve` API (`search` overrides the store's search type; without
//!   it, Bedrock chooses).
//!
//! - `postgres://...` and `rds-data://...`: a PostgreSQL database with pgvector, directly or
//!   through the RDS Data API (see [`super::sql_location`]).
//!
//! Any other scheme is refused with the schemes accepted, never taken for something else.

use super::sql_location::{PgLocation, RdsDataLocation};
use crate::aws::S3Location;
use std::fmt;
use std::str::FromStr;

/// The schemes `KB_URI` accepts, for messages.
pub(crate) const ACCEPTED: &str = "s3://BUCKET/PREFIX (a published bundle), \
    postgres://USER@HOST:PORT/DATABASE, rds-data://CLUSTER_ARN/DATABASE?secret=SECRET_ARN or \
    bedrock-kb://KNOWLEDGE_BASE_ID[?search=hybrid|semantic]";

/// A knowledge store's location.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KbLocation {
    /// A bundle published to S3.
    S3(S3Location),
    /// An Amazon Bedrock knowledge base.
    BedrockKb(BedrockKbLocation),
    /// A PostgreSQL database, connected to directly.
    Postgres(PgLocation),
    /// An Aurora PostgreSQL database, through the RDS Data API.
    RdsData(RdsDataLocation),
}

/// An Amazon Bedrock knowledge base and how to search it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BedrockKbLocation {
    /// The knowledge base id (1..=10 of A-Z a-z 0-9).
    pub id: String,
    /// The search type to ask for; `None` lets Bedrock choose.
    pub search: Option<BedrockSearch>,
}

/// The search type of a Bedrock knowledge-base retrieval (`overrideSearchType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BedrockSearch {
    /// Vector and full-text search together (stores that support it).
    Hybrid,
    /// Vector search alone.
    Semantic,
}

impl FromStr for KbLocation {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let s = s.trim();
        let Some((scheme, rest)) = s.split_once("://") else {
            return Err(format!("expected {ACCEPTED}"));
        };
        match scheme {
            "s3" => s.parse().map(KbLocation::S3),
            "bedrock-kb" => bedrock_kb(rest).map(KbLocation::BedrockKb),
            "postgres" | "postgresql" => PgLocation::parse(s).map(KbLocation::Postgres),
            "rds-data" => RdsDataLocation::parse(rest).map(KbLocation::RdsData),
            other => Err(format!(
                "`{other}://` is not a knowledge store this build searches; expected {ACCEPTED}"
            )),
        }
    }
}

fn bedrock_kb(rest: &str) -> Result<BedrockKbLocation, String> {
    let (id, query) = rest.split_once('?').unwrap_or((rest, ""));
    let id = id.trim_end_matches('/');
    if id.is_empty() || id.len() > 10 || !id.bytes().all(|b| b.is_ascii_alphanumeric()) {
        return Err(format!(
            "`{id}` is not a Bedrock knowledge base id (1..=10 of A-Z a-z 0-9)"
        ));
    }
    let mut search = None;
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        search = Some(match pair {
            "search=hybrid" => BedrockSearch::Hybrid,
            "search=semantic" => BedrockSearch::Semantic,
            other => {
                return Err(format!(
                    "`{other}` is not an option of bedrock-kb://; expected search=hybrid or \
                     search=semantic"
                ))
            }
        });
    }
    Ok(BedrockKbLocation {
        id: id.to_owned(),
        search,
    })
}

impl fmt::Display for KbLocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KbLocation::S3(location) => location.fmt(f),
            KbLocation::Postgres(location) => location.fmt(f),
            KbLocation::RdsData(location) => location.fmt(f),
            KbLocation::BedrockKb(kb) => {
                write!(f, "bedrock-kb://{}", kb.id)?;
                match kb.search {
                    Some(BedrockSearch::Hybrid) => f.write_str("?search=hybrid"),
                    Some(BedrockSearch::Semantic) => f.write_str("?search=semantic"),
                    None => Ok(()),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_scheme_parses_to_its_store_and_prints_back() {
        for text in [
            "s3://my-kb/team/docs",
            "bedrock-kb://ABCDE12345",
            "bedrock-kb://KB1?search=hybrid",
            "bedrock-kb://KB1?search=semantic",
        ] {
            let location: KbLocation = text.parse().unwrap();
            assert_eq!(location.to_string(), text);
        }
        assert_eq!(
            "bedrock-kb://KB1?search=hybrid"
                .parse::<KbLocation>()
                .unwrap(),
            KbLocation::BedrockKb(BedrockKbLocation {
                id: "KB1".into(),
                search: Some(BedrockSearch::Hybrid)
            })
        );
    }

    #[test]
    fn other_schemes_and_bad_ids_are_refused_naming_what_is_accepted() {
        for (text, says) in [
            ("mysql://db/kb", "`mysql://` is not a knowledge store"),
            ("./kb", "expected s3://BUCKET/PREFIX"),
            ("bedrock-kb://", "is not a Bedrock knowledge base id"),
            (
                "bedrock-kb://TOO-LONG-ID-X",
                "is not a Bedrock knowledge base id",
            ),
            ("bedrock-kb://KB1?search=fuzzy", "expected search=hybrid"),
            ("s3://A/x", "is not a bucket name"),
        ] {
            let err = text.parse::<KbLocation>().unwrap_err();
            assert!(err.contains(says), "{text}: {err}");
        }
        let err = "mysql://db/kb".parse::<KbLocation>().unwrap_err();
        assert!(err.contains("bedrock-kb://KNOWLEDGE_BASE_ID"), "{err}");
    }
}
