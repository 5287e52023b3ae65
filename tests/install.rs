//! The installer as a user runs it: the built binary against throwaway homes (never the real
//! `$HOME`), with hand-edited fixtures full of comments, tabs, CRLF, BOM, unicode and hooks of
//! other tools. Round trips must give back every byte.
#![cfg(unix)]

mod common;

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

const OVMEM: &str = env!("CARGO_BIN_EXE_ovmem");
const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures");

/// Where each JSON harness keeps its user-scope hooks, relative to the home.
const JSON_HARNESSES: &[(&str, &str)] = &[
    ("claude-code", ".claude/settings.json"),
    ("codex", ".codex/hooks.json"),
    ("cursor", ".cursor/hooks.json"),
    ("trae-cli", ".trae/cli/hooks.json"),
    ("gemini-cli", ".gemini/settings.json"),
];

struct Home {
    tmp: tempfile::TempDir,
}

impl Home {
    fn new() -> Self {
        Self { tmp: tempfile::tempdir().unwrap() }
    }

    fn path(&self) -> &Path {
        self.tmp.path()
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
            .current_dir(self.path())
            .stdin(Stdio::null());
        c
    }

    fn run(&self, args: &[&str]) -> Output {
        self.cmd(args).output().unwrap()
    }

    fn ok(&self, args: &[&str]) -> Output {
        let out = self.run(args);
        assert!(
            out.status.success(),
            "ovmem {args:?} exited {:?}:\n{}",
            out.status.code(),
            String::from_utf8_lossy(&out.stderr)
        );
        out
    }

    /// Every file under the home: path -> (bytes, mtime).
    fn tree(&self) -> BTreeMap<PathBuf, (Vec<u8>, std::time::SystemTime)> {
        let mut m = BTreeMap::new();
        walk(self.path(), &mut m);
        m
    }

    fn redact(&self, s: &str) -> String {
        s.replace(&self.path().to_string_lossy().to_string(), "[HOME]")
    }
}

fn walk(dir: &Path, out: &mut BTreeMap<PathBuf, (Vec<u8>, std::time::SystemTime)>) {
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        let meta = std::fs::symlink_metadata(&p).unwrap();
        if meta.is_dir() {
            walk(&p, out);
        } else if meta.is_file() {
            out.insert(p.clone(), (std::fs::read(&p).unwrap(), meta.modified().unwrap()));
        }
    }
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn fixtures(harness: &str) -> Vec<(String, Vec<u8>)> {
    let mut v: Vec<(String, Vec<u8>)> = std::fs::read_dir(Path::new(FIXTURES).join(harness))
        .unwrap()
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
        .map(|e| (e.file_name().to_string_lossy().into_owned(), std::fs::read(e.path()).unwrap()))
        .collect();
    v.sort();
    v
}

fn fixture(harness: &str, name: &str) -> Vec<u8> {
    std::fs::read(Path::new(FIXTURES).join(harness).join(name)).unwrap()
}

fn ovmem_entries_per_event(text: &str) -> BTreeMap<String, usize> {
    let v: serde_json::Value = serde_json::from_str(text.trim_start_matches('\u{feff}')).expect("strict JSON");
    let mut m = BTreeMap::new();
    for (event, arr) in v["hooks"].as_object().unwrap() {
        let mut cmds = Vec::new();
        ovmem::install::marker::commands(arr, &mut cmds);
        m.insert(event.clone(), cmds.iter().filter(|c| c.contains(".ovmem/bin/ovmem hook")).count());
    }
    m
}

#[test]
fn every_fixture_round_trips_byte_for_byte() {
    for (harness, rel) in JSON_HARNESSES {
        for (name, original) in fixtures(harness) {
            let home = Home::new();
            let config = home.put(rel, &original);
            home.ok(&["install", "--harness", harness]);
            let installed = std::fs::read_to_string(&config).unwrap();
            insta::assert_snapshot!(format!("installed__{harness}__{name}"), home.redact(&installed));
            if serde_json::from_slice::<serde_json::Value>(original.strip_prefix(b"\xef\xbb\xbf").unwrap_or(&original))
                .is_ok()
            {
                let counts = ovmem_entries_per_event(&installed);
                assert!(counts.values().filter(|n| **n > 0).all(|n| *n == 1), "{harness}/{name}: {counts:?}");
            }
            let before = home.tree();
            std::thread::sleep(std::time::Duration::from_millis(20));
            let again = home.ok(&["install", "--harness", harness]);
            assert!(stderr(&again).contains("already installed"), "{}", stderr(&again));
            assert_eq!(home.tree(), before, "{harness}/{name}: a second install changed files");
            home.ok(&["uninstall", "--harness", harness, "--yes"]);
            assert_eq!(std::fs::read(&config).unwrap(), original, "{harness}/{name}: not restored byte for byte");
            let left: Vec<PathBuf> = home.tree().into_keys().collect();
            assert_eq!(left, vec![config.clone()], "{harness}/{name}: uninstall left files behind");
        }
    }
}

