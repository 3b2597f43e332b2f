//! What a source document is named: the name of a folder without its version or manual
//! section, and names compared by their letters and digits alone. Ingest titles a `README`
//! by its folder's name; the workflow tells the document a model names in code.

/// Lowercase letters and digits only: `arc-swap`, `arc_swap` and `ArcSwap` compare equal.
pub(crate) fn squashed(text: &str) -> String {
    text.chars()
        .filter(|c| c.is_alphanumeric())
        .flat_map(char::to_lowercase)
        .collect()
}

/// A folder's name without a version (`serde-1.0.2`, `toml_edit-0.25.18+spec-1.1.0`) or a
/// manual section (`date.1`, `mkfs.ext4.8`): it ends before the first `-` or `.` followed by
/// a digit.
pub(crate) fn unversioned(folder: &str) -> &str {
    let bytes = folder.as_bytes();
    // From the second byte on: a name is never empty.
    let end = (2..bytes.len())
        .find(|&i| matches!(bytes[i - 1], b'-' | b'.') && bytes[i].is_ascii_digit())
        .map_or(folder.len(), |i| i - 1);
    &folder[..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_compare_by_letters_and_digits_and_folders_lose_their_version() {
        assert_eq!(squashed("ArcSwap"), squashed("arc-swap"));
        assert_eq!(squashed("arc_swap"), "arcswap");
        assert_eq!(unversioned("serde-1.0.2"), "serde");
        assert_eq!(unversioned("toml_edit-0.25.18+spec-1.1.0"), "toml_edit");
        assert_eq!(unversioned("date.1"), "date");
        assert_eq!(unversioned("mkfs.ext4.8"), "mkfs.ext4");
        assert_eq!(unversioned("adler2-2.0.1"), "adler2");
        assert_eq!(unversioned("notes"), "notes");
        assert_eq!(unversioned("-1"), "-1");
    }
}
