//! The hook runtime for the harnesses whose CLI cannot run here (Kiro CLI, Goose, Windsurf, Kimi
//! Code, Antigravity CLI, Devin CLI, ZCode, TraeCode, Grok Build, Crush): the built binary fed
//! stdin built from each harness's documented schema (tests/fixtures/payloads/<id>.jsonl, each
//! line naming its source), against a throwaway `OVMEM_HOME`. What is checked is the exact
//! stdout (and exit code) that harness accepts for every event: its no-op, its injection, its
//! deny; and that a taught fact is captured and recalled in the same project only.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::{json, Value};

const OVMEM: &str = env!("CARGO_BIN_EXE_ovmem");
const FACT: &str = "Remember: the staging database listens on port 5433 and integration tests must use it.";
const QUESTION: &str = "Which port does the staging database use for integration tests?";
const REPLY: &str = "Noted: port 5433.";

struct Lab {
    tmp: tempfile::TempDir,
    proj: PathBuf,
}

struct Out {
    stdout: String,
    stderr: String,
    code: i32,
}

impl Lab {
    fn new() -> Self {
        let tmp = tempfile::tempdir().unwrap();
        let proj = tmp.path().join("acme");
        std::fs::create_dir_all(proj.join(".git")).unwrap();
        std::fs::create_dir_all(proj.join("src/deep")).unwrap();
        std::fs::create_dir_all(tmp.path().join("home")).unwrap();
        Self { tmp, proj }
    }

    fn home(&self) -> PathBuf {
        self.tmp.path().join("home")
    }

    fn p(&self) -> String {
        self.proj.to_string_lossy().into_owned()
    }

    fn other_project(&self) -> PathBuf {
        let p = self.tmp.path().join("other");
        std::fs::create_dir_all(p.join(".git")).unwrap();
        p
    }

    /// Runs `ovmem hook <harness> <event>` in `cwd` (the project unless given).
    fn run(&self, harness: &str, event: &str, stdin: &str, env: &[(&str, &str)], cwd: Option<&Path>) -> Out {
        let mut c = Command::new(OVMEM);
        c.args(["hook", harness, event])
            .env_clear()
            .env("HOME", self.home())
            .env("PATH", "/usr/bin:/bin")
            .current_dir(cwd.unwrap_or(&self.proj))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for (k, v) in env {
            c.env(k, v);
        }
        let mut child = c.spawn().unwrap();
        let mut input = child.stdin.take().unwrap();
        let bytes = stdin.as_bytes().to_vec();
        let writer = std::thread::spawn(move || {
            let _ = input.write_all(&bytes);
        });
        let out = child.wait_with_output().unwrap();
        writer.join().unwrap();
        Out {
            stdout: String::from_utf8(out.stdout).expect("stdout is UTF-8"),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
            code: out.status.code().unwrap_or(-1),
        }
    }

    /// Runs a hook that must exit 0 and returns its stdout as printed.
    fn hook(&self, harness: &str, event: &str, stdin: &str) -> String {
        self.hook_env(harness, event, stdin, &[])
    }

    fn hook_env(&self, harness: &str, event: &str, stdin: &str, env: &[(&str, &str)]) -> String {
        let o = self.run(harness, event, stdin, env, None);
        assert_eq!(o.code, 0, "{harness} {event} exited {}: {}", o.code, o.stderr);
        o.stdout
    }

    fn memories(&self) -> Vec<Value> {
        let out = Command::new(OVMEM)
            .args(["memory", "list", "--all", "--json"])
            .env_clear()
            .env("HOME", self.home())
            .output()
            .unwrap();
        serde_json::from_slice(&out.stdout).unwrap_or_default()
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.home().join(".ovmem/logs/hook.log")).unwrap_or_default()
    }

    /// Pretends ovmem's hooks for `harness` are installed (what the runtime's duplicate check reads).
    fn installed(&self, harness: &str) {
        let dir = self.home().join(".ovmem/receipts");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(format!("{harness}.user.json")), b"{}").unwrap();
    }
}

