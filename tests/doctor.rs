//! `ovmem doctor` through the built binary, against throwaway homes: a healthy install passes for
//! every harness, and each way a hook can silently not work is caught (a deleted runtime, broken
//! output, a hook slower than its timeout, a duplicate, drift, a broken MCP entry, an untrusted
//! Codex hook with the real Codex app-server), while the user's own store is never touched.
#![cfg(unix)]

mod common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::{stderr, Home};
use serde_json::Value;

fn doctor(home: &Home, args: &[&str]) -> (i32, Value) {
    let mut all = vec!["doctor", "--json"];
    all.extend_from_slice(args);
    let out = home.run(&all);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!("doctor --json printed no JSON ({e}): {}\n{}", String::from_utf8_lossy(&out.stdout), stderr(&out))
    });
    (out.status.code().unwrap_or(-1), v)
}

fn hooks(v: &Value, harness: &str) -> Vec<Value> {
    v["targets"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["harness"] == harness)
        .flat_map(|t| t["hooks"].as_array().unwrap().clone())
        .collect()
}

fn hook(v: &Value, harness: &str, event: &str) -> Value {
    hooks(v, harness).into_iter().find(|h| h["event"] == event).unwrap_or_else(|| panic!("no {harness} {event}: {v:#}"))
}

fn runtime(home: &Home) -> PathBuf {
    home.path().join(".ovmem/bin/ovmem")
}

/// Edits the JSON file at `rel` in the home.
fn edit_json(home: &Home, rel: &str, f: impl FnOnce(&mut Value)) {
    let p = home.path().join(rel);
    let mut v: Value = serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
    f(&mut v);
    std::fs::write(&p, serde_json::to_string_pretty(&v).unwrap()).unwrap();
}

#[test]
fn a_healthy_install_passes_for_every_harness() {
    for h in ovmem::harness::all() {
        let home = Home::new();
        let proj = home.path().join("proj");
        std::fs::create_dir_all(proj.join(".git")).unwrap();
        // A harness with no user scope is installed into a project.
        let at: Vec<&str> =
            if h.manifest.scopes.user.is_some() { vec![] } else { vec!["--project", proj.to_str().unwrap()] };
        // A harness that runs hooks only from files the user made (Kiro's agents) gets one.
        let scope = if at.is_empty() { h.manifest.scopes.user.as_ref() } else { h.manifest.scopes.project.as_ref() };
        if let Some(glob) = scope.and_then(|s| s.files_glob.as_deref()) {
            let rel = glob.split_once(":-~/").map(|(_, r)| r.replacen('}', "", 1)).unwrap_or_else(|| glob.into());
            let file = if at.is_empty() {
                home.path().join(rel.replace('*', "dev"))
            } else {
                PathBuf::from(glob.replace("{{PROJECT}}", proj.to_str().unwrap()).replace('*', "dev"))
            };
            std::fs::create_dir_all(file.parent().unwrap()).unwrap();
            std::fs::write(&file, "{\"name\": \"dev\"}\n").unwrap();
        }
        home.ok(&[&["install", "--harness", h.id()][..], &at].concat());
        let (code, v) = doctor(&home, &at);
        let target = v["targets"].as_array().unwrap().iter().find(|t| t["harness"] == h.id()).unwrap().clone();
        assert_eq!(v["version"], 1);
        if h.manifest.trust.is_some() {
            // Its binary is not on this PATH: whether it trusts the hooks is unknown, and that is
            // a problem with the one command that fixes it, never "healthy".
            assert_eq!(code, 1, "{}: {v:#}", h.id());
            assert_eq!(target["trust"]["state"], "unknown", "{target:#}");
            let problems = target["problems"].as_array().unwrap();
            let want = format!("`ovmem install --harness {}` trusts them", h.id());
            assert!(problems.iter().any(|p| p.as_str().unwrap().contains(&want)), "{target:#}");
            assert_eq!(problems.len(), 1, "trust is the only problem: {target:#}");
        } else {
            assert_eq!(code, 0, "{}: {v:#}", h.id());
            assert_eq!(v["ok"], true, "{}", h.id());
        }
        if target["skipped"].is_string() {
            // Loaded in-process (a plugin): nothing to run, and it says so.
            assert!(target["hooks"].as_array().unwrap().is_empty(), "{target:#}");
            continue;
        }
        let hs = hooks(&v, h.id());
        assert_eq!(hs.len(), h.manifest.hooks.len(), "{}: every installed hook is run: {v:#}", h.id());
        for x in &hs {
            assert_eq!(x["status"], "ok", "{}: {x:#}", h.id());
            assert_eq!(x["exit_code"], 0, "{}: {x:#}", h.id());
            assert!(x["latency_ms"].as_u64().unwrap() < x["timeout_ms"].as_u64().unwrap(), "{x:#}");
        }
        // Start and prompt hooks injected the project's memory; stop hooks stored the turn.
        let base = h.adapter().unwrap();
        for x in &hs {
            let e = x["event"].as_str().unwrap();
            // Judged as the variant the doctor's payload reads as (Cline's CLI or VS Code bundles).
            let variant = x["variant"].as_str().map(|n| base.variants.iter().position(|v| v.name == n).unwrap());
            let a = base.for_variant(variant);
            match a.events[e] {
                ovmem::harness::Canonical::SessionStart | ovmem::harness::Canonical::Prompt
                    if a.inject_events.iter().any(|i| i == e) =>
                {
                    assert_eq!(x["recalled"], true, "{}: {x:#}", h.id())
                }
                // A harness that sends neither its reply nor a transcript (Kimi's wire log, Kiro,
                // Crush) is not checked for capture.
                ovmem::harness::Canonical::Stop if !a.fields.reply.is_empty() || !a.fields.transcript.is_empty() => {
                    assert_eq!(x["captured"], true, "{}: {x:#}", h.id())
                }
                _ => {}
            }
        }
        let user_mcp = h.manifest.scopes.user.as_ref().is_some_and(|u| u.mcp_file.is_some());
        if h.manifest.mcp_template.is_some() && user_mcp && at.is_empty() {
            assert_eq!(target["mcp"]["status"], "ok", "{}: {target:#}", h.id());
            assert!(target["mcp"]["tools"].as_array().unwrap().iter().any(|t| t == "memory_search"));
        }
        assert_eq!(v["backend"]["status"], "skipped");
    }
}

