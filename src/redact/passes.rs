//! Passes of their own over the lines of a text, where the secret's key is not on the value's
//! line: YAML values under a secret-named parent (`secrets:`, `passwords:`, a plain scalar on
//! the line after `password:`), and markdown table cells under a secret column or beside a
//! secret's label. Each pass is one scan of the lines.

use std::borrow::Cow;

use super::rules::{key_class, label_for};
use super::values::*;

type Spans = Vec<(usize, usize, usize, Cow<'static, str>)>;

/// Lines of `text` with their byte offsets.
fn lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    let mut at = 0;
    text.split('\n').map(move |l| {
        let start = at;
        at += l.len() + 1;
        (start, l.strip_suffix('\r').unwrap_or(l))
    })
}

/// A value that a pass may take: a scalar, not a placeholder, a reference, a path or a word
/// of its own key.
fn takeable(v: &str) -> bool {
    let v = v.trim();
    v.len() >= 3
        && !is_placeholder(v)
        && !is_reference(v)
        && !is_path(v)
        && !v.contains("REDACTED:")
        && !matches!(v.chars().next(), Some('|' | '>' | '{' | '[' | '&' | '*' | '!'))
}

/// A YAML value with its quotes and a trailing comment taken off: (start, end) within `line`.
fn yaml_scalar(line: &str, from: usize) -> Option<(usize, usize)> {
    let rest = &line[from..];
    let lead = rest.len() - rest.trim_start().len();
    let mut body = rest.trim_start();
    if let Some(i) = body.find(" #") {
        body = &body[..i];
    }
    let body = body.trim_end();
    let (mut a, mut z) = (from + lead, from + lead + body.len());
    if body.len() >= 2
        && (body.starts_with('"') && body.ends_with('"') || body.starts_with('\'') && body.ends_with('\''))
    {
        a += 1;
        z -= 1;
    }
    (a < z).then_some((a, z))
}

/// Collections of secrets by their name: what is under them is secret.
pub(super) fn secret_parent(key: &str) -> bool {
    let lower = key.to_ascii_lowercase().replace(['-', '_'], "");
    matches!(
        lower.as_str(),
        "secrets"
            | "passwords"
            | "credentials"
            | "creds"
            | "tokens"
            | "passwds"
            | "passphrases"
            | "apikeys"
            | "stringdata"
    ) || lower.ends_with("secrets")
        || lower.ends_with("passwords")
        || lower.ends_with("credentials")
        || (lower.len() > 6 && (lower.ends_with("tokens") || lower.ends_with("apikeys")))
}

/// Child keys under a secret parent that name or point at a secret rather than hold it.
fn meta_child(key: &str) -> bool {
    let class = key_class(key);
    let last = class.words.last().map(String::as_str).unwrap_or_default();
    !class.strong
        && matches!(
            last,
            "name"
                | "names"
                | "ref"
                | "file"
                | "path"
                | "type"
                | "kind"
                | "mode"
                | "version"
                | "external"
                | "driver"
                | "id"
                | "namespace"
                | "items"
                | "optional"
                | "enabled"
                | "source"
                | "provider"
                | "env"
                | "environment"
                | "target"
                | "uid"
                | "gid"
                | "description"
                | "region"
                | "arn"
                | "store"
                | "backend"
                | "mount"
        )
}

fn yaml_key(line: &str) -> Option<(usize, &str, usize)> {
    // (indent column, key, byte offset after the colon)
    let body = line.trim_start_matches([' ', '\t']);
    let indent = line.len() - body.len();
    let (dash, body) = match body.strip_prefix("- ") {
        Some(b) => (2 + b.len() - b.trim_start().len(), b.trim_start()),
        None => (0, body),
    };
    let colon = body.find(':')?;
    let key = body[..colon].trim_matches(['"', '\'']);
    if key.is_empty() || !key.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.')) {
        return None;
    }
    let after = indent + dash + colon + 1;
    if line[after..].starts_with(|c: char| !c.is_whitespace()) {
        return None; // `a:b`, a URL, a time
    }
    Some((indent, key, after))
}

