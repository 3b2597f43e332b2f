//! DynamoDB attribute values: building and reading them, the write condition every versioned
//! item shares, and the encoding of stored bodies (raw, or gzip when it pays).

use std::borrow::Cow;
use std::collections::HashMap;
use std::io::{Read, Write};

use aws_sdk_dynamodb::types::AttributeValue;

use crate::store::Lease;

/// One item's attributes.
pub(super) type Item = HashMap<String, AttributeValue>;

/// Bodies larger than this are gzip-compressed (kept raw if gzip does not make them smaller).
const COMPRESS_ABOVE: usize = 8 * 1024;

/// Condition for writing over version `expected` at `now` (epoch seconds). An expired item is
/// absent for writers exactly as it is for readers.
pub(super) fn condition(expected: u64, now: u64) -> (&'static str, Item) {
    let mut values = Item::from([(":now".to_owned(), n(now))]);
    if expected == 0 {
        ("attribute_not_exists(pk) OR expires_at < :now", values)
    } else {
        values.insert(":expected".to_owned(), n(expected));
        ("version = :expected AND expires_at >= :now", values)
    }
}

/// The `enc` value and the bytes to store: gzip when the body is over [`COMPRESS_ABOVE`] and
/// gzip makes it smaller.
pub(super) fn encode(body: &[u8]) -> (&'static str, Cow<'_, [u8]>) {
    if body.len() <= COMPRESS_ABOVE {
        return ("raw", Cow::Borrowed(body));
    }
    let mut gz = flate2::write::GzEncoder::new(
        Vec::with_capacity(body.len() / 4),
        flate2::Compression::default(),
    );
    match gz.write_all(body).and_then(|()| gz.finish()) {
        Ok(zipped) if zipped.len() < body.len() => ("gzip", Cow::Owned(zipped)),
        _ => ("raw", Cow::Borrowed(body)),
    }
}

/// The body from stored bytes; `None` for an unknown `enc`.
pub(super) fn decode(enc: &str, stored: Vec<u8>) -> Option<std::io::Result<Vec<u8>>> {
    match enc {
        "raw" => Some(Ok(stored)),
        "gzip" => {
            let mut body = Vec::with_capacity(stored.len() * 4);
            let read = flate2::read::GzDecoder::new(stored.as_slice()).read_to_end(&mut body);
            Some(read.map(|_| body))
        }
        _ => None,
    }
}

/// The lease a head item carries, if any.
pub(super) fn lease_of(item: &Item) -> Option<Lease> {
    let owner = item.get("lease_owner")?.as_s().ok()?.clone();
    Some(Lease {
        owner,
        expires_at_ms: num(item, "lease_expires_at")?,
    })
}

/// A string attribute.
pub(super) fn s(value: &str) -> AttributeValue {
    AttributeValue::S(value.to_owned())
}

/// A number attribute.
pub(super) fn n(value: u64) -> AttributeValue {
    AttributeValue::N(value.to_string())
}

/// A number attribute read back.
pub(super) fn num(item: &Item, name: &str) -> Option<u64> {
    item.get(name)?.as_n().ok()?.parse().ok()
}

/// Takes a binary attribute out of `item`.
pub(super) fn take_blob(item: &mut Item, name: &str) -> Option<Vec<u8>> {
    match item.remove(name)? {
        AttributeValue::B(blob) => Some(blob.into_inner()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gzip_only_when_large_and_smaller() {
        assert_eq!(encode(b"{}"), ("raw", Cow::Borrowed(&b"{}"[..])));
        let text = b"checkpoint ".repeat(2_000);
        let (enc, stored) = encode(&text);
        assert!(enc == "gzip" && stored.len() < text.len() / 10);
        assert_eq!(decode(enc, stored.into_owned()).unwrap().unwrap(), text);
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        let noise: Vec<u8> = (0..20_000)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x >> 32) as u8
            })
            .collect();
        assert_eq!(encode(&noise).0, "raw");
        assert!(decode("zstd", Vec::new()).is_none());
    }
}
