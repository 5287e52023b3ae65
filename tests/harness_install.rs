//! The installer for the harnesses added from their documented schemas (Kiro CLI, Goose,
//! Windsurf, Kimi Code, Antigravity CLI, Devin CLI, ZCode, TraeCode, Grok Build, Crush), run as a
//! user runs it against throwaway homes holding realistic, hand-edited configs (comments, other
//! tools' entries, tabs, CRLF, a BOM, no final newline): install, install again, uninstall, and
//! every byte of the home must be as it was.
#![cfg(unix)]

mod common;

use std::path::{Path, PathBuf};

use common::{stderr, tree, tree_diff, Entry, Home, FIXTURES};

const NEW: &[&str] = &[
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
];

fn copy_tree(from: &Path, to: &Path) {
    for e in std::fs::read_dir(from).unwrap().flatten() {
        let p = e.path();
        let dest = to.join(e.file_name());
        if p.is_dir() {
            std::fs::create_dir_all(&dest).unwrap();
            copy_tree(&p, &dest);
        } else {
            std::fs::copy(&p, &dest).unwrap();
        }
    }
}

/// The fixture homes of a harness: `tests/fixtures/<id>/<case>/` hold files as they sit under `~`.
fn cases(harness: &str) -> Vec<(String, PathBuf)> {
    let dir = Path::new(FIXTURES).join(harness);
    let mut v: Vec<(String, PathBuf)> = std::fs::read_dir(&dir)
        .map(|rd| {
            rd.flatten()
                .filter(|e| e.path().is_dir())
                .map(|e| (e.file_name().to_string_lossy().into_owned(), e.path()))
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

fn redact(home: &Home, s: &str) -> String {
    s.replace(&home.path().to_string_lossy().to_string(), "[HOME]")
}

/// Files outside `~/.ovmem` that differ from `before`, with their text now.
fn changed(home: &Home, before: &common::Tree) -> Vec<(String, String)> {
    let ovmem = home.path().join(".ovmem");
    let mut out = Vec::new();
    for (p, e) in tree(home.path()) {
        if p.starts_with(&ovmem) || p.to_string_lossy().ends_with(".bak") {
            continue;
        }
        if let Entry::File(bytes, _) = &e {
            if before.get(&p) != Some(&e) {
                let rel = p.strip_prefix(home.path()).unwrap().to_string_lossy().into_owned();
                out.push((rel, redact(home, &String::from_utf8_lossy(bytes))));
            }
        }
    }
    out
}

#[test]
fn every_fixture_home_round_trips_byte_for_byte() {
    let mut seen = 0;
    for harness in NEW {
        for (case, dir) in cases(harness) {
            let home = Home::new();
            copy_tree(&dir, home.path());
            let original = home.tree();
            let out = home.ok(&["install", "--harness", harness]);
            let mut snap = String::new();
            for (rel, text) in changed(&home, &original) {
                snap.push_str(&format!("--- ~/{rel}\n{text}\n"));
            }
            let notes = redact(&home, &stderr(&out));
            let notes: Vec<&str> = notes.lines().filter(|l| l.starts_with("warning:")).collect();
            if !notes.is_empty() {
                snap.push_str(&format!("--- notes\n{}\n", notes.join("\n")));
            }
            insta::assert_snapshot!(format!("installed__{harness}__{case}"), snap);
            // What was installed parses as the harness reads it.
            for (rel, text) in changed(&home, &original) {
                let body = text.trim_start_matches('\u{feff}');
                if rel.ends_with(".toml") {
                    body.parse::<toml::Table>().unwrap_or_else(|e| panic!("{harness}/{case}: {rel}: {e}"));
                } else if !rel.ends_with("crush.json") {
                    serde_json::from_str::<serde_json::Value>(body)
                        .unwrap_or_else(|e| panic!("{harness}/{case}: {rel}: {e}"));
                }
            }
            // A file written with CRLF line endings keeps them everywhere, ovmem's lines included.
            for (p, e) in &original {
                if let (Entry::File(before, _), Some(Entry::File(after, _))) = (e, home.tree().get(p)) {
                    let crlf_only = |b: &[u8]| {
                        let t = String::from_utf8_lossy(b);
                        t.contains("\r\n") && !t.replace("\r\n", "").contains('\n')
                    };
                    if crlf_only(before) {
                        assert!(crlf_only(after), "{harness}/{case}: {} lost its CRLF line endings", p.display());
                    }
                }
            }
            let installed = home.tree();
            std::thread::sleep(std::time::Duration::from_millis(20));
            let again = home.ok(&["install", "--harness", harness]);
            assert!(stderr(&again).contains("already installed"), "{harness}/{case}: {}", stderr(&again));
            assert_eq!(
                tree_diff(&installed, &home.tree()),
                Vec::<String>::new(),
                "{harness}/{case}: a second install changed files"
            );
            let st = home.ok(&["status", "--json"]);
            let v: serde_json::Value = serde_json::from_slice(&st.stdout).unwrap();
            let h = v["harnesses"].as_array().unwrap().iter().find(|x| x["harness"] == *harness).unwrap();
            let entries = h["scopes"][0]["entries"].as_array().unwrap();
            assert!(!entries.is_empty() && entries.iter().all(|e| e["state"] == "ok"), "{harness}/{case}: {h}");
            home.ok(&["uninstall", "--harness", harness, "--yes"]);
            assert_eq!(
                tree_diff(&original, &home.tree()),
                Vec::<String>::new(),
                "{harness}/{case}: not restored exactly"
            );
            assert_eq!(home.tree(), original, "{harness}/{case}: bytes or modes differ");
            seen += 1;
        }
    }
    assert!(seen >= 12, "{seen} fixture homes");
}

#[test]
fn a_fresh_home_gets_every_new_harness_and_loses_every_trace() {
    let home = Home::new();
    // Kiro CLI needs an agent of the user's: its hooks live only there.
    home.put(".kiro/agents/dev.json", b"{\"name\": \"dev\", \"tools\": [\"*\"]}\n");
    let original = home.tree();
    home.ok(&["install", "--harness", &NEW.join(",")]);
    let zcode: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(home.path().join(".zcode/cli/config.json")).unwrap()).unwrap();
    assert_eq!(zcode["hooks"]["enabled"], true);
    assert_eq!(zcode["hooks"].as_object().unwrap().len(), 2, "only documented keys under `hooks`: {zcode}");
    assert!(zcode["mcp"]["servers"]["ovmem"].is_object());
    let sandbox: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(home.path().join(".trae-cn/sandbox.json")).unwrap()).unwrap();
    assert_eq!(sandbox["filesystem"]["readWrite"][0], home.path().join(".ovmem").to_string_lossy().as_ref());
    let trae: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(home.path().join(".trae-cn/hooks.json")).unwrap()).unwrap();
    assert_eq!(trae["version"], 1);
    assert!(home.path().join(".agents/plugins/ovmem/plugin.json").is_file());
    assert!(home.path().join(".grok/hooks/ovmem.json").is_file());
    home.ok(&["uninstall", "--yes"]);
    assert_eq!(tree_diff(&original, &home.tree()), Vec::<String>::new());
}

