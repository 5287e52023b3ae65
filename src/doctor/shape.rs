//! Is a hook's stdout what its harness accepts for that event? The accepted shapes are exactly
//! what the runtime's encoder writes ([`crate::runtime::encode`]): the event's no-op, an
//! injection, or (on a tool guard) a deny. They are rendered with a placeholder for the text, and
//! the output must match one of them key for key (a harness with a strict schema rejects an extra
//! key), with any text where the placeholder stands.

use serde_json::Value;

use crate::harness::{Adapter, Canonical};
use crate::runtime::encode::{self, Outcome};

/// Stands for the text in a rendered shape; plain ASCII, so it survives JSON escaping as it is.
const HOLE: &str = "@@ovmem-doctor-text@@";

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Shape {
    NoOp,
    Inject,
    Deny,
}

impl Shape {
    pub fn as_str(self) -> &'static str {
        match self {
            Shape::NoOp => "no-op",
            Shape::Inject => "inject",
            Shape::Deny => "deny",
        }
    }
}

/// The shapes `native` may answer with, each as the encoder writes it (text at the placeholder).
fn shapes(adapter: &Adapter, native: &str) -> Vec<(Shape, String)> {
    let mut out = vec![(Shape::NoOp, encode::noop(adapter, native))];
    let inject = encode::encode(adapter, native, &Outcome { context: Some(HOLE.into()), deny: None });
    if inject.contains(HOLE) {
        out.push((Shape::Inject, inject));
    }
    if adapter.events.get(native) == Some(&Canonical::PreTool) {
        let deny = encode::encode(adapter, native, &Outcome { context: None, deny: Some(HOLE.into()) });
        if deny.contains(HOLE) {
            out.push((Shape::Deny, deny));
        }
    }
    out
}

/// Whether `got` matches the pattern `want`: the same keys and values, any string where the
/// pattern holds the placeholder. Collects the text found there.
fn fits(want: &Value, got: &Value, texts: &mut Vec<String>) -> bool {
    match (want, got) {
        (Value::String(w), Value::String(g)) if w.contains(HOLE) => {
            let (pre, post) = w.split_once(HOLE).expect("a hole");
            let ok = g.starts_with(pre) && g.ends_with(post) && g.len() >= pre.len() + post.len();
            if ok {
                texts.push(g[pre.len()..g.len() - post.len()].to_string());
            }
            ok
        }
        (Value::Object(w), Value::Object(g)) => {
            w.len() == g.len() && w.iter().all(|(k, wv)| g.get(k).is_some_and(|gv| fits(wv, gv, texts)))
        }
        (Value::Array(w), Value::Array(g)) => w.len() == g.len() && w.iter().zip(g).all(|(wv, gv)| fits(wv, gv, texts)),
        (w, g) => w == g,
    }
}

/// What a hook printed, judged.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// One of the accepted shapes, with the text it carries (injected context, deny reason).
    Valid(Shape, Option<String>),
    /// Nothing the harness accepts here: why.
    Invalid(String),
}

/// Judges `stdout` for `native` (trailing whitespace aside, as harnesses read it).
pub fn judge(adapter: &Adapter, native: &str, stdout: &[u8]) -> Verdict {
    let Ok(text) = std::str::from_utf8(stdout) else { return Verdict::Invalid("the output is not UTF-8".into()) };
    let text = text.trim_end();
    let candidates = shapes(adapter, native);
    let json = serde_json::from_str::<Value>(text).ok();
    for (shape, pattern) in &candidates {
        let mut texts = Vec::new();
        let ok = match (serde_json::from_str::<Value>(pattern.trim_end()), &json) {
            (Ok(want), Some(got)) => fits(&want, got, &mut texts),
            // A harness that reads plain text: the text itself, placeholder and all.
            (Err(_), _) => fits(&Value::String(pattern.trim_end().into()), &Value::String(text.into()), &mut texts),
            (Ok(_), None) => false,
        };
        if ok {
            return Verdict::Valid(*shape, texts.into_iter().next());
        }
    }
    let shown: String = text.chars().take(120).collect::<String>().replace('\n', "\\n").replace('\r', "\\r");
    let why = match json {
        None if text.is_empty() => "it printed nothing".to_string(),
        None => format!("it is not JSON: `{shown}`"),
        Some(_) => format!("`{shown}` is not a {native} answer {} accepts", adapter.harness),
    };
    let expected: Vec<String> =
        candidates.iter().map(|(s, p)| format!("{} `{}`", s.as_str(), p.replace(HOLE, "…"))).collect();
    Verdict::Invalid(format!("{why} (expected {})", expected.join(" or ")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness;

    fn adapter(id: &str) -> Adapter {
        harness::adapter_for(id).unwrap().unwrap()
    }

    #[test]
    fn the_encoder_s_own_outputs_are_valid_and_anything_else_is_not() {
        for h in harness::all() {
            let a = h.adapter().unwrap();
            for hook in &h.manifest.hooks {
                let e = &hook.event;
                assert_eq!(judge(&a, e, encode::noop(&a, e).as_bytes()), Verdict::Valid(Shape::NoOp, None), "{e}");
                let ctx = Outcome { context: Some("<ovmem-memory>x</ovmem-memory>".into()), deny: None };
                let out = encode::encode(&a, e, &ctx);
                if a.inject_events.contains(e) {
                    assert_eq!(
                        judge(&a, e, out.as_bytes()),
                        Verdict::Valid(Shape::Inject, Some("<ovmem-memory>x</ovmem-memory>".into())),
                        "{}: {e}",
                        h.id()
                    );
                }
                if a.encoder == harness::Encoder::Plain && a.inject_events.contains(e) {
                    // A harness that reads plain text takes any text as context.
                    continue;
                }
                assert!(matches!(judge(&a, e, b"garbage"), Verdict::Invalid(_)), "{}: {e}", h.id());
                assert!(matches!(judge(&a, e, b"{\"x\":1}"), Verdict::Invalid(_)), "{}: {e}", h.id());
            }
        }
    }

    #[test]
    fn an_extra_key_is_invalid_for_a_strict_schema() {
        let a = adapter("codex");
        let v = r#"{"hookSpecificOutput":{"hookEventName":"SessionStart","additionalContext":"x"},"extra":1}"#;
        assert!(matches!(judge(&a, "SessionStart", v.as_bytes()), Verdict::Invalid(_)));
        let wrong_event = r#"{"hookSpecificOutput":{"hookEventName":"Stop","additionalContext":"x"}}"#;
        assert!(matches!(judge(&a, "SessionStart", wrong_event.as_bytes()), Verdict::Invalid(_)));
    }
}
