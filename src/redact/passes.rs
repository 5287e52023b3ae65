//! Passes of their own over the lines of a text, where the secret's key is not on the value's
//! line: YAML values under a secret-named parent (`secrets:`, `passwords:`, a plain scalar on
//! the line after `password:`), markdown table cells under a secret column or beside a
//! secret's label, CSV and TSV cells under a secret's column header, and the lines a command
//! that reads a secret store prints (`vault kv get -field=password …` then the password). Each
//! pass is one scan of the lines.

use std::borrow::Cow;

use std::sync::LazyLock;

use regex::bytes::{Regex as BytesRegex, RegexBuilder as BytesRegexBuilder};

use super::rules::{is_function_word, key_class, label_for};
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

/// One row of a delimited file, split at `sep` outside double quotes: each field's byte range
/// within `line`, trimmed and unquoted.
fn fields(line: &str, sep: u8) -> Vec<(usize, usize)> {
    let b = line.as_bytes();
    let mut out = Vec::new();
    let (mut start, mut quoted) = (0, false);
    for i in 0..=b.len() {
        match b.get(i) {
            Some(b'"') => quoted = !quoted,
            Some(c) if *c == sep && !quoted => {}
            None => {}
            _ => continue,
        }
        if b.get(i).is_some_and(|c| *c == b'"') {
            continue;
        }
        let (mut a, mut z) = (start, i);
        while a < z && b[a].is_ascii_whitespace() {
            a += 1;
        }
        while z > a && b[z - 1].is_ascii_whitespace() {
            z -= 1;
        }
        if z >= a + 2 && b[a] == b'"' && b[z - 1] == b'"' {
            (a, z) = (a + 1, z - 1);
        }
        out.push((a, z));
        start = i + 1;
    }
    out
}

/// A header cell: a name of one to three words (`password`, `API Key`, `db_token`).
fn header_cell(cell: &str) -> bool {
    (1..=40).contains(&cell.len())
        && cell.starts_with(|c: char| c.is_ascii_alphabetic())
        && cell.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.' | b' '))
        && cell.split(' ').count() <= 3
        && (key_class(cell).strong || !cell.split(' ').any(|w| is_function_word(&w.to_ascii_lowercase())))
}

