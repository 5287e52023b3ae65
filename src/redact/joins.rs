//! Secrets split across lines or string pieces: a token wrapped onto the next line mid-way
//! (`eyJ…QT4⏎fwpM…`), a string built from literals (`'ghp_ab' +⏎ 'cd'`, `("ab"⏎ "cd")`,
//! `"ab".concat("cd")`, `'ab' . 'cd'`, `'ab' || 'cd'`), a shell line continued with `\`. The
//! shadow drops the gaps between the pieces, so a rule reads the secret whole and its span,
//! mapped back, covers every piece. One pass over the text.

use super::values::*;

/// Characters of a generated token (base64, base64url, JWT, prefixed vendor tokens).
fn token_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || b"_-+/=.~".contains(&c)
}

/// The byte ranges of `text` that join two pieces of one value, sorted and disjoint.
pub(super) fn gaps(text: &str) -> Vec<(usize, usize)> {
    let b = text.as_bytes();
    let mut gaps = Vec::new();
    if memchr::memchr3(b'\n', b'"', b'\'', b).is_none() {
        return gaps;
    }
    // The quote of the string literal the scan is in, and where it opened.
    let mut open: Option<(u8, usize)> = None;
    // Whether the literal just closed was joined to one before it (a chain of pieces).
    let mut chained = false;
    // Literals separated by commas, joined only where the call around them joins them.
    let mut list: Option<List> = None;
    let mut line_start = 0;
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'\n' => {
                open = None;
                chained = false;
                if let Some(end) = wrapped(text, line_start, i) {
                    gaps.push((line_end(b, line_start, i), end));
                    line_start = i + 1;
                    i = end;
                    continue;
                }
                line_start = i + 1;
            }
            b'\\' => {
                // `ghp_ab\⏎cd`: a shell continuation inside a word, which the shell joins.
                let nl = match b.get(i + 1) {
                    Some(b'\n') => 1,
                    Some(b'\r') if b.get(i + 2) == Some(&b'\n') => 2,
                    _ => 0,
                };
                if nl > 0 {
                    let glued = i > 0 && token_char(b[i - 1]) && b.get(i + 1 + nl).is_some_and(|c| token_char(*c));
                    if glued {
                        gaps.push((i, i + 1 + nl));
                        line_start = i + 1 + nl;
                        i += 1 + nl;
                    } else {
                        i += 1;
                    }
                    continue;
                }
                i += 2; // an escaped character
                continue;
            }
            q @ (b'"' | b'\'') => match open {
                None => open = Some((q, i)),
                Some((o, at)) if o == q => {
                    open = None;
                    let first = !chained;
                    chained = false;
                    if let Some(next) = next_piece(b, i, q, first.then_some(at)) {
                        // `KEY = ("ab"⏎ "cd")`: the parenthesis goes too, so the value follows its key.
                        if first {
                            if let Some(paren) = opening_paren(b, at) {
                                gaps.push((paren, at));
                            }
                        }
                        gaps.push((i, next + 1));
                        open = Some((q, next));
                        chained = true;
                        line_start = b[i..next].iter().rposition(|c| *c == b'\n').map_or(line_start, |p| i + p + 1);
                        i = next + 1;
                        continue;
                    }
                    // `concat!("ab", "cd")`, `["ab", "cd"].join("")`, `format!("{}{}", "ab", "cd")`.
                    let fmt = list.is_none().then(|| placeholders(&b[at + 1..i])).flatten();
                    if let Some(next) = list_next(b, i, q, fmt.is_some()) {
                        let l = list.get_or_insert(List { first: at, fmt: None, gaps: Vec::new(), pieces: 0 });
                        match fmt.filter(|_| l.pieces == 0 && format_call(b, at, i)) {
                            Some(n) => {
                                l.fmt = Some(n);
                                l.gaps.push((at + 1, next + 1));
                            }
                            None if b[i + 1..next].contains(&b',') => {
                                l.pieces += 1;
                                l.gaps.push((i, next + 1));
                            }
                            None => {
                                list = None;
                                i += 1;
                                continue;
                            }
                        }
                        line_start = b[i..next].iter().rposition(|c| *c == b'\n').map_or(line_start, |p| i + p + 1);
                        open = Some((q, next));
                        i = next + 1;
                        continue;
                    }
                    if let Some(mut l) = list.take() {
                        l.pieces += 1;
                        let joined = match l.fmt {
                            Some(n) => n == l.pieces && next_byte(b, i + 1) == Some(b')'),
                            None => l.pieces >= 2 && (joining_call(b, l.first) || joined_after(b, i)),
                        };
                        if joined {
                            gaps.extend(l.gaps);
                        }
                    }
                }
                _ => {}
            },
            _ => {}
        }
        i += 1;
    }
    // A list's gaps were kept back until its end, after later operators' gaps.
    gaps.sort_unstable();
    gaps
}