#[test]
fn kiro_hooks_go_into_every_agent_file_and_no_agent_is_ever_created() {
    let home = Home::new();
    // No agent yet: nothing of Kiro's is created but the MCP entry, and the user is told why.
    let out = home.ok(&["install", "--harness", "kiro-cli"]);
    assert!(stderr(&out).contains("ovmem does not create one"), "{}", stderr(&out));
    assert!(!home.path().join(".kiro/agents").exists());
    assert!(home.path().join(".kiro/settings/mcp.json").is_file());
    // An agent the user creates later gets the hooks at the next install; every agent keeps them.
    home.put(".kiro/agents/a.json", b"{\"name\": \"a\", \"tools\": [\"fs_read\"]}\n");
    let b = home.put(".kiro/agents/b.json", b"{\"name\": \"b\", \"tools\": [\"*\"]}\n");
    home.ok(&["install", "--harness", "kiro-cli"]);
    for f in ["a.json", "b.json"] {
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(home.path().join(".kiro/agents").join(f)).unwrap()).unwrap();
        assert_eq!(v["hooks"].as_object().unwrap().len(), 4, "{f}: {v}");
        assert_eq!(v["hooks"]["preToolUse"][0].get("matcher"), None, "no matcher: every tool");
        assert_eq!(v["hooks"]["agentSpawn"][0]["timeout_ms"], 30000);
        assert_eq!(v["tools"].as_array().unwrap().len(), 1, "{f}: tools untouched");
    }
    home.ok(&["uninstall", "--harness", "kiro-cli", "--yes"]);
    assert_eq!(
        std::fs::read(home.path().join(".kiro/agents/a.json")).unwrap(),
        b"{\"name\": \"a\", \"tools\": [\"fs_read\"]}\n"
    );
    assert_eq!(std::fs::read(&b).unwrap(), b"{\"name\": \"b\", \"tools\": [\"*\"]}\n");

    // Agent files ovmem wrote are cleaned even when the directory it would look in changed since
    // (KIRO_HOME set at install, not at uninstall): the receipt names them.
    let home = Home::new();
    let agent = home.put("kiro/agents/x.json", b"{\"name\": \"x\"}\n");
    let out =
        home.cmd(&["install", "--harness", "kiro-cli"]).env("KIRO_HOME", home.path().join("kiro")).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(std::fs::read_to_string(&agent).unwrap().contains("hook kiro-cli agentSpawn"));
    home.ok(&["uninstall", "--harness", "kiro-cli", "--yes"]);
    assert_eq!(std::fs::read(&agent).unwrap(), b"{\"name\": \"x\"}\n");

    // An agent file renamed since install: the keys ovmem created there go as they do from a
    // file that kept its name, and a key the user had before (even empty) stays.
    for before in [&b"{\"name\":\"b\"}"[..], b"{\"name\":\"c\",\"hooks\":{\"stop\":[]}}\n"] {
        let home = Home::new();
        let old = home.put(".kiro/agents/b.json", before);
        home.ok(&["install", "--harness", "kiro-cli"]);
        let new = old.with_file_name("b2.json");
        std::fs::rename(&old, &new).unwrap();
        home.ok(&["uninstall", "--harness", "kiro-cli", "--yes"]);
        assert_eq!(String::from_utf8(std::fs::read(&new).unwrap()).unwrap(), String::from_utf8_lossy(before));
    }
}

