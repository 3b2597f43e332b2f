//! The caller of an HTTP request, read once from the request context that API Gateway (HTTP
//! API, payload v2) or a function URL puts in the event — never from a header the caller
//! could forge.
//!
//! | request context | caller |
//! |---|---|
//! | `authorizer.jwt.claims.sub` (JWT authorizer) | [`Caller::Jwt`] |
//! | `authorizer.iam.userArn` (IAM auth, API Gateway or function URL), else `userId` | [`Caller::Iam`] |
//! | neither (function URL with auth `NONE`, `cargo lambda watch`, the local stack) | [`Caller::Anonymous`] |

use crate::rag::Caller;
use lambda_http::request::RequestContext;
use lambda_http::{Request, RequestExt};

/// The caller of `request`.
pub(crate) fn of(request: &Request) -> Caller {
    match request.request_context_ref() {
        Some(RequestContext::ApiGatewayV2(context)) => {
            let Some(authorizer) = &context.authorizer else {
                return Caller::Anonymous;
            };
            let sub = authorizer
                .jwt
                .as_ref()
                .and_then(|jwt| jwt.claims.get("sub"))
                .filter(|sub| !sub.is_empty());
            if let Some(sub) = sub {
                return Caller::Jwt(sub.clone());
            }
            let principal = authorizer.iam.as_ref().and_then(|iam| {
                [&iam.user_arn, &iam.user_id]
                    .into_iter()
                    .flatten()
                    .find(|p| !p.is_empty())
            });
            match principal {
                Some(principal) => Caller::Iam(principal.clone()),
                None => Caller::Anonymous,
            }
        }
        _ => Caller::Anonymous,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    fn request_with(authorizer: Option<Value>) -> Request {
        let mut event = json!({
            "version": "2.0",
            "routeKey": "$default",
            "rawPath": "/workflow/runs/x",
            "rawQueryString": "",
            "headers": {},
            "requestContext": {
                "http": {"method": "GET", "path": "/workflow/runs/x", "protocol": "HTTP/1.1",
                         "sourceIp": "127.0.0.1", "userAgent": "test"},
                "requestId": "r", "routeKey": "$default", "stage": "$default",
                "time": "23/Nov/2025:10:57:00 +0000", "timeEpoch": 1763895420123_u64
            },
            "isBase64Encoded": false
        });
        if let Some(authorizer) = authorizer {
            event["requestContext"]["authorizer"] = authorizer;
        }
        lambda_http::request::from_str(&event.to_string()).unwrap()
    }

    #[test]
    fn jwt_sub_then_iam_principal_then_anonymous() {
        let jwt = json!({"jwt": {"claims": {"sub": "user-1", "iss": "x"}, "scopes": null}});
        assert_eq!(of(&request_with(Some(jwt))), Caller::Jwt("user-1".into()));

        let arn = "arn:aws:sts::123456789012:assumed-role/caller/alice";
        let iam = json!({"iam": {"userArn": arn, "userId": "AROA:alice"}});
        assert_eq!(of(&request_with(Some(iam))), Caller::Iam(arn.into()));
        let iam = json!({"iam": {"userArn": "", "userId": "AIDAEXAMPLE"}});
        assert_eq!(
            of(&request_with(Some(iam))),
            Caller::Iam("AIDAEXAMPLE".into())
        );

        assert_eq!(of(&request_with(None)), Caller::Anonymous);
        let empty = json!({"jwt": {"claims": {"sub": ""}}});
        assert_eq!(of(&request_with(Some(empty))), Caller::Anonymous);
        let lambda = json!({"lambda": {"user": "x"}});
        assert_eq!(of(&request_with(Some(lambda))), Caller::Anonymous);
    }
}