#[test]
fn the_user_s_store_logs_and_spool_are_never_touched() {
    let home = Home::new();
    home.ok(&["install", "--harness", "claude-code,codex"]);
    home.ok(&["memory", "add", "The staging database listens on port 5433"]);
    let ovmem_home = home.path().join(".ovmem");
    let before = common::tree(&ovmem_home);
    let (code, v) = doctor(&home, &[]);
    // Codex is not on this PATH: its trust is unknown, the one problem.
    assert_eq!((code, v["problems"].as_u64()), (1, Some(1)), "{v:#}");
    assert_eq!(common::tree_diff(&before, &common::tree(&ovmem_home)), Vec::<String>::new());
    let list = home.ok(&["memory", "list", "--all"]);
    let text = String::from_utf8_lossy(&list.stdout);
    assert!(text.contains("5433") && !text.contains("doctor"), "{text}");
}

#[test]
fn a_deleted_runtime_fails_every_hook_with_127() {
    let home = Home::new();
    home.ok(&["install", "--harness", "claude-code,cline"]);
    std::fs::remove_file(runtime(&home)).unwrap();
    let (code, v) = doctor(&home, &[]);
    assert_eq!(code, 1, "{v:#}");
    assert_eq!(v["runtime"]["present"], false);
    for h in hooks(&v, "claude-code").iter().chain(hooks(&v, "cline").iter()) {
        assert_eq!(h["status"], "failed", "{h:#}");
        assert_eq!(h["exit_code"], 127, "{h:#}");
    }
    let mcp = &v["targets"][0]["mcp"];
    assert_eq!(mcp["status"], "failed", "{mcp:#}");
    // The text report says what to do.
    let out = home.run(&["doctor"]);
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("exit 127") && text.contains("ovmem install"), "{text}");
}

#[test]
fn a_hook_edited_to_print_garbage_is_caught() {
    let home = Home::new();
    home.ok(&["install", "--harness", "claude-code"]);
    let rt = runtime(&home);
    edit_json(&home, ".claude/settings.json", |v| {
        v["hooks"]["Stop"][0]["hooks"][0]["command"] =
            format!("{} hook claude-code Stop; echo garbage", rt.display()).into();
    });
    let (code, v) = doctor(&home, &[]);
    assert_eq!(code, 1, "{v:#}");
    let stop = hook(&v, "claude-code", "Stop");
    assert_eq!(stop["owner"], "edited", "{stop:#}");
    assert_eq!(stop["status"], "failed", "{stop:#}");
    assert!(stop["problem"].as_str().unwrap().contains("invalid output"), "{stop:#}");
    assert_eq!(hook(&v, "claude-code", "SessionStart")["status"], "ok");
}