/// A run of literals separated by commas: where the first opened, the placeholders of a format
/// string before them, the gaps between them, how many there are.
struct List {
    first: usize,
    fmt: Option<usize>,
    gaps: Vec<(usize, usize)>,
    pieces: usize,
}

/// The first byte at or after `at` that is not white space.
fn next_byte(b: &[u8], at: usize) -> Option<u8> {
    b[at.min(b.len())..].iter().copied().find(|c| !c.is_ascii_whitespace())
}

/// The literal after the one closed at `close` in a list: after `,` (and spaces, line breaks),
/// the same quote opens it; after a format string, also `.format(` or `% (` (Python).
fn list_next(b: &[u8], close: usize, q: u8, fmt: bool) -> Option<usize> {
    let ws = |at: usize| at + b[at.min(b.len())..].iter().take_while(|c| c.is_ascii_whitespace()).count();
    let mut at = ws(close + 1);
    let rest = &b[at.min(b.len())..];
    if rest.starts_with(b",") {
        at += 1;
    } else if fmt && rest.starts_with(b".format(") {
        at += 8;
    } else if fmt && rest.starts_with(b"%") && next_byte(b, at + 1) == Some(b'(') {
        at = ws(at + 1) + 1;
    } else {
        return None;
    }
    at = ws(at);
    (b.get(at) == Some(&q)).then_some(at)
}

/// A format string of placeholders only (`{}{}`, `%s%s`, `{0}{1}`), two or more: how many.
fn placeholders(s: &[u8]) -> Option<usize> {
    let mut n = 0;
    let mut at = 0;
    while at < s.len() {
        match (s[at], s.get(at + 1)) {
            (b'%', Some(b's' | b'v')) => at += 2,
            (b'{', _) => {
                let close = s[at..].iter().position(|c| *c == b'}')?;
                if !s[at + 1..at + close].iter().all(u8::is_ascii_digit) {
                    return None;
                }
                at += close + 1;
            }
            _ => return None,
        }
        n += 1;
    }
    (n >= 2).then_some(n)
}

/// The up to 40 bytes before `at`, white space taken out, lowercase.
fn squeezed_before(b: &[u8], at: usize) -> Vec<u8> {
    b[at.saturating_sub(40)..at].iter().filter(|c| !c.is_ascii_whitespace()).map(u8::to_ascii_lowercase).collect()
}

/// A call that formats its arguments into one string opens before the literal at `open`
/// (`format!(`, `fmt.Sprintf(`, `String.format(`), or `.format(` / `% (` follows it (`close`).
fn format_call(b: &[u8], open: usize, close: usize) -> bool {
    let before = squeezed_before(b, open);
    let after = &b[close + 1..];
    ["format!(", "printf(", "format("].iter().any(|k| before.ends_with(k.as_bytes()))
        || after.starts_with(b".format(")
        || next_byte(b, close + 1) == Some(b'%')
}

