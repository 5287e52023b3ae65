//! The harnesses added with issue 12, from their fixtures, without their CLIs: each one's real stdin
//! shapes (tests/fixtures/payloads/<id>.jsonl, captured from the CLIs or built from their documented
//! plugin APIs) fed to the built binary must give exactly the stdout (and exit code) that harness
//! accepts; and each one's config files (tests/fixtures/<id>/) must install and uninstall byte for
//! byte. Plugin-file harnesses own one whole file: never written over a user's, removed exactly.
#![cfg(unix)]

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::{json, Value};

const OVMEM: &str = env!("CARGO_BIN_EXE_ovmem");
const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures");
const FACT: &str = "Remember: the staging database listens on port 5433 and integration tests must use it.";
const QUESTION: &str = "Which port does the staging database use for integration tests?";
const URI: &str = "viking://user/memories/profile.md";

struct Home {
    tmp: tempfile::TempDir,
}

struct Answer {
    stdout: String,
    stderr: String,
    code: i32,
}

impl Home {
    fn new() -> Self {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(tmp.path().join("proj/.git")).unwrap();
        Self { tmp }
    }

    fn path(&self) -> &Path {
        self.tmp.path()
    }

    fn proj(&self) -> PathBuf {
        self.path().join("proj")
    }

    fn put(&self, rel: &str, bytes: &[u8]) -> PathBuf {
        let p = self.path().join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, bytes).unwrap();
        p
    }

    fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new(OVMEM);
        c.args(args)
            .env_clear()
            .env("HOME", self.path())
            .env("PATH", "/usr/bin:/bin")
            .env("NO_COLOR", "1")
            .current_dir(self.proj())
            .stdin(Stdio::null());
        c
    }

    fn ok(&self, args: &[&str]) -> String {
        let out = self.cmd(args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "ovmem {args:?} exited {:?}:\n{err}", out.status.code());
        err
    }

    fn hook(&self, harness: &str, event: &str, stdin: &str) -> Answer {
        let mut child = self
            .cmd(&["hook", harness, event])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(stdin.as_bytes()).unwrap();
        let out = child.wait_with_output().unwrap();
        Answer {
            stdout: String::from_utf8(out.stdout).unwrap(),
            stderr: String::from_utf8(out.stderr).unwrap(),
            code: out.status.code().unwrap_or(-1),
        }
    }

    fn memories(&self) -> String {
        let out = self.cmd(&["memory", "list", "--all"]).output().unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Every file under the home: path -> bytes.
    fn tree(&self) -> BTreeMap<PathBuf, Vec<u8>> {
        let mut m = BTreeMap::new();
        walk(self.path(), &mut m);
        m
    }

    /// Every directory under the home.
    fn dirs(&self) -> Vec<PathBuf> {
        let mut v = Vec::new();
        walk_dirs(self.path(), &mut v);
        v.sort();
        v
    }
}

fn walk(dir: &Path, out: &mut BTreeMap<PathBuf, Vec<u8>>) {
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        let meta = std::fs::symlink_metadata(&p).unwrap();
        if meta.is_dir() {
            walk(&p, out);
        } else {
            out.insert(p.clone(), std::fs::read(&p).unwrap());
        }
    }
}

fn walk_dirs(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if std::fs::symlink_metadata(&p).unwrap().is_dir() {
            out.push(p.clone());
            walk_dirs(&p, out);
        }
    }
}