/// YAML values under a secret-named parent (`secrets:` / `passwords:` / `credentials:`, Helm
/// values, compose files, Ansible vars) and a plain scalar on the line after a secret's key.
pub(super) fn yaml_parents(text: &str, prio: usize, spans: &mut Spans) {
    let b = text.as_bytes();
    if memchr::memchr(b':', b).is_none() {
        return;
    }
    // (parent's indent column, label, whether only the next line's plain scalar counts)
    let mut parent: Option<(usize, &'static str, bool)> = None;
    for (start, line) in lines(text) {
        let body = line.trim_start_matches([' ', '\t']);
        if body.is_empty() || body.starts_with('#') {
            continue;
        }
        let indent = line.len() - body.len();
        if let Some((col, label, next_only)) = parent {
            if indent > col {
                if next_only {
                    parent = None;
                    // `password:` then the value on its own line (not a key, not a list).
                    if yaml_key(line).is_none() && !body.starts_with("- ") {
                        if let Some((a, z)) = yaml_scalar(line, indent) {
                            if takeable(&line[a..z]) {
                                spans.push((start + a, start + z, prio, Cow::Borrowed(label)));
                            }
                        }
                    }
                    continue;
                }
                if let Some((_, key, after)) = yaml_key(line) {
                    if !meta_child(key) {
                        if let Some((a, z)) = yaml_scalar(line, after) {
                            if takeable(&line[a..z]) && !line[a..z].ends_with(':') {
                                spans.push((start + a, start + z, prio, Cow::Borrowed(label)));
                            }
                        }
                    }
                } else if let Some(item) = body.strip_prefix("- ") {
                    let from = line.len() - item.len();
                    if let Some((a, z)) = yaml_scalar(line, from) {
                        if takeable(&line[a..z]) {
                            spans.push((start + a, start + z, prio, Cow::Borrowed(label)));
                        }
                    }
                }
                continue;
            }
            parent = None;
        }
        let Some((col, key, after)) = yaml_key(line) else { continue };
        let rest = line[after..].trim();
        if !(rest.is_empty() || rest.starts_with('#')) {
            continue;
        }
        if secret_parent(key) {
            parent = Some((col, "secret", false));
        } else {
            let class = key_class(key);
            if class.strong {
                let last = class.words.last().map(String::as_str).unwrap_or_default();
                parent = Some((col, label_for(last), true));
            }
        }
    }
}

/// Markdown tables: the cells under a column whose header names a secret (`| Password |`), and
/// a cell right of a secret's label in a key/value table (`| Password | hunter2 |`).
pub(super) fn markdown_tables(text: &str, prio: usize, spans: &mut Spans) {
    if !text.contains('|') {
        return;
    }
    let cells = |line: &str| -> Vec<(usize, usize)> {
        // Byte ranges of the trimmed cells of a `| a | b |` row.
        let t = line.trim_end();
        let lead = t.len() - t.trim_start().len();
        let inner = &t[lead..];
        let inner = inner.strip_prefix('|').unwrap_or(inner);
        let off = t.len() - inner.len();
        let inner = inner.strip_suffix('|').unwrap_or(inner);
        let mut out = Vec::new();
        let mut at = off;
        for cell in inner.split('|') {
            let trimmed = cell.trim();
            let a = at + (cell.len() - cell.trim_start().len());
            out.push((a, a + trimmed.len()));
            at += cell.len() + 1;
        }
        out
    };
    let is_row = |l: &str| l.trim_start().starts_with('|') && l.trim_end().len() > 1;
    let is_rule = |l: &str| {
        let t = l.trim();
        t.starts_with('|') && t.contains('-') && t.chars().all(|c| matches!(c, '|' | '-' | ':' | ' ' | '\t'))
    };
    let strong = |cell: &str| {
        let cell = cell.trim_matches(['*', '_', '`', ' ']);
        !cell.is_empty() && cell.len() <= 40 && cell.split_whitespace().count() <= 3 && key_class(cell).strong
    };
    let value_ok = |v: &str| {
        let v = v.trim_matches('`');
        !v.contains(char::is_whitespace) && takeable(v) && !is_design_term(v) && v != "-"
    };
    let all: Vec<(usize, &str)> = lines(text).collect();
    let mut secret_cols: Vec<usize> = Vec::new();
    for (i, &(start, line)) in all.iter().enumerate() {
        if !is_row(line) {
            secret_cols.clear();
            continue;
        }
        if is_rule(line) {
            continue;
        }
        let row = cells(line);
        let header = all.get(i + 1).is_some_and(|(_, next)| is_rule(next));
        if header {
            secret_cols = row.iter().enumerate().filter(|(_, &(a, z))| strong(&line[a..z])).map(|(j, _)| j).collect();
            continue;
        }
        let mut take = |a: usize, z: usize| {
            let v = &line[a..z];
            let (a, z) = if v.len() >= 2 && v.starts_with('`') && v.ends_with('`') { (a + 1, z - 1) } else { (a, z) };
            spans.push((start + a, start + z, prio, Cow::Borrowed("password")));
        };
        for &j in &secret_cols {
            if let Some(&(a, z)) = row.get(j) {
                if value_ok(&line[a..z]) {
                    take(a, z);
                }
            }
        }
        for w in row.windows(2) {
            let ((ka, kz), (va, vz)) = (w[0], w[1]);
            if strong(&line[ka..kz]) && value_ok(&line[va..vz]) && credential_like(line[va..vz].trim_matches('`')) {
                take(va, vz);
            }
        }
    }
}