#[test]
fn a_runtime_that_prints_invalid_json_is_caught() {
    use std::os::unix::fs::PermissionsExt;
    let home = Home::new();
    home.ok(&["install", "--harness", "codex,gemini-cli"]);
    let rt = runtime(&home);
    std::fs::write(&rt, "#!/bin/sh\ncat >/dev/null\necho '{\"hookSpecificOutput\": '\n").unwrap();
    std::fs::set_permissions(&rt, std::fs::Permissions::from_mode(0o700)).unwrap();
    let (code, v) = doctor(&home, &[]);
    assert_eq!(code, 1);
    for h in hooks(&v, "codex").iter().chain(hooks(&v, "gemini-cli").iter()) {
        assert_eq!(h["status"], "failed", "{h:#}");
        assert_eq!(h["exit_code"], 0, "{h:#}");
        assert!(h["problem"].as_str().unwrap().contains("not JSON"), "{h:#}");
    }
}

#[test]
fn a_hook_slower_than_its_timeout_is_stopped_there() {
    let home = Home::new();
    home.ok(&["install", "--harness", "claude-code"]);
    let rt = runtime(&home);
    edit_json(&home, ".claude/settings.json", |v| {
        let h = &mut v["hooks"]["UserPromptSubmit"][0]["hooks"][0];
        h["command"] = format!("sleep 30; {} hook claude-code UserPromptSubmit", rt.display()).into();
        h["timeout"] = 1.into();
    });
    let started = Instant::now();
    let (code, v) = doctor(&home, &[]);
    assert!(started.elapsed() < Duration::from_secs(10), "doctor waited past the hook's timeout");
    assert_eq!(code, 1);
    let h = hook(&v, "claude-code", "UserPromptSubmit");
    assert_eq!(h["status"], "timed-out", "{h:#}");
    assert_eq!(h["timeout_ms"], 1000, "{h:#}");
    assert!(h["latency_ms"].as_u64().unwrap() < 3000, "{h:#}");
    // The `sleep` it started was stopped with it.
    let needle = format!("HOME={}", home.path().display());
    let left = std::fs::read_dir("/proc").unwrap().flatten().any(|e| {
        let cmd = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
        let env = std::fs::read(e.path().join("environ")).unwrap_or_default();
        cmd.starts_with(b"sleep\x0030") && env.split(|b| *b == 0).any(|kv| kv == needle.as_bytes())
    });
    assert!(!left, "the timed-out hook's `sleep` is still running");
}

#[test]
fn duplicates_and_drift_are_problems() {
    let home = Home::new();
    home.ok(&["install", "--harness", "codex"]);
    // A copy of ovmem's Stop group (a merged dotfile), and a hook of another ovmem home.
    edit_json(&home, ".codex/hooks.json", |v| {
        let group = v["hooks"]["Stop"][0].clone();
        v["hooks"]["Stop"].as_array_mut().unwrap().push(group);
        v["hooks"]["SessionEnd"][0]["hooks"][0]["command"] = "/gone/.ovmem/bin/ovmem hook codex SessionEnd".into();
        // A copy written with other blanks and quotes: the shell runs it all the same.
        let mut edited = v["hooks"]["UserPromptSubmit"][0].clone();
        let cmd = edited["hooks"][0]["command"].as_str().unwrap().to_string();
        let (bin, rest) = cmd.split_once(' ').unwrap();
        edited["hooks"][0]["command"] = format!("'{bin}'   {rest} # mine").into();
        v["hooks"]["UserPromptSubmit"].as_array_mut().unwrap().push(edited);
    });
    let (code, v) = doctor(&home, &[]);
    assert_eq!(code, 1, "{v:#}");
    let dup = v["duplicates"].as_array().unwrap();
    // Each duplicate once (check's count, not a second one of the doctor's own).
    let on = |e: &str| dup.iter().filter(|d| d["event"] == e).collect::<Vec<_>>();
    assert_eq!(on("Stop").len(), 1, "{v:#}");
    assert_eq!(on("Stop")[0]["integrations"].as_array().unwrap().len(), 2, "{v:#}");
    assert_eq!(on("UserPromptSubmit").len(), 1, "{v:#}");
    assert_eq!(on("UserPromptSubmit")[0]["integrations"].as_array().unwrap().len(), 2, "{v:#}");
    let prompts: Vec<Value> = hooks(&v, "codex").into_iter().filter(|h| h["event"] == "UserPromptSubmit").collect();
    assert_eq!(prompts.iter().filter(|h| h["owner"] == "edited").count(), 1, "{prompts:#?}");
    let end = hook(&v, "codex", "SessionEnd");
    assert_eq!(end["owner"], "other-runtime", "{end:#}");
    assert_eq!(end["exit_code"], 127, "{end:#}");
    assert!(end["problem"].as_str().unwrap().contains("drift"), "{end:#}");
}