#[test]
fn fresh_home_install_creates_and_uninstall_removes_everything() {
    let home = Home::new();
    home.ok(&["install", "--harness", "claude-code,codex,cursor,cline,trae-cli,gemini-cli"]);
    for (_, rel) in JSON_HARNESSES {
        let text = std::fs::read_to_string(home.path().join(rel)).unwrap();
        assert!(ovmem_entries_per_event(&text).values().all(|n| *n == 1), "{rel}: {text}");
    }
    let hook = home.path().join("Documents/Cline/Hooks/TaskComplete");
    assert_eq!(std::fs::metadata(&hook).unwrap().permissions().mode() & 0o777, 0o755);
    insta::assert_snapshot!("cline_hook_file", home.redact(&std::fs::read_to_string(&hook).unwrap()));
    let codex: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(home.path().join(".codex/hooks.json")).unwrap()).unwrap();
    assert!(codex["hooks"].is_object(), "codex needs the top-level hooks wrapper");
    assert_eq!(codex.as_object().unwrap().len(), 1, "codex rejects unknown top-level keys");
    let cursor: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(home.path().join(".cursor/hooks.json")).unwrap()).unwrap();
    assert_eq!(cursor["version"], 1);
    home.ok(&["uninstall", "--yes"]);
    assert!(home.tree().is_empty(), "left behind: {:?}", home.tree().keys().collect::<Vec<_>>());
    assert_eq!(std::fs::read_dir(home.path()).unwrap().count(), 0, "directories left behind");
}

/// Claude Code keeps its users' prompt history in `~/.claude.json`, which users report at 65 to
/// 101 MB: ovmem registers its MCP server there all the same, and uninstall gives back every byte.
#[test]
fn a_claude_json_past_64_mib_is_installed_into() {
    let home = Home::new();
    let line = "x".repeat(60_000);
    let history: Vec<String> =
        (0..1_150).map(|i| format!("{{\"display\": \"{i} {line}\", \"pastedContents\": {{}}}}")).collect();
    let text = format!(
        "{{\n  \"numStartups\": 312,\n  \"projects\": {{\n    \"/work/app\": {{\n      \"history\": [{}]\n    }}\n  }}\n}}\n",
        history.join(", ")
    );
    assert!(text.len() > 65 << 20, "{}", text.len());
    let path = home.put(".claude.json", text.as_bytes());
    home.ok(&["install", "--harness", "claude-code"]);
    let installed: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    assert!(installed["mcpServers"]["ovmem"].is_object(), "the MCP server is registered");
    assert_eq!(installed["projects"]["/work/app"]["history"].as_array().unwrap().len(), 1_150);
    home.ok(&["uninstall", "--yes"]);
    assert!(std::fs::read(&path).unwrap() == text.as_bytes(), "uninstall gives back every byte");
}