/// The fixture payload of (harness, event), `$VARS` filled in (JSON-escaped; `$TOOL_INPUT` raw).
fn payload(harness: &str, event: &str, vars: &[(&str, &str)]) -> String {
    let text = std::fs::read_to_string(format!("{FIXTURES}/payloads/{harness}.jsonl")).unwrap();
    let line = text
        .lines()
        .find(|l| l.contains(&format!("\"event\":\"{event}\"")))
        .unwrap_or_else(|| panic!("no {event} payload for {harness}"));
    let mut s = line.to_string();
    let mut vars: Vec<(&str, &str)> = vars.to_vec();
    vars.sort_by_key(|(k, _)| std::cmp::Reverse(k.len()));
    for (k, v) in vars {
        let value = if k == "TOOL_INPUT" {
            v.to_string()
        } else {
            serde_json::to_string(v).unwrap().trim_matches('"').to_string()
        };
        s = s.replace(&format!("${k}"), &value);
    }
    for (k, v) in [("$TOOL_INPUT", "{}"), ("$TRANSCRIPT", ""), ("$PROMPT", ""), ("$REPLY", ""), ("$TOOL", "")] {
        s = s.replace(k, v);
    }
    let v: Value = serde_json::from_str(&s).unwrap_or_else(|e| panic!("{harness} {event}: {e}: {s}"));
    v["stdin"].to_string()
}

/// What each new harness's events are called, and how it is taught a turn.
struct Case {
    id: &'static str,
    start: &'static str,
    prompt: &'static str,
    stop: &'static str,
    guard: &'static str,
    /// A file tool of the harness and its path parameter.
    read: (&'static str, &'static str),
    /// The stop event gives no reply: the turn comes from a transcript in this format.
    transcript: Option<fn(&str, &str) -> String>,
}

fn droid_transcript(prompt: &str, reply: &str) -> String {
    [
        json!({"type": "session_start", "id": "s"}),
        json!({"type": "message", "message": {"role": "user", "content": [{"type": "text", "text": prompt}]}}),
        json!({"type": "message", "message": {"role": "user", "content": [], "hookEventName": "Stop"}}),
        json!({"type": "message", "message": {"role": "assistant", "content": [{"type": "text", "text": reply}]}}),
    ]
    .iter()
    .map(|l| l.to_string() + "\n")
    .collect()
}

fn copilot_transcript(prompt: &str, reply: &str) -> String {
    [
        json!({"type": "session.start", "data": {"sessionId": "s"}}),
        json!({"type": "user.message", "data": {"content": prompt, "transformedContent": format!("<current_datetime>x</current_datetime>\n\n{prompt}")}}),
        json!({"type": "assistant.message", "data": {"messageId": "m", "content": reply, "toolRequests": []}}),
        json!({"type": "hook.start", "data": {"hookType": "agentStop"}}),
    ]
    .iter()
    .map(|l| l.to_string() + "\n")
    .collect()
}

const CASES: &[Case] = &[
    Case {
        id: "opencode",
        start: "session.created",
        prompt: "chat.message",
        stop: "session.idle",
        guard: "tool.execute.before",
        read: ("read", "filePath"),
        transcript: None,
    },
    Case {
        id: "kilo-code",
        start: "session.created",
        prompt: "chat.message",
        stop: "session.idle",
        guard: "tool.execute.before",
        read: ("read", "filePath"),
        transcript: None,
    },
    Case {
        id: "pi",
        start: "session_start",
        prompt: "before_agent_start",
        stop: "agent_end",
        guard: "tool_call",
        read: ("read", "path"),
        transcript: None,
    },
    Case {
        id: "amp",
        start: "session.start",
        prompt: "agent.start",
        stop: "agent.end",
        guard: "tool.call",
        read: ("Read", "path"),
        transcript: None,
    },
    Case {
        id: "qwen-code",
        start: "SessionStart",
        prompt: "UserPromptSubmit",
        stop: "Stop",
        guard: "PreToolUse",
        read: ("read_file", "file_path"),
        transcript: None,
    },
    Case {
        id: "copilot-cli",
        start: "sessionStart",
        prompt: "userPromptSubmitted",
        stop: "agentStop",
        guard: "preToolUse",
        read: ("view", "path"),
        transcript: Some(copilot_transcript),
    },
    Case {
        id: "factory-droid",
        start: "SessionStart",
        prompt: "UserPromptSubmit",
        stop: "Stop",
        guard: "PreToolUse",
        read: ("LS", "directory_path"),
        transcript: Some(droid_transcript),
    },
    Case {
        id: "codebuddy",
        start: "SessionStart",
        prompt: "UserPromptSubmit",
        stop: "Stop",
        guard: "PreToolUse",
        read: ("Read", "file_path"),
        transcript: None,
    },
    Case {
        id: "letta-code",
        start: "SessionStart",
        prompt: "UserPromptSubmit",
        stop: "Stop",
        guard: "PreToolUse",
        read: ("Read", "file_path"),
        transcript: None,
    },
    Case {
        id: "auggie",
        start: "SessionStart",
        prompt: "PromptSubmit",
        stop: "Stop",
        guard: "PreToolUse",
        read: ("view", "path"),
        transcript: None,
    },
];

