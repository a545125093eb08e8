//! The comma-separated lists of flags (`--keys`, `--categories`, `--where 'COL in …'`, the
//! columns of `--cols`), read as one CSV record: an item that holds a comma or a quote is
//! written in double quotes, a quote inside doubled (`"Smith, Ann",Lee`, `"say ""hi""",x`).
//!
//! Whitespace around an item, outside its quotes, is trimmed (as a plain item always was);
//! inside quotes every character is kept. A list that does not read as exactly this is refused
//! rather than guessed at: a quote that is never closed, text between a closing quote and the
//! next comma, or a quote inside an unquoted item. Cutting a quoted value at its comma would
//! name keys nobody asked for and filter on a different set of rows, under a charge.
//!
//! Numeric lists (`--q`, `--shares`, `--lower X,Y`) take no quotes: [`refuse_quotes`] says so.

/// One item of a list: its text (unquoted, quotes inside undoubled) and whether it was quoted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Item {
    pub text: String,
    pub quoted: bool,
}

/// The items of a comma-separated list, CSV-quoted where they need it. An empty text is one
/// empty item (callers refuse empty items with their own words).
pub fn items(list: &str) -> Result<Vec<Item>, String> {
    let mut items = vec![];
    let mut rest = list;
    loop {
        let start = rest.trim_start();
        let (item, after) = match start.strip_prefix('"') {
            Some(quoted) => {
                let (text, after) = close(quoted).ok_or_else(|| {
                    format!(
                        "the quote that opens {} is never closed (a quote inside quotes is doubled: \"say \"\"hi\"\"\")",
                        shown(start)
                    )
                })?;
                let after = after.trim_start();
                if !(after.is_empty() || after.starts_with(',')) {
                    return Err(format!(
                        "\"{}\" is followed by {} before the next comma: quote the whole item, \
                         like \"a, b\",c",
                        text.replace('"', "\"\""),
                        shown(after)
                    ));
                }
                (Item { text, quoted: true }, after)
            }
            None => {
                let end = start.find(',').unwrap_or(start.len());
                let text = start[..end].trim();
                if text.contains('"') {
                    return Err(format!(
                        "the item {} holds a quote: write the whole item in double quotes and double \
                         the quote inside, like \"{}\"",
                        shown(text),
                        text.replace('"', "\"\"")
                    ));
                }
                (Item { text: text.to_string(), quoted: false }, &start[end..])
            }
        };
        items.push(item);
        match after.strip_prefix(',') {
            Some(next) => rest = next,
            None => return Ok(items),
        }
    }
}

/// The quoted text after an opening quote, up to its closing quote (doubled quotes undoubled),
/// and what follows that quote; None when the quote is never closed. Also how a `--where`
/// filter reads a quoted column name (`data::filter`).
pub fn close(quoted: &str) -> Option<(String, &str)> {
    let mut text = String::new();
    let mut chars = quoted.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        if c != '"' {
            text.push(c);
        } else if chars.peek().map(|&(_, n)| n) == Some('"') {
            text.push('"');
            chars.next();
        } else {
            return Some((text, &quoted[i + 1..]));
        }
    }
    None
}

/// The items as a list that [`items`] reads back as the same texts: an item is quoted when it
/// holds a comma or a quote or begins or ends with whitespace (which would be trimmed).
pub fn join<S: AsRef<str>>(texts: &[S]) -> String {
    let one = |t: &str| {
        if t.contains([',', '"']) || t.trim() != t || t.is_empty() {
            format!("\"{}\"", t.replace('"', "\"\""))
        } else {
            t.to_string()
        }
    };
    texts.iter().map(|t| one(t.as_ref())).collect::<Vec<_>>().join(",")
}

/// The values of a list matched against trimmed cells (keys, categories, `in` lists): a quoted
/// value may hold commas and quotes, but not whitespace at either end, which no trimmed cell
/// has (it would match no row, silently).
pub fn values(list: &str) -> Result<Vec<String>, String> {
    let items = items(list)?;
    for item in &items {
        if item.quoted && item.text.trim_ascii() != item.text {
            return Err(format!(
                "\"{}\" begins or ends with a space inside its quotes, but cells are compared \
                 with their spaces trimmed, so it would match no row",
                item.text
            ));
        }
    }
    Ok(items.into_iter().map(|i| i.text).collect())
}

