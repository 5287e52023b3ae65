//! TOML configs edited with `toml_edit`, which keeps comments, order and spacing but renders every
//! line ending as `\n`, drops a byte-order mark and adds a final newline. [`render`] puts those
//! back: lines that were already in the file keep their own ending (CRLF, LF, none), new lines take
//! the file's usual one, and a BOM stays first. An edit that changes nothing gives back every byte.

use toml_edit::DocumentMut;

const BOM: char = '\u{feff}';

/// The text without its byte-order mark, and whether it had one.
pub fn strip_bom(text: &str) -> (&str, bool) {
    match text.strip_prefix(BOM) {
        Some(rest) => (rest, true),
        None => (text, false),
    }
}

/// The most values a TOML document may hold before it is parsed, counted from above by the
/// bytes that can start one (`=`, `,`, `[`, `{`, a line break). A parsed value costs a few hundred
/// bytes, so 60 MB of `x = [0,0,…]` took 6.5 GB to check and 15 GB to install into; no agent's
/// TOML config holds more than a few thousand.
pub const MAX_VALUES: usize = 500_000;

/// Why a TOML text is not read.
#[derive(Debug, thiserror::Error)]
pub enum Unreadable {
    #[error(transparent)]
    Toml(#[from] ParseError),
    #[error("it holds more than {} TOML values, more than any agent config; ovmem does not read it whole", MAX_VALUES)]
    TooLarge,
}

/// How many characters of the line a parse error quotes, around the column it names.
pub const EXCERPT_CHARS: usize = 120;

/// A TOML parse error as ovmem shows it: where, why, and the part of the line around that column
/// with a caret under it. The parsers' own rendering quotes the whole line, and a config that is
/// one 200 KB line put 200 KB on the terminal; this quotes at most [`EXCERPT_CHARS`] characters
/// (`…` where it was cut, never inside a character) with terminal escapes and control
/// characters dropped.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not valid TOML at line {line}, column {column}: {message}\n  | {excerpt}\n  | {caret}^")]
pub struct ParseError {
    pub line: usize,
    pub column: usize,
    pub message: String,
    pub excerpt: String,
    /// Spaces up to the column within `excerpt`.
    caret: String,
}

impl ParseError {
    /// The error `message` at byte `at` of `text` (what was parsed, BOM stripped).
    pub fn new(text: &str, message: &str, at: Option<usize>) -> Self {
        let at = crate::cut::floor_char(text, at.unwrap_or(0));
        let line_start = text[..at].rfind('\n').map_or(0, |i| i + 1);
        let line_end = text[at..].find('\n').map_or(text.len(), |i| at + i);
        let line = text[line_start..line_end].trim_end_matches('\r');
        let column = text[line_start..at].chars().count() + 1;
        let within = (at - line_start).min(line.len());
        let window = crate::cut::around(line, within, EXCERPT_CHARS);
        let shown = |s: &str| crate::termsafe::clean(s).replace('\t', " ");
        let cut_before = if window.start > 0 { "…" } else { "" };
        let cut_after = if window.end < line.len() { "…" } else { "" };
        // A config's line may hold a key or a token (`env = { OPENAI_API_KEY = "sk-…" }`): the
        // quote is redacted as a log line is, the caret kept under what is left of its column.
        let before = format!("{cut_before}{}", shown(&line[window.start..within]));
        let excerpt = format!("{before}{}{cut_after}", shown(&line[within..window.end]));
        let (before, excerpt) = match crate::redact::scrub(&excerpt) {
            std::borrow::Cow::Borrowed(_) => (before, excerpt),
            std::borrow::Cow::Owned(scrubbed) => {
                let before = crate::redact::scrub(&before).into_owned();
                (before, scrubbed)
            }
        };
        // The message may name a key, as long as the line: the same cap, on one line.
        let message = crate::termsafe::clean(message).split_whitespace().collect::<Vec<_>>().join(" ");
        let message = match crate::cut::around(&message, 0, 2 * EXCERPT_CHARS) {
            r if r.end < message.len() => format!("{}…", &message[..r.end]),
            _ => message,
        };
        Self {
            line: text[..at].matches('\n').count() + 1,
            column,
            message,
            excerpt,
            caret: " ".repeat(before.chars().count()),
        }
    }
}

impl From<(&str, toml_edit::TomlError)> for ParseError {
    fn from((text, e): (&str, toml_edit::TomlError)) -> Self {
        Self::new(text, e.message(), e.span().map(|s| s.start))
    }
}

impl From<(&str, toml::de::Error)> for ParseError {
    fn from((text, e): (&str, toml::de::Error)) -> Self {
        Self::new(text, e.message(), e.span().map(|s| s.start))
    }
}

/// Whether `text` may hold more than [`MAX_VALUES`] values.
pub fn too_large(text: &str) -> bool {
    text.len() > MAX_VALUES
        && text.bytes().filter(|b| matches!(b, b'=' | b',' | b'[' | b'{' | b'\n')).count() > MAX_VALUES
}

/// Parses a TOML text, BOM or not.
pub fn parse(text: &str) -> Result<DocumentMut, Unreadable> {
    if too_large(text) {
        return Err(Unreadable::TooLarge);
    }
    let body = strip_bom(text).0;
    body.parse().map_err(|e| Unreadable::Toml((body, e).into()))
}

/// The values of a TOML text (BOM or not), for comparing two texts by meaning.
pub fn values(text: &str) -> Option<toml::Table> {
    if too_large(text) {
        return None;
    }
    strip_bom(text).0.parse::<toml::Table>().ok()
}

/// Lines with their endings (`\r\n`, `\n`, or `` for a last line without one).
fn lines(text: &str) -> Vec<(&str, &str)> {
    let mut out = Vec::new();
    let mut rest = text;
    while !rest.is_empty() {
        let (line, ending, next) = match rest.find('\n') {
            Some(i) if i > 0 && rest.as_bytes()[i - 1] == b'\r' => (&rest[..i - 1], "\r\n", &rest[i + 1..]),
            Some(i) => (&rest[..i], "\n", &rest[i + 1..]),
            None => (rest, "", ""),
        };
        out.push((line, ending));
        rest = next;
    }
    out
}

/// The line ending most lines of `text` use (`\n` for a text with none).
pub fn newline(text: &str) -> &'static str {
    let crlf = text.matches("\r\n").count();
    let lf = text.matches('\n').count() - crlf;
    if crlf > lf {
        "\r\n"
    } else {
        "\n"
    }
}

