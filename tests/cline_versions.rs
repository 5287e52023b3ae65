//! Cline by runtime: where injected context reaches the model depends on which Cline runs the
//! hook (the CLI, VS Code 3.x, the 4.x legacy bundle, the 4.x next bundle), and ovmem tells them
//! apart from stdin alone. Payloads: tests/fixtures/payloads/cline-versions.jsonl, each line
//! naming its runtime and source; the real Cline CLI 3.0.65 captures in cline.jsonl.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use serde_json::{json, Value};

const OVMEM: &str = env!("CARGO_BIN_EXE_ovmem");
const FACT: &str = "Remember: the staging database listens on port 5433 and integration tests must use it.";
const QUESTION: &str = "Which port does the staging database use for integration tests?";

struct Lab {
    tmp: tempfile::TempDir,
    proj: PathBuf,
}

impl Lab {
    fn new() -> Self {
        let tmp = tempfile::tempdir().unwrap();
        let proj = tmp.path().join("acme");
        std::fs::create_dir_all(proj.join(".git")).unwrap();
        Self { tmp, proj }
    }

    fn hook(&self, harness: &str, event: &str, stdin: &str) -> String {
        let mut child = Command::new(OVMEM)
            .args(["hook", harness, event])
            .env_clear()
            .env("HOME", self.tmp.path().join("home"))
            .env("PATH", "/usr/bin:/bin")
            .current_dir(&self.proj)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(stdin.as_bytes()).unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success());
        String::from_utf8(out.stdout).unwrap()
    }

    fn memories(&self) -> Vec<Value> {
        let out = Command::new(OVMEM)
            .args(["memory", "list", "--all", "--json"])
            .env_clear()
            .env("HOME", self.tmp.path().join("home"))
            .output()
            .unwrap();
        serde_json::from_slice(&out.stdout).unwrap_or_default()
    }

    /// A fact in the project's bank, taught through Claude Code.
    fn teach(&self) {
        let p = self.proj.to_string_lossy();
        self.hook("claude-code", "UserPromptSubmit", &json!({"session_id": "c", "cwd": p, "prompt": FACT}).to_string());
        self.hook(
            "claude-code",
            "Stop",
            &json!({"session_id": "c", "cwd": p, "last_assistant_message": "Noted."}).to_string(),
        );
    }
}

/// The payload for (runtime, event) with `$P`, `$PROMPT`, `$REPLY` filled in.
fn payload(runtime: &str, event: &str, prompt: &str, reply: &str, proj: &str) -> String {
    let text =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/payloads/cline-versions.jsonl"))
            .unwrap();
    let line: Value = text
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|v| v["runtime"] == runtime && v["event"] == event)
        .unwrap_or_else(|| panic!("no {runtime} {event}"));
    assert!(line["source"].as_str().is_some_and(|s| !s.is_empty()));
    let esc = |s: &str| serde_json::to_string(s).unwrap().trim_matches('"').to_string();
    line["stdin"].to_string().replace("$PROMPT", &esc(prompt)).replace("$REPLY", &esc(reply)).replace("$P", &esc(proj))
}

fn context(out: &str) -> Option<String> {
    let v: Value = serde_json::from_str(out).unwrap_or_else(|e| panic!("{e}: {out}"));
    assert_eq!(v.as_object().unwrap().len(), 3, "only cancel, contextModification, errorMessage: {v}");
    assert_eq!(v["cancel"], false);
    v["contextModification"].as_str().filter(|s| !s.is_empty()).map(String::from)
}

#[test]
fn each_cline_runtime_gets_memory_where_it_reads_context() {
    // (runtime, TaskStart injects, UserPromptSubmit injects, first PreToolUse injects)
    for (runtime, start, prompt, tool) in [
        ("vscode-legacy-bundle", true, true, false),
        ("vscode-next", false, true, true),
        ("cli", false, false, true),
        ("vscode-3", true, true, false),
    ] {
        let lab = Lab::new();
        lab.teach();
        let p = lab.proj.to_string_lossy().into_owned();
        // Each event in a task of its own: a task is not given the same memory twice.
        let own_task = |stdin: String, tag: &str| {
            let mut v: Value = serde_json::from_str(&stdin).unwrap();
            if let Some(id) = v.get_mut("taskId") {
                *id = Value::String(format!("{tag}-{runtime}"));
            }
            v.to_string()
        };
        let out = lab.hook("cline", "TaskStart", &own_task(payload(runtime, "TaskStart", "", "", &p), "start"));
        assert_eq!(context(&out).is_some_and(|c| c.contains("5433")), start, "{runtime} TaskStart: {out}");
        if runtime != "cli" && runtime != "vscode-3" {
            let stdin = own_task(payload(runtime, "UserPromptSubmit", QUESTION, "", &p), "prompt");
            let out = lab.hook("cline", "UserPromptSubmit", &stdin);
            assert_eq!(context(&out).is_some_and(|c| c.contains("5433")), prompt, "{runtime} UserPromptSubmit: {out}");
        }
        if runtime != "vscode-3" {
            let pre = payload(runtime, "PreToolUse", "", "", &p);
            let first = lab.hook("cline", "PreToolUse", &pre);
            assert_eq!(context(&first).is_some_and(|c| c.contains("5433")), tool, "{runtime} PreToolUse: {first}");
            let second = lab.hook("cline", "PreToolUse", &pre);
            assert_eq!(context(&second), None, "{runtime}: once per task");
        }
    }
}

#[test]
fn the_reply_is_read_where_each_runtime_puts_it() {
    for runtime in ["vscode-next", "vscode-legacy-bundle", "cli"] {
        let lab = Lab::new();
        let p = lab.proj.to_string_lossy().into_owned();
        if runtime != "cli" {
            lab.hook("cline", "UserPromptSubmit", &payload(runtime, "UserPromptSubmit", FACT, "", &p));
        }
        lab.hook("cline", "TaskComplete", &payload(runtime, "TaskComplete", "", "It binds port 0 now.", &p));
        let mems = lab.memories();
        assert_eq!(mems.len(), 1, "{runtime}: {mems:?}");
        assert!(
            mems[0]["content"].as_str().unwrap().contains("Assistant: It binds port 0 now."),
            "{runtime}: {mems:?}"
        );
    }
    // The real Cline CLI 3.0.65 capture (agent_end: `turn.outputText`, `taskComplete.taskMetadata` empty).
    let lab = Lab::new();
    let text =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/payloads/cline.jsonl")).unwrap();
    let line: Value = text
        .lines()
        .map(|l| serde_json::from_str::<Value>(l.replace("$TOOL_INPUT", "{}").as_str()).unwrap())
        .find(|v| v["event"] == "TaskComplete")
        .unwrap();
    let stdin = line["stdin"].to_string().replace("$P", &lab.proj.to_string_lossy()).replace("$REPLY", "From the CLI.");
    lab.hook("cline", "TaskComplete", &stdin);
    let mems = lab.memories();
    assert!(mems[0]["content"].as_str().unwrap().contains("From the CLI."), "{mems:?}");
}
