//! Turning a finished turn into a memory: strip every injected memory block first (ovmem's,
//! Hindsight's, OpenViking's) so recalled text is never stored again, and read the turn from
//! the transcript when the harness only gives its path.

use std::borrow::Cow;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use serde_json::Value;

pub use super::tags::strip_injected;

/// Cuts `s` to at most `max` characters, on a character boundary, marking the cut.
pub fn truncate(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let mut out: String = s.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// The text of a message's `content`: a string, or the `text` parts of an array.
fn content_text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Array(parts) => {
            let texts: Vec<&str> = parts
                .iter()
                .filter(|p| {
                    p.get("type")
                        .and_then(Value::as_str)
                        .is_none_or(|t| t == "text" || t == "output_text" || t == "input_text")
                })
                .filter_map(|p| p.get("text").and_then(Value::as_str))
                .collect();
            (!texts.is_empty()).then(|| texts.join("\n"))
        }
        _ => None,
    }
}

/// Role and text of one transcript line, across the shapes harnesses write:
/// `{type, message:{role, content}}` (Claude Code, Factory Droid, Pi), `{role, message:{content}}`
/// (Cursor), `{role, content}`, `{type, message:{role:"model", parts:[{text}]}}` (Qwen Code) and
/// GitHub Copilot CLI's event log `{type:"user.message"|"assistant.message", data:{content}}`.
fn line_message(v: &Value) -> Option<(String, String)> {
    if let Some(role) = v.get("type").and_then(Value::as_str).and_then(|t| t.strip_suffix(".message")) {
        let text = content_text(v.get("data")?.get("content")?)?;
        return (!text.trim().is_empty()).then(|| (role.to_string(), text));
    }
    let msg = v.get("message").filter(|m| m.is_object()).unwrap_or(v);
    let role = msg.get("role").or_else(|| v.get("role")).or_else(|| v.get("type")).and_then(Value::as_str)?.to_string();
    let text = match msg.get("content").or_else(|| msg.get("text")) {
        Some(c) => content_text(c)?,
        None => content_text(msg.get("parts")?)?,
    };
    let text = text.replace("[REDACTED]", "");
    (!text.trim().is_empty()).then_some((role, text))
}

/// The last user prompt and assistant reply in a JSONL transcript (reading at most its last
/// 4 MiB, so a long session stays fast).
pub fn last_turn(path: &Path) -> (Option<String>, Option<String>) {
    last_turn_upto(path, None)
}

/// [`last_turn`] as the transcript was when it held `upto` bytes (the turn a hook captured, not
/// what the session wrote after it).
pub fn last_turn_upto(path: &Path, upto: Option<u64>) -> (Option<String>, Option<String>) {
    let mut user = None;
    let mut assistant = None;
    for line in tail_lines(path, upto) {
        let Ok(v) = serde_json::from_str::<Value>(&line) else { continue };
        match line_message(&v) {
            // `USER_INPUT` / `PLANNER_RESPONSE`: Antigravity CLI's transcript roles.
            Some((role, text)) if role == "user" || role == "human" || role == "USER_INPUT" => {
                user = Some(text);
                assistant = None;
            }
            Some((role, text)) if role == "assistant" || role == "model" || role == "PLANNER_RESPONSE" => {
                assistant = Some(match assistant {
                    Some(prev) => format!("{prev}\n{text}"),
                    None => text,
                });
            }
            _ => {}
        }
    }
    (user, assistant)
}

/// The length of a transcript now: where the turn a hook captures ends.
pub fn transcript_len(path: &Path) -> Option<u64> {
    std::fs::metadata(path).ok().filter(|m| m.is_file()).map(|m| m.len())
}

/// The lines of the last 4 MiB of a file (a long session stays fast), or none; of its first
/// `upto` bytes when given. The window's first line, cut by the window, is left out; a byte that
/// is not UTF-8 spoils only its own line (the window often starts inside a character of a CJK or
/// emoji session, and a line that failed to decode once ended the reading: no line, no turn).
fn tail_lines(path: &Path, upto: Option<u64>) -> Vec<String> {
    const TAIL: u64 = 4 << 20;
    // Only a regular file, opened without blocking: a transcript path that names a FIFO or a
    // device would hold the hook until its deadline (and a spooled turn that names it, every
    // later replay).
    let Ok(mut f) = crate::sys::open_regular(path) else { return Vec::new() };
    let Ok(len) = f.metadata().map(|m| m.len()) else { return Vec::new() };
    let end = upto.map_or(len, |u| u.min(len));
    let start = end.saturating_sub(TAIL);
    if start > 0 && f.seek(SeekFrom::Start(start)).is_err() {
        return Vec::new();
    }
    let mut bytes = Vec::new();
    // What was read before an error is still read.
    let _ = f.take(end - start).read_to_end(&mut bytes);
    let mut lines = bytes.split(|b| *b == b'\n');
    if start > 0 {
        lines.next();
    }
    lines
        .map(|l| String::from_utf8_lossy(l.strip_suffix(b"\r").unwrap_or(l)).into_owned())
        .filter(|l| !l.is_empty())
        .collect()
}

