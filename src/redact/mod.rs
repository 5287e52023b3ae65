//! Secrets never outlive the turn they were said in: every text ovmem stores, logs or sends to a
//! backend goes through [`scrub`] first. `<private>…</private>` spans are dropped whole, then a
//! rule set of the kind secret scanners keep (gitleaks-style: a name, keywords, a regex, the
//! secret's capture group and a check) replaces each secret with `[REDACTED:<rule>]`. Rules are
//! data, compiled lazily and only when one of their keywords occurs, so a 4 KB prompt costs
//! microseconds on the hook path. Two passes of their own find YAML block scalars under a secret's
//! key and base64 runs whose decoded text holds a secret; what lies inside a hash (`sha512-…`,
//! `h1:…`, `SHA256:…`) is kept. The rules read a normalised shadow of the text (`shadow`), in
//! which the pieces of a value split across lines or string literals are joined (`joins`); key
//! material without a PEM header has rules of its own (`keys`). No value is too long to redact,
//! and every pass is linear in the text. `tests/redact_corpus.rs` measures the whole set. Extra patterns come from
//! `redact_patterns` in `config.toml`.

use std::borrow::Cow;
use std::sync::{LazyLock, OnceLock};

use aho_corasick::AhoCorasick;
use regex::bytes::{Captures, Regex as BytesRegex, RegexBuilder as BytesRegexBuilder};
use regex::{Regex, RegexBuilder};
use serde::{Deserialize, Serialize};

use crate::cut::{ceil_char, floor_char};

mod joins;
mod keys;
mod passes;
mod rules;
mod shadow;
mod values;

use rules::*;
use shadow::Shadow;
pub(crate) use values::base64_decode;
use values::*;

/// An extra pattern from `config.toml`: a regex, or a table naming it (`{ name, pattern }`).
/// A named capture group `secret` limits what is replaced; else the whole match is.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(untagged)]
pub enum Pattern {
    Plain(String),
    Named { name: String, pattern: String },
}

/// The built-in rules, each compiled on first use, as byte regexes without Unicode classes:
/// every secret format is ASCII, and ASCII-only automata compile in microseconds (a hook
/// process compiles what its text needs on every run). Matches are widened to character
/// boundaries before use.
static COMPILED: LazyLock<Vec<OnceLock<BytesRegex>>> =
    LazyLock::new(|| RULES.iter().map(|_| OnceLock::new()).collect());

fn compiled(i: usize) -> &'static BytesRegex {
    COMPILED[i].get_or_init(|| {
        BytesRegexBuilder::new(RULES[i].pattern)
            .unicode(false)
            .build()
            .unwrap_or_else(|e| panic!("built-in rule `{}`: {e}", RULES[i].id))
    })
}

/// The original text of a match, widened to character boundaries.
fn span<'t>(text: &'t str, m: regex::bytes::Match<'_>) -> &'t str {
    &text[floor_char(text, m.start())..ceil_char(text, m.end())]
}

/// The text of a named capture group (empty when it did not take part).
fn g<'t>(text: &'t str, c: &Captures<'_>, name: &str) -> &'t str {
    c.name(name).map_or("", |m| span(text, m))
}

/// The text of a numbered capture group.
fn gi<'t>(text: &'t str, c: &Captures<'_>, i: usize) -> &'t str {
    c.get(i).map_or("", |m| span(text, m))
}

/// At most `n` bytes of `text` before `start` and after `end` (on character boundaries), so a
/// check never scans a long line from each of its many matches.
fn around(text: &str, start: usize, end: usize, n: usize) -> (&str, &str) {
    let from = ceil_char(text, start.saturating_sub(n));
    let to = floor_char(text, (end + n).min(text.len()));
    (&text[from..start], &text[end..to.max(end)])
}

/// Which rules have a keyword in `text` (or none at all). A short text (a prompt, a reply: the
/// hook path) is searched keyword by keyword on its lowercased bytes, with searchers built once:
/// far cheaper in a fresh hook process than building an automaton. A long text takes one pass of
/// one automaton.
fn triggered(text: &str) -> Vec<bool> {
    const SHORT: usize = 16 << 10;
    let mut wanted: Vec<bool> = RULES.iter().map(|r| r.keywords.is_empty()).collect();
    if text.len() <= SHORT {
        static FINDERS: LazyLock<Vec<(usize, memchr::memmem::Finder<'static>)>> = LazyLock::new(|| {
            RULES
                .iter()
                .enumerate()
                .flat_map(|(i, r)| r.keywords.iter().map(move |k| (i, k)))
                .map(|(i, k)| (i, memchr::memmem::Finder::new(k.to_ascii_lowercase().as_bytes()).into_owned()))
                .collect()
        });
        let lower = text.as_bytes().to_ascii_lowercase();
        for (rule, finder) in FINDERS.iter() {
            if !wanted[*rule] && finder.find(&lower).is_some() {
                wanted[*rule] = true;
            }
        }
        return wanted;
    }
    static KEYWORDS: LazyLock<(AhoCorasick, Vec<usize>)> = LazyLock::new(|| {
        let (words, owners): (Vec<&str>, Vec<usize>) =
            RULES.iter().enumerate().flat_map(|(i, r)| r.keywords.iter().map(move |k| (*k, i))).unzip();
        // A contiguous NFA: quick to build in a process that scans a few texts (see `shadow`).
        let ac = AhoCorasick::builder()
            .kind(Some(aho_corasick::AhoCorasickKind::ContiguousNFA))
            .ascii_case_insensitive(true)
            .build(words)
            .expect("keyword automaton");
        (ac, owners)
    });
    let (ac, owners) = &*KEYWORDS;
    let mut left = wanted.iter().filter(|w| !**w).count();
    for m in ac.find_overlapping_iter(text) {
        let rule = owners[m.pattern().as_usize()];
        if !wanted[rule] {
            wanted[rule] = true;
            left -= 1;
            if left == 0 {
                break;
            }
        }
    }
    wanted
}