/// The fixture payload for (harness, event, nth line of that event), `$VARS` filled in: values
/// JSON-escaped, `$TOOL_INPUT` as raw JSON.
fn payload_n(harness: &str, event: &str, n: usize, vars: &[(&str, &str)]) -> String {
    let text =
        std::fs::read_to_string(format!("{}/tests/fixtures/payloads/{harness}.jsonl", env!("CARGO_MANIFEST_DIR")))
            .unwrap();
    let line = text
        .lines()
        .filter(|l| l.contains(&format!("\"event\":\"{event}\"")))
        .nth(n)
        .unwrap_or_else(|| panic!("no {event} payload for {harness}"));
    let input = vars.iter().find(|(k, _)| *k == "TOOL_INPUT").map_or("{}", |(_, v)| *v);
    let mut s = line.replace("$TOOL_INPUT", input);
    let mut vars: Vec<(&str, &str)> = vars.iter().copied().filter(|(k, _)| *k != "TOOL_INPUT").collect();
    vars.sort_by_key(|(k, _)| std::cmp::Reverse(k.len()));
    for (k, v) in vars {
        let value = serde_json::to_string(v).unwrap().trim_matches('"').to_string();
        s = s.replace(&format!("${k}"), &value);
    }
    let v: Value = serde_json::from_str(&s).unwrap_or_else(|e| panic!("{harness} {event}: {e}: {s}"));
    assert!(v["source"].as_str().is_some_and(|s| !s.is_empty()), "{harness} {event}: every payload names its source");
    v["stdin"].to_string()
}

fn payload(harness: &str, event: &str, vars: &[(&str, &str)]) -> String {
    payload_n(harness, event, 0, vars)
}

/// How each harness speaks, for the checks below.
struct Spec {
    id: &'static str,
    prompt: Option<&'static str>,
    stop: Option<&'static str>,
    start: Option<&'static str>,
    /// Injected at the prompt event (else its answer must be the no-op).
    injects_prompt: bool,
    /// The exact no-op per event.
    noop: &'static [(&'static str, &'static str)],
    /// How an injection is printed: "plain" (the text itself) or "hso" (hookSpecificOutput).
    inject: &'static str,
}

const SPECS: &[Spec] = &[
    Spec {
        id: "kiro-cli",
        prompt: Some("userPromptSubmit"),
        stop: Some("stop"),
        start: Some("agentSpawn"),
        injects_prompt: true,
        noop: &[("agentSpawn", ""), ("userPromptSubmit", ""), ("stop", ""), ("preToolUse", "")],
        inject: "plain",
    },
    Spec {
        id: "goose",
        prompt: Some("UserPromptSubmit"),
        stop: Some("Stop"),
        start: None,
        injects_prompt: false,
        noop: &[("UserPromptSubmit", ""), ("Stop", ""), ("PreToolUse", "")],
        inject: "none",
    },
    Spec {
        id: "windsurf",
        prompt: Some("pre_user_prompt"),
        stop: Some("post_cascade_response"),
        start: None,
        injects_prompt: false,
        noop: &[("pre_user_prompt", ""), ("post_cascade_response", ""), ("pre_read_code", ""), ("pre_run_command", "")],
        inject: "none",
    },
    Spec {
        id: "kimi-code",
        prompt: Some("UserPromptSubmit"),
        stop: None,
        start: None,
        injects_prompt: true,
        noop: &[("UserPromptSubmit", ""), ("Stop", ""), ("PreToolUse", "")],
        inject: "plain",
    },
    Spec {
        id: "devin-cli",
        prompt: Some("UserPromptSubmit"),
        stop: Some("Stop"),
        start: Some("SessionStart"),
        injects_prompt: true,
        noop: &[("SessionStart", "{}\n"), ("UserPromptSubmit", "{}\n"), ("Stop", "{}\n"), ("PreToolUse", "{}\n")],
        inject: "hso",
    },
    Spec {
        id: "zcode",
        prompt: Some("UserPromptSubmit"),
        stop: Some("Stop"),
        start: Some("SessionStart"),
        injects_prompt: true,
        noop: &[("SessionStart", ""), ("UserPromptSubmit", ""), ("Stop", ""), ("PreToolUse", "")],
        inject: "hso",
    },
    Spec {
        id: "traecode",
        prompt: Some("UserPromptSubmit"),
        stop: Some("Stop"),
        start: Some("SessionStart"),
        injects_prompt: true,
        noop: &[("SessionStart", "{}\n"), ("UserPromptSubmit", "{}\n"), ("Stop", "{}\n"), ("PreToolUse", "{}\n")],
        inject: "hso",
    },
    Spec {
        id: "grok-build",
        prompt: Some("UserPromptSubmit"),
        stop: Some("Stop"),
        start: None,
        injects_prompt: false,
        noop: &[("UserPromptSubmit", ""), ("Stop", ""), ("PreToolUse", "")],
        inject: "none",
    },
];