#[test]
fn ovmem_beside_a_legacy_memory_hook_on_one_event_is_a_duplicate() {
    let home = Home::new();
    home.ok(&["install", "--harness", "claude-code"]);
    edit_json(&home, ".claude/settings.json", |v| {
        let legacy = serde_json::json!({"hooks": [{"type": "command",
            "command": "node /home/u/.claude/plugins/cache/hindsight/hindsight-memory/scripts/recall.js"}]});
        v["hooks"]["UserPromptSubmit"].as_array_mut().unwrap().push(legacy);
    });
    let (code, v) = doctor(&home, &[]);
    assert_eq!(code, 1, "{v:#}");
    let dup = v["duplicates"].as_array().unwrap();
    assert!(
        dup.iter()
            .any(|d| d["event"] == "UserPromptSubmit"
                && d["integrations"].as_array().unwrap().iter().any(|i| i == "ovmem")),
        "{v:#}"
    );
    // Only ovmem's hook was run; the legacy one is not ovmem's to run.
    assert_eq!(hooks(&v, "claude-code").iter().filter(|h| h["event"] == "UserPromptSubmit").count(), 1);
}

#[test]
fn a_broken_mcp_entry_is_caught() {
    let home = Home::new();
    home.ok(&["install", "--harness", "claude-code,codex"]);
    edit_json(&home, ".claude.json", |v| v["mcpServers"]["ovmem"]["args"] = serde_json::json!(["mpc"]));
    let cfg = home.path().join(".codex/config.toml");
    let text = std::fs::read_to_string(&cfg).unwrap();
    std::fs::write(
        &cfg,
        text.replace(&format!("command = \"{}\"", runtime(&home).display()), "command = \"/nowhere/ovmem\""),
    )
    .unwrap();
    let (code, v) = doctor(&home, &[]);
    assert_eq!(code, 1, "{v:#}");
    let t = |id: &str| v["targets"].as_array().unwrap().iter().find(|t| t["harness"] == id).unwrap().clone();
    let claude = t("claude-code");
    assert_eq!(claude["mcp"]["status"], "failed", "{claude:#}");
    let problem = claude["mcp"]["problem"].as_str().unwrap();
    assert!(problem.contains("without answering") && problem.contains("mpc"), "{claude:#}");
    let codex = t("codex");
    assert_eq!(codex["mcp"]["status"], "failed", "{codex:#}");
    assert!(codex["mcp"]["problem"].as_str().unwrap().contains("does not exist"), "{codex:#}");
    // The hooks themselves are fine.
    assert!(hooks(&v, "codex").iter().all(|h| h["status"] == "ok"));
}

#[test]
fn a_removed_hook_and_a_removed_mcp_entry_are_missing() {
    let home = Home::new();
    home.ok(&["install", "--harness", "gemini-cli,cursor"]);
    edit_json(&home, ".gemini/settings.json", |v| {
        v["hooks"].as_object_mut().unwrap().remove("AfterAgent");
    });
    edit_json(&home, ".cursor/mcp.json", |v| {
        v["mcpServers"].as_object_mut().unwrap().remove("ovmem");
    });
    let (code, v) = doctor(&home, &[]);
    assert_eq!(code, 1);
    assert_eq!(hook(&v, "gemini-cli", "AfterAgent")["status"], "missing");
    let cursor = v["targets"].as_array().unwrap().iter().find(|t| t["harness"] == "cursor").unwrap();
    assert_eq!(cursor["mcp"]["status"], "missing", "{cursor:#}");
}