/// `new` (what `toml_edit` rendered from `original`, edited) with `original`'s BOM, line endings
/// and missing final newline restored wherever its lines are unchanged.
pub fn restore_layout(original: &str, new: &str) -> String {
    let (body, bom) = strip_bom(original);
    let old = lines(body);
    let fresh = lines(strip_bom(new).0);
    let nl = newline(body);
    let a: Vec<&str> = old.iter().map(|l| l.0).collect();
    let b: Vec<&str> = fresh.iter().map(|l| l.0.strip_suffix('\r').unwrap_or(l.0)).collect();
    let mut endings: Vec<Option<&str>> = vec![None; b.len()];
    // Whether the new last line stands where the old last line stood (unchanged or rewritten).
    let mut last_stays_last = false;
    for op in similar::capture_diff_slices(similar::Algorithm::Myers, &a, &b) {
        match op {
            similar::DiffOp::Equal { old_index, new_index, len } => {
                for k in 0..len {
                    endings[new_index + k] = Some(old[old_index + k].1);
                }
                last_stays_last |= old_index + len == a.len() && new_index + len == b.len();
            }
            similar::DiffOp::Replace { old_index, old_len, new_index, new_len } => {
                last_stays_last |= old_index + old_len == a.len() && new_index + new_len == b.len();
            }
            _ => {}
        }
    }
    let unterminated = old.last().is_some_and(|l| l.1.is_empty());
    let mut out = String::with_capacity(new.len() + b.len());
    if bom {
        out.push(BOM);
    }
    let last = b.len().saturating_sub(1);
    for (i, line) in b.iter().enumerate() {
        out.push_str(line);
        let ending = match endings[i] {
            _ if i == last && unterminated && last_stays_last => "",
            // A line that had no ending gets one once something follows it.
            Some("") => nl,
            Some(e) => e,
            None => nl,
        };
        out.push_str(ending);
    }
    out
}

