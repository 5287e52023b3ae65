//! A project driven through Claude Code's real hook events (`UserPromptSubmit`, `Stop`,
//! `SessionStart`), as the harness runs the installed runtime, against a throwaway home.

use std::path::PathBuf;

use serde_json::{json, Value};

pub struct Project {
    _tmp: tempfile::TempDir,
    pub home: PathBuf,
    pub dir: PathBuf,
}

impl Default for Project {
    fn default() -> Self {
        Self::new()
    }
}

impl Project {
    pub fn new() -> Self {
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path().join("home");
        let dir = tmp.path().join("proj");
        std::fs::create_dir_all(dir.join(".git")).unwrap();
        std::fs::create_dir_all(&home).unwrap();
        Self { _tmp: tmp, home, dir }
    }

    /// Runs one hook event with `fields` added to the session's payload; its stdout as JSON
    /// (`{}` for an empty answer). Every hook must exit 0.
    pub fn hook(&self, event: &str, session: &str, fields: Value) -> Value {
        let mut stdin = json!({"session_id": session, "cwd": self.dir, "hook_event_name": event});
        if let (Some(s), Some(f)) = (stdin.as_object_mut(), fields.as_object()) {
            s.extend(f.clone());
        }
        let r =
            super::run_in(&self.home, &self.dir, &["hook", "claude-code", event], stdin.to_string().as_bytes(), &[]);
        assert_eq!(r.code, 0, "{event}: {}", r.out);
        serde_json::from_str(if r.out.is_empty() { "{}" } else { &r.out }).unwrap_or_else(|e| panic!("{e}: {}", r.out))
    }

    /// One turn: the prompt, then the reply at `Stop`.
    pub fn turn(&self, session: &str, prompt: &str, reply: &str) {
        self.hook("UserPromptSubmit", session, json!({"prompt": prompt}));
        self.hook("Stop", session, json!({"last_assistant_message": reply}));
    }

    /// The context the prompt hook injects for `prompt` in `session` (empty when none).
    pub fn ask(&self, session: &str, prompt: &str) -> String {
        context(&self.hook("UserPromptSubmit", session, json!({"prompt": prompt})))
    }
}

/// The `additionalContext` of a Claude Code hook answer (empty when there is none).
pub fn context(answer: &Value) -> String {
    answer.pointer("/hookSpecificOutput/additionalContext").and_then(Value::as_str).unwrap_or_default().to_string()
}