/// The context injected by `out` for `spec`, checked to be exactly the shape that harness takes.
fn injected(spec: &Spec, event: &str, out: &str) -> Option<String> {
    match spec.inject {
        "plain" => {
            if out.is_empty() {
                return None;
            }
            let text = out.strip_suffix('\n').expect("one line break after the text");
            assert!(text.starts_with("<ovmem-memory>\n") && text.ends_with("</ovmem-memory>"), "{}: {out:?}", spec.id);
            Some(text.to_string())
        }
        "hso" => {
            if out.is_empty() || out == "{}\n" {
                return None;
            }
            let v: Value = serde_json::from_str(out).unwrap_or_else(|e| panic!("{}: not JSON ({e}): {out}", spec.id));
            let ctx = v["hookSpecificOutput"]["additionalContext"].as_str().expect("additionalContext").to_string();
            // Exactly the keys the harness documents: nothing a strict schema would reject.
            assert_eq!(
                v,
                json!({"hookSpecificOutput": {"hookEventName": event, "additionalContext": ctx}}),
                "{}",
                spec.id
            );
            Some(ctx)
        }
        _ => {
            assert_eq!(out, "", "{}: this harness takes no context, so nothing is printed", spec.id);
            None
        }
    }
}

#[test]
fn every_event_answers_the_harness_s_exact_no_op_on_an_empty_store() {
    for spec in SPECS {
        let lab = Lab::new();
        let p = lab.p();
        for (event, want) in spec.noop {
            let stdin = payload(spec.id, event, &[("P", &p), ("PROMPT", "hi"), ("REPLY", "ok"), ("TOOL", "x")]);
            let o = lab.run(spec.id, event, &stdin, &[("DEVIN_PROJECT_DIR", &p)], None);
            assert_eq!((o.stdout.as_str(), o.code), (*want, 0), "{} {event}: {}", spec.id, o.stderr);
        }
    }
    // Crush's one event, and Antigravity's.
    let lab = Lab::new();
    let p = lab.p();
    let o = lab.run("crush", "PreToolUse", &payload("crush", "PreToolUse", &[("P", &p), ("TOOL", "view")]), &[], None);
    assert_eq!((o.stdout.as_str(), o.code), ("{}\n", 0));
    let t = lab.tmp.path().join("missing.jsonl");
    let stdin = payload("antigravity-cli", "Stop", &[("P", &p), ("TRANSCRIPT", t.to_str().unwrap())]);
    let o = lab.run("antigravity-cli", "Stop", &stdin, &[], None);
    assert_eq!((o.stdout.as_str(), o.code), ("", 0));
}