/// The last user prompt and the assistant's text after it in a Kimi Code wire log
/// (`agents/main/wire.jsonl`): prompts are `turn.prompt` records whose `origin.kind` is `user`
/// (the rest are Kimi's own scaffolding), replies the `text` parts of the `content.part` events
/// nested in `context.append_loop_event` records (`think` parts are reasoning, left out).
/// `context.append_message` records are never read: they mirror prompts and carry what hooks
/// injected, ovmem's memory included.
pub fn kimi_last_turn(path: &Path, upto: Option<u64>) -> (Option<String>, Option<String>) {
    let mut user: Option<String> = None;
    let mut parts: Vec<String> = Vec::new();
    for line in tail_lines(path, upto) {
        let Ok(v) = serde_json::from_str::<Value>(&line) else { continue };
        match v.get("type").and_then(Value::as_str) {
            Some("turn.prompt") => {
                if v.pointer("/origin/kind").and_then(Value::as_str) != Some("user") {
                    continue;
                }
                if let Some(text) = v.get("input").and_then(content_text).filter(|t| !t.trim().is_empty()) {
                    user = Some(text);
                    parts.clear();
                }
            }
            Some("context.append_loop_event") => {
                let Some(ev) = v.get("event") else { continue };
                if ev.get("type").and_then(Value::as_str) != Some("content.part") {
                    continue;
                }
                if ev.pointer("/part/type").and_then(Value::as_str) == Some("text") {
                    if let Some(t) = ev.pointer("/part/text").and_then(Value::as_str).filter(|t| !t.trim().is_empty()) {
                        parts.push(t.to_string());
                    }
                }
            }
            _ => {}
        }
    }
    let reply = (!parts.is_empty()).then(|| parts.join("\n"));
    (user, reply)
}

/// `${KIMI_CODE_HOME:-~/.kimi-code}/sessions/<workspace>/session_<id>/agents/main/wire.jsonl`:
/// the workspace part is a hash Kimi does not send, so each workspace directory is tried.
pub fn kimi_wire(kimi_home: &Path, session: &str) -> Option<std::path::PathBuf> {
    let name = if session.starts_with("session_") { session.to_string() } else { format!("session_{session}") };
    let rd = std::fs::read_dir(kimi_home.join("sessions")).ok()?;
    rd.flatten().map(|e| e.path().join(&name).join("agents").join("main").join("wire.jsonl")).find(|p| p.is_file())
}

/// A stored field: whole, unless it passes `max` characters (a pasted log or dump), then cut
/// with a note of how much was left out.
pub fn clip(s: &str, max: usize) -> String {
    // A text clipped before (by `scrub_and_clip`) keeps one note, counting all that was left out.
    let (body, before) = match s.strip_suffix(" more characters not stored]").and_then(|h| h.rsplit_once("… [")) {
        Some((body, n)) if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => (body, n.parse().unwrap_or(0)),
        _ => (s, 0usize),
    };
    let n = body.chars().count();
    if n <= max {
        return s.to_string();
    }
    let mut out: String = body.chars().take(max).collect();
    out.push_str(&format!("… [{} more characters not stored]", n - max + before));
    out
}

/// What is stored of a prompt or reply: injected memory blocks stripped, secrets and `<private>`
/// spans scrubbed (before anything is cut, so a cut never leaves half a secret to slip through),
/// then clipped to `max` characters.
pub fn clean(text: &str, max: usize) -> String {
    scrub_and_clip(&strip_injected(text), max)
}

/// [`scrub_and_clip`] without the scrubbing: what [`clean`] keeps of a text were nothing in it
/// secret, the same text exactly when scrubbing changes nothing, as for most prompts. Only for
/// work that stays in this process and starts before the scrubbing is done (a rule a prompt's
/// words call on compiles its pattern first, 1 to 2.5 ms): the question's vector.
pub fn clip_unscrubbed(text: &str, max: usize) -> String {
    clipped_after(text, max, Cow::Borrowed)
}

/// Characters read past the cut of a text too long to keep: a secret across the cut is still
/// scrubbed whole (a private key's block is a few thousand characters).
const SCRUB_MARGIN: usize = 16 << 10;

