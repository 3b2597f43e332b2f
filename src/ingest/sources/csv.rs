//! CSV and TSV tables, read with the `csv` crate: each row reads `column: value; ...` using
//! the header row, and rows are grouped into passages of up to [`MAX_WORDS`] words, never
//! cutting a row in half.
use super::passages::{Passage, MAX_WORDS};
use crate::knowledge::SkipReason;

/// Each data row of a table as `column: value; ...` (empty values left out; a row with no
/// value at all is dropped). A row with another field count than the header is an error.
pub(crate) fn rows(text: &str, delimiter: u8) -> Result<Vec<String>, SkipReason> {
    let mut reader = ::csv::ReaderBuilder::new()
        .delimiter(delimiter)
        .flexible(false)
        .from_reader(text.as_bytes());
    let header: Vec<String> = reader
        .headers()
        .map_err(skip)?
        .iter()
        .map(|h| h.trim().to_owned())
        .collect();
    let mut rows = Vec::new();
    for record in reader.records() {
        let record = record.map_err(skip)?;
        let cells: Vec<String> = record
            .iter()
            .zip(&header)
            .map(|(value, name)| (name, one_line(value)))
            .filter(|(_, value)| !value.is_empty())
            .map(|(name, value)| match name.is_empty() {
                true => value,
                false => format!("{name}: {value}"),
            })
            .collect();
        if !cells.is_empty() {
            rows.push(cells.join("; "));
        }
    }
    Ok(rows)
}

fn one_line(value: &str) -> String {
    value.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn skip(e: ::csv::Error) -> SkipReason {
    match e.kind() {
        ::csv::ErrorKind::UnequalLengths {
            pos,
            expected_len,
            len,
        } => SkipReason::RaggedRows {
            line: pos.as_ref().map_or(0, |p| p.line()),
            expected: *expected_len,
            found: *len,
        },
        _ => SkipReason::Corrupt {
            detail: e.to_string(),
        },
    }
}

/// Rows grouped into passages of up to [`MAX_WORDS`] words (a longer row is a passage of its
/// own), each titled `title`.
pub(crate) fn passages(rows: &[String], title: &str) -> Vec<Passage> {
    let mut out = Vec::new();
    let mut text = String::new();
    let mut words = 0;
    for row in rows {
        let n = row.split_whitespace().count();
        if words > 0 && words + n > MAX_WORDS {
            out.push(Passage {
                title: title.to_owned(),
                text: std::mem::take(&mut text),
            });
            words = 0;
        }
        if !text.is_empty() {
            text.push('\n');
        }
        text.push_str(row);
        words += n;
    }
    if !text.is_empty() {
        out.push(Passage {
            title: title.to_owned(),
            text,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_read_column_value_pairs() {
        let csv = "pest,part,control\nborer,\"stem,\nbark\",\ncanker,trunk,copper\n,,\n";
        assert_eq!(
            rows(csv, b',').unwrap(),
            [
                "pest: borer; part: stem, bark",
                "pest: canker; part: trunk; control: copper"
            ]
        );
        assert_eq!(rows("a\tb\n1\t2\n", b'\t').unwrap(), ["a: 1; b: 2"]);
    }

    #[test]
    fn ragged_rows_are_a_typed_skip() {
        assert_eq!(
            rows("a,b\n1,2\n3,4,5\n", b','),
            Err(SkipReason::RaggedRows {
                line: 3,
                expected: 2,
                found: 3
            })
        );
    }

    #[test]
    fn rows_are_grouped_without_being_cut() {
        let row = vec!["word"; 100].join(" ");
        let rows = vec![row.clone(), row.clone(), row.clone()];
        let parts = passages(&rows, "T");
        assert_eq!(parts.len(), 2);
        assert_eq!(parts[0].text, format!("{row}\n{row}"));
        assert_eq!(parts[1].text, row);
        let long = vec!["w"; 400].join(" ");
        assert_eq!(passages(std::slice::from_ref(&long), "T")[0].text, long);
    }
}
