//! Harness stdin -> [`Event`]. Field names differ per harness (and per Cline vocabulary); the
//! adapter's ordered alias lists say where to look. Unknown fields are ignored; only bytes that
//! are not a JSON object are an error.

use std::path::{Path, PathBuf};

use serde_json::Value;
use thiserror::Error;

use crate::harness::{Adapter, Canonical, Condition};

#[derive(Debug, Error)]
pub enum WireError {
    #[error("stdin is not JSON: line {line}, column {column}")]
    NotJson { line: usize, column: usize },
    #[error("stdin is JSON but not an object")]
    NotObject,
    #[error("`{0}` is not an event this harness adapter knows")]
    UnknownEvent(String),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    pub kind: Canonical,
    pub harness: String,
    pub native: String,
    /// Sanitised session id (safe in file names and queries), as stored, sent and logged: a
    /// digest when the harness's id holds what looks like a secret.
    pub session: String,
    /// The harness's own id, sanitised (not stored): what its files are found by.
    pub native_session: Option<String>,
    /// The harness named the session (else `session` was made up from the directory, and is
    /// shared by every session there).
    pub session_named: bool,
    pub cwd: Option<PathBuf>,
    pub prompt: Option<String>,
    pub reply: Option<String>,
    pub transcript: Option<PathBuf>,
    pub tool: Option<String>,
    pub tool_input: Option<Value>,
    /// When the event happened, by the harness's clock (Unix seconds), where it says.
    pub at: Option<i64>,
    /// How a turn ended, for a stop event: `completed` or `cancelled`.
    pub status: Option<String>,
    /// Why a session starts, for a session-start event (`startup`, `resume`, `clear`, `compact`).
    pub source: Option<String>,
    /// The adapter variant this stdin belongs to (an index into `adapter.variants`).
    pub variant: Option<usize>,
    /// One of the adapter's `ignore_when` conditions holds.
    pub ignored: bool,
    /// Top-level stdin keys, for the debug log.
    pub keys: Vec<String>,
}