#[test]
fn malformed_files_are_refused_and_left_untouched() {
    for (harness, rel) in JSON_HARNESSES {
        let home = Home::new();
        let bad = b"{\n  \"hooks\": {\n    \"Stop\": [\n}\n";
        let path = home.put(rel, bad);
        let out = home.run(&["install", "--harness", harness]);
        assert_eq!(out.status.code(), Some(2), "{harness}: {}", stderr(&out));
        let err = stderr(&out);
        assert!(err.contains(&path.display().to_string()) && err.contains("line 4, column 1"), "{harness}: {err}");
        assert_eq!(std::fs::read(&path).unwrap(), bad);
        let files: Vec<PathBuf> =
            home.tree().into_keys().filter(|p| !p.starts_with(home.path().join(".ovmem"))).collect();
        assert_eq!(files, vec![path], "{harness}: backups or temp files were written");
    }
    // A file that is JSON but of the wrong shape is refused too.
    let home = Home::new();
    let path = home.put(".claude/settings.json", b"{\"hooks\": [1, 2]}");
    let out = home.run(&["install", "--harness", "claude-code"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("`hooks` is not an object"), "{}", stderr(&out));
    assert_eq!(std::fs::read(&path).unwrap(), b"{\"hooks\": [1, 2]}");
    // One refused harness does not stop the others.
    let home = Home::new();
    home.put(".codex/hooks.json", b"not json");
    let out = home.run(&["install", "--harness", "codex,claude-code"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(home.path().join(".claude/settings.json").exists());
}

#[test]
fn dry_run_shows_a_diff_and_writes_nothing() {
    let home = Home::new();
    let original = &fixture("claude-code", "tabs-foreign-hooks.json");
    home.put(".claude/settings.json", original);
    let before = home.tree();
    let out = home.ok(&["install", "--harness", "claude-code,cline", "--dry-run"]);
    let diff = String::from_utf8_lossy(&out.stdout);
    assert!(diff.contains("+++ b") && diff.contains("+\t\t\"SessionStart\": ["), "{diff}");
    assert!(diff.contains("+++ b") && diff.contains("Documents/Cline/Hooks/TaskStart"), "{diff}");
    assert_eq!(home.tree(), before);
    assert!(!home.path().join(".ovmem").exists() && !home.path().join("Documents").exists());
    home.ok(&["install", "--harness", "claude-code"]);
    let out = home.ok(&["uninstall", "--harness", "claude-code", "--dry-run"]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("-\t\t\"SessionStart\": ["));
}

#[test]
fn harness_env_overrides_are_followed() {
    let home = Home::new();
    let claude_dir = home.path().join("cfg/claude");
    let codex_dir = home.path().join("cfg/codex");
    let trae_dir = home.path().join("cfg/trae");
    std::fs::create_dir_all(&codex_dir).unwrap();
    let out = home
        .cmd(&["install", "--harness", "claude-code,codex,trae-cli"])
        .env("CLAUDE_CONFIG_DIR", &claude_dir)
        .env("CODEX_HOME", &codex_dir)
        .env("TRAE_HOME", &trae_dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(claude_dir.join("settings.json").exists() && codex_dir.join("hooks.json").exists());
    assert!(trae_dir.join("cli/hooks.json").exists());
    assert!(
        !home.path().join(".claude").exists()
            && !home.path().join(".codex").exists()
            && !home.path().join(".trae").exists()
    );
    let traecli = home.path().join("cfg/traecli");
    let out = home
        .cmd(&["install", "--harness", "trae-cli"])
        .env("TRAE_HOME", &trae_dir)
        .env("TRAECLI_HOME", &traecli)
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(traecli.join("hooks.json").exists());
}

#[test]
fn project_scope_installs_into_the_project_and_uninstalls_cleanly() {
    let home = Home::new();
    let proj = home.path().join("work/app");
    std::fs::create_dir_all(proj.join(".git")).unwrap();
    let p = proj.to_str().unwrap();
    home.ok(&["install", "--harness", "claude-code,codex,cursor,cline", "--scope", "project", "--project", p]);
    for rel in [".claude/settings.json", ".codex/hooks.json", ".cursor/hooks.json", ".clinerules/hooks/TaskStart"] {
        assert!(proj.join(rel).exists(), "{rel}");
    }
    assert!(!home.path().join(".claude").exists(), "user scope was touched");
    let out = home.run(&["install", "--harness", "trae-cli", "--scope", "project", "--project", p]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("no confirmed project-scope"), "{}", stderr(&out));
    // --project alone means project scope.
    home.ok(&["uninstall", "--project", p, "--yes"]);
    let left: Vec<PathBuf> = home.tree().into_keys().filter(|k| k.starts_with(&proj)).collect();
    assert!(left.is_empty(), "{left:?}");
    assert_eq!(std::fs::read_dir(&proj).unwrap().count(), 1, "only .git should remain");
}

#[test]
fn symlinked_configs_stay_symlinks() {
    let home = Home::new();
    let original = &fixture("claude-code", "tabs-foreign-hooks.json");
    let target = home.put("dotfiles/claude-settings.json", original);
    std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o600)).unwrap();
    std::fs::create_dir_all(home.path().join(".claude")).unwrap();
    let link = home.path().join(".claude/settings.json");
    std::os::unix::fs::symlink("../dotfiles/claude-settings.json", &link).unwrap();
    home.ok(&["install", "--harness", "claude-code"]);
    assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
    assert!(std::fs::read_to_string(&target).unwrap().contains("ovmem hook claude-code Stop"));
    assert_eq!(std::fs::metadata(&target).unwrap().permissions().mode() & 0o777, 0o600, "mode not kept");
    home.ok(&["uninstall", "--harness", "claude-code", "--yes"]);
    assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
    assert_eq!(&std::fs::read(&target).unwrap(), original);
}

#[test]
fn concurrent_installs_leave_exactly_one_entry_per_event() {
    let home = Home::new();
    let original = &fixture("claude-code", "tabs-foreign-hooks.json");
    home.put(".claude/settings.json", original);
    let children: Vec<_> = (0..8)
        .map(|_| {
            home.cmd(&["install", "--harness", "claude-code,cursor,cline"]).stderr(Stdio::piped()).spawn().unwrap()
        })
        .collect();
    for c in children {
        let out = c.wait_with_output().unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
    }
    for rel in [".claude/settings.json", ".cursor/hooks.json"] {
        let text = std::fs::read_to_string(home.path().join(rel)).unwrap();
        let counts = ovmem_entries_per_event(&text);
        assert!(
            counts.values().filter(|n| **n > 0).count() >= 5 && counts.values().all(|n| *n <= 1),
            "{rel}: {counts:?}"
        );
    }
    home.ok(&["uninstall", "--yes"]);
    assert_eq!(&std::fs::read(home.path().join(".claude/settings.json")).unwrap(), original);
}

#[test]
fn a_failure_between_files_rolls_back_and_a_crash_leaves_each_file_old_or_new() {
    // A failure part-way: everything written so far is put back.
    let home = Home::new();
    let out = home.cmd(&["install", "--harness", "cline"]).env("OVMEM_FAULT", "between-files:4").output().unwrap();
    assert!(!out.status.success());
    assert!(stderr(&out).contains("injected fault"), "{}", stderr(&out));
    assert!(
        !home.path().join("Documents").exists(),
        "rollback left files: {:?}",
        home.tree().keys().collect::<Vec<_>>()
    );

    // A crash part-way (abort, no cleanup): each file is either absent (old) or complete (new).
    let home = Home::new();
    let out =
        home.cmd(&["install", "--harness", "cline"]).env("OVMEM_FAULT", "abort:between-files:4").output().unwrap();
    assert!(!out.status.success());
    let dir = home.path().join("Documents/Cline/Hooks");
    let mut complete = 0;
    for event in ["TaskStart", "TaskResume", "UserPromptSubmit", "TaskComplete", "TaskCancel", "PreToolUse"] {
        if let Ok(text) = std::fs::read_to_string(dir.join(event)) {
            assert!(text.ends_with(&format!("hook cline {event}\n")), "{event} is half-written: {text:?}");
            complete += 1;
        }
    }
    assert_eq!(complete, 3);
    let temps: Vec<_> = home.tree().into_keys().filter(|p| p.to_string_lossy().contains("ovmem-tmp")).collect();
    assert!(temps.is_empty(), "{temps:?}");
    // A rerun completes the install.
    home.ok(&["install", "--harness", "cline"]);
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 6);

    // Same for a JSON file: a crash right before the rename leaves the old bytes.
    let home = Home::new();
    let original = &fixture("claude-code", "tabs-foreign-hooks.json");
    let path = home.put(".claude/settings.json", original);
    let out = home
        .cmd(&["install", "--harness", "claude-code"])
        .env("OVMEM_FAULT", "abort:before-rename:3")
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert_eq!(&std::fs::read(&path).unwrap(), original);
}

#[test]
fn entries_the_user_edited_are_reported_not_removed() {
    let home = Home::new();
    home.ok(&["install", "--harness", "claude-code,cline"]);
    let settings = home.path().join(".claude/settings.json");
    let text = std::fs::read_to_string(&settings).unwrap();
    let at = text.find("hook claude-code SessionStart").unwrap();
    let t = at + text[at..].find("\"timeout\": 30").unwrap();
    let edited = format!("{}\"timeout\": 45{}", &text[..t], &text[t + "\"timeout\": 30".len()..]);
    assert_ne!(text, edited);
    std::fs::write(&settings, &edited).unwrap();
    let script = home.path().join("Documents/Cline/Hooks/TaskStart");
    let mut s = std::fs::read_to_string(&script).unwrap();
    s.push_str("# my tweak\n");
    std::fs::write(&script, &s).unwrap();

    let status = home.ok(&["status", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&status.stdout).unwrap();
    let claude = v["harnesses"].as_array().unwrap().iter().find(|h| h["harness"] == "claude-code").unwrap();
    let states: Vec<&str> =
        claude["scopes"][0]["entries"].as_array().unwrap().iter().map(|e| e["state"].as_str().unwrap()).collect();
    assert_eq!(states.iter().filter(|s| **s == "edited").count(), 1, "{claude}");

    // Reinstall keeps the user's edit.
    let out = home.ok(&["install", "--harness", "claude-code"]);
    assert!(stderr(&out).contains("edited by you"), "{}", stderr(&out));
    assert!(std::fs::read_to_string(&settings).unwrap().contains("\"timeout\": 45"));

    let out = home.ok(&["uninstall", "--yes"]);
    assert!(stderr(&out).contains("left in place"), "{}", stderr(&out));
    let left = std::fs::read_to_string(&settings).unwrap();
    assert!(left.contains("\"timeout\": 45") && !left.contains("hook claude-code Stop"), "{left}");
    assert_eq!(std::fs::read_to_string(&script).unwrap(), s);

    home.ok(&["uninstall", "--yes", "--force"]);
    assert!(!settings.exists(), "ovmem created this file; with nothing else in it, it goes");
    assert!(!script.exists());
}

#[test]
fn a_users_own_cline_hook_is_never_overwritten() {
    let home = Home::new();
    let mine = std::fs::read(Path::new(FIXTURES).join("cline/TaskStart.user")).unwrap();
    let path = home.put("Documents/Cline/Hooks/TaskStart", &mine);
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o700)).unwrap();
    let out = home.ok(&["install", "--harness", "cline"]);
    assert!(stderr(&out).contains("belongs to someone else"), "{}", stderr(&out));
    assert_eq!(std::fs::read(&path).unwrap(), mine);
    let fallback = home.path().join(".cline/hooks/TaskStart");
    assert!(std::fs::read_to_string(&fallback).unwrap().contains("hook cline TaskStart"));
    home.ok(&["uninstall", "--harness", "cline", "--yes"]);
    assert_eq!(std::fs::read(&path).unwrap(), mine);
    assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o700);
    assert!(!fallback.exists() && !home.path().join(".cline").exists());
    let left: Vec<PathBuf> = home.tree().into_keys().collect();
    assert_eq!(left, vec![path]);
}