#[test]
fn a_fact_taught_in_each_harness_is_captured_and_recalled_in_the_same_project_only() {
    for spec in SPECS.iter().filter(|s| s.stop.is_some()) {
        let lab = Lab::new();
        let p = lab.p();
        // Devin names the project only in its environment.
        let env: &[(&str, &str)] = &[("DEVIN_PROJECT_DIR", &p)];
        if let Some(ev) = spec.prompt {
            lab.hook_env(spec.id, ev, &payload(spec.id, ev, &[("P", &p), ("PROMPT", FACT)]), env);
        }
        let ev = spec.stop.unwrap();
        lab.hook_env(spec.id, ev, &payload(spec.id, ev, &[("P", &p), ("REPLY", REPLY)]), env);
        let mems = lab.memories();
        assert_eq!(mems.len(), 1, "{}: {mems:?} / {}", spec.id, lab.log());
        let content = mems[0]["content"].as_str().unwrap();
        assert!(content.contains("User: Remember: the staging database"), "{}: {content}", spec.id);
        // Kiro's stop has no reply: the prompt alone is the memory.
        if spec.id != "kiro-cli" {
            assert!(content.contains("Assistant: Noted: port 5433."), "{}: {content}", spec.id);
        }
        assert_eq!(mems[0]["harness"], spec.id);
        // Goose and Windsurf send no project directory with prompts and stops: the bank is the
        // hook's working directory, the project here.
        assert_eq!(mems[0]["bank"], format!("project:{p}"), "{}", spec.id);

        let deep = lab.proj.join("src/deep");
        let d = deep.to_str().unwrap();
        if let Some(ev) = spec.prompt {
            let out = lab.run(
                spec.id,
                ev,
                &payload(spec.id, ev, &[("P", d), ("PROMPT", QUESTION)]),
                &[("DEVIN_PROJECT_DIR", d)],
                Some(&deep),
            );
            assert_eq!(out.code, 0);
            match injected(spec, ev, &out.stdout) {
                Some(ctx) => assert!(spec.injects_prompt && ctx.contains("5433"), "{}: {ctx}", spec.id),
                None => {
                    assert!(!spec.injects_prompt, "{}: nothing injected: {:?} / {}", spec.id, out.stdout, lab.log())
                }
            }
            let other = lab.other_project();
            let o = other.to_str().unwrap();
            let out = lab.run(
                spec.id,
                ev,
                &payload(spec.id, ev, &[("P", o), ("PROMPT", QUESTION)]),
                &[("DEVIN_PROJECT_DIR", o)],
                Some(&other),
            );
            assert_eq!(injected(spec, ev, &out.stdout), None, "{}: another project's memory leaked", spec.id);
        }
        if let Some(ev) = spec.start {
            let out = lab.hook_env(spec.id, ev, &payload(spec.id, ev, &[("P", &p)]), env);
            assert!(injected(spec, ev, &out).is_some_and(|c| c.contains("5433")), "{} {ev}: {out:?}", spec.id);
        }
    }
}