/// Looks up a dotted path (`turn.outputText`, `workspace_roots.0`; `.` is the whole value).
pub fn lookup<'a>(v: &'a Value, path: &str) -> Option<&'a Value> {
    if path == "." {
        return Some(v);
    }
    let mut cur = v;
    for part in path.split('.') {
        cur = match cur {
            Value::Object(m) => m.get(part)?,
            Value::Array(a) => a.get(part.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    Some(cur)
}

fn first_string(v: &Value, aliases: &[String]) -> Option<String> {
    aliases.iter().find_map(|a| match lookup(v, a)? {
        Value::String(s) if !s.trim().is_empty() => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        // A message given as content parts (Kimi Code's prompt): its text parts, joined.
        Value::Array(parts) => {
            let texts: Vec<&str> = parts
                .iter()
                .filter(|p| p.get("type").and_then(Value::as_str).is_none_or(|t| t == "text"))
                .filter_map(|p| p.get("text").and_then(Value::as_str))
                .filter(|t| !t.trim().is_empty())
                .collect();
            (!texts.is_empty()).then(|| texts.join("\n"))
        }
        _ => None,
    })
}

/// `4.1.13` as numbers (`v` prefix and suffixes like `-beta` ignored); `None` when it does not
/// start with a number.
fn version(s: &str) -> Option<Vec<u64>> {
    let s = s.trim().trim_start_matches('v');
    let parts: Vec<u64> = s
        .split('.')
        .map_while(|p| {
            let digits: String = p.chars().take_while(char::is_ascii_digit).collect();
            digits.parse().ok()
        })
        .collect();
    (!parts.is_empty()).then_some(parts)
}

fn version_lt(a: &[u64], b: &[u64]) -> bool {
    let n = a.len().max(b.len());
    let at = |v: &[u64], i: usize| v.get(i).copied().unwrap_or(0);
    (0..n).map(|i| (at(a, i), at(b, i))).find(|(x, y)| x != y).is_some_and(|(x, y)| x < y)
}

fn holds(v: &Value, c: &Condition) -> bool {
    let field = lookup(v, &c.path).and_then(Value::as_str);
    if let Some(want) = &c.equals {
        if field.unwrap_or("") != want {
            return false;
        }
    }
    if !c.present_not.is_empty() && field.is_none_or(|f| c.present_not.iter().any(|x| x == f)) {
        return false;
    }
    if let Some(re) = &c.matches {
        let ok = regex::Regex::new(re).is_ok_and(|re| field.is_some_and(|f| re.is_match(f)));
        if !ok {
            return false;
        }
    }
    let ver = field.and_then(version);
    if let Some(below) = c.version_below.as_deref().and_then(version) {
        if !ver.as_ref().is_some_and(|v| version_lt(v, &below)) {
            return false;
        }
    }
    if let Some(least) = c.version_at_least.as_deref().and_then(version) {
        if ver.as_ref().is_none_or(|v| version_lt(v, &least)) {
            return false;
        }
    }
    true
}

/// The first variant of `adapter` whose conditions hold for this stdin.
pub fn variant(adapter: &Adapter, v: &Value) -> Option<usize> {
    adapter.variants.iter().position(|var| {
        (var.when_any.is_empty() || var.when_any.iter().any(|c| holds(v, c)))
            && var.when_all.iter().all(|c| holds(v, c))
    })
}

fn first_value(v: &Value, aliases: &[String]) -> Option<Value> {
    aliases.iter().find_map(|a| lookup(v, a).filter(|x| !x.is_null()).cloned())
}

/// Keeps `[A-Za-z0-9._-]`, at most 128 characters: session ids come from untrusted stdin.
pub fn sanitise_session(s: &str) -> String {
    let clean: String = s
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') { c } else { '-' })
        .take(128)
        .collect();
    let clean = clean.trim_matches('.').to_string();
    if clean.is_empty() {
        "unknown".into()
    } else {
        clean
    }
}

pub fn parse(adapter: &Adapter, native: &str, bytes: &[u8]) -> Result<Event, WireError> {
    let kind = *adapter.events.get(native).ok_or_else(|| WireError::UnknownEvent(native.to_string()))?;
    let text = String::from_utf8_lossy(bytes);
    let v: Value = if text.trim().is_empty() {
        Value::Object(Default::default())
    } else {
        serde_json::from_str(&text)
            .or_else(|e| serde_json::from_str(&lone_surrogates_replaced(&text).ok_or(e)?))
            .map_err(|e| WireError::NotJson { line: e.line(), column: e.column() })?
    };
    if !v.is_object() {
        return Err(WireError::NotObject);
    }
    let f = &adapter.fields;
    let cwd = first_string(&v, &f.cwd).map(PathBuf::from).filter(|p| p.is_absolute());
    let named = first_string(&v, &f.session);
    let session_named = named.is_some();
    let native_session = named.as_deref().map(sanitise_session);
    // Asked of the id as the harness sent it (sanitising `password=…` to `password-…` hides it),
    // and of the sanitised one.
    let private = |raw: &str, clean: &str| match crate::store::private_id(raw) {
        std::borrow::Cow::Owned(digest) => digest,
        std::borrow::Cow::Borrowed(_) => crate::store::private_id(clean).into_owned(),
    };
    let session = match (&named, &native_session) {
        (Some(raw), Some(clean)) => private(raw, clean),
        _ => match &cwd {
            Some(c) => format!("cwd-{}", &crate::fsx::sha256_hex(c.to_string_lossy().as_bytes())[..16]),
            None => "unknown".into(),
        },
    };
    let tool = first_string(&v, &f.tool).or_else(|| adapter.tool_by_event.get(native).cloned());
    Ok(Event {
        kind,
        harness: adapter.harness.clone(),
        native: native.to_string(),
        session,
        native_session,
        session_named,
        cwd,
        prompt: first_string(&v, &f.prompt),
        reply: first_string(&v, &f.reply),
        transcript: first_string(&v, &f.transcript).map(PathBuf::from).filter(|p| p.is_absolute()),
        tool,
        tool_input: first_value(&v, &f.tool_input),
        at: f.timestamp.iter().find_map(|a| lookup(&v, a).and_then(parse_time)),
        status: (kind == Canonical::Stop).then(|| {
            if adapter.cancelled_events.iter().any(|e| e == native) { "cancelled" } else { "completed" }.to_string()
        }),
        source: (kind == Canonical::SessionStart).then(|| first_string(&v, &f.source)).flatten(),
        variant: variant(adapter, &v),
        ignored: adapter.ignore_when.iter().any(|c| holds(&v, c)),
        keys: v.as_object().map(|m| m.keys().cloned().collect()).unwrap_or_default(),
    })
}

/// A harness timestamp: RFC 3339 (`2026-11-29T23:26:29.519Z`, with or without a zone), or a
/// Unix time in seconds or milliseconds. Implausible values (before 2000, after 2100) are ignored.
/// `text` with every `\uXXXX` escape of a lone UTF-16 surrogate written `\uFFFD`, or `None`
/// when it has none. A harness written in JavaScript cuts a string between the two halves of an
/// emoji and `JSON.stringify` writes the half it kept so (`"ok \ud83d"`): one such escape, in a
/// field ovmem may not even read, must not cost the whole event, as invalid UTF-8 does not.
fn lone_surrogates_replaced(text: &str) -> Option<String> {
    let b = text.as_bytes();
    let unit = |at: usize| -> Option<u16> {
        let hex = b.get(at..at + 6)?;
        if hex[0] != b'\\' || hex[1] != b'u' {
            return None;
        }
        u16::from_str_radix(std::str::from_utf8(&hex[2..]).ok()?, 16).ok()
    };
    let (mut out, mut from, mut i, mut found) = (String::with_capacity(text.len()), 0, 0, false);
    while i < b.len() {
        if b[i] != b'\\' {
            i += 1;
            continue;
        }
        match unit(i) {
            Some(0xD800..=0xDBFF) if unit(i + 6).is_some_and(|low| (0xDC00..=0xDFFF).contains(&low)) => i += 12,
            Some(0xD800..=0xDFFF) => {
                out.push_str(&text[from..i]);
                out.push_str("\\uFFFD");
                i += 6;
                from = i;
                found = true;
            }
            // Any other escape (`\\` included) is two characters at least: skip them together.
            _ => i += 2,
        }
    }
    out.push_str(&text[from..]);
    found.then_some(out)
}

pub fn parse_time(v: &Value) -> Option<i64> {
    let secs = match v {
        Value::Number(n) => {
            let x = n.as_f64()?;
            if x > 1e11 {
                (x / 1000.0) as i64
            } else {
                x as i64
            }
        }
        Value::String(s) => {
            let s = s.trim();
            if let Ok(x) = s.parse::<f64>() {
                return parse_time(&serde_json::json!(x));
            }
            crate::dates::parse_iso8601(s)?
        }
        _ => return None,
    };
    (946_684_800..4_102_444_800).contains(&secs).then_some(secs)
}

/// The project root for a directory (the rule is [`crate::project::root`]).
pub fn project_root(dir: &Path) -> PathBuf {
    crate::project::root(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn adapter(id: &str) -> Adapter {
        crate::harness::find(id).unwrap().adapter().unwrap()
    }

    #[test]
    fn aliases_cover_both_cline_vocabularies() {
        let a = adapter("cline");
        let v3 = br#"{"hookName":"UserPromptSubmit","taskId":"t1","workspaceRoots":["/w"],"userPromptSubmit":{"prompt":"hi there"}}"#;
        let e = parse(&a, "UserPromptSubmit", v3).unwrap();
        assert_eq!(
            (e.session.as_str(), e.prompt.as_deref(), e.cwd.as_deref()),
            ("t1", Some("hi there"), Some(Path::new("/w")))
        );
        let sdk = br#"{"hookName":"tool_call","taskId":"t2","workspaceRoots":["/w"],"tool_call":{"name":"read_file","input":{"path":"a"}}}"#;
        let e = parse(&a, "PreToolUse", sdk).unwrap();
        assert_eq!(e.tool.as_deref(), Some("read_file"));
        assert_eq!(e.tool_input, Some(serde_json::json!({"path": "a"})));
    }

    /// Half an emoji, as `JSON.stringify` writes a string cut between its surrogates, costs one
    /// replacement character, not the event; a whole pair and an escaped backslash stay as written.
    #[test]
    fn a_lone_surrogate_escape_is_replaced_not_fatal() {
        let a = adapter("claude-code");
        let e = parse(&a, "Stop", br#"{"session_id":"s","prompt":"port \ud83d","last_assistant_message":"\udc4d x"}"#)
            .unwrap();
        assert_eq!(e.prompt.as_deref(), Some("port \u{FFFD}"));
        assert_eq!(e.reply.as_deref(), Some("\u{FFFD} x"));
        let e = parse(&a, "Stop", br#"{"session_id":"s","prompt":"ok \ud83d\udc4d \\ud83d \ud83d"}"#).unwrap();
        assert_eq!(e.prompt.as_deref(), Some("ok \u{1F44D} \\ud83d \u{FFFD}"));
        assert!(lone_surrogates_replaced(r#"{"a":"\ud83d\udc4d \\ud800"}"#).is_none());
    }

    #[test]
    fn session_ids_are_sanitised() {
        assert_eq!(sanitise_session("../../etc/passwd"), "-..-etc-passwd");
        assert_eq!(sanitise_session("a b;rm -rf /"), "a-b-rm--rf--");
        assert_eq!(sanitise_session("..."), "unknown");
        // An id that holds a secret is stored as a digest, asked before it is sanitised.
        for raw in ["password=Zq8vLm2Rt6WpX", "sess-sk-proj-Zk7Qm2Xv9Rt4Lp8Wn3Bc6Hd1Jf5Gs0AyTqUe"] {
            let stdin = serde_json::json!({ "session_id": raw, "cwd": "/p" }).to_string();
            let e = parse(&adapter("codex"), "Stop", stdin.as_bytes()).unwrap();
            assert!(
                e.session.starts_with("s-") && !e.session.contains("Zq8vLm2") && !e.session.contains("Zk7Qm2X"),
                "{}",
                e.session
            );
        }
        assert_eq!(sanitise_session(&"x".repeat(500)).len(), 128);
        let e = parse(&adapter("codex"), "Stop", br#"{"session_id":"../x","cwd":"relative/dir"}"#).unwrap();
        assert_eq!(e.session, "-x");
        assert_eq!(e.cwd, None, "relative cwd from stdin is not trusted");
    }

    #[test]
    fn timestamps_in_every_form() {
        let t = |v: Value| parse_time(&v);
        assert_eq!(t(serde_json::json!("2026-11-29T23:26:29.519Z")), Some(1_795_994_789));
        assert_eq!(t(serde_json::json!("2026-11-29T23:26:29")), Some(1_795_994_789));
        assert_eq!(t(serde_json::json!(1_795_994_789)), Some(1_795_994_789));
        assert_eq!(t(serde_json::json!(1_795_994_789_519i64)), Some(1_795_994_789));
        assert_eq!(t(serde_json::json!("1795994789")), Some(1_795_994_789));
        assert_eq!(t(serde_json::json!("yesterday")), None);
        assert_eq!(t(serde_json::json!(5)), None);
    }

    #[test]
    fn missing_session_falls_back_to_the_cwd() {
        let e = parse(&adapter("cursor"), "stop", br#"{"workspace_roots":["/p"]}"#).unwrap();
        assert!(e.session.starts_with("cwd-"));
    }

    proptest::proptest! {
        #[test]
        fn parse_never_panics_on_bytes(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..512)) {
            for id in ["claude-code", "codex", "cursor", "cline", "trae-cli"] {
                let a = adapter(id);
                for event in a.events.keys() {
                    let _ = parse(&a, event, &bytes);
                }
            }
        }

        #[test]
        fn parse_never_panics_on_json(s in "\\{(\"[a-zA-Z_.0-9]{1,12}\": (\"[^\"\\\\]{0,20}\"|[0-9]{1,4}|null|true|\\[\\]|\\{\\}), ){0,6}\"k\": 1\\}") {
            for id in ["claude-code", "codex", "cursor", "cline", "trae-cli"] {
                let a = adapter(id);
                for event in a.events.keys() {
                    let _ = parse(&a, event, s.as_bytes());
                }
            }
        }
    }
}