/// `text` scrubbed, then clipped to `max` characters. Only what can be kept, and a margin past it,
/// is scrubbed: what is cut away is never stored, and scrubbing megabytes of text no one keeps
/// could take a hook past its deadline (and the turn with it).
pub fn scrub_and_clip(text: &str, max: usize) -> String {
    clipped_after(text, max, crate::redact::scrub)
}

/// [`scrub_and_clip`] with `scrub` for the scrubbing.
fn clipped_after<'t>(text: &'t str, max: usize, scrub: impl Fn(&'t str) -> Cow<'t, str>) -> String {
    let read = max.saturating_add(SCRUB_MARGIN);
    let Some((end, _)) = text.char_indices().nth(read) else {
        return clip(scrub(text).trim(), max);
    };
    let total = text[end..].chars().count() + read;
    let head = scrub(&text[..end]);
    let kept: String = head.trim_start().chars().take(max).collect();
    format!("{kept}… [{} more characters not stored]", total.saturating_sub(max))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A window that starts inside a character (every offset of three in a Chinese session), or a
    /// line that is not UTF-8 at all, loses only that line.
    #[test]
    fn a_long_transcript_is_read_whatever_its_window_cuts() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.jsonl");
        for shift in 0..3 {
            let mut data = format!("{}{}\n", " ".repeat(shift), "中".repeat(1_500_000)).into_bytes();
            data.extend_from_slice(b"\xff\xfe not utf-8\n");
            data.extend_from_slice("{\"reply\": \"端口 7011\"}\r\n".as_bytes());
            std::fs::write(&path, &data).unwrap();
            let lines = tail_lines(&path, None);
            assert_eq!(lines.last().map(String::as_str), Some("{\"reply\": \"端口 7011\"}"), "shift {shift}");
            assert_eq!(lines.len(), 2, "the cut first line is left out, the bad one kept as it decodes");
        }
    }

    proptest::proptest! {
        /// The text the question's vector is started on before scrubbing is the scrubbed
        /// prompt exactly whenever scrubbing changes nothing, so that vector is the one recall
        /// would compute.
        #[test]
        fn the_unscrubbed_prompt_is_the_clean_one_when_nothing_is_secret(
            s in crate::anytext::text(80),
            max in 1usize..120,
        ) {
            let stripped = strip_injected(&s);
            if crate::redact::scrub(&stripped) == stripped.as_str() {
                proptest::prop_assert_eq!(clip_unscrubbed(&stripped, max), clean(&s, max));
            }
        }

        #[test]
        fn cuts_keep_a_prefix_within_the_limit(s in crate::anytext::text(80), max in 0usize..120) {
            let t = truncate(&s, max);
            let n = s.chars().count();
            if n <= max {
                proptest::prop_assert_eq!(&t, &s);
            } else {
                proptest::prop_assert!(t.chars().count() <= max.max(1));
                proptest::prop_assert!(s.starts_with(t.strip_suffix('…').unwrap_or(&t)));
            }
            let c = clip(&s, max);
            proptest::prop_assert!(s.starts_with(c.split("… [").next().unwrap_or("")));
            proptest::prop_assert!(c.chars().count() <= max + 60 || n <= max);
        }

        #[test]
        fn cleaning_any_text_is_no_panic(s in crate::anytext::text(120), max in 0usize..200) {
            let c = clean(&s, max);
            let prefix = c.split("… [").next().unwrap_or("");
            proptest::prop_assert!(prefix.chars().count() <= max);
            proptest::prop_assert!(!c.contains("<private>"));
        }
    }

    #[test]
    fn strips_every_injected_block() {
        let s = "before <ovmem-memory>\nold fact\n</ovmem-memory> mid <openviking-context source=\"x\">v</openviking-context>\
                 <hindsight_memories>h</hindsight_memories><system-reminder>r</system-reminder> after";
        assert_eq!(strip_injected(s), "before  mid  after");
        assert_eq!(strip_injected("x <relevant-memories>unterminated"), "x <relevant-memories>unterminated");
        assert_eq!(strip_injected("<ovmem-memoryless> stays"), "<ovmem-memoryless> stays");
    }

    #[test]
    fn reads_cursor_and_claude_transcripts() {
        let t = tempfile::tempdir().unwrap();
        let p = t.path().join("t.jsonl");
        std::fs::write(
            &p,
            concat!(
                r#"{"role":"user","message":{"content":[{"type":"text","text":"old question"}]}}"#, "\n",
                r#"{"role":"assistant","message":{"content":[{"type":"text","text":"old answer"}]}}"#, "\n",
                "not json\n",
                r#"{"type":"user","message":{"role":"user","content":"Where do logs go?"}}"#, "\n",
                r#"{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"To /var/log/app."},{"type":"tool_use","name":"x"}]}}"#, "\n",
            ),
        )
        .unwrap();
        assert_eq!(last_turn(&p), (Some("Where do logs go?".into()), Some("To /var/log/app.".into())));
        assert_eq!(last_turn(&t.path().join("missing")), (None, None));
    }

    /// Qwen Code's chat log (`parts`) and GitHub Copilot CLI's event log (`data.content`), as the
    /// real CLIs wrote them (trimmed).
    #[test]
    fn reads_qwen_and_copilot_transcripts() {
        let t = tempfile::tempdir().unwrap();
        let qwen = t.path().join("qwen.jsonl");
        std::fs::write(
            &qwen,
            concat!(
                r#"{"uuid":"a","type":"user","message":{"role":"user","parts":[{"text":"hello there"}]}}"#, "\n",
                r#"{"uuid":"b","type":"assistant","message":{"role":"model","parts":[{"text":"STUB_REPLY: hello there"}]}}"#, "\n",
                r#"{"uuid":"c","type":"system","subtype":"ui_telemetry","systemPayload":{}}"#, "\n",
            ),
        )
        .unwrap();
        assert_eq!(last_turn(&qwen), (Some("hello there".into()), Some("STUB_REPLY: hello there".into())));
        let copilot = t.path().join("events.jsonl");
        std::fs::write(
            &copilot,
            concat!(
                r#"{"type":"session.start","data":{"sessionId":"s"}}"#, "\n",
                r#"{"type":"user.message","data":{"content":"hello there","transformedContent":"<current_datetime>x</current_datetime> hello there"}}"#, "\n",
                r#"{"type":"hook.start","data":{"hookType":"agentStop"}}"#, "\n",
                r#"{"type":"assistant.message","data":{"messageId":"m","content":"STUB_REPLY: hello there","toolRequests":[]}}"#, "\n",
                r#"{"type":"assistant.message","data":{"messageId":"n","content":"","toolRequests":[{"name":"view"}]}}"#, "\n",
            ),
        )
        .unwrap();
        assert_eq!(last_turn(&copilot), (Some("hello there".into()), Some("STUB_REPLY: hello there".into())));
    }

    /// Long texts too (cut past the scrubbing margin), and a prompt with an injected block.
    #[test]
    fn the_unscrubbed_prompt_of_a_long_or_injected_text_matches_the_clean_one() {
        let max = 110;
        let plain = format!("{} the port is 5433 {}", "a ".repeat(50), "b ".repeat(40_000));
        assert_eq!(clip_unscrubbed(&strip_injected(&plain), max), clean(&plain, max));
        let secret = format!("{} sk_live_4eC39HqLyjWDarjtT1zdp7dc {}", "a ".repeat(20), "b ".repeat(40_000));
        assert_ne!(clip_unscrubbed(&strip_injected(&secret), max), clean(&secret, max));
        let injected = "<ovmem-memory>\nold things\n</ovmem-memory>\nWhich port does staging use?";
        let stripped = strip_injected(injected);
        assert_eq!(clip_unscrubbed(&stripped, max), clean(injected, max));
        assert!(!clip_unscrubbed(&stripped, max).contains("old things"), "{stripped}");
    }

    #[test]
    fn clip_keeps_whole_texts_and_marks_cuts() {
        assert_eq!(clip("short", 10), "short");
        // A secret across the cut is scrubbed whole; what is past the margin is never read.
        let key = "sk_live_4eC39HqLyjWDarjtT1zdp7dc";
        let long = format!("{}{key} and {}", "a ".repeat(50), "b ".repeat(40_000));
        let kept = scrub_and_clip(&long, 110);
        assert!(!kept.contains("sk_live_4eC39H") && kept.contains("REDACTED"), "{kept}");
        assert!(kept.ends_with(&format!("[{} more characters not stored]", long.chars().count() - 110)), "{kept}");
        assert_eq!(scrub_and_clip("short", 10), "short");
        assert_eq!(clip(&kept, 110), kept, "clipped once");
        let twice = clip(&kept, 100);
        assert!(twice.ends_with(&format!("[{} more characters not stored]", long.chars().count() - 100)), "{twice}");
        let c = clip(&"é".repeat(50), 20);
        assert!(c.starts_with(&"é".repeat(20)) && c.ends_with("[30 more characters not stored]"), "{c}");
        assert_eq!(truncate("abcdef", 4), "abc…");
    }
}