/// The exact answer a harness takes for injected `ctx` on `event`.
fn expected_inject(id: &str, event: &str, ctx: &str) -> String {
    match id {
        "copilot-cli" => json!({"additionalContext": ctx}).to_string() + "\n",
        "letta-code" => format!("{ctx}\n"),
        _ => json!({"hookSpecificOutput": {"hookEventName": event, "additionalContext": ctx}}).to_string() + "\n",
    }
}

fn no_op(id: &str) -> &'static str {
    if id == "letta-code" {
        ""
    } else {
        "{}\n"
    }
}

/// The recalled block inside an answer, whatever the encoder.
fn context_of(id: &str, out: &str) -> Option<String> {
    if id == "letta-code" {
        return (!out.trim().is_empty()).then(|| out.trim_end().to_string());
    }
    let v: Value = serde_json::from_str(out).unwrap_or_else(|e| panic!("{id}: not JSON ({e}): {out}"));
    v["additionalContext"].as_str().or(v["hookSpecificOutput"]["additionalContext"].as_str()).map(String::from)
}

/// Teach a fact through the harness's own prompt and stop events, then check every answer exactly:
/// start and prompt inject (or not, for Auggie), stop and harmless tools are the no-op, a memory URI
/// is denied in the harness's own form.
#[test]
fn every_new_harness_answers_in_its_own_format() {
    for c in CASES {
        let home = Home::new();
        let p = home.proj();
        let p = p.to_str().unwrap();
        let id = c.id;
        let out = home.hook(id, c.prompt, &payload(id, c.prompt, &[("P", p), ("PROMPT", FACT)]));
        assert_eq!((out.stdout.as_str(), out.code), (no_op(id), 0), "{id}: a first prompt recalls nothing");
        let stop = match c.transcript {
            Some(make) => {
                let t = home.put("transcript.jsonl", make(FACT, "Noted: port 5433.").as_bytes());
                payload(id, c.stop, &[("P", p), ("TRANSCRIPT", t.to_str().unwrap())])
            }
            None => payload(id, c.stop, &[("P", p), ("PROMPT", FACT), ("REPLY", "Noted: port 5433.")]),
        };
        let out = home.hook(id, c.stop, &stop);
        assert_eq!((out.stdout.as_str(), out.code), (no_op(id), 0), "{id} {}", c.stop);
        let mems = home.memories();
        assert!(mems.contains("Remember: the staging database") && mems.contains("Noted: port 5433."), "{id}: {mems}");

        // The prompt before the session start: a session start other than a resume begins a
        // fresh context (the fixtures share one session id), so both inject the memory.
        let prompt = home.hook(id, c.prompt, &payload(id, c.prompt, &[("P", p), ("PROMPT", QUESTION)]));
        let start = home.hook(id, c.start, &payload(id, c.start, &[("P", p)]));
        for (ev, out) in [(c.start, &start), (c.prompt, &prompt)] {
            assert_eq!(out.code, 0, "{id} {ev}");
            if id == "auggie" {
                // Auggie does not wait for these hooks: nothing to say there.
                assert_eq!(out.stdout, "{}\n", "{id} {ev}");
                continue;
            }
            let ctx =
                context_of(id, &out.stdout).unwrap_or_else(|| panic!("{id} {ev}: nothing injected: {}", out.stdout));
            assert!(ctx.starts_with("<ovmem-memory>\n") && ctx.contains("5433"), "{id} {ev}: {ctx}");
            assert_eq!(out.stdout, expected_inject(id, ev, &ctx), "{id} {ev}");
        }

        let (tool, key) = c.read;
        let harmless = json!({ key: "src/main.rs" }).to_string();
        let vars = |input: &str| payload(id, c.guard, &[("P", p), ("TOOL", tool), ("TOOL_INPUT", input)]);
        let out = home.hook(id, c.guard, &vars(&harmless));
        assert_eq!((out.stdout.as_str(), out.code), (no_op(id), 0), "{id}: a harmless {tool} is allowed");
        let out = home.hook(id, c.guard, &vars(&json!({ key: URI }).to_string()));
        let reason = match id {
            "letta-code" => {
                assert_eq!((out.stdout.as_str(), out.code), ("", 2), "{id}: exit 2, nothing on stdout");
                out.stderr.trim_end().to_string()
            }
            "copilot-cli" => {
                let v: Value = serde_json::from_str(&out.stdout).unwrap();
                assert_eq!(v.as_object().unwrap().len(), 2, "{id}: flat keys only: {v}");
                assert_eq!(v["permissionDecision"], "deny");
                v["permissionDecisionReason"].as_str().unwrap().to_string()
            }
            _ => {
                let v: Value = serde_json::from_str(&out.stdout).unwrap();
                let h = &v["hookSpecificOutput"];
                assert_eq!(
                    (h["hookEventName"].as_str(), h["permissionDecision"].as_str()),
                    (Some(c.guard), Some("deny"))
                );
                assert_eq!(v.as_object().unwrap().len(), 1, "{id}: {v}");
                h["permissionDecisionReason"].as_str().unwrap().to_string()
            }
        };
        assert!(reason.contains(URI) && reason.contains("memory URI"), "{id}: {reason}");
        assert_eq!(out.code == 2, id == "letta-code", "{id}: only an exit-2 harness exits 2");
    }
}