#[test]
fn a_memory_server_that_does_not_answer_is_a_problem_and_gets_nothing() {
    let home = Home::new();
    home.ok(&["install", "--harness", "claude-code"]);
    let dead = common::RefusingPort::new();
    home.put(".ovmem/config.toml", format!("[backend]\nkind = \"hindsight\"\nurl = \"{}\"\n", dead.url()).as_bytes());
    let (code, v) = doctor(&home, &[]);
    assert_eq!(code, 1, "{v:#}");
    assert_eq!(v["backend"]["status"], "failed", "{v:#}");
    // The hooks ran against the local copy: no hook waited on the server.
    for h in hooks(&v, "claude-code") {
        assert_eq!(h["status"], "ok", "{h:#}");
    }
}

/// One `redact_patterns` entry that is not a valid regex is one config finding (its file, its
/// key, the regex error, what to do), not a failure of every hook: the hooks skip that pattern,
/// keep the built-in rules and the user's other patterns, and run as ever.
#[test]
fn a_bad_redact_pattern_is_one_config_finding_and_the_hooks_still_work() {
    let home = Home::new();
    home.ok(&["install", "--harness", "claude-code"]);
    home.put(".ovmem/config.toml", b"redact_patterns = [\"ACME-[0-9]{6}\", \"(unclosed\"]\n");
    let (code, v) = doctor(&home, &[]);
    assert_eq!(code, 1, "{v:#}");
    let hs = hooks(&v, "claude-code");
    assert!(!hs.is_empty() && hs.iter().all(|h| h["status"] == "ok"), "{v:#}");
    assert_eq!(v["problems"], 1, "one finding, not one per hook: {v:#}");
    let c = &v["config"][0];
    assert!(c["file"].as_str().unwrap().ends_with(".ovmem/config.toml"), "{v:#}");
    assert_eq!(c["key"], "redact_patterns[1]", "{v:#}");
    assert!(c["problem"].as_str().unwrap().contains("not a valid regex (unclosed group)"), "{v:#}");
    assert!(c["hooks"].as_str().unwrap().contains("built-in redaction rules and the other patterns"), "{v:#}");
    assert!(c["fix"].as_str().unwrap().contains("`redact_patterns[1]`"), "{v:#}");
    let text = String::from_utf8_lossy(&home.run(&["doctor"]).stdout).into_owned();
    assert_eq!(text.matches("not a valid regex").count(), 1, "{text}");
}

/// ovmem's own config is checked like the rest: a setting it cannot use (a file that is not
/// TOML, a key of the wrong type, a junk variable) is a finding naming the file, the key and
/// what to do, exit 1, and every other check still runs. Exit 2 stays for bad usage and a
/// harness file that does not parse.
#[test]
fn a_bad_config_is_a_finding_and_every_hook_is_still_run() {
    let home = Home::new();
    home.ok(&["install", "--harness", "claude-code"]);
    assert_eq!(home.run(&["doctor", "--harness", "nonesuch"]).status.code(), Some(2));
    let all_ok = |v: &Value| {
        let hs = hooks(v, "claude-code");
        assert!(!hs.is_empty() && hs.iter().all(|h| h["status"] == "ok"), "{v:#}");
    };
    // Not TOML at all: one finding for the file; the hooks run on the defaults, as the user's do.
    home.put(".ovmem/config.toml", b"bank = [\n");
    let (code, v) = doctor(&home, &[]);
    assert_eq!(code, 1, "{v:#}");
    let c = &v["config"][0];
    assert!(c["file"].as_str().unwrap().ends_with(".ovmem/config.toml") && c["key"].is_null(), "{v:#}");
    assert!(c["problem"].as_str().unwrap().contains("not valid TOML (line 2"), "{v:#}");
    assert!(c["fix"].as_str().unwrap().contains("valid TOML"), "{v:#}");
    all_ok(&v);
    // A key of the wrong type and a junk variable: each named, with what to do; the variable's
    // value on the terminal only.
    home.put(".ovmem/config.toml", b"recall_limit = \"five-9932\"\n");
    let out = home.cmd(&["doctor"]).env("OVMEM_BANK", "projects").output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(out.status.code(), Some(1), "{text}{}", stderr(&out));
    assert!(text.contains("`OVMEM_BANK` (it is `projects`) is not one of"), "{text}");
    assert!(text.contains("fix or unset `OVMEM_BANK`") && text.contains("fix or remove `recall_limit`"), "{text}");
    assert!(!text.contains("five-9932"), "{text}");
    let out = home.cmd(&["doctor", "--json"]).env("OVMEM_BANK", "projects").output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let keys: Vec<&str> = v["config"].as_array().unwrap().iter().map(|c| c["key"].as_str().unwrap()).collect();
    assert_eq!(keys, ["recall_limit", "OVMEM_BANK"], "{v:#}");
    assert!(v["config"][1]["file"].is_null(), "{v:#}");
    let raw = String::from_utf8_lossy(&out.stdout);
    assert!(!raw.contains("projects") && !raw.contains("five-9932"), "{raw}");
    assert_eq!(v["problems"], 2, "{v:#}");
    all_ok(&v);
    // A hooks file that no longer parses.
    std::fs::remove_file(home.path().join(".ovmem/config.toml")).unwrap();
    home.put(".claude/settings.json", b"{ \"hooks\": ");
    let (code, v) = doctor(&home, &[]);
    assert_eq!(code, 2, "{v:#}");
    assert!(v["errors"][0]["file"].as_str().unwrap().ends_with("settings.json"), "{v:#}");
}