/// (harness, event, tool, input, exact stdout (`None`: empty, the reason on stderr), exit code)
type GuardCase = (&'static str, &'static str, &'static str, Value, Option<Value>, i32);

#[test]
fn each_harness_denies_a_memory_uri_in_its_own_shape_and_lets_ordinary_tools_run() {
    let lab = Lab::new();
    let p = lab.p();
    let hso = |e: &str| json!({"hookSpecificOutput": {"hookEventName": e, "permissionDecision": "deny", "permissionDecisionReason": "R"}});
    let cases: Vec<GuardCase> = vec![
        (
            "kiro-cli",
            "preToolUse",
            "fs_read",
            json!({"operations": [{"mode": "Line", "path": "viking://user/x.md"}]}),
            None,
            2,
        ),
        ("kiro-cli", "preToolUse", "execute_bash", json!({"command": "cat viking://user/x.md"}), None, 2),
        (
            "goose",
            "PreToolUse",
            "developer__shell",
            json!({"command": "cat ovmem://m/1"}),
            Some(json!({"decision": "block", "reason": "R"})),
            0,
        ),
        ("kimi-code", "PreToolUse", "Read", json!({"path": "viking://user/x.md"}), None, 2),
        ("kimi-code", "PreToolUse", "Bash", json!({"command": "head viking://user/x.md"}), None, 2),
        ("devin-cli", "PreToolUse", "exec", json!({"command": "cat viking://user/memories/profile.md"}), None, 2),
        ("devin-cli", "PreToolUse", "read", json!({"file_path": "viking://user/x.md"}), None, 2),
        ("zcode", "PreToolUse", "Read", json!({"file_path": "viking://user/x.md"}), Some(hso("PreToolUse")), 0),
        (
            "traecode",
            "PreToolUse",
            "RunCommand",
            json!({"command": "cat viking://user/x.md"}),
            Some(hso("PreToolUse")),
            0,
        ),
        (
            "grok-build",
            "PreToolUse",
            "read_file",
            json!({"target_file": "viking://user/x.md"}),
            Some(json!({"decision": "deny", "reason": "R"})),
            0,
        ),
        (
            "grok-build",
            "PreToolUse",
            "list_dir",
            json!({"target_directory": "viking://user/"}),
            Some(json!({"decision": "deny", "reason": "R"})),
            0,
        ),
        (
            "grok-build",
            "PreToolUse",
            "run_terminal_command",
            json!({"command": "cat viking://user/x.md"}),
            Some(json!({"decision": "deny", "reason": "R"})),
            0,
        ),
        ("crush", "PreToolUse", "view", json!({"file_path": "viking://user/x.md"}), Some(hso("PreToolUse")), 0),
        ("crush", "PreToolUse", "bash", json!({"command": "cat viking://user/x.md"}), Some(hso("PreToolUse")), 0),
    ];
    for (h, ev, tool, input, want, code) in cases {
        let stdin = payload(h, ev, &[("P", &p), ("TOOL", tool), ("TOOL_INPUT", &input.to_string())]);
        let o = lab.run(h, ev, &stdin, &[], None);
        assert_eq!(o.code, code, "{h} {tool}: {} / {}", o.stdout, o.stderr);
        match want {
            None => {
                assert_eq!(o.stdout, "", "{h} {tool}: an exit-2 deny prints nothing on stdout");
                assert!(
                    o.stderr.contains("memory") && o.stderr.contains("viking://"),
                    "{h}: the reason is on stderr: {}",
                    o.stderr
                );
            }
            Some(mut w) => {
                let v: Value = serde_json::from_str(&o.stdout).unwrap_or_else(|e| panic!("{h}: {e}: {}", o.stdout));
                // The reason's wording is the guard's; the shape is the harness's.
                let reason = ["/reason", "/hookSpecificOutput/permissionDecisionReason"]
                    .iter()
                    .find_map(|p| v.pointer(p))
                    .cloned();
                for p in ["/reason", "/hookSpecificOutput/permissionDecisionReason"] {
                    if let (Some(slot), Some(r)) = (w.pointer_mut(p), reason.clone()) {
                        *slot = r;
                    }
                }
                assert_eq!(v, w, "{h} {tool}");
            }
        }
        // The same tool on an ordinary path is left alone (and gets no memory: the store is empty).
        let ok = json!({"path": "src/main.rs", "file_path": "src/main.rs", "target_file": "src/main.rs", "command": "cat src/main.rs", "operations": [{"mode": "Line", "path": "src/main.rs"}]});
        let stdin = payload(h, ev, &[("P", &p), ("TOOL", tool), ("TOOL_INPUT", &ok.to_string())]);
        let o = lab.run(h, ev, &stdin, &[], None);
        assert_eq!(o.code, 0, "{h} {tool}");
        assert!(o.stdout.is_empty() || o.stdout == "{}\n", "{h} {tool}: {:?}", o.stdout);
    }
    // Windsurf's pre-hooks carry their arguments in `tool_info`.
    let stdin = payload("windsurf", "pre_read_code", &[("PATH", "viking://user/x.md")]);
    let o = lab.run("windsurf", "pre_read_code", &stdin, &[], None);
    assert_eq!((o.stdout.as_str(), o.code), ("", 2), "{}", o.stderr);
    let stdin = payload("windsurf", "pre_run_command", &[("P", &p), ("COMMAND", "cat viking://user/x.md")]);
    let o = lab.run("windsurf", "pre_run_command", &stdin, &[], None);
    assert_eq!((o.stdout.as_str(), o.code), ("", 2), "{}", o.stderr);
    let stdin = payload("windsurf", "pre_run_command", &[("P", &p), ("COMMAND", "grep -rn 'viking://' src/")]);
    assert_eq!(lab.hook("windsurf", "pre_run_command", &stdin), "");
}

#[test]
fn crush_gets_memory_once_per_session_with_its_first_tool_result() {
    let lab = Lab::new();
    let p = lab.p();
    // Crush has no prompt or stop event: what it recalls was captured elsewhere.
    let claude = json!({"session_id": "c1", "cwd": p, "prompt": FACT}).to_string();
    lab.hook("claude-code", "UserPromptSubmit", &claude);
    lab.hook(
        "claude-code",
        "Stop",
        &json!({"session_id": "c1", "cwd": p, "last_assistant_message": REPLY}).to_string(),
    );
    let stdin =
        payload("crush", "PreToolUse", &[("P", &p), ("TOOL", "view"), ("TOOL_INPUT", r#"{"file_path":"README.md"}"#)]);
    let first = lab.hook("crush", "PreToolUse", &stdin);
    let v: Value = serde_json::from_str(&first).unwrap();
    let ctx = v["hookSpecificOutput"]["additionalContext"].as_str().unwrap();
    assert!(ctx.contains("5433"), "{ctx}");
    assert_eq!(v, json!({"hookSpecificOutput": {"hookEventName": "PreToolUse", "additionalContext": ctx}}));
    assert!(!first.contains("\"allow\""), "never an allow: it would skip Crush's own permission prompt");
    assert_eq!(lab.hook("crush", "PreToolUse", &stdin), "{}\n");
}

#[test]
fn devin_takes_the_project_from_its_environment_and_claude_hooks_step_aside_while_devin_s_are_installed() {
    let lab = Lab::new();
    let p = lab.p();
    let elsewhere = lab.tmp.path().join("home");
    let env = [("DEVIN_PROJECT_DIR", p.as_str())];
    let stdin = payload("devin-cli", "UserPromptSubmit", &[("PROMPT", FACT)]);
    let o = lab.run("devin-cli", "UserPromptSubmit", &stdin, &env, Some(&elsewhere));
    assert_eq!(o.code, 0);
    let stop = payload("devin-cli", "Stop", &[("REPLY", REPLY)]);
    lab.run("devin-cli", "Stop", &stop, &env, Some(&elsewhere));
    let mems = lab.memories();
    assert_eq!(mems[0]["bank"], format!("project:{p}"), "the bank comes from DEVIN_PROJECT_DIR, not the hook's cwd");

    // Devin runs ~/.claude/settings.json hooks too, with its own payloads.
    let claude_stop =
        json!({"session_id": "ses_01JD8Z4M2Q7K", "hook_event_name": "Stop", "last_assistant_message": "Second reply."})
            .to_string();
    // Claude's hooks alone (devin-cli not installed): they are the only ones, so they run.
    lab.hook_env("claude-code", "Stop", &claude_stop, &env);
    assert_eq!(lab.memories().len(), 2);
    lab.installed("devin-cli");
    let claude_prompt = json!({"session_id": "x", "prompt": QUESTION}).to_string();
    let out = lab.hook_env("claude-code", "UserPromptSubmit", &claude_prompt, &env);
    assert_eq!(out, "{}\n", "claude-code's hook answers its no-op inside Devin");
    lab.hook_env(
        "claude-code",
        "Stop",
        &json!({"session_id": "y", "last_assistant_message": "Third."}).to_string(),
        &env,
    );
    assert_eq!(lab.memories().len(), 2, "nothing captured twice");
    assert!(lab.log().is_empty() || !lab.log().contains("\"error\""), "{}", lab.log());
    // Outside Devin, Claude Code's own hooks work as always.
    let cwd_claude = json!({"session_id": "z", "cwd": p, "prompt": QUESTION}).to_string();
    assert!(lab.hook("claude-code", "UserPromptSubmit", &cwd_claude).contains("5433"));
}

#[test]
fn grok_ignores_the_shutdown_stop_and_subagents_and_the_compat_hooks_step_aside() {
    let lab = Lab::new();
    let p = lab.p();
    let prompt = payload("grok-build", "UserPromptSubmit", &[("P", &p), ("PROMPT", FACT)]);
    assert_eq!(lab.hook("grok-build", "UserPromptSubmit", &prompt), "");
    let stop = payload("grok-build", "Stop", &[("P", &p), ("REPLY", REPLY)]);
    assert_eq!(lab.hook("grok-build", "Stop", &stop), "");
    assert_eq!(lab.memories().len(), 1);
    // The extra Stop Grok sends when the session closes, and a subagent's turn: not memories.
    let mut shutdown: Value = serde_json::from_str(&stop).unwrap();
    shutdown["reason"] = json!("channel_closed");
    shutdown["lastAssistantMessage"] = json!("Bye.");
    assert_eq!(lab.hook("grok-build", "Stop", &shutdown.to_string()), "");
    let mut sub: Value = serde_json::from_str(&stop).unwrap();
    sub["subagentType"] = json!("explore");
    sub["lastAssistantMessage"] = json!("Subagent notes.");
    assert_eq!(lab.hook("grok-build", "Stop", &sub.to_string()), "");
    assert_eq!(lab.memories().len(), 1, "{:?}", lab.memories());

    // Grok runs ~/.claude and ~/.cursor hooks too: with Grok's own installed, those step aside.
    lab.installed("grok-build");
    let env = [("GROK_HOOK_EVENT", "user_prompt_submit")];
    let claude = json!({"session_id": "g", "cwd": p, "prompt": QUESTION}).to_string();
    assert_eq!(lab.hook_env("claude-code", "UserPromptSubmit", &claude, &env), "{}\n");
    let cursor = json!({"conversation_id": "g", "workspace_roots": [p], "prompt": QUESTION}).to_string();
    assert_eq!(lab.hook_env("cursor", "beforeSubmitPrompt", &cursor, &env), "{\"continue\":true}\n");
    // Cursor running Claude's hooks (third-party configs): the same once Cursor's are installed.
    lab.installed("cursor");
    assert_eq!(lab.hook_env("claude-code", "UserPromptSubmit", &claude, &[("CURSOR_VERSION", "2.5.0")]), "{}\n");
    assert!(lab.hook("claude-code", "UserPromptSubmit", &claude).contains("5433"));
}

#[test]
fn zcode_captures_a_reply_stopped_on_twice_once() {
    let lab = Lab::new();
    let p = lab.p();
    lab.hook("zcode", "UserPromptSubmit", &payload("zcode", "UserPromptSubmit", &[("P", &p), ("PROMPT", FACT)]));
    let stop = payload("zcode", "Stop", &[("P", &p), ("REPLY", REPLY)]);
    assert_eq!(lab.hook("zcode", "Stop", &stop), "");
    assert_eq!(lab.hook("zcode", "Stop", &stop), "");
    let mems = lab.memories();
    assert_eq!(mems.len(), 1, "{mems:?}");
    assert!(mems[0]["content"].as_str().unwrap().contains("User: Remember"));
}

#[test]
fn kimi_reads_the_turn_from_its_wire_log_and_never_its_own_injection() {
    let lab = Lab::new();
    let p = lab.p();
    let kimi = lab.tmp.path().join("kimi-home");
    let wire =
        kimi.join("sessions/wd_acme_9f27d1b6c845/session_0b3f9c1e-7d2a-4c55-9a0e-2f6d1c8b9e10/agents/main/wire.jsonl");
    std::fs::create_dir_all(wire.parent().unwrap()).unwrap();
    // Another workspace directory first, without this session.
    std::fs::create_dir_all(kimi.join("sessions/wd_other_4b1c9e07a2f3")).unwrap();
    let lines = [
        json!({"type": "turn.prompt", "time": 1, "origin": {"kind": "user"}, "input": [{"type": "text", "text": "old question"}]}),
        json!({"type": "context.append_loop_event", "event": {"type": "content.part", "stepUuid": "s0", "part": {"type": "text", "text": "old answer"}}}),
        json!({"type": "turn.prompt", "time": 2, "origin": {"kind": "user"}, "input": [{"type": "text", "text": FACT}]}),
        json!({"type": "context.append_message", "message": {"role": "user", "content": "<hook_result hook_event=\"UserPromptSubmit\">\n<ovmem-memory>\nrecalled\n</ovmem-memory>\n</hook_result>"}, "origin": {"kind": "hook_result"}}),
        json!({"type": "turn.prompt", "time": 3, "origin": {"kind": "system_trigger"}, "input": [{"type": "text", "text": "subagent briefing"}]}),
        json!({"type": "context.append_loop_event", "event": {"type": "content.part", "stepUuid": "s1", "part": {"type": "think", "text": "thinking..."}}}),
        json!({"type": "context.append_loop_event", "event": {"type": "content.part", "stepUuid": "s1", "part": {"type": "text", "text": "Noted: port 5433."}}}),
        json!({"type": "context.append_loop_event", "event": {"type": "tool.call", "stepUuid": "s1", "name": "Read", "args": {"path": "x"}}}),
        json!({"type": "usage.record", "tokens": 12}),
    ];
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect::<String>() + "not json\n";
    std::fs::write(&wire, text).unwrap();
    let env = [("KIMI_CODE_HOME", kimi.to_str().unwrap())];
    let prompt = payload("kimi-code", "UserPromptSubmit", &[("P", &p), ("PROMPT", FACT)]);
    assert_eq!(lab.hook_env("kimi-code", "UserPromptSubmit", &prompt, &env), "", "no memory yet: empty stdout");
    let stop = payload("kimi-code", "Stop", &[("P", &p)]);
    assert_eq!(lab.hook_env("kimi-code", "Stop", &stop, &env), "");
    let mems = lab.memories();
    assert_eq!(mems.len(), 1, "{mems:?} / {}", lab.log());
    let content = mems[0]["content"].as_str().unwrap();
    assert!(
        content.contains("User: Remember: the staging") && content.contains("Assistant: Noted: port 5433."),
        "{content}"
    );
    assert!(
        !content.contains("recalled") && !content.contains("thinking") && !content.contains("briefing"),
        "{content}"
    );
    // The next prompt gets the memory as plain text, which Kimi wraps in <hook_result>.
    let ask = payload("kimi-code", "UserPromptSubmit", &[("P", &p), ("PROMPT", QUESTION)]);
    let out = lab.hook_env("kimi-code", "UserPromptSubmit", &ask, &env);
    assert!(
        out.starts_with("<ovmem-memory>\n") && out.ends_with("</ovmem-memory>\n") && out.contains("5433"),
        "{out:?}"
    );
}

#[test]
fn antigravity_reads_the_turn_from_the_transcript_it_names() {
    let lab = Lab::new();
    let p = lab.p();
    let t = lab.tmp.path().join("transcript_full.jsonl");
    let lines = [
        json!({"type": "USER_INPUT", "content": "earlier"}),
        json!({"type": "PLANNER_RESPONSE", "content": "earlier answer"}),
        json!({"type": "USER_INPUT", "content": FACT}),
        json!({"type": "TOOL_CALL", "content": "view_file"}),
        json!({"type": "PLANNER_RESPONSE", "text": REPLY}),
    ];
    std::fs::write(&t, lines.iter().map(|l| format!("{l}\n")).collect::<String>()).unwrap();
    let stdin = payload("antigravity-cli", "Stop", &[("P", &p), ("TRANSCRIPT", t.to_str().unwrap())]);
    assert_eq!(lab.hook("antigravity-cli", "Stop", &stdin), "");
    let mems = lab.memories();
    assert_eq!(mems.len(), 1, "{}", lab.log());
    let c = mems[0]["content"].as_str().unwrap();
    assert!(c.contains("User: Remember") && c.contains("Assistant: Noted: port 5433."), "{c}");
    assert_eq!(mems[0]["bank"], format!("project:{p}"));
    // The role/content shape other sources describe reads the same.
    let lab = Lab::new();
    let lines = [json!({"role": "user", "content": FACT}), json!({"role": "assistant", "content": REPLY})];
    std::fs::write(&t, lines.iter().map(|l| format!("{l}\n")).collect::<String>()).unwrap();
    let stdin = payload("antigravity-cli", "Stop", &[("P", &lab.p()), ("TRANSCRIPT", t.to_str().unwrap())]);
    lab.hook("antigravity-cli", "Stop", &stdin);
    assert_eq!(lab.memories().len(), 1);
}

#[test]
fn every_new_harness_answers_garbage_with_its_no_op() {
    let lab = Lab::new();
    for h in [
        "kiro-cli",
        "goose",
        "windsurf",
        "kimi-code",
        "antigravity-cli",
        "devin-cli",
        "zcode",
        "traecode",
        "grok-build",
        "crush",
    ] {
        let a = ovmem::harness::find(h).unwrap().adapter().unwrap();
        for event in a.events.keys() {
            for bytes in ["", "not json", "[1]", "{\"prompt\": {\"a\": 1}, \"tool_input\": 5}"] {
                let o = lab.run(h, event, bytes, &[], None);
                assert_eq!(o.code, 0, "{h} {event} {bytes:?}");
                let want = ovmem::runtime::encode::noop(&a, event);
                let want = if want.is_empty() { want } else { format!("{want}\n") };
                assert_eq!(o.stdout, want, "{h} {event} {bytes:?}");
            }
        }
    }
}
