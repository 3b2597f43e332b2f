//! Who asked: the identity a run and an idempotency key belong to.
//!
//! The entry layer extracts it once per request (API Gateway's JWT authorizer or IAM
//! authorization, the same for a function URL); the workflow stores it in the run's state, so a
//! run can only be read by the caller who started it. Unauthenticated requests (a function URL
//! without auth, the local stack) all share [`Caller::Anonymous`].

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// A caller's identity.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "id")]
pub enum Caller {
    /// No identity in the request context: every such request is the same caller.
    #[default]
    Anonymous,
    /// The `sub` claim of a JWT checked by API Gateway's JWT authorizer.
    Jwt(String),
    /// The IAM principal (user or assumed-role ARN) of a SigV4-signed request.
    Iam(String),
}

impl Caller {
    /// True for [`Caller::Anonymous`].
    pub(crate) fn is_anonymous(&self) -> bool {
        matches!(self, Caller::Anonymous)
    }

    /// A stable string naming the caller, unambiguous across kinds (`jwt:SUB`, `iam:ARN`,
    /// `anonymous`). Never shown to other callers; hashed wherever it is part of a store key.
    pub(crate) fn key(&self) -> String {
        match self {
            Caller::Anonymous => "anonymous".to_owned(),
            Caller::Jwt(sub) => format!("jwt:{sub}"),
            Caller::Iam(arn) => format!("iam:{arn}"),
        }
    }

    /// Hex SHA-256 of [`Caller::key`]: fixed length, so it can prefix other strings in a store
    /// key without two callers' keys ever running together.
    pub(crate) fn digest(&self) -> String {
        Sha256::digest(self.key().as_bytes())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    }

    /// The caller's kind, for logs (`anonymous`, `jwt`, `iam`); the identity itself is not
    /// logged.
    pub(crate) fn kind(&self) -> &'static str {
        match self {
            Caller::Anonymous => "anonymous",
            Caller::Jwt(_) => "jwt",
            Caller::Iam(_) => "iam",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_never_mix_kinds() {
        let jwt = Caller::Jwt("iam:x".into());
        let iam = Caller::Iam("x".into());
        assert_eq!(jwt.key(), "jwt:iam:x");
        assert_ne!(jwt.key(), iam.key());
        assert_ne!(jwt.digest(), iam.digest());
        assert_eq!(Caller::Anonymous.digest().len(), 64);
    }

    #[test]
    fn serializes_as_kind_and_id_and_defaults_to_anonymous() {
        let json = serde_json::to_value(Caller::Jwt("u-1".into())).unwrap();
        assert_eq!(json, serde_json::json!({"kind": "jwt", "id": "u-1"}));
        let back: Caller = serde_json::from_value(json).unwrap();
        assert_eq!(back, Caller::Jwt("u-1".into()));
        assert_eq!(
            serde_json::to_value(Caller::Anonymous).unwrap(),
            serde_json::json!({"kind": "anonymous"})
        );
        assert!(Caller::default().is_anonymous());
    }
}