/// A call that joins the list opening at `first` into one string: `concat!(`, `.concat(`,
/// `"".join([`, `String.join("", `, `strings.Join([]string{`, `implode('', [`.
fn joining_call(b: &[u8], first: usize) -> bool {
    let before = squeezed_before(b, first);
    const CALLS: &[&str] = &[
        "concat!(",
        "concat!([",
        "concat(",
        "\"\".join(",
        "''.join(",
        "\"\".join([",
        "''.join([",
        "\"\".join((",
        "''.join((",
        "join(\"\",",
        "join('',",
        "strings.join([]string{",
        "implode('',[",
        "implode(\"\",[",
    ];
    CALLS.iter().any(|k| before.ends_with(k.as_bytes()))
}

/// The list that ended at `close` is joined by what follows it: `].join("")`, `].concat()`.
fn joined_after(b: &[u8], close: usize) -> bool {
    let after: Vec<u8> =
        b[close + 1..(close + 32).min(b.len())].iter().filter(|c| !c.is_ascii_whitespace()).copied().collect();
    [&b"].join(\"\")"[..], b"].join('')", b"].join(``)", b"].concat()"].iter().any(|k| after.starts_with(k))
}

/// Where the line `start..nl` ends, before a `\r`.
fn line_end(b: &[u8], start: usize, nl: usize) -> usize {
    if nl > start && b[nl - 1] == b'\r' {
        nl - 1
    } else {
        nl
    }
}

/// A token wrapped onto the next line: the line `start..nl` ends in a random run of 16 or more
/// token characters (not a whole line of fixed-width base64, which `Redactor::encoded` and the
/// key rules read as wrapped; not an item of a list), and the next line is one run of token
/// characters that is no word, number or path of its own. The end of the gap (where the
/// continuation starts).
fn wrapped(text: &str, start: usize, nl: usize) -> Option<usize> {
    let b = text.as_bytes();
    let end = line_end(b, start, nl);
    let tail = b[start..end].iter().rev().take_while(|c| token_char(**c)).count();
    if tail < 16 {
        return None;
    }
    let word = &text[end - tail..end];
    let whole_line = text[start..end - tail].trim().is_empty();
    let base64_line = word.len() >= 60
        && word.len().is_multiple_of(4)
        && word.bytes().all(|c| c.is_ascii_alphanumeric() || matches!(c, b'+' | b'/' | b'='));
    if whole_line && base64_line {
        return None;
    }
    let indent = b[nl + 1..].iter().take_while(|c| matches!(c, b' ' | b'\t')).count();
    let from = nl + 1 + indent;
    let next_end = b[from..].iter().position(|c| *c == b'\n').map_or(b.len(), |p| from + p);
    // The sentence may go on after the token: `…5c).`
    let next =
        text[from..next_end].trim_end().trim_end_matches(['.', ',', ';', ':', '!', '?', ')', ']', '}', '"', '\'', '`']);
    // A list has one item a line, often alike (`sqlite3Fts5ParserARG_FETCH⏎sqlite3Fts5Parser…`):
    // a token alone on its line was wrapped only if the next line is no longer, and a
    // continuation does not start as the piece before it did.
    let list_like = whole_line && next.len() > word.len();
    let same_start = next.len() >= 4 && word.as_bytes().starts_with(&next.as_bytes()[..4]);
    let ok = !list_like
        && !same_start
        && next.len() >= 2
        && next.bytes().all(token_char)
        && !is_composite(next)
        && has_upper(word)
        && has_lower(word)
        && has_digit(word)
        && looks_random(word, 16);
    ok.then_some(from)
}

