//! Tenant pinning (`KB_TENANT_KEY`): a caller only ever sees knowledge-base documents whose
//! metadata value under that key equals its caller id (the JWT `sub`, or the IAM principal).
//!
//! The pin is added on the server to whatever filter the request sent, as one more `and`
//! condition, so no request field can widen it. An anonymous caller has no id: with a tenant
//! key set it sees no knowledge-base documents at all.
use super::Caller;
use crate::search::Filter;
use serde_json::Value;

/// The caller's id as documents name it; `None` for an anonymous caller.
fn tenant_of(caller: &Caller) -> Option<&str> {
    match caller {
        Caller::Anonymous => None,
        Caller::Jwt(id) | Caller::Iam(id) => Some(id),
    }
}

/// `requested` with the tenant pin of `caller` under `key` added (unchanged without a key).
pub(crate) fn pinned(
    requested: Option<Filter>,
    key: Option<&str>,
    caller: &Caller,
) -> Option<Filter> {
    let Some(key) = key else {
        return requested;
    };
    let pin = match tenant_of(caller) {
        Some(id) => Filter::equals(key, id),
        // Metadata never holds null (sidecars and records drop it): this matches nothing.
        None => Filter::Equals {
            key: key.to_owned(),
            value: Value::Null,
        },
    };
    Some(match requested {
        Some(filter) => filter.and(pin),
        None => pin,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pin_is_added_to_any_request_filter() {
        let alice = Caller::Jwt("alice".into());
        assert_eq!(pinned(None, None, &alice), None);
        assert_eq!(
            pinned(None, Some("tenant"), &alice),
            Some(Filter::equals("tenant", "alice"))
        );
        let asked = Filter::equals("tenant", "bob");
        let both = pinned(Some(asked.clone()), Some("tenant"), &alice).unwrap();
        assert_eq!(
            both,
            Filter::And(vec![asked, Filter::equals("tenant", "alice")])
        );
        let anonymous = pinned(None, Some("tenant"), &Caller::Anonymous).unwrap();
        assert!(matches!(
            anonymous,
            Filter::Equals {
                value: Value::Null,
                ..
            }
        ));
    }
}