/// A configured extra pattern, compiled.
#[derive(Debug, Clone)]
struct Extra {
    label: String,
    re: Regex,
}

/// One of the user's extra patterns compiled, or what is wrong with it (never quoting it: the
/// config's checks say it in a hook's log): not a valid regex, too large, or matching the empty
/// string (it would redact everything). Each pattern is compiled once per process: the config's
/// check ([`check_pattern`]) and the redactor built from the checked config ([`Redactor::new`])
/// share the result.
fn compile_extra(pattern: &str) -> Result<Regex, String> {
    static COMPILED: LazyLock<std::sync::Mutex<std::collections::HashMap<String, Result<Regex, String>>>> =
        LazyLock::new(Default::default);
    let mut compiled = COMPILED.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(done) = compiled.get(pattern) {
        return done.clone();
    }
    let done = match RegexBuilder::new(pattern).size_limit(1 << 20).dfa_size_limit(2 << 20).build() {
        Ok(re) if re.is_match("") => Err("matches the empty string (it would redact everything)".into()),
        Ok(re) => Ok(re),
        Err(e) => {
            // The parser's rendering quotes the pattern above its last line, the error itself.
            let text = e.to_string();
            let last = text.lines().last().unwrap_or_default().trim();
            Err(format!("is not a valid regex ({})", last.strip_prefix("error: ").unwrap_or(last)))
        }
    };
    compiled.insert(pattern.to_string(), done.clone());
    done
}

/// Whether `pattern` can be one of the user's extra patterns (see [`compile_extra`]); `Err` says
/// why not, without quoting it.
pub fn check_pattern(pattern: &str) -> Result<(), String> {
    compile_extra(pattern).map(|_| ())
}

/// The built-in rules plus extra patterns.
#[derive(Debug, Clone, Default)]
pub struct Redactor {
    extra: Vec<Extra>,
}

impl Redactor {
    /// Compiles the extra patterns; each one that is not usable is left out with a message
    /// saying which it is (its place in the list and its label, never the pattern: it may be a
    /// literal secret) and why (a bad regex, one that matches the empty string, one too large).
    pub fn new(patterns: &[Pattern]) -> (Self, Vec<String>) {
        let mut extra = Vec::new();
        let mut problems = Vec::new();
        for (i, p) in patterns.iter().enumerate() {
            let (label, pattern) = match p {
                Pattern::Plain(s) => ("custom".to_string(), s.as_str()),
                Pattern::Named { name, pattern } => (sanitise_label(name), pattern.as_str()),
            };
            match compile_extra(pattern) {
                Ok(re) => extra.push(Extra { label, re }),
                Err(why) => problems.push(format!("redact_patterns[{i}] ({label}) {why}; ignored")),
            }
        }
        (Self { extra }, problems)
    }