/// The parser of one item of a numeric list (`--q 0.1,0.9`, `--shares`): numbers need no
/// quotes, and a quote (`--q '"0.5"'`) is refused by name rather than read as a number.
pub fn refuse_quotes(item: &str) -> Result<&str, String> {
    if item.contains('"') {
        return Err(format!(
            "{} holds a quote: a list of numbers takes no quotes, like 0.1,0.9",
            shown(item)
        ));
    }
    Ok(item)
}

/// Up to 40 characters of a text, in single quotes, for a message.
fn shown(text: &str) -> String {
    format!("'{}'", crate::error::shown(text, 40))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn read(list: &str) -> Vec<String> {
        items(list).unwrap_or_else(|e| panic!("{list}: {e}")).into_iter().map(|i| i.text).collect()
    }

    #[test]
    fn quoted_items_keep_their_commas_quotes_and_spaces() {
        let cases: [(&str, &[&str]); 10] = [
            ("a,b", &["a", "b"]),
            (" a , b c ", &["a", "b c"]),
            ("\"Smith, Ann\",Lee", &["Smith, Ann", "Lee"]),
            (" \"Smith, Ann\" , Lee", &["Smith, Ann", "Lee"]),
            ("\"say \"\"hi\"\"\",x", &["say \"hi\"", "x"]),
            ("\" padded \"", &[" padded "]),
            ("\"\"", &[""]),
            ("a,,b", &["a", "", "b"]),
            ("", &[""]),
            ("x,\"a,b,c\"", &["x", "a,b,c"]),
        ];
        for (list, want) in cases {
            assert_eq!(read(list), want, "{list}");
        }
        let quoted: Vec<bool> = items("a,\"b\"").unwrap().into_iter().map(|i| i.quoted).collect();
        assert_eq!(quoted, [false, true]);
    }

    #[test]
    fn lists_that_do_not_read_as_csv_are_refused() {
        for (list, needle) in [
            ("\"Smith, Ann,Lee", "never closed"),
            ("a,\"b", "never closed"),
            ("\"say \"hi\"\",x", "followed by"),
            ("\"a\" b,c", "followed by"),
            ("a\"b,c", "holds a quote"),
            ("5\"", "holds a quote"),
        ] {
            let why = items(list).expect_err(list);
            assert!(why.contains(needle), "{list}: {why}");
        }
    }

    #[test]
    fn values_refuse_what_no_trimmed_cell_holds() {
        assert_eq!(values("\"Smith, Ann\", Lee").unwrap(), ["Smith, Ann", "Lee"]);
        assert!(values("\" north\",south").unwrap_err().contains("match no row"));
        assert!(values("\"north \"").unwrap_err().contains("match no row"));
        assert!(refuse_quotes("0.5").is_ok());
        assert!(refuse_quotes("\"0.5").unwrap_err().contains("no quotes"));
    }

    proptest! {
        /// Any texts written by the csv crate (as one record, quoted where it needs) read back
        /// as themselves; and so do the texts [`join`] writes.
        #[test]
        fn reads_what_csv_writes(
            texts in proptest::collection::vec("[ab ,\"é\t]{0,6}", 1..6),
            always in any::<bool>(),
        ) {
            let mut writer = csv::WriterBuilder::new()
                .quote_style(if always { csv::QuoteStyle::Always } else { csv::QuoteStyle::Necessary })
                .from_writer(vec![]);
            writer.write_record(&texts).unwrap();
            let line = String::from_utf8(writer.into_inner().unwrap()).unwrap();
            let line = line.trim_end_matches('\n');
            // csv quotes only for commas, quotes and newlines: a plain item with spaces at its
            // ends is trimmed, as on the command line.
            let want: Vec<String> = texts
                .iter()
                .map(|t| if always || t.contains([',', '"']) { t.clone() } else { t.trim().to_string() })
                .collect();
            prop_assert_eq!(read(line), want);
            prop_assert_eq!(read(&join(&texts)), texts);
        }
    }
}
