//! How a labelled set's expected source is matched against a cited or retrieved URL, and how a
//! cited URL is written back as a labelled source (`runs export`).

/// Whether `url` is the expected source `expected`. A labelled source in a release's folder
/// (`moto-5.2.5/README.md`, as the corpora name packages and crates) also matches the same file
/// of another release of it (`kb://moto-5.2.6/README.md#1`): a set labelled once still scores
/// after the packages it was labelled on were upgraded.
pub fn source_matches(expected: &str, url: &str) -> bool {
    let path = url.strip_prefix("kb://").unwrap_or(url);
    let document = path.split('#').next().unwrap_or(path);
    url == expected
        || path == expected
        || document == expected
        || (!expected.contains('#')
            && release_file(expected).is_some_and(|e| release_file(document) == Some(e)))
}

/// A path in a release's folder without the version: `moto-5.2.5/README.md` →
/// (`moto`, `README.md`), `python-dateutil-2.9.0.post0/README.txt` → (`python-dateutil`,
/// `README.txt`). None when the first folder ends in no `-VERSION` (a version starts with a digit).
fn release_file(path: &str) -> Option<(&str, &str)> {
    let (folder, file) = path.split_once('/')?;
    let cut = folder
        .char_indices()
        .find(|&(i, c)| {
            c == '-' && i > 0 && folder[i + 1..].starts_with(|d: char| d.is_ascii_digit())
        })?
        .0;
    Some((&folder[..cut], file))
}

/// The expected source a cited `url` stands for, as labelled sets write it: a knowledge-base
/// document's path without `kb://` and fragment (`kb://patch-canker.md#2` → `patch-canker.md`,
/// which [`source_matches`] every passage of), any other URL whole.
pub(crate) fn expected_source(url: &str) -> &str {
    match url.strip_prefix("kb://") {
        Some(path) => path.split('#').next().unwrap_or(path),
        None => url,
    }
}