    /// `text` with `<private>` spans dropped and every secret replaced by its marker.
    pub fn scrub<'a>(&self, text: &'a str) -> Cow<'a, str> {
        match strip_private(text) {
            Cow::Borrowed(t) => self.redact(t),
            Cow::Owned(t) => Cow::Owned(self.redact(&t).into_owned()),
        }
    }

    /// `text` with every secret replaced by `[REDACTED:<rule>]`.
    pub fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        self.redact_at(text, true)
    }

    /// [`Self::redact`]; `decode`: base64 runs are also decoded and searched (once, not again
    /// inside what they decode to, so the cost stays linear).
    fn redact_at<'a>(&self, text: &'a str, decode: bool) -> Cow<'a, str> {
        // The rules read a normalised shadow of the text (markdown marks dropped, labels in other
        // languages and full-width punctuation as ASCII, escapes decoded); what they find is
        // mapped back to the original's bytes.
        let shadow = Shadow::new(text);
        let mut spans: Vec<(usize, usize, usize, Cow<'static, str>)> = Vec::new();
        self.find(&shadow.text, decode, &mut spans);
        for s in &mut spans {
            let (a, z) = shadow.original(s.0, s.1);
            (s.0, s.1) = (floor_char(text, a), ceil_char(text, z));
        }
        spans.retain(|s| s.0 < s.1);
        self.apply(text, spans)
    }

    /// The secrets' spans in `text` (the shadow), by the built-in rules and passes.
    fn find(&self, text: &str, decode: bool, spans: &mut Vec<(usize, usize, usize, Cow<'static, str>)>) {
        let wanted = triggered(text);
        let mut lower: Option<String> = None;
        // (start, end, priority, label)
        for (i, rule) in RULES.iter().enumerate() {
            if !wanted[i] || rule.pre.is_some_and(|pre| !pre(text)) {
                continue;
            }
            let re = compiled(i);
            let mut pos = 0;
            // `find_at` runs on the fast DFA; captures are only resolved where there is a match.
            let hay = if rule.fold {
                lower.get_or_insert_with(|| text.to_ascii_lowercase()).as_bytes()
            } else {
                text.as_bytes()
            };
            while let Some(c) = re.find_at(hay, pos).and_then(|m| re.captures_at(hay, m.start())) {
                let whole = c.get(0).expect("whole match");
                let verdict = match rule.group.get(&c) {
                    Some(m) if m.start() < m.end() && !span(text, m).contains("REDACTED:") => (rule.check)(text, &c),
                    _ => Verdict::Keep,
                };
                let label = match verdict {
                    Verdict::Keep => {
                        // What was not a secret may still hold the start of one (`note: password: x`):
                        // search again from after the key, else from the next character.
                        let next = floor_char(text, c.name("key").map_or(whole.start(), |k| k.end()));
                        pos = text[next..].chars().next().map_or(text.len() + 1, |ch| next + ch.len_utf8());
                        if pos > text.len() {
                            break;
                        }
                        continue;
                    }
                    Verdict::Redact => rule.id,
                    Verdict::RedactAs(l) => l,
                    Verdict::RedactRanges(ranges, l) => {
                        for (a, z) in ranges {
                            spans.push((floor_char(text, a), ceil_char(text, z), i, Cow::Borrowed(l)));
                        }
                        pos = ceil_char(text, whole.end().max(whole.start() + 1));
                        if pos > text.len() {
                            break;
                        }
                        continue;
                    }
                    Verdict::RedactRange(a, z, l) => {
                        spans.push((floor_char(text, a), ceil_char(text, z), i, Cow::Borrowed(l)));
                        pos = ceil_char(text, whole.end().max(whole.start() + 1)).max(ceil_char(text, z));
                        if pos > text.len() {
                            break;
                        }
                        continue;
                    }
                };
                let m = rule.group.get(&c).expect("checked above");
                let (start, end) = (floor_char(text, m.start()), ceil_char(text, m.end()));
                spans.push((start, end, i, Cow::Borrowed(label)));
                pos = ceil_char(text, whole.end().max(whole.start() + 1));
                if pos > text.len() {
                    break;
                }
            }
        }
        let finders = RULES.len() + self.extra.len();
        block_scalars(text, finders, spans);
        passes::yaml_parents(text, finders, spans);
        passes::markdown_tables(text, finders, spans);
        passes::delimited_columns(text, finders, spans);
        passes::command_output(text, finders, spans);
        if decode {
            self.encoded(text, finders + 1, spans);
        }
        // Hashes are kept (`integrity: sha512-…`, `h1:…`, `SHA256:…` fingerprints): what a rule
        // found wholly inside one is no secret.
        if !spans.is_empty() {
            let kept = digests(text);
            if !kept.is_empty() {
                spans.retain(|s| {
                    let i = kept.partition_point(|d| d.0 <= s.0);
                    s.2 >= RULES.len() && s.2 < finders || i == 0 || kept[i - 1].1 < s.1
                });
            }
        }
    }

    /// `text` with `spans` (and the extra patterns' matches) replaced by their markers.
    fn apply<'a>(&self, text: &'a str, mut spans: Vec<(usize, usize, usize, Cow<'static, str>)>) -> Cow<'a, str> {
        for (j, x) in self.extra.iter().enumerate() {
            let named = x.re.capture_names().any(|n| n == Some("secret"));
            for c in x.re.captures_iter(text) {
                let m = if named { c.name("secret") } else { c.get(0) };
                if let Some(m) = m.filter(|m| m.start() < m.end()) {
                    spans.push((m.start(), m.end(), RULES.len() + j, Cow::Owned(x.label.clone())));
                }
            }
        }
        if spans.is_empty() {
            return Cow::Borrowed(text);
        }
        spans.sort_by_key(|s| (s.0, s.2));
        let mut out = String::with_capacity(text.len());
        let mut at = 0;
        let mut iter = spans.into_iter().peekable();
        while let Some((start, mut end, mut prio, mut label)) = iter.next() {
            while let Some(next) = iter.peek() {
                if next.0 >= end {
                    break;
                }
                let next = iter.next().expect("peeked");
                end = end.max(next.1);
                if next.2 < prio {
                    prio = next.2;
                    label = next.3;
                }
            }
            let start = start.max(at);
            out.push_str(&text[at..start]);
            out.push_str("[REDACTED:");
            out.push_str(&label);
            out.push(']');
            at = end;
        }
        out.push_str(&text[at..]);
        Cow::Owned(out)
    }
}

impl Redactor {
    /// Base64 runs whose text holds a secret (a base64 `.env`, a kubeconfig's `client-key-data`,
    /// a Kubernetes Secret's `data:`, a `.dockerconfigjson`): the whole run goes.
    fn encoded(&self, text: &str, prio: usize, spans: &mut Vec<(usize, usize, usize, Cow<'static, str>)>) {
        static RUN: LazyLock<BytesRegex> = LazyLock::new(|| {
            BytesRegexBuilder::new(r"[A-Za-z0-9+/]{24,}={0,2}").unicode(false).build().expect("base64 run")
        });
        if !has_random_run(text, 24) {
            return;
        }
        let b = text.as_bytes();
        let is_b64 = |c: &u8| c.is_ascii_alphanumeric() || matches!(c, b'+' | b'/' | b'=');
        let mut taken = 0;
        for m in RUN.find_iter(b) {
            let (start, mut end) = (m.start(), m.end());
            if start < taken {
                continue; // the tail of a wrapped run already taken
            }
            // `base64` wraps its output (76 columns, PEM bodies 64): a whole line of a multiple
            // of four characters continues on the next line, which may be shorter.
            let mut line = end - start;
            while line >= 60 && line % 4 == 0 {
                let gap = b[end..].iter().take_while(|c| matches!(c, b'\n' | b'\r' | b' ' | b'\t')).count();
                let next = b[end + gap..].iter().take_while(|c| is_b64(c)).count();
                let after = b.get(end + gap + next).copied();
                if gap == 0
                    || !b[end..end + gap].contains(&b'\n')
                    || next == 0
                    || next > line
                    || after.is_some_and(|c| !c.is_ascii_whitespace() && !matches!(c, b'"' | b'\'' | b','))
                {
                    break;
                }
                line = next;
                end += gap + next;
            }
            taken = end;
            let run: String = text[start..end].split_ascii_whitespace().collect();
            let Some(bytes) = base64_decode(&run) else { continue };
            let Ok(inner) = String::from_utf8(bytes) else { continue };
            if !is_printable(&inner) {
                continue;
            }
            if matches!(self.redact_at(&inner, false), Cow::Owned(_)) {
                spans.push((start, end, prio, Cow::Borrowed("encoded-secret")));
            }
        }
    }
}

/// The hashes in `text` (`sha512-…`, `sha256:…`, go.sum `h1:…`, `SHA256:…`), as sorted byte
/// ranges.
fn digests(text: &str) -> Vec<(usize, usize)> {
    static DIGEST: LazyLock<BytesRegex> = LazyLock::new(|| {
        BytesRegexBuilder::new(
            r"(?i)\b(?:sha(?:1|224|256|384|512)(?:-256)?|sha3-(?:224|256|384|512)|md5|blake2[bs]?|blake3|h1)[-:][A-Za-z0-9+/_=-]{16,}",
        )
        .unicode(false)
        .build()
        .expect("digest")
    });
    let b = text.as_bytes();
    let finder = |k: &[u8]| memchr::memmem::find(b, k).is_some();
    if ![&b"sha"[..], b"SHA", b"Sha", b"md5", b"MD5", b"h1:", b"blake", b"BLAKE"].iter().any(|k| finder(k)) {
        return Vec::new();
    }
    // A sentence's full stop after a fingerprint is taken along (a rule's match may hold it).
    let tail = |end: usize| end + b[end..].iter().take_while(|c| matches!(c, b'.' | b'~')).count();
    DIGEST.find_iter(b).map(|m| (m.start(), tail(m.end()))).collect()
}

/// YAML block scalars under a secret's key (`password: |` and the indented lines after it):
/// the block's lines go.
fn block_scalars(text: &str, prio: usize, spans: &mut Vec<(usize, usize, usize, Cow<'static, str>)>) {
    static HEAD: LazyLock<BytesRegex> = LazyLock::new(|| {
        BytesRegexBuilder::new(
            r#"(?m)^([ \t]*(?:-[ \t]+)?)["']?([A-Za-z_][A-Za-z0-9_.-]*)["']?[ \t]*:[ \t]*(?:!!?[A-Za-z]+[ \t]+)?[|>][-+0-9]{0,2}[ \t]*(?:#[^\n]*)?\r?$"#,
        )
        .unicode(false)
        .build()
        .expect("block scalar head")
    });
    let b = text.as_bytes();
    // Cheap first: a `|` or `>` right after a colon (or a `!!tag`), else no block starts here and
    // the pattern is never compiled (a hook process compiles what its text needs).
    let head_at = |i: usize| {
        let before = b[..i].iter().rev().skip_while(|c| matches!(c, b' ' | b'\t')).copied().next();
        before == Some(b':')
    };
    if !memchr::memchr2_iter(b'|', b'>', b).any(head_at) && memchr::memmem::find(b, b"!!").is_none() {
        return;
    }
    for c in HEAD.captures_iter(b) {
        let column = c[1].len();
        let key = &text[c.get(2).expect("key").range()];
        let mut at = c.get(0).expect("whole").end() + 1;
        let (mut start, mut end) = (None, at);
        while at < b.len() {
            let line_end = memchr::memchr(b'\n', &b[at..]).map_or(b.len(), |i| at + i);
            let line = &text[at..line_end];
            let body = line.trim_start_matches([' ', '\t']);
            if !body.trim().is_empty() {
                if line.len() - body.len() <= column {
                    break;
                }
                start.get_or_insert(at + line.len() - body.len());
                end = line_end;
            }
            at = line_end + 1;
        }
        let Some(start) = start else { continue };
        let block = &text[start..end];
        let flat: String = block.split_whitespace().collect();
        let class = key_class(key);
        let last = class.words.last().map(String::as_str).unwrap_or_default();
        let label = if class.strong {
            label_for(last)
        } else if matches!(last, "key" | "keys" | "auth" | "signature" | "cookie") && looks_random(&flat, 16) {
            "key"
        } else if high_entropy(&flat) {
            "high-entropy"
        } else {
            continue;
        };
        if flat.len() >= 3 && !is_placeholder(&flat) && !is_reference(&flat) {
            spans.push((start, end, prio, Cow::Borrowed(label)));
        }
    }
}

fn sanitise_label(name: &str) -> String {
    let s: String = name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c.to_ascii_lowercase() } else { '-' })
        .take(40)
        .collect();
    if s.is_empty() {
        "custom".into()
    } else {
        s
    }
}

static CONFIGURED: OnceLock<Redactor> = OnceLock::new();

/// Installs the extra patterns for this process's [`scrub`] (the first call wins) and returns
/// what was wrong with any of them, for the caller to log. A bad pattern never stops ovmem.
pub fn configure(patterns: &[Pattern]) -> Vec<String> {
    let (r, problems) = Redactor::new(patterns);
    let _ = CONFIGURED.set(r);
    problems
}

/// Whether extra patterns are configured (text stored before they were would not have had them
/// applied, so recalled text is scrubbed again).
pub fn has_extra() -> bool {
    CONFIGURED.get().is_some_and(|r| !r.extra.is_empty())
}

/// The one function to call on every text before it is stored, logged or sent: `<private>`
/// spans dropped, secrets replaced by `[REDACTED:<rule>]` (built-in rules plus the configured
/// extra patterns). Idempotent.
pub fn scrub(text: &str) -> Cow<'_, str> {
    static DEFAULT: LazyLock<Redactor> = LazyLock::new(Redactor::default);
    CONFIGURED.get().unwrap_or(&DEFAULT).scrub(text)
}