/// Renders `doc`, parsed from `original`, keeping `original`'s layout (see [`restore_layout`]).
pub fn render(original: &str, doc: &DocumentMut) -> String {
    restore_layout(original, &doc.to_string())
}

/// The comment lines of a TOML text, sorted: with [`values`], how two texts are compared when
/// only formatting may differ.
pub fn comments(text: &str) -> Vec<String> {
    let mut c: Vec<String> =
        strip_bom(text).0.lines().filter_map(|l| l.find('#').map(|i| l[i..].trim().to_string())).collect();
    c.sort();
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    fn edit(text: &str, f: impl FnOnce(&mut DocumentMut)) -> String {
        let mut doc = parse(text).unwrap();
        f(&mut doc);
        render(text, &doc)
    }

    #[test]
    fn a_parse_error_quotes_a_window_of_its_line() {
        let long = format!("a = 1\nkey = \"{}\" = 2 {}\n", "中".repeat(500), "é".repeat(500));
        let Err(Unreadable::Toml(e)) = parse(&long) else { panic!("parses") };
        assert_eq!((e.line, e.column), (2, 510));
        assert_eq!(e.excerpt.chars().count(), EXCERPT_CHARS + 2, "{e}");
        assert!(e.excerpt.starts_with('…') && e.excerpt.ends_with('…') && e.excerpt.contains("\" = 2 é"), "{e}");
        assert_eq!(e.to_string().lines().last().unwrap().find('^'), Some(4 + 61), "{e}");
        let Err(Unreadable::Toml(e)) = parse("a = \"x\x1b[2J\"\n") else { panic!("parses") };
        assert!(!e.to_string().contains('\x1b') && e.excerpt == "a = \"x\"", "{e}");
    }

    #[test]
    fn a_parse_error_never_quotes_a_secret_on_its_line() {
        let token = "sk-proj-Q7vX2mK9pL4rT8wZ1nB6cF3hJ5yD0sA";
        let text = format!("[mcp_servers.x]\nenv = {{ OPENAI_API_KEY = \"{token}\" }} oops\n");
        let Err(Unreadable::Toml(e)) = parse(&text) else { panic!("parses") };
        let shown = e.to_string();
        assert!(!shown.contains("Q7vX2mK9pL4rT8wZ1nB6cF3hJ5yD0sA") && shown.contains("REDACTED"), "{shown}");
        assert!(e.excerpt.contains("oops"), "{shown}");
    }

    #[test]
    fn an_untouched_document_keeps_every_byte() {
        for text in [
            "",
            "a = 1",
            "a = 1\n",
            "\u{feff}# c\r\na = 1\r\n\r\n[t]\r\nb = \"x\"\r\n",
            "a = 1\r\nb = 2\n[t]\r\nc = 3",
            "\u{feff}",
            "\n\n# only comments\n",
        ] {
            assert_eq!(edit(text, |_| {}), text, "{text:?}");
        }
    }

    #[test]
    fn new_lines_take_the_file_s_ending_and_old_ones_keep_theirs() {
        let text = "\u{feff}# keep\r\na = 1\r\n";
        let out = edit(text, |d| {
            d["b"] = toml_edit::value(2);
        });
        assert_eq!(out, "\u{feff}# keep\r\na = 1\r\nb = 2\r\n");
        let back = edit(&out, |d| {
            d.remove("b");
        });
        assert_eq!(back, text);
    }

    #[test]
    fn a_missing_final_newline_is_added_only_before_new_lines() {
        let out = edit("a = 1", |d| {
            d["t"]["x"] = toml_edit::value(1);
        });
        assert!(out.starts_with("a = 1\n"), "{out:?}");
        assert_eq!(edit("a = 1", |d| d["a"] = toml_edit::value(2)), "a = 2");
    }
}