/// The literal that continues the one closed at `close` with quote `q`: after spaces, an
/// operator (`+`, `.`, `..`, `||`, `&`, `.concat(`) and at most one line break, the same quote
/// opens it. Juxtaposed literals (`"ab" "cd"`, C and Python) need no operator, when the first
/// (opened at `first`) follows `=`, `(`, `,` or `:` or starts its line, and the next is not a
/// key (`"ab"⏎"cd": 1`). Where the next literal opens.
fn next_piece(b: &[u8], close: usize, q: u8, first: Option<usize>) -> Option<usize> {
    let spaces = |at: usize| b[at..].iter().take_while(|c| matches!(c, b' ' | b'\t')).count();
    let operator = |at: usize| -> usize {
        let rest = &b[at..];
        for op in [&b").concat("[..], b".concat(", b"||", b"..", b"+", b".", b"&"] {
            if rest.starts_with(op) {
                return op.len();
            }
        }
        0
    };
    let mut at = close + 1;
    at += spaces(at);
    let mut op = operator(at);
    at += op;
    at += spaces(at);
    let mut newline = false;
    let nl = match (b.get(at), b.get(at + 1), b.get(at + 2)) {
        (Some(b'\n'), ..) => 1,
        (Some(b'\r'), Some(b'\n'), _) | (Some(b'\\'), Some(b'\n'), _) => 2,
        (Some(b'\\'), Some(b'\r'), Some(b'\n')) => 3,
        _ => 0,
    };
    if nl > 0 {
        newline = true;
        at += nl;
        at += spaces(at);
        if op == 0 {
            op = operator(at);
            at += op;
            at += spaces(at);
        }
    }
    if b.get(at) != Some(&q) || at == close + 1 {
        return None;
    }
    if op == 0 {
        // Juxtaposed: the chain's first literal after an assignment, a call or a list, or alone
        // at its line's start; a later one already joined.
        if let Some(open) = first {
            let lead = &b[..open];
            let lead = &lead[..lead.len() - lead.iter().rev().take_while(|c| matches!(c, b' ' | b'\t')).count()];
            let starts_line = lead.last().is_none_or(|c| *c == b'\n');
            let after_operator = lead.last().is_some_and(|c| b"=(,:[".contains(c));
            if !(after_operator || starts_line && newline) {
                return None;
            }
        }
        // `"a"⏎"b": 1` is the next key of a mapping, not a piece.
        if newline {
            let close_next = b[at + 1..].iter().position(|c| *c == q || *c == b'\n').map(|p| at + 1 + p);
            if let Some(z) = close_next.filter(|z| b[*z] == q) {
                if b[z + 1..].iter().find(|c| !matches!(c, b' ' | b'\t')) == Some(&b':') {
                    return None;
                }
            }
        }
    }
    Some(at)
}