/// `text` without its `<private>…</private>` spans (tags included, nested spans whole, an
/// unclosed `<private>` to the end). Tags are case-insensitive and may carry attributes.
pub fn strip_private(text: &str) -> Cow<'_, str> {
    static TAG: LazyLock<BytesRegex> = LazyLock::new(|| {
        BytesRegexBuilder::new(r"(?i)<(/?)[ \t]*private(?:[ \t\r\n][^<>]*)?>")
            .unicode(false)
            .build()
            .expect("private tag")
    });
    if !text.as_bytes().windows(8).any(|w| w.eq_ignore_ascii_case(b"<private")) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut depth = 0usize;
    let mut at = 0;
    for c in TAG.captures_iter(text.as_bytes()) {
        let m = c.get(0).expect("whole match");
        let closing = !c[1].is_empty();
        if depth == 0 {
            if closing {
                continue; // a stray close tag: nothing was private
            }
            out.push_str(&text[at..m.start()]);
            depth = 1;
        } else if closing {
            depth -= 1;
            if depth == 0 {
                at = m.end();
            }
        } else {
            depth += 1;
        }
    }
    if depth == 0 {
        out.push_str(&text[at..]);
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Test secrets are built from pieces so that no scanner mistakes this file for a leak.
    fn k(parts: &[&str]) -> String {
        parts.concat()
    }

    fn r(s: &str) -> String {
        Redactor::default().scrub(s).into_owned()
    }

    /// (text with `{}` where the secret goes, the secret, the marker it must become).
    fn secrets() -> Vec<(String, String, &'static str)> {
        let ghp = k(&["gh", "p_", "R8sV2nXq7LmZ4tWc9YbK1dPe6HfJ3gAu0oSi"]);
        let aws_id = k(&["AK", "IA", "Q3EGRZ7JX5PLM2TA"]);
        let aws_secret = k(&["wJalrXUtnFEMI/K7MDENG/", "bPxRfiCY9a8b7c6d5e"]);
        let pem = k(&[
            "-----BEGIN RSA PRIVATE ",
            "KEY-----\nMIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun\n",
            "VTLw7onLRnrq0/IzW7yWR7QkrmBL7jTKEn5u+qKhbwKfBstIs+bMY2Zkp18gnTxK\n-----END RSA PRIVATE ",
            "KEY-----",
        ]);
        let gl = k(&["gl", "pat-", "xR4mK9pQ2sT7vW1yZ3bN"]);
        let slack = k(&["xo", "xb-", "2913457781-4857195823-QdS9tXvB2mWlKc8nRj5aZp1e"]);
        let hook = k(&["https://hooks.sl", "ack.com/services/T0A1B2C3D/B0E4F5G6H/", "aZ9yX8wV7uT6sR5qP4oN3mL2"]);
        let openai = k(&["sk", "-proj-", "Zk7Qm2Xv9Rt4Lp8Wn3Bc6Hd1Jf5Gs0Ay-TqUe"]);
        let openai_old = k(&["sk", "-", "4fG7hJ2kL9mN3pQ8rS1tV6wX0yZ5aB2c"]);
        let ant = k(&["sk", "-ant-", "api03-Zq8Xr2Mv7Ns4Tb9Kc1Lw6Pd3Yf5Hg0Ju-AbCdEf"]);
        let google = k(&["AI", "za", "SyD3f8Kq2Lm9Nx7Pv4Rt1Wb6Zc0Hj5Gs8Ue"]);
        let stripe = k(&["sk", "_live_", "51HqT9xKLm2Zp8Vr4Wn7Bc3Df"]);
        let jwt = k(&[
            "ey",
            "JhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.",
            "eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkphbmUifQ.",
            "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c",
        ]);
        let npm = k(&["np", "m_", "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"]);
        vec![
            ("my token is {} keep it safe".into(), ghp.clone(), "github-token"),
            ("git push https://{}@github.com/acme/w.git".into(), ghp.clone(), "github-token"),
            ("AWS_ACCESS_KEY_ID={}\n".into(), aws_id.clone(), "aws-access-key-id"),
            ("aws_secret_access_key = {}\n".into(), aws_secret.clone(), "aws-secret-key"),
            ("Our AWS secret key is {}, rotate it monthly.".into(), aws_secret.clone(), "aws-secret-key"),
            ("key file:\n{}\nend".into(), pem, "private-key"),
            ("export GITLAB_TOKEN={}".into(), gl, "gitlab-token"),
            ("SLACK_BOT_TOKEN=\"{}\"".into(), slack, "slack-token"),
            ("curl -X POST {} -d '{\"text\":\"hi\"}'".into(), hook, "slack-webhook"),
            ("client = OpenAI(api_key=\"{}\")".into(), openai, "openai-key"),
            ("OPENAI_API_KEY={}".into(), openai_old, "openai-key"),
            ("{\"anthropic\": {\"apiKey\": \"{}\"}}".into(), ant, "anthropic-key"),
            ("maps key {} in index.html".into(), google, "google-api-key"),
            ("stripe.api_key = '{}'".into(), stripe, "stripe-key"),
            ("Authorization: Bearer {}".into(), jwt.clone(), "jwt"),
            ("cookie was {} yesterday".into(), jwt, "jwt"),
            ("//registry.npmjs.org/:_authToken={}".into(), npm, "npm-token"),
            ("DATABASE_URL=postgres://app:{}@db.internal:5432/app".into(), "S3cr3t-Pa55".into(), "url-password"),
            ("password=\"{}\"".into(), "hunter2".into(), "password"),
            ("DB_PASSWORD={}".into(), "correct-horse-battery".into(), "password"),
            ("  password: {}\n  user: app\n".into(), "hunter2".into(), "password"),
            ("{{\"password\": \"{}\", \"user\": \"app\"}}".into(), "p@ss w0rd".into(), "password"),
            ("passwd: {}".into(), "Tr0ub4dor&3".into(), "password"),
            ("JWT_SECRET={}".into(), "mysupersecretvalue".into(), "secret"),
            ("export NPM_TOKEN='{}'".into(), "plainvalue123".into(), "token"),
            ("STRIPE_KEY={}".into(), "abc123def456ghi".into(), "key"),
            ("api_key: {}".into(), "q1w2e3r4t5".into(), "key"),
            ("mysql --password={} -u root".into(), "hunter22".into(), "secret-flag"),
            ("curl -u admin:{} https://ci.local/api".into(), "Sup3rS3cret".into(), "password"),
            ("curl -H 'Authorization: Basic {}' https://x".into(), "YWRtaW46aHVudGVyMg==".into(), "authorization"),
            ("send Basic {} to the proxy".into(), "YWRtaW46aHVudGVyMg==".into(), "basic-auth"),
            ("the password is {} for now".into(), "hunter2".into(), "password"),
            ("session_cookie_signer = \"{}\"".into(), "Xk9fR2mQ7vL3pW8nZ4tB6cY1".into(), "high-entropy"),
            ("<password>{}</password>".into(), "hunter2x".into(), "secret"),
            ("PGPASSWORD={} psql -h db".into(), "hunter2".into(), "password"),
            ("machine api.example.com login bob password {}\n".into(), "s3cr3tpw".into(), "password"),
            ("docker login -u bob -p {} registry.example.com".into(), "dckr-pw-123".into(), "password"),
            ("sshpass -p {} ssh bob@host".into(), "hunter22".into(), "password"),
            ("openssl rsa -in k.pem -passin pass:{} -out k2.pem".into(), "topsecret9".into(), "password"),
            ("docker run -e POSTGRES_PASSWORD={} postgres".into(), "pgpass123".into(), "password"),
            ("kubectl create secret generic db --from-literal=password={}".into(), "hunter2".into(), "password"),
            ("$password = '{}';".into(), "hunter2".into(), "password"),
            ("os.environ[\"DB_TOKEN\"] = \"{}\"".into(), "tok-998877".into(), "token"),
            ("mailgun {} here".into(), ["ke", "y-", "3ax6xnjp29jd6fds4gc373sgvjxteol0"].concat(), "mailgun-key"),
            (
                "use {} for the bucket".into(),
                ["wJalrXUtnFEMI/K7MDENG/", "bPxRfiCY9a8b7c6d5e"].concat(),
                "aws-secret-key",
            ),
            ("mysql -u root -p{} app".into(), "S3cretPass".into(), "password"),
            ("SECRET_KEY_BASE={}".into(), "8a3f0e6d2b9c1f7e4a5d8b2c9e6f1a3d7b4c8e2f5a9d1b6c".into(), "secret"),
            ("DATADOG_KEY={}".into(), "3f9c2e1d8b7a6f5e4d3c2b1a0f9e8d7c".into(), "key"),
            ("twilio sid {} for sms".into(), "SK0123456789abcdef0123456789abcdef".into(), "twilio-key"),
        ]
    }

    #[test]
    fn secrets_in_prose_code_env_json_and_shell_are_redacted() {
        for (template, secret, label) in secrets() {
            let text = template.replacen("{}", &secret, 1);
            let out = r(&text);
            assert!(!out.contains(&secret), "leaked `{secret}` in {out:?}");
            assert!(out.contains(&format!("[REDACTED:{label}]")), "{text:?} -> {out:?} (wanted {label})");
            assert_eq!(r(&out), out, "not idempotent: {out:?}");
        }
    }

    #[test]
    fn keys_survive_and_only_values_go() {
        assert_eq!(r("DB_PASSWORD=hunter2 ./run"), "DB_PASSWORD=[REDACTED:password] ./run");
        assert_eq!(r(r#"{"token": "abc123x", "n": 1}"#), r#"{"token": "[REDACTED:token]", "n": 1}"#);
        assert_eq!(r("Say hi, then: password: hunter2"), "Say hi, then: password: [REDACTED:password]");
        // A URL's password goes; its scheme, user, host, port and path stay, in prose too.
        assert_eq!(
            r("connect to postgres://admin:S3cr3tPassw0rd@db.internal:5432/app now"),
            "connect to postgres://admin:[REDACTED:url-password]@db.internal:5432/app now"
        );
    }

    #[test]
    fn ordinary_text_is_left_alone() {
        for text in [
            "Reset your password in the settings page; the password field must be validated.",
            "Password: must be at least 12 characters and is required.",
            "The token count was 4096 and max_tokens = 4096 in the request.",
            "fixed in commit 9fceb02d0ae598e95dc970b74767f19372d61af8 (HEAD -> main)",
            "commit: 9fceb02d0ae598e95dc970b74767f19372d61af8",
            "sha256: e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
            "session id 123e4567-e89b-12d3-a456-426614174000 expired",
            "request_id = 123e4567-e89b-12d3-a456-426614174000",
            "Antidisestablishmentarianism and internationalization are long words.",
            "const handler = createRequestHandlerWithRetries;",
            "see https://cdn.example.com/assets/aGVsbG8gd29ybGQgdGhpcyBpcyBiYXNlNjQ=/logo.png",
            "primary_key: id\nsort_key: created_at\ncache_key: cargo",
            "password = os.environ[\"DB_PASSWORD\"]",
            "PASSWORD=${DB_PASSWORD} TOKEN=$GITHUB_TOKEN",
            "password: \"{{ vault_db_password }}\"",
            "interface User { password: string; token?: string }",
            "The bearer of this letter uses Basic authentication.",
            "PWD=/home/dev/project",
            "Use `ovmem memory add` to remember that the API is at https://api.example.com/v2.",
            "git@github.com:acme/widgets.git and https://github.com/acme/widgets",
            "ports: 5432:5432, retries=3, timeout: 30s",
            "jobs:\n  deploy:\n    secrets: inherit\n    token_type: bearer\n    secret_name: app-tls",
            "password_min_length: 12\ntoken_count: 5\nbypass: true",
            "mkdir -p build && cp -p a b; ssh -p 2222 host; pass: true",
            "Log in with your password, then login as admin to reset the password policy.",
            "docker login registry.example.com",
        ] {
            assert_eq!(r(text), text);
        }
    }

    /// Paths through the names temp-file makers generate stay readable (a log that hides them
    /// cannot be followed); a secret beside such a path still goes.
    #[test]
    fn temp_paths_are_kept_and_secrets_beside_them_are_not() {
        for text in [
            "could not open `/tmp/.tmpAbC123xyz/ovmem-home/logs/hook.log`: Permission denied",
            "OVMEM_HOME=/tmp/.tmpAbC123/ovmem-home/with/some/more/pieces",
            "home /tmp/ci-home.Xk3P/ovmem/memory.db is locked by another process",
            "spooled to /tmp/tmp.Xk3PqR9wZ2/spool/.tmpAb3dEf.json and /tmp/run-Xk3P9qLm.log",
            "ran /work/wt/target/debug/deps/ovmem-3f9a2b1c4d5e6f70 and /tmp/ovmem-doctor-AbC12x/ovmem-home",
            "\"cwd\": \"/tmp/.tmpk3JdPq/project-Xk3P9q/src/lib.rs\"",
        ] {
            assert_eq!(r(text), text);
        }
        let token = k(&["Xk9fR2mQ7vL3p", "W8nZ4tB6cY1uH5"]);
        for text in [
            format!("GET https://api.example.com/v1/cb?access_token={token} from /tmp/.tmpAbC123/x"),
            format!("/tmp/.tmpAbC123/run --token={token}"),
            format!("wrote /tmp/ci-home.Xk3P/env: token={token}"),
            format!("cp /tmp/.tmpAbC123/{token}/x /tmp/y"),
            format!("/tmp/.tmpAbC123/x/{token}"),
        ] {
            let out = r(&text);
            assert!(!out.contains(&token) && out.contains("REDACTED"), "{text} -> {out}");
        }
        // A generated token is no temp name, whatever separates its pieces.
        for name in [token.as_str(), "wJalrXUtnFEMI", "ghp_R8sV2nXq7LmZ4tWc9YbK1dPe6HfJ3gAu0oSi", "Ab3-Xk3PqR9wZ2"] {
            assert!(!values::is_temp_name(name), "{name}");
        }
    }

    #[test]
    fn private_spans_are_never_kept() {
        assert_eq!(strip_private("a <private>secret plan</private> b"), "a  b");
        assert_eq!(strip_private("a <PRIVATE reason=\"x\">s</Private > b"), "a  b");
        assert_eq!(strip_private("a <private>x <private>y</private> z</private> b"), "a  b");
        assert_eq!(strip_private("a <private>x</private> b <private>y</private> c"), "a  b  c");
        assert_eq!(strip_private("keep <private>unclosed to the end"), "keep ");
        assert_eq!(strip_private("stray </private> close stays"), "stray </private> close stays");
        assert_eq!(strip_private("<privateer> is a word"), "<privateer> is a word");
        assert_eq!(strip_private("no tags"), "no tags");
        assert!(matches!(strip_private("no tags"), Cow::Borrowed(_)));
    }

    #[test]
    fn extra_patterns_are_validated_and_applied() {
        let (red, problems) = Redactor::new(&[
            Pattern::Plain(r"ACME-[0-9]{6}".into()),
            Pattern::Named { name: "Employee ID".into(), pattern: r"emp#(?P<secret>\d+)".into() },
            Pattern::Plain("(unclosed".into()),
            Pattern::Plain("a*".into()),
        ]);
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(problems[0].starts_with("redact_patterns[2] (custom) is not a valid regex"), "{problems:?}");
        assert!(problems[1].starts_with("redact_patterns[3] (custom) matches the empty string"), "{problems:?}");
        // A pattern can be a literal secret: a problem names its place, never the pattern.
        let (_, problems) = Redactor::new(&[Pattern::Named { name: "vault".into(), pattern: "hunter2(".into() }]);
        assert_eq!(problems.len(), 1);
        assert!(
            problems[0].starts_with("redact_patterns[0] (vault)") && !problems[0].contains("hunter2"),
            "{problems:?}"
        );
        assert_eq!(red.scrub("ticket ACME-123456 by emp#42"), "ticket [REDACTED:custom] by emp#[REDACTED:employee-id]");
    }

    proptest::proptest! {
        #[test]
        fn scrub_of_any_unicode_never_panics(s in crate::anytext::text(100)) {
            let out = r(&s);
            proptest::prop_assert!(!out.contains("<private>"));
            proptest::prop_assert!(out.len() <= s.len() + 40 * (out.matches("[REDACTED:").count() + 1));
        }

        #[test]
        fn scrub_never_panics(s in "(\\PC|[=:'\"<>/ \n-]|password|token|sk-|ghp_|-----BEGIN|PRIVATE KEY|://|@){0,60}") {
            let out = r(&s);
            proptest::prop_assert!(!out.contains("<private"));
        }
    }

    #[test]
    fn pathological_text_stays_linear() {
        let mut slowest = (std::time::Duration::ZERO, "");
        for unit in [
            "password: a ",
            "a=b ",
            "x: y, ",
            "<private>",
            "ghp_",
            "AKIA",
            "-----BEGIN PRIVATE KEY-----",
            "aws ",
            "postgres://u:p@",
            "u:p@tcp(",
            "a/b@//",
            "sqlplus a/b ",
            "redis-cli -a ",
            "mongosh -p x ",
            "cookie: a=b; ",
            "-b a=b ",
            "k: |\n  v\n",
            "password: |\n",
            "\\\"password\\\":\\\"",
            "b'x' ",
            "QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo",
            "cGFzc3dvcmQ9aHVudGVyMgo=\n",
            "sha512-",
            "setPassword(\"",
            "host:5432:db:u:p\n",
            // Pieces to join: literals on one line and on many, shell continuations, wrapped tokens.
            "'ab' + ",
            "\"ab\" +\n",
            "x = (\"a\"\n",
            "\"a\" \"b\" ",
            "ab\\\n",
            "Zx9kQ2mP7vL3wR8nT4bY6cH1jF5gD0sA2eU7iO9p\nAb3Cd5Ef7Gh9Ij2Kl4Mn6Op8Qr0St2Uv4Wx6Yz8a\n",
            "t: Zx9kQ2mP7vL3wR8nT4bY\n",
            // Key material without a header, hashes, seed phrases.
            "MIIEowIBAAKCAQEA",
            "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun\n",
            "Private-Lines: 1\nAAAA\n",
            "$6$salt$",
            "$2b$12$Zx9kQ2mP7vL3wR8n",
            "mnemonic: abc abc abc ",
            "seed ",
            "wallet 0x4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318 ",
            // Positional logins, terse notes, a secret store's output, CSV, lists, built strings.
            "login(a, ",
            "smtp.login(\"u\", \"Xy7#kq9!mZ\") ",
            "password Xy7#kq9!mZ\n",
            "creds are a:",
            "username a password ",
            "$ vault kv get -field=p x\n",
            "$ pass show x\nXy7#kq9!mZ\n",
            "a,password\n",
            "x,Xy7#kq9!mZ\n",
            "concat!(\"a\", ",
            "\"a\",\n",
            "format!(\"{}{}\", ",
            "tokens: [\"a\", ",
            "2fa seed ",
            "ConvertTo-SecureString '",
        ] {
            let time = |bytes: usize| {
                let text = unit.repeat(bytes / unit.len());
                let t = std::time::Instant::now();
                let _ = r(&text);
                t.elapsed()
            };
            let mut took = time(1 << 20);
            if took >= std::time::Duration::from_secs(3) {
                // A busy machine (CI runs the tests side by side) or a pass that is not linear: a
                // quarter of the text tells which. Linear takes about a quarter of the time,
                // quadratic a sixteenth.
                let quarter = time(1 << 18);
                took = took.min(time(1 << 20));
                assert!(took < quarter * 8, "{unit:?}: 1 MB took {took:?}, 256 KB {quarter:?}");
            }
            slowest = slowest.max((took, unit));
        }
        eprintln!("slowest 1 MB text: {:?} of {:?}", slowest.0, slowest.1);
    }

    #[test]
    fn a_4kb_turn_redacts_well_under_a_millisecond() {
        let mut turn = String::new();
        while turn.len() < 4096 {
            turn.push_str("User: the deploy script reads config.yaml: retries: 3, timeout = 30s; ");
            turn.push_str("Assistant: run `cargo test --all-targets` then git push origin main. ");
        }
        let red = Redactor::default();
        let _ = red.scrub(&turn); // compile what the text needs
        let n = 200;
        let t = std::time::Instant::now();
        for _ in 0..n {
            std::hint::black_box(red.scrub(std::hint::black_box(&turn)));
        }
        let per = t.elapsed() / n;
        eprintln!("scrub of a {} byte turn: {per:?}", turn.len());
        // A guard against pathological rules (benches/redact.rs measures the release build, which
        // the hook runs: a few microseconds per KB). Debug builds on a loaded CI machine are slower.
        assert!(per < std::time::Duration::from_millis(if cfg!(debug_assertions) { 40 } else { 2 }), "{per:?}");
    }
}

#[cfg(test)]
mod generality_tests;