#[test]
fn without_a_terminal_or_harness_list_nothing_changes() {
    let home = Home::new();
    std::fs::create_dir_all(home.path().join(".claude")).unwrap();
    let out = home.run(&["install"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("detected: claude-code"), "{}", stderr(&out));
    assert!(!home.path().join(".ovmem").exists());
    // Nothing installed: nothing to confirm (issue 12), and it says so.
    let out = home.run(&["uninstall"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(stderr(&out).contains("nothing to remove"), "{}", stderr(&out));
    home.ok(&["install", "--harness", "claude-code"]);
    let out = home.run(&["uninstall"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--yes"));
    // An unknown harness is a usage error, like clap's own.
    let out = home.run(&["install", "--harness", "vim"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("unknown harness `vim`"));
}

#[test]
fn json_reports_and_status() {
    let home = Home::new();
    let out = home.ok(&["install", "--harness", "claude,cursor", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["harnesses"][0]["harness"], "claude-code");
    assert_eq!(v["harnesses"][0]["files"][0]["change"], "created");
    assert_eq!(v["harnesses"][0]["files"][0]["entries"][0]["action"], "added");
    let out = home.ok(&["status", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let cursor = v["harnesses"].as_array().unwrap().iter().find(|h| h["harness"] == "cursor").unwrap();
    assert_eq!(cursor["scopes"][0]["installed"], true);
    assert!(cursor["scopes"][0]["entries"].as_array().unwrap().iter().all(|e| e["state"] == "ok"));
    let codex = v["harnesses"].as_array().unwrap().iter().find(|h| h["harness"] == "codex").unwrap();
    assert_eq!(codex["scopes"][0]["installed"], false);
    let out = home.ok(&["status"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("installed, 8/8 entries intact (`~/.cursor/hooks.json`)"), "{text}");
    assert!(text.contains("installed, 6/6 entries intact (`~/.claude/settings.json`)"), "{text}");
    let cursor = v["harnesses"].as_array().unwrap().iter().find(|h| h["harness"] == "cursor").unwrap();
    assert!(cursor["scopes"][0]["entries"]
        .as_array()
        .unwrap()
        .iter()
        .any(|e| e["event"] == "mcp server" && e["state"] == "ok"));
}

#[test]
fn codex_without_its_binary_reports_trust_pending() {
    let home = Home::new();
    let out = home.ok(&["install", "--harness", "codex"]);
    let err = stderr(&out);
    assert!(err.contains("trust pending") && err.contains("/hooks"), "{err}");
    let out = home.ok(&["install", "--harness", "codex", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["harnesses"][0]["trust"]["state"], "pending");
}

#[test]
fn installed_commands_run_under_sh_from_a_home_with_spaces_and_quotes() {
    let t = tempfile::tempdir().unwrap();
    let home = t.path().join("my home/o'neil ✓");
    std::fs::create_dir_all(&home).unwrap();
    let run = |args: &[&str]| {
        Command::new(OVMEM).args(args).env_clear().env("HOME", &home).env("PATH", "/usr/bin:/bin").output().unwrap()
    };
    assert!(run(&["install", "--harness", "claude-code,cursor"]).status.success());
    for (rel, event, noop) in
        [(".claude/settings.json", "Stop", "{}"), (".cursor/hooks.json", "beforeSubmitPrompt", r#"{"continue":true}"#)]
    {
        let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(home.join(rel)).unwrap()).unwrap();
        let mut cmds = Vec::new();
        ovmem::install::marker::commands(&v["hooks"][event], &mut cmds);
        let mut child = Command::new("sh")
            .args(["-c", &cmds[0]])
            .env_clear()
            .env("HOME", &home)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        std::io::Write::write_all(&mut child.stdin.take().unwrap(), b"{\"session_id\":\"s\"}").unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "{rel}: `{}` did not run", cmds[0]);
        assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), noop, "{rel}");
    }
}

/// Where each TOML-MCP harness registers `ovmem mcp`, relative to the home.
const TOML_MCP: &[(&str, &str)] = &[("codex", ".codex/config.toml"), ("trae-cli", ".trae/traecli.toml")];

fn toml_fixtures(harness: &str) -> Vec<(String, Vec<u8>)> {
    let dir = Path::new(FIXTURES).join(harness).join("toml");
    let mut v: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| (e.file_name().to_string_lossy().into_owned(), std::fs::read(e.path()).unwrap()))
        .collect();
    v.sort();
    v
}

/// `[mcp_servers.ovmem]` goes into the harness's own TOML config beside everything of the user's
/// (comments, tables, CRLF, BOM, no final newline), a reinstall changes nothing, uninstall gives
/// every byte back; a server of the user's own named `ovmem` is left alone and reported.
#[test]
fn toml_mcp_fixtures_round_trip_byte_for_byte() {
    for (harness, rel) in TOML_MCP {
        for (name, original) in toml_fixtures(harness) {
            let home = Home::new();
            let config = home.put(rel, &original);
            let out = home.ok(&["install", "--harness", harness]);
            let installed = std::fs::read_to_string(&config).unwrap();
            insta::assert_snapshot!(format!("installed_mcp__{harness}__{name}"), home.redact(&installed));
            let values: toml::Table = installed.trim_start_matches('\u{feff}').parse().unwrap();
            let server = &values["mcp_servers"]["ovmem"];
            if name.starts_with("someone-elses") {
                assert_eq!(installed.as_bytes(), &original[..], "{harness}/{name}: their server was touched");
                assert!(stderr(&out).contains("not ovmem's"), "{harness}/{name}: not reported: {}", stderr(&out));
            } else {
                let runtime = home.path().join(".ovmem/bin/ovmem");
                assert_eq!(server["command"].as_str(), Some(runtime.to_str().unwrap()), "{harness}/{name}");
                assert_eq!(server["args"].as_array().unwrap().len(), 1, "{harness}/{name}");
                let original = std::str::from_utf8(&original).unwrap();
                if !name.starts_with("inline") {
                    // Spliced in at the end: the user's bytes stay exactly where they were.
                    let added = installed.strip_prefix(original).expect("the user's bytes kept in place");
                    if original.contains("\r\n") {
                        assert!(!added.replace("\r\n", "").contains('\n'), "{harness}/{name}: LF in a CRLF file");
                    }
                }
            }
            let before = home.tree();
            std::thread::sleep(std::time::Duration::from_millis(20));
            home.ok(&["install", "--harness", harness]);
            assert_eq!(home.tree(), before, "{harness}/{name}: a second install changed files");
            home.ok(&["uninstall", "--harness", harness, "--yes"]);
            assert_eq!(std::fs::read(&config).unwrap(), original, "{harness}/{name}: not restored byte for byte");
            let left: Vec<PathBuf> = home.tree().into_keys().collect();
            assert_eq!(left, vec![config.clone()], "{harness}/{name}: uninstall left files behind");
        }
    }
}

#[test]
fn a_toml_config_that_does_not_parse_is_refused_and_left_untouched() {
    let home = Home::new();
    let bad = b"model = \"x\"\n[mcp_servers\n";
    let path = home.put(".codex/config.toml", bad);
    let out = home.run(&["install", "--harness", "codex"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains(&path.display().to_string()), "{}", stderr(&out));
    assert_eq!(std::fs::read(&path).unwrap(), bad);
    assert!(!home.path().join(".codex/hooks.json").exists(), "a refused target was half installed");
}

/// An existing, empty `~/.ovmem` open to others (made under umask 000, or by a dotfiles script)
/// is made private by the install that stages the runtime in it: with the directory writable by
/// others, another user could swap `bin/` and every hook would run their program.
#[test]
fn install_makes_an_open_ovmem_home_private() {
    let home = Home::new();
    let ovmem_home = home.path().join(".ovmem");
    std::fs::create_dir(&ovmem_home).unwrap();
    std::fs::set_permissions(&ovmem_home, std::fs::Permissions::from_mode(0o777)).unwrap();
    home.ok(&["install", "--harness", "claude-code"]);
    assert_eq!(std::fs::metadata(&ovmem_home).unwrap().permissions().mode() & 0o777, 0o700);
    home.ok(&["uninstall", "--yes"]);
    assert!(home.tree().is_empty(), "left behind: {:?}", home.tree().keys().collect::<Vec<_>>());
}

/// A user-scope file that is a project's (`CLAUDE_CONFIG_DIR=<project>/.claude`, set per project
/// by direnv) after a project-scope install there: the user-scope install is refused, as the other
/// order is, and a user-scope uninstall leaves the project's hooks to the project's receipt.
#[test]
fn a_user_scope_install_never_takes_a_project_s_entries() {
    let home = Home::new();
    let proj = home.path().join("work/app");
    std::fs::create_dir_all(proj.join(".git")).unwrap();
    let settings = home.put("work/app/.claude/settings.json", b"{\"model\": \"x\"}\n");
    let p = proj.to_str().unwrap();
    home.ok(&["install", "--harness", "claude-code", "--scope", "project", "--project", p]);
    let installed = std::fs::read(&settings).unwrap();
    let config_dir = proj.join(".claude");
    let as_user = |args: &[&str]| home.cmd(args).env("CLAUDE_CONFIG_DIR", &config_dir).output().unwrap();
    let out = as_user(&["install", "--harness", "claude-code", "--yes"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("project's file too"), "{}", stderr(&out));
    assert_eq!(std::fs::read(&settings).unwrap(), installed);
    // Nor does a user-scope uninstall (by ovmem's markers, with no receipt of its own) take them.
    let out = as_user(&["uninstall", "--harness", "claude-code", "--yes"]);
    assert_eq!(std::fs::read(&settings).unwrap(), installed, "{}", stderr(&out));
    home.ok(&["uninstall", "--project", p, "--yes"]);
    assert_eq!(std::fs::read(&settings).unwrap(), b"{\"model\": \"x\"}\n");
}

/// `chattr -i` on drop, so a failed assertion does not leave an immutable file the temp home
/// cannot be removed past.
struct Unmark(Vec<PathBuf>);

impl Drop for Unmark {
    fn drop(&mut self) {
        for p in &self.0 {
            let _ = Command::new("chattr").arg("-i").arg(p).output();
        }
    }
}

/// Whether `chattr +i` worked on `p` (root, and a filesystem with the flag); a test sandbox may
/// have neither, and then that case is skipped.
fn mark_immutable(p: &Path, marks: &mut Unmark) -> bool {
    let ok = Command::new("chattr").arg("+i").arg(p).output().is_ok_and(|o| o.status.success());
    if ok {
        marks.0.push(p.to_path_buf());
    } else {
        eprintln!("chattr +i is not available here: the immutable case of {} is skipped", p.display());
    }
    ok
}

/// A config path where nothing can be edited safely: a directory, a FIFO, a symlink loop, a file
/// past the 256 MiB cap, an immutable (`chattr +i`) file or directory. Each is a refusal, as a
/// file that does not parse is: exit 2 (it was 1), the file named with what to do, nothing
/// written there, and the other harnesses of the run still installed.
#[test]
fn a_config_path_that_cannot_be_edited_safely_is_refused_with_exit_2() {
    type Make = fn(&Path, &mut Unmark) -> bool;
    let cases: [(&str, Make); 6] = [
        ("a directory", |p, _| std::fs::create_dir(p).is_ok()),
        ("a FIFO (named pipe)", |p, _| {
            let c = std::ffi::CString::new(p.to_str().unwrap()).unwrap();
            // SAFETY: a valid C string path.
            unsafe { libc::mkfifo(c.as_ptr(), 0o644) == 0 }
        }),
        ("a symlink loop", |p, _| std::os::unix::fs::symlink(p.file_name().unwrap(), p).is_ok()),
        ("larger than 256 MiB", |p, _| {
            std::fs::File::create(p).and_then(|f| f.set_len(ovmem::fsx::MAX_READ + 1)).is_ok()
        }),
        ("immutable", |p, marks| {
            std::fs::write(p, b"{\"model\": \"x\"}\n").unwrap();
            mark_immutable(p, marks)
        }),
        ("immutable", |p, marks| {
            std::fs::write(p, b"{\"model\": \"x\"}\n").unwrap();
            mark_immutable(p.parent().unwrap(), marks)
        }),
    ];
    for (i, (what, make)) in cases.iter().enumerate() {
        let home = Home::new();
        let settings = home.path().join(".claude/settings.json");
        std::fs::create_dir_all(settings.parent().unwrap()).unwrap();
        let mut marks = Unmark(Vec::new());
        if !make(&settings, &mut marks) {
            continue;
        }
        let named = if i == 5 { settings.parent().unwrap() } else { &settings };
        let before = std::fs::symlink_metadata(&settings).unwrap();
        let out = home.run(&["install", "--harness", "claude-code,cursor", "--yes"]);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{what}: {err}");
        assert!(err.contains(&format!("`{}`", named.display())) && err.contains(what), "{what}: {err}");
        assert!(err.contains("run ovmem again"), "{what}: says what to do: {err}");
        let after = std::fs::symlink_metadata(&settings).unwrap();
        assert_eq!(
            (after.file_type(), after.len(), after.modified().unwrap()),
            (before.file_type(), before.len(), before.modified().unwrap()),
            "{what}: touched"
        );
        let written: Vec<_> =
            std::fs::read_dir(settings.parent().unwrap()).unwrap().flatten().map(|e| e.path()).collect();
        assert_eq!(written, vec![settings.clone()], "{what}: backups or temp files were written");
        assert!(home.path().join(".cursor/hooks.json").exists(), "{what}: the other harness still installs");
        drop(marks);
    }
}

/// RFC 8259's grammar takes a lone surrogate escape (`"\ud800"`), which is no character, and
/// editors such as VS Code write such files. ovmem edits by splicing, so the escape stays as it
/// was written: install and uninstall work and give back every byte (it was refused as a file
/// that does not parse), in a value, a key, and a hook of the user's beside ovmem's.
#[test]
fn a_lone_surrogate_escape_is_kept_verbatim_through_install_and_uninstall() {
    let home = Home::new();
    let original = "{\n  \"title\": \"\\ud800 half\",\n  \"\\udc00key\": {\"pair\": \"\\ud83d\\ude00 \\ud83d\"},\n  \
                    \"hooks\": {\n    \"Stop\": [{\"hooks\": [{\"type\": \"command\", \"command\": \"notify \\udfff\"}]}]\n  }\n}\n";
    let path = home.put(".claude/settings.json", original.as_bytes());
    home.ok(&["install", "--harness", "claude-code"]);
    let installed = std::fs::read_to_string(&path).unwrap();
    for escape in ["\"\\ud800 half\"", "\"\\udc00key\"", "\"\\ud83d\\ude00 \\ud83d\"", "notify \\udfff"] {
        assert!(installed.contains(escape), "{escape} is kept verbatim: {installed}");
    }
    assert_eq!(installed.matches(".ovmem/bin/ovmem hook claude-code").count(), 5, "{installed}");
    home.ok(&["install", "--harness", "claude-code"]);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), installed, "a second install changes nothing");
    home.ok(&["uninstall", "--yes"]);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), original, "uninstall gives back every byte");
    // An escape that is not one is still refused, with where it is.
    let bad = "{\"a\": \"\\ud80\"}";
    std::fs::write(&path, bad).unwrap();
    let out = home.run(&["install", "--harness", "claude-code"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("line 1, column 8: invalid \\u escape"), "{}", stderr(&out));
    assert_eq!(std::fs::read_to_string(&path).unwrap(), bad);
}

/// `sudo ovmem install` with another user's `HOME`, or root editing a developer's project file:
/// the backups beside the file are that user's (owner, group, mode), as the file itself stays;
/// they were root's, and the user could neither read nor remove them.
#[test]
fn root_s_backups_of_another_user_s_file_keep_its_owner_and_mode() {
    use std::os::unix::fs::MetadataExt;
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("not root: skipped");
        return;
    }
    let home = Home::new();
    let settings = home.put(".claude/settings.json", b"{\"model\": \"x\"}\n");
    std::os::unix::fs::chown(&settings, Some(12345), Some(12346)).unwrap();
    std::fs::set_permissions(&settings, std::fs::Permissions::from_mode(0o640)).unwrap();
    home.ok(&["install", "--harness", "claude-code"]);
    for p in [settings.clone(), settings.with_extension("json.bak"), settings.with_extension("json.ovmem.bak")] {
        let m = std::fs::metadata(&p).unwrap();
        assert_eq!((m.uid(), m.gid(), m.mode() & 0o777), (12345, 12346, 0o640), "{}", p.display());
    }
}

/// A home that belongs to another user (uid 12345, gid 12346), as `sudo ovmem install` finds
/// `/home/alice` with `HOME` kept.
fn others_home() -> Home {
    let home = Home::new();
    std::os::unix::fs::chown(home.path(), Some(12345), Some(12346)).unwrap();
    home
}

/// (uid, gid, mode) of `p`, its link not followed.
fn owner_mode(p: &Path) -> (u32, u32, u32) {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::symlink_metadata(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    (m.uid(), m.gid(), m.mode() & 0o7777)
}

/// This process's umask (from /proc, without changing it under the other tests' feet).
fn umask() -> u32 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find_map(|l| l.strip_prefix("Umask:")).unwrap();
    u32::from_str_radix(line.trim(), 8).unwrap()
}

/// `sudo ovmem install` with another user's `HOME`: the harness configs ovmem creates there, and
/// the directory it creates for one, are that user's, with the modes a user's own install gives
/// them; they were root's, and the harness could not write its own config.
#[test]
fn root_s_install_for_another_user_gives_them_the_configs_it_creates() {
    if common::as_root().is_none() {
        return;
    }
    let home = others_home();
    home.ok(&["install", "--harness", "claude-code"]);
    let dir = home.path().join(".claude");
    assert_eq!(owner_mode(&dir), (12345, 12346, 0o777 & !umask()));
    assert_eq!(owner_mode(&dir.join("settings.json")), (12345, 12346, 0o644));
    assert_eq!(owner_mode(&home.path().join(".claude.json")), (12345, 12346, 0o600));
}

/// The same install: ovmem's own home there (`~/.ovmem`, the staged runtime the user's hooks run,
/// the receipts, the lock, the stamp) is that user's and private; it was root's 0700, and the
/// user's hooks could not even run the runtime, let alone write the store or the logs.
#[test]
fn root_s_install_for_another_user_gives_them_ovmem_s_home() {
    if common::as_root().is_none() {
        return;
    }
    let home = others_home();
    home.ok(&["install", "--harness", "claude-code"]);
    let o = home.path().join(".ovmem");
    for (p, mode) in [
        (o.clone(), 0o700),
        (o.join("bin"), 0o700),
        (o.join("bin/ovmem"), 0o700),
        (o.join("receipts"), 0o700),
        (o.join("receipts/claude-code.user.json"), 0o600),
        (o.join("locks"), 0o700),
        (o.join("locks/ovmem.lock"), 0o600),
        (o.join(".private-checked"), 0o600),
    ] {
        assert_eq!(owner_mode(&p), (12345, 12346, mode), "{}", p.display());
    }
    // Nothing under it is root's.
    let mut left = vec![o];
    while let Some(d) = left.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            assert_eq!(owner_mode(&e.path()).0, 12345, "{}", e.path().display());
            if e.file_type().unwrap().is_dir() {
                left.push(e.path());
            }
        }
    }
}

/// A file ovmem creates in a directory of root's stays root's, even in another user's home: only
/// a directory that is the user's passes its owner on.
#[test]
fn root_s_new_file_in_a_directory_of_root_s_stays_root_s() {
    if common::as_root().is_none() {
        return;
    }
    let home = others_home();
    let dir = home.path().join(".claude");
    std::fs::create_dir(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    home.ok(&["install", "--harness", "claude-code"]);
    assert_eq!(owner_mode(&dir), (0, 0, 0o755));
    assert_eq!(owner_mode(&dir.join("settings.json")), (0, 0, 0o644));
    // Beside it, directly in the user's home: the user's.
    assert_eq!(owner_mode(&home.path().join(".claude.json")), (12345, 12346, 0o600));
}

/// What root installed for another user can be uninstalled: by root, and by the user, whose
/// hooks run the staged runtime (it was root's 0700 in a home of root's: the user could neither
/// run it nor take ovmem's lock).
#[test]
fn what_root_installed_for_another_user_is_uninstalled_by_root_or_by_the_user() {
    if common::as_root().is_none() {
        return;
    }
    // By root.
    let home = others_home();
    home.ok(&["install", "--harness", "claude-code"]);
    home.ok(&["uninstall", "--yes", "--harness", "claude-code"]);
    assert_eq!(std::fs::read_dir(home.path()).unwrap().count(), 0, "{:?}", home.tree().keys());
    // By the user, with the runtime root staged for them.
    let home = others_home();
    home.ok(&["install", "--harness", "claude-code"]);
    let runtime = home.path().join(".ovmem/bin/ovmem");
    let args = ["uninstall", "--yes", "--harness", "claude-code"];
    let out = common::run_as(home.path(), (12345, 12346), &runtime, &args, &[]);
    assert!(out.status.success(), "exited {:?}:\n{}", out.status.code(), stderr(&out));
    assert_eq!(std::fs::read_dir(home.path()).unwrap().count(), 0, "{:?}", home.tree().keys());
}

/// Root's `memory add` (or `sync`, `memory import`) with another user's HOME creates the store
/// theirs, WAL and shared-memory files included, so their hooks can write it.
#[test]
fn root_s_first_memory_in_another_user_s_home_leaves_them_a_store_they_can_write() {
    if common::as_root().is_none() {
        return;
    }
    let home = others_home();
    home.ok(&["install", "--harness", "claude-code"]);
    home.ok(&["memory", "add", "the staging database listens on port 5433"]);
    let ovmem = home.path().join(".ovmem");
    for name in ["memory.db", "memory.db-wal", "memory.db-shm"] {
        let p = ovmem.join(name);
        if name == "memory.db" || p.exists() {
            assert_eq!(owner_mode(&p).0, 12345, "{}", p.display());
            assert_eq!(owner_mode(&p).2 & 0o077, 0, "{} is private", p.display());
        }
    }
    let args = ["memory", "add", "deploys go through the blue-green pipeline"];
    let out = common::run_as(home.path(), (12345, 12346), &ovmem.join("bin/ovmem"), &args, &[]);
    assert!(out.status.success(), "the user could not write the store root made: {}", stderr(&out));
}
