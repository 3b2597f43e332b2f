//! Every item of a query, page after page: the one paging loop of the DynamoDB store (the
//! SDK's paginator), used wherever a whole partition range is read.

use aws_sdk_dynamodb::config::http::HttpResponse;
use aws_sdk_dynamodb::error::SdkError;
use aws_sdk_dynamodb::operation::query::builders::QueryFluentBuilder;
use aws_sdk_dynamodb::operation::query::QueryError;
use aws_sdk_dynamodb::types::AttributeValue;
use std::collections::HashMap;

/// Every item `query` matches, in its order.
pub(super) async fn query_all(
    query: QueryFluentBuilder,
) -> Result<Vec<HashMap<String, AttributeValue>>, SdkError<QueryError, HttpResponse>> {
    let mut items = query.into_paginator().items().send();
    let mut out = Vec::new();
    while let Some(item) = items.try_next().await? {
        out.push(item);
    }
    Ok(out)
}