/// Auggie reads context only from PostToolUse: memory goes there, once per session, and the
/// guard event never injects (it would spend the session's one injection on a hook whose context
/// is dropped).
#[test]
fn auggie_injects_once_after_a_tool() {
    let home = Home::new();
    let p = home.proj();
    let p = p.to_str().unwrap();
    let stop = payload("auggie", "Stop", &[("P", p), ("PROMPT", FACT), ("REPLY", "Noted: port 5433.")]);
    home.hook("auggie", "Stop", &stop);
    let input = json!({"type": "file", "path": "notes.txt"}).to_string();
    let pre = home.hook(
        "auggie",
        "PreToolUse",
        &payload("auggie", "PreToolUse", &[("P", p), ("TOOL", "view"), ("TOOL_INPUT", &input)]),
    );
    assert_eq!(pre.stdout, "{}\n");
    let post = payload("auggie", "PostToolUse", &[("P", p), ("TOOL", "view"), ("TOOL_INPUT", &input)]);
    let first = home.hook("auggie", "PostToolUse", &post);
    let ctx = context_of("auggie", &first.stdout).expect("memory after the first tool");
    assert!(ctx.contains("5433"), "{ctx}");
    assert_eq!(first.stdout, expected_inject("auggie", "PostToolUse", &ctx));
    assert_eq!(home.hook("auggie", "PostToolUse", &post).stdout, "{}\n", "injected twice in one session");
}

/// Qwen Code fires UserPromptSubmit again on every tool-result continuation, with an empty prompt:
/// the answer is the no-op, and nothing is buffered.
#[test]
fn qwen_continuations_inject_nothing() {
    let home = Home::new();
    let p = home.proj();
    let p = p.to_str().unwrap();
    home.hook("qwen-code", "Stop", &payload("qwen-code", "Stop", &[("P", p), ("REPLY", FACT)]));
    let out = home.hook("qwen-code", "UserPromptSubmit", &payload("qwen-code", "UserPromptSubmit", &[("P", p)]));
    assert_eq!(out.stdout, "{}\n");
}