/// A delimited file's header as read: its separator, its width, and its secret columns, each with
/// its label and whether a weak name (`pass`, `pw`) asks for a credential's look.
struct Table {
    sep: u8,
    width: usize,
    cols: Vec<(usize, &'static str, bool)>,
}

/// CSV and TSV (`,`, tab, `;`, `|`): under a header row whose column names a secret
/// (`user,password,email`), that column's cell in every row of the same width goes; other
/// columns stay. Masked cells (`********`, `<redacted>`, `${VAR}`) are no secret.
pub(super) fn delimited_columns(text: &str, prio: usize, spans: &mut Spans) {
    let mut table: Option<Table> = None;
    for (start, line) in lines(text) {
        if let Some(Table { sep, width, cols }) = &table {
            let row = fields(line, *sep);
            if row.len() == *width && !line.trim().is_empty() {
                for &(j, label, weak) in cols {
                    let (a, z) = row[j];
                    let v = &line[a..z];
                    // Not `takeable`: a password may start with `!` or `*`, which in YAML open a tag
                    // or an alias.
                    let ok = v.len() >= 3
                        && !is_placeholder(v)
                        && !is_reference(v)
                        && !v.contains("REDACTED:")
                        && !v.starts_with('(')
                        && !matches!(
                            v.to_ascii_lowercase().as_str(),
                            "yes" | "pass" | "fail" | "passed" | "failed" | "n/a"
                        )
                        && (!weak || credential_like(v));
                    if ok {
                        spans.push((start + a, start + z, prio, Cow::Borrowed(label)));
                    }
                }
                continue;
            }
            table = None;
        }
        if line.len() > 1024 || line.trim_start().starts_with('|') {
            continue;
        }
        let lower = line.to_ascii_lowercase();
        if !["pass", "pwd", "pw", "secret", "token", "key", "cred"].iter().any(|k| lower.contains(k)) {
            continue;
        }
        let Some((sep, row)) = [b'\t', b',', b';', b'|']
            .iter()
            .filter(|s| line.as_bytes().contains(s))
            .map(|s| (*s, fields(line, *s)))
            .max_by_key(|(_, r)| r.len())
        else {
            continue;
        };
        if row.len() < 2 || !row.iter().all(|&(a, z)| header_cell(&line[a..z])) {
            continue;
        }
        let cols: Vec<(usize, &'static str, bool)> = row
            .iter()
            .enumerate()
            .filter_map(|(j, &(a, z))| {
                let class = key_class(&line[a..z]);
                let last = class.words.last().map(String::as_str).unwrap_or_default();
                class.strong.then(|| (j, label_for(last), matches!(last, "pass" | "pw" | "pwd")))
            })
            .collect();
        if !cols.is_empty() {
            table = Some(Table { sep, width: row.len(), cols });
        }
    }
}

/// Commands that print a secret on the lines after them, in a terminal transcript: a
/// Kubernetes Secret's field decoded, a Terraform output named as a secret, a field of Vault,
/// AWS Secrets Manager or SSM as text, Google Secret Manager, 1Password, `pass`, the macOS
/// keychain, Azure Key Vault, Doppler, Bitwarden, LastPass, `secret-tool`, `keyring`, and the
/// CLIs that print their own token.
static SECRET_COMMAND: LazyLock<BytesRegex> = LazyLock::new(|| {
    BytesRegexBuilder::new(concat!(
        // An optional prompt: `$ `, `% `, `# `, `> `, `user@host:~/dir$ `, `[root@h ~]# `, `PS C:\> `, `❯ `.
        r"(?m)^[ \t]*(?:\[[^\]\n]*\][$#][ \t]*|[A-Za-z0-9_.@-]*(?::[^\s$#%>]*)?[$#%>][ \t]+|PS[ \t][^\n>]*>[ \t]*|\xE2\x9D\xAF[ \t]+)?",
        r"(?P<cmd>(?:sudo[ \t]+)?(?:",
        r"kubectl[ \t][^\n]*\bsecrets?\b[^\n]*(?:jsonpath|go-template|base64[ \t]+(?:-d|--decode|-D))",
        r"|terraform[ \t]+output\b[^\n]*(?:pass|secret|token|key|cred|pwd)",
        r"|vault[ \t]+(?:kv[ \t]+get|read)[ \t][^\n]*-field[= ]",
        r"|aws[ \t]+(?:secretsmanager[ \t]+get-secret-value|ssm[ \t]+get-parameters?[ \t][^\n]*--with-decryption)\b[^\n]*(?:--output[ \t=]+text|--query[ \t=]+['\x22]?(?:SecretString|Parameters?\[?[^\s]*Value))",
        r"|aws[ \t]+ecr[ \t]+get-login-password\b",
        r"|gcloud[ \t]+(?:secrets[ \t]+versions[ \t]+access|auth[ \t]+(?:application-default[ \t]+)?print-(?:access|identity)-token)\b",
        r"|op[ \t]+(?:read|item[ \t]+get[ \t][^\n]*--fields?)\b",
        r"|(?:go)?pass[ \t]+show\b",
        r"|security[ \t]+find-(?:generic|internet)-password\b[^\n]*[ \t]-w\b",
        r"|az[ \t]+keyvault[ \t]+secret[ \t]+show\b[^\n]*(?:--query[ \t=]+['\x22]?value|-o[ \t]+tsv|--output[ \t]+tsv)",
        r"|doppler[ \t]+secrets[ \t]+get\b[^\n]*--plain",
        r"|bw[ \t]+get[ \t]+(?:password|totp)\b|lpass[ \t]+show\b[^\n]*--password",
        r"|secret-tool[ \t]+lookup\b|keyring[ \t]+get\b|gh[ \t]+auth[ \t]+token\b",
        r")[^\n]*)"
    ))
    .unicode(false)
    .build()
    .expect("secret command")
});

/// A line that starts the next command or ends the output: a prompt, a code fence, or a
/// command of a shell script.
fn ends_output(line: &str) -> bool {
    let t = line.trim_start();
    let first = t.split_whitespace().next().unwrap_or_default();
    const SHELL: &[&str] = &[
        "sudo",
        "echo",
        "export",
        "cd",
        "ls",
        "cat",
        "kubectl",
        "terraform",
        "vault",
        "aws",
        "gcloud",
        "op",
        "pass",
        "gopass",
        "security",
        "az",
        "doppler",
        "bw",
        "lpass",
        "gh",
        "docker",
        "git",
        "curl",
        "psql",
        "mysql",
        "set",
        "unset",
        "source",
        "npm",
        "cargo",
        "python",
        "python3",
        "make",
        "helm",
        "jq",
        "base64",
        "printf",
        "read",
        "exit",
        "ssh",
        "scp",
        "rm",
        "cp",
        "mv",
        "mkdir",
        "grep",
        "if",
        "then",
        "else",
        "fi",
        "for",
        "do",
        "done",
        "while",
        "secret-tool",
        "keyring",
        "env",
    ];
    let prompt = ["$ ", "# ", "% ", "> ", ">>> ", "PS ", "```", "~~~", "\u{276f}"].iter().any(|p| t.starts_with(p))
        || t == "$"
        || t.find("$ ")
            .is_some_and(|i| i < 100 && !t[..i].contains(' ') && (t[..i].contains('@') || t.starts_with('[')))
        || t.find("]# ").is_some_and(|i| t.starts_with('[') && i < 100);
    let words: Vec<&str> = t.split_whitespace().collect();
    let prose = words.len() >= 4 && words.iter().any(|w| is_function_word(&w.to_ascii_lowercase()));
    prompt || prose || SHELL.contains(&first)
}

/// The output of a command that prints a secret (`SECRET_COMMAND`): its next lines, to a blank
/// line, a prompt or the next command (20 at most), unless the command's output goes to a file
/// or into another command.
pub(super) fn command_output(text: &str, prio: usize, spans: &mut Spans) {
    const ANCHORS: &[&str] = &[
        "kubectl",
        "terraform",
        "vault",
        "secretsmanager",
        "ssm",
        "ecr",
        "gcloud",
        "op ",
        "pass show",
        "security find",
        "keyvault",
        "doppler",
        "bw get",
        "lpass",
        "secret-tool",
        "keyring",
        "gh auth",
    ];
    let b = text.as_bytes();
    if !ANCHORS.iter().any(|a| memchr::memmem::find(b, a.as_bytes()).is_some()) {
        return;
    }
    for c in SECRET_COMMAND.captures_iter(b) {
        // The command without its prompt (`PS C:\> `, `user@host:~$ `).
        let m = c.name("cmd").expect("cmd");
        if !prints(&text[m.start()..m.end()]) {
            continue;
        }
        let mut at = m.end() + 1;
        for _ in 0..20 {
            if at >= text.len() {
                break;
            }
            let end = b[at..].iter().position(|c| *c == b'\n').map_or(b.len(), |p| at + p);
            let line = text[at..end].trim_end_matches('\r');
            if line.trim().is_empty() || ends_output(line) {
                break;
            }
            let lead = line.len() - line.trim_start().len();
            let v = line.trim();
            if !is_placeholder(v) && !v.contains("REDACTED:") {
                spans.push((at + lead, at + lead + v.len(), prio, Cow::Borrowed("secret")));
            }
            at = end + 1;
        }
    }
}

/// Whether a command line prints to the terminal: no `>` to a file, and no pipe into anything
/// but a filter (`| base64 -d`, `| jq -r .password`), outside quotes.
fn prints(cmd: &str) -> bool {
    const FILTERS: &[&str] = &["base64", "jq", "tr", "head", "tail", "cut", "sed", "awk", "xxd", "cat", "tee", "grep"];
    let b = cmd.as_bytes();
    let mut quote = None;
    for (i, &c) in b.iter().enumerate() {
        match (quote, c) {
            (None, b'\'' | b'"') => quote = Some(c),
            (Some(q), _) if c == q => quote = None,
            (None, b'>') if !matches!(b.get(i.wrapping_sub(1)), Some(b'2' | b'&')) && b.get(i + 1) != Some(&b'&') => {
                return false;
            }
            (None, b'|') if b.get(i + 1) != Some(&b'|') && b.get(i.wrapping_sub(1)) != Some(&b'|') => {
                let next = cmd[i + 1..].split_whitespace().next().unwrap_or_default();
                if !FILTERS.contains(&next) {
                    return false;
                }
            }
            _ => {}
        }
    }
    true
}
