//! File names of the file store: every key becomes a stem that is safe on every common file
//! system and cannot escape the store's folder.

use sha2::{Digest, Sha256};
use std::fmt::Write as _;

/// Longest readable stem; longer keys are hashed so names stay under the usual 255-byte limit.
const MAX_READABLE_STEM: usize = 200;

/// Encodes a key into a file-name stem that is safe on every common file system.
///
/// `a-z`, `0-9`, `-` and `_` are kept; every other byte (including `.`, `/`, `\` and
/// upper-case letters, so case-insensitive file systems cannot merge two keys) becomes `%XX`.
/// So `run#1b4e…` is stored as `run%231b4e….json` and no key can escape the folder.
/// Keys whose stem would exceed 200 bytes become a readable prefix, `~` and the SHA-256 of
/// the key (`~` never occurs in a readable stem, so the two forms cannot collide).
pub(super) fn file_stem(key: &str) -> String {
    let mut stem = String::with_capacity(key.len());
    for &byte in key.as_bytes() {
        if byte.is_ascii_lowercase() || byte.is_ascii_digit() || byte == b'-' || byte == b'_' {
            stem.push(char::from(byte));
        } else {
            let _ = write!(stem, "%{byte:02X}");
        }
    }
    if stem.len() > MAX_READABLE_STEM {
        stem.truncate(64);
        stem.push('~');
        for byte in Sha256::digest(key.as_bytes()) {
            let _ = write!(stem, "{byte:02x}");
        }
    }
    stem
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stems_are_readable_and_cannot_escape_the_folder() {
        assert_eq!(file_stem("run#0f-ab_9"), "run%230f-ab_9");
        assert_eq!(file_stem("idem#../../etc"), "idem%23%2E%2E%2F%2E%2E%2Fetc");
        assert_eq!(file_stem("idem#a\\b\0"), "idem%23a%5Cb%00");
        assert_eq!(file_stem("é"), "%C3%A9");
        // Case-insensitive file systems must not merge keys that differ only in case.
        assert_ne!(
            file_stem("idem#Ab").to_lowercase(),
            file_stem("idem#aB").to_lowercase()
        );
    }

    #[test]
    fn long_keys_are_hashed_and_stay_distinct() {
        let a = format!("idem#{}", "x".repeat(500));
        let b = format!("idem#{}y", "x".repeat(499));
        let (sa, sb) = (file_stem(&a), file_stem(&b));
        assert_ne!(sa, sb);
        assert!(sa.len() <= 64 + 1 + 64 && sa.contains('~'), "{sa}");
        assert!(sa.starts_with("idem%23xxx"));
        let edge = "a".repeat(MAX_READABLE_STEM);
        assert_eq!(file_stem(&edge), edge);
    }
}