/// Config files of the JSON harnesses, hand-edited: install adds ovmem's entries (hooks and the
/// MCP server, in one file or two), a second install changes nothing, uninstall gives every byte back.
#[test]
fn json_harness_configs_round_trip_byte_for_byte() {
    // harness -> (fixture dir's files -> where they go in the home)
    let cases: &[(&str, &[(&str, &str)])] = &[
        ("qwen-code", &[("settings.json", ".qwen/settings.json")]),
        ("copilot-cli", &[("mcp-config.json", ".copilot/mcp-config.json")]),
        ("factory-droid", &[("settings.json", ".factory/settings.json"), ("mcp.json", ".factory/mcp.json")]),
        ("codebuddy", &[("settings.json", ".codebuddy/settings.json"), ("mcp.json", ".codebuddy/mcp.json")]),
        ("letta-code", &[("settings.json", ".letta/settings.json")]),
        ("auggie", &[("settings.json", ".augment/settings.json")]),
        ("opencode", &[("opencode.json", ".config/opencode/opencode.json")]),
        ("kilo-code", &[("kilo.json", ".config/kilo/kilo.json")]),
    ];
    for (id, files) in cases {
        let home = Home::new();
        let mut placed = Vec::new();
        for (name, rel) in files.iter() {
            let bytes = std::fs::read(Path::new(FIXTURES).join(id).join(name))
                .unwrap_or_else(|e| panic!("fixture {id}/{name}: {e}"));
            placed.push((home.put(rel, &bytes), bytes));
        }
        let before = home.tree();
        home.ok(&["install", "--harness", id]);
        let mut shown = String::new();
        for (path, _) in &placed {
            let text = std::fs::read_to_string(path).unwrap();
            shown.push_str(&format!("== {}\n{}\n", path.strip_prefix(home.path()).unwrap().display(), text));
            assert!(text.contains("/.ovmem/bin/ovmem"), "{id}: nothing of ovmem's in {}", path.display());
        }
        insta::assert_snapshot!(
            format!("fixture_installed__{id}"),
            shown.replace(&home.path().display().to_string(), "[HOME]")
        );
        let installed = home.tree();
        let again = home.ok(&["install", "--harness", id]);
        assert!(again.contains("already installed"), "{id}: {again}");
        assert_eq!(home.tree(), installed, "{id}: a second install changed files");
        home.ok(&["uninstall", "--harness", id, "--yes"]);
        for (path, bytes) in &placed {
            assert_eq!(&std::fs::read(path).unwrap(), bytes, "{id}: {} not restored byte for byte", path.display());
        }
        let after = home.tree();
        let left: Vec<&PathBuf> = after.keys().filter(|k| !before.contains_key(*k)).collect();
        assert!(left.is_empty(), "{id}: uninstall left files behind: {left:?}");
    }
}

/// The plugin-file harnesses at both scopes, in a fresh home: one module created (with the
/// directories it needs), nothing else; uninstall leaves the tree as it was, directories included.
#[test]
fn plugin_files_are_created_and_removed_exactly() {
    let cases = [
        ("opencode", ".config/opencode/plugin/ovmem.js", ".opencode/plugin/ovmem.js"),
        ("kilo-code", ".config/kilo/plugin/ovmem.js", ".kilo/plugin/ovmem.js"),
        ("pi", ".pi/agent/extensions/ovmem.ts", ".pi/extensions/ovmem.ts"),
        ("amp", ".config/amp/plugins/ovmem.ts", ".amp/plugins/ovmem.ts"),
    ];
    for (id, user, project) in cases {
        let home = Home::new();
        // The harness's own config dir exists already, with a file of the user's.
        let mine = home
            .put(&format!("{}/notes.txt", Path::new(user).parent().unwrap().parent().unwrap().display()), b"mine\n");
        let files = home.tree();
        let dirs = home.dirs();
        home.ok(&["install", "--harness", id]);
        let p = home.proj();
        home.ok(&["install", "--harness", id, "--project", p.to_str().unwrap()]);
        for rel in [home.path().join(user), p.join(project)] {
            let text = std::fs::read_to_string(&rel).unwrap_or_else(|e| panic!("{id}: {}: {e}", rel.display()));
            assert!(text.starts_with(&format!("// ovmem-plugin {id}\n")), "{id}");
            assert_eq!(
                ovmem::install::plugin_file::plugin_runtime(&text, id),
                Some(home.path().join(".ovmem/bin/ovmem"))
            );
            let mode = std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&rel).unwrap().permissions());
            assert_eq!(mode & 0o777, 0o644, "{id}: a module, not an executable");
        }
        home.ok(&["uninstall", "--harness", id, "--yes"]);
        home.ok(&["uninstall", "--harness", id, "--project", p.to_str().unwrap(), "--yes"]);
        let now: Vec<PathBuf> =
            home.tree().into_keys().filter(|k| !k.starts_with(home.path().join(".ovmem"))).collect();
        assert_eq!(now, files.keys().cloned().collect::<Vec<_>>(), "{id}: files left behind");
        let now_dirs: Vec<PathBuf> =
            home.dirs().into_iter().filter(|k| !k.starts_with(home.path().join(".ovmem"))).collect();
        assert_eq!(now_dirs, dirs, "{id}: directories left behind");
        assert_eq!(std::fs::read(&mine).unwrap(), b"mine\n");
    }
}