#[test]
fn zcode_s_master_switch_is_the_user_s_when_they_set_it() {
    // `false` is the user's choice: refused (exit 2, untouched) unless forced.
    let home = Home::new();
    let off = b"{\n  \"hooks\": { \"enabled\": false /* not now */ }\n}\n";
    let path = home.put(".zcode/cli/config.json", off);
    let out = home.run(&["install", "--harness", "zcode"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("hooks.enabled") && stderr(&out).contains("--force"), "{}", stderr(&out));
    assert_eq!(std::fs::read(&path).unwrap(), off);
    let out = home.ok(&["install", "--harness", "zcode", "--force"]);
    assert!(stderr(&out).contains("uninstall puts it back"), "{}", stderr(&out));
    let v: serde_json::Value =
        serde_json::from_str(&String::from_utf8_lossy(&std::fs::read(&path).unwrap()).replace("/* not now */", ""))
            .unwrap();
    assert_eq!(v["hooks"]["enabled"], true);
    home.ok(&["uninstall", "--harness", "zcode", "--yes"]);
    assert_eq!(std::fs::read(&path).unwrap(), off, "false came back, comment and all");

    // Set by ovmem, with the user's own hooks added since: it goes, and the user is told.
    let home = Home::new();
    home.ok(&["install", "--harness", "zcode"]);
    let path = home.path().join(".zcode/cli/config.json");
    let text = std::fs::read_to_string(&path).unwrap();
    let mine = text.replacen(
        "\"events\": {",
        "\"events\": {\n      \"PostToolUse\": [{\"hooks\": [{\"type\": \"command\", \"command\": \"fmt\"}]}],",
        1,
    );
    std::fs::write(&path, &mine).unwrap();
    let out = home.ok(&["uninstall", "--harness", "zcode", "--yes"]);
    assert!(stderr(&out).contains("`hooks.enabled` went back"), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(
        v,
        serde_json::json!({"hooks": {"events": {"PostToolUse": [{"hooks": [{"type": "command", "command": "fmt"}]}]}}})
    );
}

#[test]
fn kimi_refuses_what_it_cannot_carry_or_parse() {
    // Kimi splits the command on spaces: a runtime path that needs quoting is refused.
    let t = tempfile::tempdir().unwrap();
    let home = t.path().join("my home");
    std::fs::create_dir_all(&home).unwrap();
    let out = std::process::Command::new(common::OVMEM)
        .args(["install", "--harness", "kimi-code"])
        .env_clear()
        .env("HOME", &home)
        .env("PATH", "/usr/bin:/bin")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("without a shell") && stderr(&out).contains("OVMEM_HOME"), "{}", stderr(&out));
    assert!(!home.join(".kimi-code").exists());

    for (bad, why) in [
        (&b"[[hooks]\nevent = 1\n"[..], "not valid TOML"),
        (b"hooks = [{ event = \"Stop\", command = \"x\" }]\n", "changed more than"),
        (b"[hooks]\nfoo = 1\n", "not an array of tables"),
    ] {
        let h = Home::new();
        let path = h.put(".kimi-code/config.toml", bad);
        let out = h.run(&["install", "--harness", "kimi-code"]);
        // A file ovmem will not edit is a refusal (exit 2), whatever the reason.
        assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(bad));
        assert!(stderr(&out).contains(why), "{why}: {}", stderr(&out));
        assert_eq!(std::fs::read(&path).unwrap(), bad);
    }
}