/// `= (` (or `:= (`, `: (`) and spaces before a literal that opens at `open`: the parenthesis of
/// a literal built from pieces, where it starts.
fn opening_paren(b: &[u8], open: usize) -> Option<usize> {
    let lead = &b[..open];
    let ws = |s: &[u8]| s.len() - s.iter().rev().take_while(|c| c.is_ascii_whitespace()).count();
    let paren = ws(lead).checked_sub(1)?;
    if b[paren] != b'(' {
        return None;
    }
    let before = &b[..ws(&b[..paren])];
    matches!(before.last(), Some(b'=' | b':')).then_some(paren)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `text` with its gaps taken out.
    fn joined(text: &str) -> String {
        let mut out = String::new();
        let mut at = 0;
        for (a, z) in gaps(text) {
            out.push_str(&text[at..a]);
            at = z;
        }
        out.push_str(&text[at..]);
        out
    }

    #[test]
    fn pieces_of_one_value_are_joined() {
        assert_eq!(joined("t = 'Ab12' +\n    'Cd34';"), "t = 'Ab12Cd34';");
        assert_eq!(joined("k := \"Ab\" +\n\t\"Cd\" +\n\t\"Ef\""), "k := \"AbCdEf\"");
        assert_eq!(joined("K = (\n    \"Ab12\"\n    \"Cd34\"\n)"), "K = \"Ab12Cd34\"\n)");
        assert_eq!(joined("s = \"Ab\".concat(\"Cd\").concat(\"Ef\");"), "s = \"AbCdEf\");");
        assert_eq!(joined("$k = 'Ab' . 'Cd';"), "$k = 'AbCd';");
        assert_eq!(joined("x = \"Ab\" \"Cd\""), "x = \"AbCd\"");
        assert_eq!(joined("export T=Zx9k\\\nQm7"), "export T=Zx9kQm7");
        assert_eq!(joined("t: Zx9kQ2mP7vL3wR8nT4bY\n  6cH1jF5gD0\nnext"), "t: Zx9kQ2mP7vL3wR8nT4bY6cH1jF5gD0\nnext");
        assert_eq!(joined("(t: Zx9kQ2mP7vL3wR8nT4bY\n6cH1jF5gD0)."), "(t: Zx9kQ2mP7vL3wR8nT4bY6cH1jF5gD0).");
    }

    #[test]
    fn lists_that_a_call_joins_are_joined() {
        assert_eq!(joined("concat!(\"Ab\", \"Cd\")"), "concat!(\"AbCd\")");
        assert_eq!(joined("format!(\"{}{}\", \"Ab\", \"Cd\")"), "format!(\"AbCd\")");
        assert_eq!(joined("fmt.Sprintf(\"%s%s\", \"Ab\", \"Cd\")"), "fmt.Sprintf(\"AbCd\")");
        assert_eq!(joined("\"{}{}\".format(\"Ab\", \"Cd\")"), "\"AbCd\")");
        assert_eq!(joined("''.join(['Ab',\n  'Cd'])"), "''.join(['AbCd'])");
        assert_eq!(joined("[\"Ab\", \"Cd\"].join(\"\")"), "[\"AbCd\"].join(\"\")");
        assert_eq!(joined("strings.Join([]string{\"Ab\", \"Cd\"}, \"\")"), "strings.Join([]string{\"AbCd\"}, \"\")");
    }

    #[test]
    fn separate_values_stay_apart() {
        for text in [
            "f(\"a\", \"b\")",
            "greeting = \"Hello, \" + name + \"!\"",
            "dotnet user-secrets set \"Api:Key\" \"value\"",
            "He said \"yes\"\n\"no\" she said",
            "m = {\n  \"a\": 1,\n  \"b\": 2\n}",
            "x = \"a\"\n\"b\": 1",
            "it's the users' own 'choice'",
            "ls -la \\\n  --color",
            // Wrapped lines that are words, numbers or fixed-width base64.
            "Zx9kQ2mP7vL3wR8nT4bY\nThanks",
            "Zx9kQ2mP7vL3wR8nT4bY\n2024",
            "see 9fceb02d0ae598e95dc970b74767f19372d61af8\nabc1234",
            "src/features/authentication/LoginForm2Container.tsx\nREADME.md",
            "QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVphYmNkZWZnaGlqa2xtbm9wcXJzdHV2\nd3h5ejAx",
            // Lists: one identifier or token a line.
            "  sqlite3Fts5ParserARG_FETCH\n  sqlite3Fts5ParserCTX_FETCH",
            "Zx9kQ2mP7vL3wR8nT4bY6cH1jF5gD0sA2eU7iO9p\nZx9kQ2mP7vL3wR8nT4bY6cH1jF5gD0sA2eU7iO9p",
            "Hd1Jf5Gs0Ay\nZx9kQ2mP7vL3wR8nT4bY6c",
            // Lists no call joins, and format strings whose arguments are not all literals.
            "f(\"ab\", \"cd\")",
            "x = [\"ab\", \"cd\"].join(\", \")",
            "format!(\"{}{}\", \"ab\", cd)",
            "format!(\"{}-{}\", \"ab\", \"cd\")",
            "printf(\"%s%s\", \"ab\", \"cd\", \"ef\")",
        ] {
            assert_eq!(joined(text), text, "{text:?}");
        }
    }
}