/// A file of the user's at ovmem's plugin path is never written over: install says so and leaves
/// it; uninstall leaves it too.
#[test]
fn a_users_own_plugin_file_is_never_overwritten() {
    let home = Home::new();
    let theirs = b"// my own opencode plugin\nexport const Mine = async () => ({});\n";
    let path = home.put(".config/opencode/plugin/ovmem.js", theirs);
    let out = home.cmd(&["install", "--harness", "opencode"]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("is not ovmem's"), "{err}");
    assert_eq!(std::fs::read(&path).unwrap(), theirs);
    home.ok(&["uninstall", "--harness", "opencode", "--yes"]);
    assert_eq!(std::fs::read(&path).unwrap(), theirs);
    // Even one that looks like ovmem's but names no runtime exactly.
    let fake = b"// ovmem-plugin opencode\nconst OVMEM_BIN = '/x/bin/ovmem';\n";
    std::fs::write(&path, fake).unwrap();
    let _ = home.cmd(&["install", "--harness", "opencode"]).output().unwrap();
    home.ok(&["uninstall", "--harness", "opencode", "--yes"]);
    assert_eq!(std::fs::read(&path).unwrap(), fake);
}

/// ovmem's plugin edited by hand is reported and kept (uninstall too) unless --force; a lost receipt
/// is rebuilt from the marker, so uninstall still removes the file.
#[test]
fn an_edited_plugin_is_kept_and_a_lost_receipt_is_rebuilt() {
    let home = Home::new();
    home.ok(&["install", "--harness", "pi"]);
    let path = home.path().join(".pi/agent/extensions/ovmem.ts");
    let mut text = std::fs::read_to_string(&path).unwrap();
    text.push_str("// my tweak\n");
    std::fs::write(&path, &text).unwrap();
    let err = home.ok(&["install", "--harness", "pi"]);
    assert!(err.contains("edited since install"), "{err}");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
    home.ok(&["uninstall", "--harness", "pi", "--yes"]);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), text, "a hand edit was removed without --force");
    home.ok(&["uninstall", "--harness", "pi", "--yes", "--force"]);
    assert!(!path.exists());

    home.ok(&["install", "--harness", "pi"]);
    std::fs::remove_dir_all(home.path().join(".ovmem/receipts")).unwrap();
    home.ok(&["uninstall", "--harness", "pi", "--yes"]);
    assert!(!path.exists(), "the plugin was not found by its marker");
}

/// Another live ovmem home's plugin is refused (exit 2), not taken over silently.
#[test]
fn another_homes_plugin_is_refused() {
    let home = Home::new();
    let other = home.path().join("other-home");
    let out = home.cmd(&["install", "--harness", "opencode"]).env("OVMEM_HOME", &other).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let path = home.path().join(".config/opencode/plugin/ovmem.js");
    let theirs = std::fs::read(&path).unwrap();
    let out = home.cmd(&["install", "--harness", "opencode"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("another ovmem home"));
    assert_eq!(std::fs::read(&path).unwrap(), theirs);
}