#[test]
fn without_a_receipt_uninstall_still_gives_back_every_byte() {
    for (harness, case) in [
        ("kimi-code", "comments-foreign"),
        ("zcode", "foreign-hooks-mcp"),
        ("traecode", "sandbox-rules"),
        ("kiro-cli", "two-agents"),
    ] {
        let home = Home::new();
        copy_tree(&Path::new(FIXTURES).join(harness).join(case), home.path());
        let original = home.tree();
        home.ok(&["install", "--harness", harness]);
        std::fs::remove_dir_all(home.path().join(".ovmem/receipts")).unwrap();
        home.ok(&["uninstall", "--harness", harness, "--yes"]);
        let diff: Vec<String> =
            tree_diff(&original, &home.tree()).into_iter().filter(|d| !d.contains("/.ovmem")).collect();
        assert_eq!(diff, Vec::<String>::new(), "{harness}/{case}");
    }
}

#[test]
fn the_sandbox_rule_is_left_alone_when_the_user_had_it_and_a_foreign_plugin_is_never_touched() {
    let home = Home::new();
    let rule = format!("{{\"filesystem\": {{\"readWrite\": [\"{}\"]}}}}\n", home.path().join(".ovmem").display());
    let sandbox = home.put(".trae-cn/sandbox.json", rule.as_bytes());
    home.ok(&["install", "--harness", "traecode"]);
    assert_eq!(std::fs::read_to_string(&sandbox).unwrap(), rule);
    home.ok(&["uninstall", "--harness", "traecode", "--yes"]);
    assert_eq!(std::fs::read_to_string(&sandbox).unwrap(), rule, "the user's own rule stays");

    // A plugin of someone else's named `ovmem`: its manifest is left as it is.
    let home = Home::new();
    let theirs = home.put(".agents/plugins/ovmem/plugin.json", b"{\"name\": \"ovmem\", \"version\": \"9\"}\n");
    let out = home.ok(&["install", "--harness", "goose"]);
    assert!(stderr(&out).contains("is not ovmem's"), "{}", stderr(&out));
    assert_eq!(std::fs::read(&theirs).unwrap(), b"{\"name\": \"ovmem\", \"version\": \"9\"}\n");
    home.ok(&["uninstall", "--harness", "goose", "--yes"]);
    assert_eq!(std::fs::read(&theirs).unwrap(), b"{\"name\": \"ovmem\", \"version\": \"9\"}\n");
    assert!(!home.path().join(".agents/plugins/ovmem/hooks").exists());
    // Nothing of ovmem's is left to remove: no receipt kept for a file that was never its own,
    // and --force does not make it ovmem's either.
    assert!(!home.path().join(".ovmem/receipts/goose.user.json").exists());
    home.ok(&["uninstall", "--yes", "--force"]);
    assert_eq!(std::fs::read(&theirs).unwrap(), b"{\"name\": \"ovmem\", \"version\": \"9\"}\n");

    // Replaced with --force, then given back by uninstall, byte for byte, backups and all gone.
    let home = Home::new();
    let mine = b"{\"name\": \"mine\"}\r\n";
    let theirs = home.put(".agents/plugins/ovmem/plugin.json", mine);
    let before = home.tree();
    home.ok(&["install", "--harness", "goose", "--force"]);
    assert_ne!(std::fs::read(&theirs).unwrap(), mine);
    home.ok(&["install", "--harness", "goose", "--force"]);
    home.ok(&["uninstall", "--yes"]);
    assert_eq!(std::fs::read(&theirs).unwrap(), mine);
    let diff: Vec<String> = tree_diff(&before, &home.tree()).into_iter().filter(|d| !d.contains("/.ovmem")).collect();
    assert_eq!(diff, Vec::<String>::new());
}