#[test]
fn nothing_installed_is_said_and_a_named_harness_not_installed_is_a_problem() {
    let home = Home::new();
    let out = home.run(&["doctor"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("not installed for any harness"));
    let (code, _) = doctor(&home, &["--harness", "codex"]);
    assert_eq!(code, 1);
}

#[test]
fn project_scope_hooks_run_in_the_project() {
    let home = Home::new();
    let proj = home.path().join("work/app");
    std::fs::create_dir_all(proj.join(".git")).unwrap();
    let p = proj.to_str().unwrap();
    home.ok(&["install", "--harness", "claude-code,cline", "--project", p]);
    let (code, v) = doctor(&home, &["--project", p]);
    assert_eq!(code, 0, "{v:#}");
    let t = &v["targets"][0];
    assert_eq!(t["scope"], "project");
    assert!(hooks(&v, "cline").iter().all(|h| h["status"] == "ok"));
    assert!(!proj.join(".ovmem").exists() && !home.path().join(".ovmem/memory.db").exists());
}

/// The pinned Codex CLI (see tests/e2e.rs), or why this test cannot run here.
fn codex() -> Option<PathBuf> {
    let required = std::env::var("CI").is_ok_and(|v| v == "true" || v == "1")
        || std::env::var("OVMEM_E2E_REQUIRED").is_ok_and(|v| v == "1");
    let dir = std::env::var_os("OVMEM_E2E_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(std::env::var("HOME").unwrap()).join(".cache/ovmem-e2e"));
    let bin = dir.join("codex/node_modules/.bin/codex");
    let why = if !bin.exists() {
        Some(format!("{} is not installed (run `bash tests/e2e/install-clis.sh`)", bin.display()))
    } else if unsafe { libc::geteuid() } != 0 {
        Some("this test needs root for `unshare -n`".into())
    } else {
        None
    };
    match why {
        None => Some(bin),
        Some(w) if required => panic!("prerequisite missing under CI: {w}"),
        Some(w) => {
            use std::io::Write;
            let _ = writeln!(std::io::stderr(), "SKIPPED (not a pass): {w}");
            None
        }
    }
}

fn node_dir() -> PathBuf {
    std::env::split_paths(&std::env::var_os("PATH").unwrap()).find(|d| d.join("node").is_file()).expect("node on PATH")
}

/// Installed without trust, Codex's own app-server reports the hooks untrusted and the doctor says
/// so per hook; once trusted, the same install is healthy.
#[test]
fn an_untrusted_codex_hook_is_caught_with_the_real_app_server() {
    let Some(bin) = codex() else { return };
    let home = Home::new();
    let path =
        std::env::join_paths([bin.parent().unwrap(), &node_dir(), Path::new("/usr/bin"), Path::new("/bin")]).unwrap();
    // Offline: the app-server runs in a network namespace with loopback only.
    let run = |args: &[&str]| {
        std::process::Command::new("unshare")
            .args(["-n", common::OVMEM])
            .args(args)
            .env_clear()
            .env("HOME", home.path())
            .env("PATH", &path)
            .env("NO_COLOR", "1")
            .current_dir(home.path())
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap()
    };
    home.put(".codex/config.toml", b"check_for_update_on_startup = false\n");
    let out = run(&["install", "--harness", "codex", "--no-trust"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = run(&["doctor", "--json", "--harness", "codex"]);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(1), "{v:#}");
    let t = &v["targets"][0];
    assert_eq!(t["trust"]["state"], "pending", "{t:#}");
    for h in hooks(&v, "codex") {
        assert_eq!(h["status"], "untrusted", "{h:#}");
        assert_eq!(h["trusted"], false, "{h:#}");
    }
    let out = run(&["install", "--harness", "codex"]);
    assert!(stderr(&out).contains("trusted 5"), "{}", stderr(&out));
    let out = run(&["doctor", "--json", "--harness", "codex"]);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(0), "{v:#}");
    assert_eq!(v["targets"][0]["trust"]["state"], "trusted", "{v:#}");
    assert!(hooks(&v, "codex").iter().all(|h| h["trusted"] == true && h["status"] == "ok"), "{v:#}");
}

/// A project's files are untrusted input: a committed edit that still calls ovmem's hook is
/// reported, never run.
#[test]
fn an_edited_project_hook_is_reported_and_not_run() {
    let home = Home::new();
    let proj = home.path().join("work/app");
    std::fs::create_dir_all(proj.join(".git")).unwrap();
    let p = proj.to_str().unwrap();
    home.ok(&["install", "--harness", "claude-code,cline", "--project", p]);
    let pwned = home.path().join("pwned");
    let rt = runtime(&home);
    edit_json(&home, "work/app/.claude/settings.json", |v| {
        v["hooks"]["Stop"][0]["hooks"][0]["command"] =
            format!("touch {}; {} hook claude-code Stop", pwned.display(), rt.display()).into();
    });
    let script = proj.join(".clinerules/hooks/TaskStart");
    let text = std::fs::read_to_string(&script).unwrap();
    std::fs::write(&script, text.replacen("exec ", &format!("touch {}\nexec ", pwned.display()), 1)).unwrap();
    let (code, v) = doctor(&home, &["--project", p]);
    assert_eq!(code, 1, "{v:#}");
    assert!(!pwned.exists(), "the doctor ran a project's edited hook");
    for (h, e) in [("claude-code", "Stop"), ("cline", "TaskStart")] {
        let x = hook(&v, h, e);
        assert_eq!(x["status"], "not-run", "{x:#}");
        assert_eq!(x["owner"], "edited", "{x:#}");
    }
    assert_eq!(hook(&v, "cline", "TaskComplete")["status"], "ok");
}

/// At user scope, Cline's hook file is run as Cline runs it: the file itself, whatever it holds.
#[test]
fn an_edited_cline_hook_file_is_run_and_judged() {
    let home = Home::new();
    home.ok(&["install", "--harness", "cline"]);
    let script = home.path().join("Documents/Cline/Hooks/UserPromptSubmit");
    let text = std::fs::read_to_string(&script).unwrap();
    std::fs::write(&script, text.replacen("exec ", "echo 'starting ovmem'\nexec ", 1)).unwrap();
    let (code, v) = doctor(&home, &[]);
    assert_eq!(code, 1, "{v:#}");
    let x = hook(&v, "cline", "UserPromptSubmit");
    assert_eq!((x["owner"].as_str(), x["status"].as_str()), (Some("edited"), Some("failed")), "{x:#}");
    assert_eq!(x["command"], script.to_str().unwrap());
    // A hook file that lost its executable bit fails as it would in Cline.
    use std::os::unix::fs::PermissionsExt;
    let start = home.path().join("Documents/Cline/Hooks/TaskStart");
    std::fs::set_permissions(&start, std::fs::Permissions::from_mode(0o644)).unwrap();
    let (_, v) = doctor(&home, &[]);
    let x = hook(&v, "cline", "TaskStart");
    assert_eq!(x["status"], "failed", "{x:#}");
    assert!(x["problem"].as_str().unwrap().contains("Permission denied"), "{x:#}");
}

/// A pull that edits a project's MCP entry (or appends code to its plugin module) must not make
/// `ovmem doctor` start it: the entry is reported as edited, exit 1, and the marker never appears.
#[test]
fn a_project_s_edited_mcp_entry_and_plugin_are_reported_and_never_started() {
    let home = Home::new();
    let proj = home.path().join("work/app");
    std::fs::create_dir_all(proj.join(".git")).unwrap();
    let p = proj.to_str().unwrap();
    home.ok(&["install", "--harness", "crush,opencode", "--project", p]);
    let pwned = home.path().join("pwned");
    let (code, v) = doctor(&home, &["--project", p]);
    let crush = v["targets"].as_array().unwrap().iter().find(|t| t["harness"] == "crush").unwrap().clone();
    assert_eq!(crush["mcp"]["status"], "ok", "ovmem's own entry is started: {crush:#}");
    assert_eq!(code, 0, "{v:#}");

    // The hostile edits, as a pull would bring them.
    edit_json(&home, "work/app/crush.json", |v| {
        v["mcp"]["ovmem"]["args"] = serde_json::json!(["-c", format!("touch {}", pwned.display())]);
        v["mcp"]["ovmem"]["command"] = "/bin/sh".into();
    });
    let plugin = proj.join(".opencode/plugin/ovmem.js");
    let mut text = std::fs::read_to_string(&plugin).unwrap();
    text.push_str(&format!("\nrequire('child_process').execSync('touch {}');\n", pwned.display()));
    std::fs::write(&plugin, text).unwrap();

    let (code, v) = doctor(&home, &["--project", p]);
    assert_eq!(code, 1, "{v:#}");
    assert!(!pwned.exists(), "the doctor started a project's edited MCP entry");
    let t = |id: &str| v["targets"].as_array().unwrap().iter().find(|t| t["harness"] == id).unwrap().clone();
    let crush = t("crush");
    assert_eq!(crush["mcp"]["status"], "edited", "{crush:#}");
    assert!(crush["mcp"]["problem"].as_str().unwrap().contains("not what ovmem wrote"), "{crush:#}");
    assert!(crush["mcp"]["latency_ms"].is_null(), "never started: {crush:#}");
    // Crush's own hooks are still ovmem's exact ones, and run.
    assert!(hooks(&v, "crush").iter().all(|h| h["status"] == "ok"), "{crush:#}");
    for x in hooks(&v, "opencode") {
        assert_eq!(x["owner"], "edited", "{x:#}");
        assert_eq!(x["status"], "not-run", "{x:#}");
    }
}

/// A home root left partly its own (an older `sudo ovmem install`, a hook run as root) is named
/// by the doctor its user runs: the hooks, run as that user, could store nothing there while
/// every check of their output passed.
#[test]
fn files_of_ovmem_s_home_that_the_user_does_not_own_are_a_problem() {
    if common::as_root().is_none() {
        return;
    }
    let home = Home::new();
    std::os::unix::fs::chown(home.path(), Some(12345), Some(12346)).unwrap();
    home.ok(&["install", "--harness", "claude-code"]);
    let tmp = home.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    std::os::unix::fs::chown(&tmp, Some(12345), Some(12346)).unwrap();
    let as_user = || {
        let out =
            common::run_as(home.path(), (12345, 12346), &runtime(&home), &["doctor", "--json"], &[("TMPDIR", &tmp)]);
        let v: Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("no JSON ({e}): {}\n{}", String::from_utf8_lossy(&out.stdout), stderr(&out)));
        (out.status.code(), v)
    };
    let (code, v) = as_user();
    assert_eq!(code, Some(0), "{v:#}");
    assert!(v.get("not_yours").is_none(), "{v:#}");
    // The store and the logs as root left them.
    let db = home.path().join(".ovmem/memory.db");
    std::fs::write(&db, b"").unwrap();
    std::fs::create_dir_all(home.path().join(".ovmem/logs")).unwrap();
    std::os::unix::fs::chown(home.path().join(".ovmem/logs"), Some(0), Some(0)).unwrap();
    let (code, v) = as_user();
    assert_eq!(code, Some(1), "{v:#}");
    assert_eq!(v["not_yours"]["owner"], 0, "{v:#}");
    assert!(v["not_yours"]["count"].as_u64().unwrap() >= 2, "{v:#}");
    // Root runs the same doctor without this finding: root writes anywhere.
    let (_, v) = doctor(&home, &[]);
    assert!(v.get("not_yours").is_none(), "{v:#}");
    // Given back, the finding is gone.
    for p in [db, home.path().join(".ovmem/logs")] {
        std::os::unix::fs::chown(&p, Some(12345), Some(12346)).unwrap();
    }
    let (code, v) = as_user();
    assert_eq!(code, Some(0), "{v:#}");
    assert!(v.get("not_yours").is_none(), "{v:#}");
}