#[test]
fn devin_project_hooks_sit_at_the_top_of_their_file() {
    let home = Home::new();
    let proj = home.path().join("work/app");
    std::fs::create_dir_all(proj.join(".git")).unwrap();
    let mine = b"{\n  \"PostToolUse\": [\n    { \"matcher\": \"^edit$\", \"hooks\": [{ \"type\": \"command\", \"command\": \"make fmt\" }] }\n  ]\n}\n";
    let file = proj.join(".devin/hooks.v1.json");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(&file, mine).unwrap();
    let p = proj.to_str().unwrap();
    home.ok(&["install", "--harness", "devin-cli", "--project", p]);
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert!(v.get("hooks").is_none(), "no wrapper in the project file: {v}");
    assert!(v["SessionStart"][0]["hooks"][0]["command"].as_str().unwrap().ends_with("hook devin-cli SessionStart"));
    assert_eq!(v["PreToolUse"][0]["matcher"], "^(read|glob|grep|exec)$");
    home.ok(&["uninstall", "--project", p, "--yes"]);
    assert_eq!(std::fs::read(&file).unwrap(), mine);
}

#[test]
fn harnesses_without_a_project_scope_say_why() {
    let home = Home::new();
    let proj = home.path().join("p");
    std::fs::create_dir_all(&proj).unwrap();
    for (h, why) in [
        ("kimi-code", "only from ~/.kimi-code/config.toml"),
        ("zcode", "one by one"),
        ("grok-build", "/hooks-trust"),
        ("traecode", "no confirmed project-scope"),
    ] {
        let out = home.run(&["install", "--harness", h, "--project", proj.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(2), "{h}: a refusal");
        assert!(stderr(&out).contains(why), "{h}: {}", stderr(&out));
    }
}

#[test]
fn project_agent_files_behind_a_link_out_of_the_project_are_refused() {
    let home = Home::new();
    let proj = home.path().join("proj");
    std::fs::create_dir_all(proj.join(".git")).unwrap();
    let outside = home.put("outside/agents/x.json", b"{\"name\": \"x\"}\n");
    std::os::unix::fs::symlink(home.path().join("outside"), proj.join(".kiro")).unwrap();
    let out = home.run(&["install", "--harness", "kiro-cli", "--project", proj.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("outside the project"), "{}", stderr(&out));
    assert_eq!(std::fs::read(&outside).unwrap(), b"{\"name\": \"x\"}\n");
}

#[test]
fn check_and_status_read_every_new_harness() {
    let home = Home::new();
    home.put(".kiro/agents/dev.json", b"{\"name\": \"dev\"}\n");
    home.ok(&["install", "--harness", &NEW.join(",")]);
    let out = home.run(&["check", "--format", "json"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["errors"], serde_json::json!([]), "{v}");
    assert_eq!(v["findings"], serde_json::json!([]), "a fresh install has nothing to report: {v}");
    // An older runtime's hooks are drift, found in every format (a TOML table, an agent file, argv).
    let kimi = home.path().join(".kimi-code/config.toml");
    let text = std::fs::read_to_string(&kimi).unwrap();
    std::fs::write(
        &kimi,
        text.replace(&home.path().join(".ovmem/bin/ovmem").to_string_lossy().to_string(), "/old/.ovmem/bin/ovmem"),
    )
    .unwrap();
    let out = home.run(&["check", "--format", "json"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let drift: Vec<&serde_json::Value> =
        v["findings"].as_array().unwrap().iter().filter(|f| f["kind"] == "ovmem-drift").collect();
    assert_eq!(drift.len(), 3, "{v}");
    assert!(
        drift.iter().all(|f| f["file"].as_str().unwrap().ends_with("config.toml") && f["line"].as_u64().is_some()),
        "{v}"
    );
}

/// An `ovmem` the user installed (`~/.local/bin`, as install.sh puts it) and registered by hand
/// as an MCP server is the user's own entry, not another ovmem home's: install goes ahead and
/// leaves it alone, and nothing ever deletes that binary.
#[test]
fn an_ovmem_installed_by_hand_is_not_another_home() {
    let home = Home::new();
    let local = home.put(".local/bin/ovmem", b"#!/bin/sh\nexit 0\n");
    let mine = format!(
        "{{\"theme\":\"dark\",\"mcpServers\":{{\"ovmem\":{{\"command\":\"{}\",\"args\":[\"mcp\"]}}}}}}\n",
        local.display()
    );
    let claude_json = home.put(".claude.json", mine.as_bytes());
    let out = home.ok(&["install", "--harness", "claude-code", "--yes"]);
    assert!(stderr(&out).contains("not ovmem's"), "{}", stderr(&out));
    assert!(home.path().join(".claude/settings.json").exists(), "the hooks are installed");
    assert_eq!(std::fs::read_to_string(&claude_json).unwrap(), mine);
    home.ok(&["uninstall", "--yes"]);
    assert_eq!(std::fs::read_to_string(&claude_json).unwrap(), mine);
    assert!(local.exists());

    // `OVMEM_HOME` pointed at `~/.local` by mistake: `uninstall --all --purge` finds nothing of
    // ovmem's there and deletes nothing from it.
    let home = Home::new();
    let local = home.put(".local/bin/ovmem", b"#!/bin/sh\nexit 0\n");
    home.put(".local/state/app/history", b"mine\n");
    let before = home.tree();
    let root = home.path().join(".local");
    let out = home.cmd(&["uninstall", "--all", "--purge", "--yes"]).env("OVMEM_HOME", &root).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(local.exists());
    assert_eq!(tree_diff(&before, &home.tree()), Vec::<String>::new());
}

/// Uninstall takes ovmem out where the receipt says it put it, whatever the environment says
/// now: an install made under another `CODEX_HOME`, `XDG_CONFIG_HOME` or `PI_CODING_AGENT_DIR`
/// (an MCP table, an MCP entry, a plugin file, an extension) leaves nothing behind.
#[test]
fn uninstall_follows_the_receipt_not_todays_environment() {
    let home = Home::new();
    home.put("cx/config.toml", b"# mine\nmodel = \"o3\"\n");
    home.put("xdg/opencode/opencode.json", b"{\n  // mine\n  \"theme\": \"dark\"\n}\n");
    let before = home.tree();
    let at = |rel: &str| home.path().join(rel).display().to_string();
    let out = home
        .cmd(&["install", "--harness", "codex,opencode,pi", "--yes"])
        .env("CODEX_HOME", at("cx"))
        .env("XDG_CONFIG_HOME", at("xdg"))
        .env("PI_CODING_AGENT_DIR", at("pi"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_ne!(tree_diff(&before, &home.tree()).len(), 0);
    home.ok(&["uninstall", "--yes"]);
    let diff: Vec<String> = tree_diff(&before, &home.tree()).into_iter().filter(|d| !d.contains("/.ovmem")).collect();
    assert_eq!(diff, Vec::<String>::new());
}

/// A project that is the home directory has the user-scope file as its project file: install at
/// project scope there is refused (two receipts would own one set of entries), and uninstall at
/// project scope leaves the user-scope entries in place.
#[test]
fn a_project_that_is_the_home_directory_never_takes_the_user_scope_entries() {
    let home = Home::new();
    home.ok(&["install", "--harness", "claude-code", "--yes"]);
    let settings = home.path().join(".claude/settings.json");
    let installed = std::fs::read(&settings).unwrap();
    let out = home.run(&["install", "--harness", "claude-code", "--scope", "project", "--yes"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("your user-scope file"), "{}", stderr(&out));
    home.run(&["uninstall", "--harness", "claude-code", "--scope", "project", "--yes"]);
    assert_eq!(std::fs::read(&settings).unwrap(), installed);
}

/// ZCode's master switch set with --force is given back by uninstall after `repair` rebuilt a
/// lost receipt too (the pristine copy says what it was), and the warning names the old value.
#[test]
fn a_forced_zcode_switch_survives_a_repaired_receipt() {
    let home = Home::new();
    let original = b"{\n  \"hooks\": {\"enabled\": false}\n}\n";
    let config = home.put(".zcode/cli/config.json", original);
    let before = home.tree();
    let out = home.ok(&["install", "--harness", "zcode", "--yes", "--force"]);
    assert!(stderr(&out).contains("was `false`; set to `true`"), "{}", stderr(&out));
    std::fs::remove_dir_all(home.path().join(".ovmem/receipts")).unwrap();
    home.ok(&["repair", "--harness", "zcode", "--yes"]);
    home.ok(&["uninstall", "--yes"]);
    assert_eq!(std::fs::read(&config).unwrap(), original);
    let diff: Vec<String> = tree_diff(&before, &home.tree()).into_iter().filter(|d| !d.contains("/.ovmem")).collect();
    assert_eq!(diff, Vec::<String>::new());
}

/// Two harnesses whose files share a directory ovmem made (`~/.gemini`, `~/.config`) leave
/// nothing behind, whichever is uninstalled first.
#[test]
fn a_directory_two_harnesses_share_goes_with_the_last_of_them() {
    for (a, b) in [("gemini-cli", "antigravity-cli"), ("opencode", "kilo-code")] {
        for first in [a, b] {
            let home = Home::new();
            let before = home.tree();
            home.ok(&["install", "--harness", a, "--yes"]);
            home.ok(&["install", "--harness", b, "--yes"]);
            home.ok(&["uninstall", "--harness", first, "--yes"]);
            home.ok(&["uninstall", "--harness", if first == a { b } else { a }, "--yes"]);
            let diff: Vec<String> =
                tree_diff(&before, &home.tree()).into_iter().filter(|d| !d.contains("/.ovmem")).collect();
            assert_eq!(diff, Vec::<String>::new(), "{a} and {b}, {first} first");
        }
    }
}

/// Kimi Code's TOML comes back byte for byte: a last line with no line break (the receipt lost,
/// so the `.ovmem.bak` copy tells), and a file that is only a byte-order mark.
#[test]
fn kimi_s_config_comes_back_without_a_receipt_and_with_its_bom() {
    for (original, lose_receipt) in [(&b"default_model = \"k2\""[..], true), (b"\xef\xbb\xbf", false)] {
        let home = Home::new();
        home.put(".kimi-code/config.toml", original);
        let before = home.tree();
        home.ok(&["install", "--harness", "kimi-code", "--yes"]);
        if lose_receipt {
            std::fs::remove_dir_all(home.path().join(".ovmem/receipts")).unwrap();
        }
        home.ok(&["uninstall", "--harness", "kimi-code", "--yes"]);
        let diff: Vec<String> =
            tree_diff(&before, &home.tree()).into_iter().filter(|d| !d.contains("/.ovmem")).collect();
        assert_eq!(diff, Vec::<String>::new(), "{}", String::from_utf8_lossy(original));
    }
}

/// `status` says a config that no longer parses does not parse, rather than calling ovmem's
/// entries in it missing.
#[test]
fn status_says_a_broken_config_does_not_parse() {
    let home = Home::new();
    home.ok(&["install", "--harness", "claude-code", "--yes"]);
    home.put(".claude/settings.json", b"{ broken\n");
    let out = home.run(&["status"]);
    let text = String::from_utf8_lossy(&out.stdout).to_string() + &stderr(&out);
    assert!(text.contains("settings.json` does not parse"), "{text}");
    assert!(!text.contains(" missing in "), "{text}");
}
