//! A project is untrusted input: what a repository commits (symlinks out of the tree, devices,
//! FIFOs, huge files, programs named like the harnesses) must never make ovmem write, move, read
//! or run anything outside it.
#![cfg(unix)]

mod common;

use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::{stderr, Entry, Home};

/// `<home>/work/repo`, a git checkout.
fn repo(home: &Home) -> PathBuf {
    let p = home.path().join("work/repo");
    std::fs::create_dir_all(p.join(".git")).unwrap();
    p
}

fn mkdirs(p: &Path) {
    std::fs::create_dir_all(p).unwrap();
}

#[test]
fn committed_symlinks_out_of_the_project_are_never_written_through() {
    let home = Home::new();
    let proj = repo(&home);
    // A hook file linked to the victim's shell profile (which does not exist yet).
    mkdirs(&proj.join(".clinerules/hooks"));
    symlink("../../../../.bash_profile", proj.join(".clinerules/hooks/TaskStart")).unwrap();
    // A settings file linked to one of the victim's files, with hooks ovmem would recognise.
    let victim = home.put(
        "victim.json",
        b"{\n  \"hooks\": {\n    \"Stop\": [{\"hooks\": [{\"type\": \"command\", \"command\": \"my-backup\"}]}]\n  }\n}\n",
    );
    mkdirs(&proj.join(".claude"));
    symlink("../../../victim.json", proj.join(".claude/settings.json")).unwrap();
    // A whole config directory linked to the victim's.
    let cursor = home.put(".cursor/hooks.json", b"{\"version\": 1, \"hooks\": {}}\n");
    symlink("../../.cursor", proj.join(".cursor")).unwrap();
    // An absolute link.
    let secret = home.put("secret.json", b"{}\n");
    mkdirs(&proj.join(".gemini"));
    symlink(&secret, proj.join(".gemini/settings.json")).unwrap();
    let outside = |home: &Home| -> Vec<(PathBuf, Option<Entry>)> {
        [home.path().join(".bash_profile"), victim.clone(), cursor.clone(), secret.clone()]
            .into_iter()
            .map(|p| {
                let e = home.tree().get(&p).cloned();
                (p, e)
            })
            .collect()
    };
    let before = outside(&home);
    let p = proj.to_str().unwrap();

    let out = home.run(&["install", "--harness", "claude-code,cursor,cline,codex,gemini-cli", "--project", p]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    for link in [".clinerules/hooks/TaskStart", ".claude/settings.json", ".cursor/hooks.json", ".gemini/settings.json"]
    {
        assert!(err.contains(&proj.join(link).display().to_string()), "{link} not named: {err}");
    }
    assert!(err.contains("outside the project"), "{err}");
    assert_eq!(outside(&home), before, "a file outside the project was touched");
    assert!(!home.path().join(".bash_profile").exists());
    // Harnesses without such links still install.
    assert!(std::fs::read_to_string(proj.join(".codex/hooks.json")).unwrap().contains("hook codex Stop"));

    // The same for uninstall, even with ovmem-looking entries in the victim's files.
    let bin = home.path().join(".ovmem/bin/ovmem");
    let tempting = format!(
        "{{\"hooks\": {{\"Stop\": [{{\"hooks\": [{{\"type\": \"command\", \"command\": \"{} hook claude-code Stop\"}}]}}]}}}}\n",
        bin.display()
    );
    std::fs::write(&victim, &tempting).unwrap();
    let out = home.run(&["uninstall", "--project", p, "--yes"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), tempting);
    assert!(!home.path().join(".bash_profile").exists());
    assert!(!proj.join(".codex/hooks.json").exists(), "the project's own files are still uninstalled");

    // check (the CI gate) reports the links and reads nothing through them.
    let out = home.run(&["check", "--project", p, "--format", "json"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v["errors"].to_string().contains("outside the project"), "{v}");
}

#[test]
fn migrate_never_moves_what_a_committed_symlink_points_to() {
    let home = Home::new();
    let proj = repo(&home);
    let ssh = home.path().join(".ssh");
    mkdirs(&ssh);
    std::fs::write(ssh.join("id_ed25519"), "PRIVATE KEY").unwrap();
    let hooks = proj.join(".clinerules/hooks");
    mkdirs(&hooks);
    std::fs::write(
        hooks.join("TaskComplete"),
        "#!/usr/bin/env python3\nfrom lib.hooks_impl import main_task_complete\nmain_task_complete()\n",
    )
    .unwrap();
    // Hindsight keeps its code in `lib/` beside the hooks: here a committed link to ~/.ssh.
    symlink(&ssh, hooks.join("lib")).unwrap();
    // Backups on another filesystem, where a move is a copy: nothing may be followed there either.
    let shm = tempfile::tempdir_in("/dev/shm").unwrap();
    let out = home
        .cmd(&["migrate", "--project", proj.to_str().unwrap(), "--yes"])
        .env("OVMEM_HOME", shm.path().join("ovmem"))
        .output()
        .unwrap();
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("symlink") && err.contains("lib"), "the skipped link is reported: {err}");
    assert_eq!(std::fs::read_to_string(ssh.join("id_ed25519")).unwrap(), "PRIVATE KEY");
    assert!(std::fs::symlink_metadata(hooks.join("lib")).unwrap().file_type().is_symlink(), "the link stays");
    // The legacy hook itself went to the backup, and ovmem's replaced it.
    assert!(std::fs::read_to_string(hooks.join("TaskComplete")).unwrap().contains("hook cline TaskComplete"));
    let moved: Vec<PathBuf> = common::tree(&shm.path().join("ovmem/backups")).into_keys().collect();
    assert!(moved.iter().any(|p| p.ends_with("TaskComplete")), "{moved:?}");
    assert!(!moved.iter().any(|p| p.to_string_lossy().contains("id_ed25519")), "{moved:?}");
}

#[test]
fn check_on_a_project_reads_only_regular_files_and_never_hangs() {
    let home = Home::new();
    let proj = repo(&home);
    mkdirs(&proj.join(".claude"));
    symlink("/dev/zero", proj.join(".claude/settings.json")).unwrap();
    mkdirs(&proj.join(".cursor"));
    let fifo = std::ffi::CString::new(proj.join(".cursor/hooks.json").to_str().unwrap()).unwrap();
    // SAFETY: a valid C string path.
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o644) }, 0);
    mkdirs(&proj.join(".codex"));
    let big = std::fs::File::create(proj.join(".codex/hooks.json")).unwrap();
    big.set_len(200 << 20).unwrap();
    mkdirs(&proj.join(".gemini/settings.json"));
    for args in [
        vec!["check", "--project", proj.to_str().unwrap(), "--format", "json"],
        vec!["install", "--harness", "claude-code,cursor,codex,gemini-cli", "--project", proj.to_str().unwrap()],
        vec!["migrate", "--project", proj.to_str().unwrap(), "--yes"],
    ] {
        let mut child = home.cmd(&args).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
        let t = Instant::now();
        while child.try_wait().unwrap().is_none() {
            assert!(t.elapsed() < Duration::from_secs(20), "{args:?} hangs");
            std::thread::sleep(Duration::from_millis(20));
        }
        let out = child.wait_with_output().unwrap();
        let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), stderr(&out));
        assert_eq!(out.status.code(), Some(2), "{args:?}: {text}");
        for bad in [".claude/settings.json", ".cursor/hooks.json", ".codex/hooks.json"] {
            assert!(text.contains(bad), "{args:?}: {bad} not reported: {text}");
        }
        assert!(text.contains("outside the project") || text.contains("not a regular file"), "{text}");
    }
    assert_eq!(std::fs::metadata(proj.join(".codex/hooks.json")).unwrap().len(), 200 << 20);
}

/// A config of millions of tiny values (`[0,0,…]`, cheap to commit) is refused as one that does
/// not parse (exit 2, the file named and untouched), not read into a tree gigabytes large: each
/// value costs a node, so the parse stops at `MAX_VALUES`.
#[test]
fn a_config_of_millions_of_tiny_values_is_refused_not_read_whole() {
    let home = Home::new();
    let proj = repo(&home);
    mkdirs(&proj.join(".claude"));
    let n = ovmem::edit::json::MAX_VALUES;
    let text = format!("{{\"hooks\":{{\"Stop\":[{}0]}}}}", "0,".repeat(n));
    let path = proj.join(".claude/settings.json");
    std::fs::write(&path, &text).unwrap();
    for args in [
        vec!["check", "--project", proj.to_str().unwrap()],
        vec!["install", "--harness", "claude-code", "--project", proj.to_str().unwrap()],
    ] {
        let out = home.run(&args);
        let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), stderr(&out));
        assert_eq!(out.status.code(), Some(2), "{args:?}: {said}");
        assert!(said.contains(".claude/settings.json") && said.contains("4 million JSON values"), "{args:?}: {said}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), text, "untouched");
    }
}

/// The same for TOML (Codex's `config.toml` at user scope): counted before it is parsed, where a
/// parse of 60 MB took 6.5 GB to check and 15 GB to install into.
#[test]
fn a_toml_config_of_many_tiny_values_is_refused_not_read_whole() {
    let home = Home::new();
    mkdirs(&home.path().join(".codex"));
    let text = format!("x = [{}0]\n", "0,".repeat(ovmem::edit::toml::MAX_VALUES));
    let path = home.path().join(".codex/config.toml");
    std::fs::write(&path, &text).unwrap();
    for args in [vec!["check"], vec!["install", "--harness", "codex", "--yes"]] {
        let out = home.run(&args);
        let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), stderr(&out));
        assert_eq!(out.status.code(), Some(2), "{args:?}: {said}");
        assert!(said.contains("500000 TOML values"), "{args:?}: {said}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), text, "untouched");
    }
}

#[test]
fn nothing_on_an_empty_or_relative_path_element_is_ever_run() {
    let home = Home::new();
    let proj = repo(&home);
    let marker = home.path().join("PWNED");
    let trap = format!("#!/bin/sh\necho \"$0 $*\" >> '{}'\n", marker.display());
    mkdirs(&proj.join("bin"));
    for name in ["claude", "codex", "cursor-agent", "cursor", "cline", "gemini", "trae-cli", "traecli", "node", "env"] {
        for dir in [proj.clone(), proj.join("bin")] {
            let p = dir.join(name);
            std::fs::write(&p, &trap).unwrap();
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
    }
    // Empty elements (leading, trailing, doubled), `.`, and relative ones.
    let path = ":.::bin:/usr/bin:/bin:";
    let run = |args: &[&str]| home.cmd(args).env("PATH", path).current_dir(&proj).output().unwrap();
    let out = run(&["status"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("not detected"), "{}", String::from_utf8_lossy(&out.stdout));
    assert!(run(&["install", "--harness", "claude-code,codex,trae-cli"]).status.success());
    assert!(run(&["install", "--harness", "codex", "--project", "."]).status.success());
    let _ = run(&["check"]);
    let _ = run(&["check", "--project", "."]);
    assert!(run(&["status", "--project", "."]).status.success());
    assert!(run(&["uninstall", "--yes"]).status.success());
    assert!(!marker.exists(), "ran: {}", std::fs::read_to_string(&marker).unwrap_or_default());
}

/// A committed symlink's target and a file's name are the project's bytes: printed in a refusal
/// or a report, their escape sequences would write the user's clipboard (OSC 52), set the
/// window's title or clear the screen. Nothing ovmem prints about them holds an escape.
#[test]
fn a_project_s_names_never_reach_the_terminal_as_escapes() {
    let home = Home::new();
    let proj = repo(&home);
    mkdirs(&proj.join(".claude"));
    symlink("/tmp/\x1b]52;c;cHduZWQ=\x07\x1b]0;PWNED\x07\x1b[2Jx", proj.join(".claude/settings.json")).unwrap();
    mkdirs(&proj.join(".kiro/agents"));
    std::fs::write(proj.join(".kiro/agents/x\x1b]0;T\x07y.json"), "{\"name\":\"a\"}").unwrap();
    let p = proj.to_str().unwrap();
    for args in [
        vec!["install", "--harness", "claude-code", "--scope", "project", "--project", p, "--yes"],
        vec!["migrate", "--scope", "project", "--project", p, "--yes"],
        vec!["install", "--harness", "kiro-cli", "--scope", "project", "--project", p, "--yes"],
        vec!["uninstall", "--harness", "kiro-cli", "--scope", "project", "--project", p, "--yes"],
    ] {
        let out = home.run(&args);
        let all = [out.stdout.as_slice(), out.stderr.as_slice()].concat();
        assert!(!all.contains(&0x1b) && !all.contains(&0x07), "{args:?}: {}", String::from_utf8_lossy(&all));
    }
}

/// Sets the path of file record `i` of a receipt, as a hand edit (or a planted receipt) would.
fn point_receipt_at(receipt: &Path, i: usize, path: &str) {
    let mut r: serde_json::Value = serde_json::from_slice(&std::fs::read(receipt).unwrap()).unwrap();
    r["files"][i]["path"] = serde_json::json!(path);
    r["files"][i]["created"] = serde_json::json!(false);
    std::fs::write(receipt, serde_json::to_vec_pretty(&r).unwrap()).unwrap();
}

#[test]
fn a_receipt_naming_a_file_its_harness_never_writes_is_damaged_and_nothing_is_touched() {
    let home = Home::new();
    home.ok(&["install", "--harness", "claude-code"]);
    let receipt = home.path().join(".ovmem/receipts/claude-code.user.json");
    let r: serde_json::Value = serde_json::from_slice(&std::fs::read(&receipt).unwrap()).unwrap();
    let i = r["files"].as_array().unwrap().iter().position(|f| f["path"].as_str().unwrap().ends_with(".claude.json"));
    let i = i.expect("the MCP file's record");
    let outside = home.put("etc/other.json", b"{\"mcpServers\": {}, \"keep\": 1}\n");
    let h = home.path().to_str().unwrap();
    for named in [format!("{h}/.claude/../etc/other.json"), format!("{h}/etc/other.json")] {
        point_receipt_at(&receipt, i, &named);
        let before = home.tree();
        let out = home.run(&["uninstall", "--harness", "claude-code", "--yes"]);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{named}: {err}");
        assert!(err.contains("claude-code.user.json") && err.contains("ovmem repair --harness claude-code"), "{err}");
        assert!(err.contains("never writes at user scope"), "{err}");
        assert_eq!(home.tree(), before, "{named}: something was touched");
        assert_eq!(std::fs::read(&outside).unwrap(), b"{\"mcpServers\": {}, \"keep\": 1}\n");
    }
    // `repair` rebuilds it from the markers, and uninstall is whole again.
    home.ok(&["repair", "--harness", "claude-code"]);
    home.ok(&["uninstall", "--harness", "claude-code", "--yes"]);
    assert!(!std::fs::read_to_string(home.path().join(".claude.json")).unwrap_or_default().contains("/bin/ovmem"));
    assert!(!home.path().join("etc/other.json.bak").exists());
}

#[test]
fn a_receipt_made_under_another_config_dir_is_still_taken_out_where_it_was_made() {
    let home = Home::new();
    let codex = home.path().join("cfg/codex");
    std::fs::create_dir_all(&codex).unwrap();
    let out = home
        .cmd(&["install", "--harness", "codex,claude-code"])
        .env("CODEX_HOME", &codex)
        .env("CLAUDE_CONFIG_DIR", home.path().join("cfg/claude"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    // Uninstall without the variables: the receipt's paths are still ones these harnesses write.
    let out = home.ok(&["uninstall", "--harness", "codex,claude-code", "--yes"]);
    assert!(!codex.join("hooks.json").exists(), "{}", stderr(&out));
    assert!(!home.path().join("cfg/claude/settings.json").exists(), "{}", stderr(&out));
}

/// A TOML config that does not parse is named with where and why, and the part of the line around
/// that column: a file that is one 200 KB line printed 200 KB (the parser quotes the whole line).
/// The window is cut between characters (a line of `é` and `中`), and an escape sequence in it
/// never reaches the terminal. Kimi Code's `[[hooks]]` file and Codex's `config.toml` alike.
#[test]
fn a_parse_error_quotes_a_window_of_a_long_line_never_all_of_it() {
    let home = Home::new();
    let pad = "é中x".repeat(20_000);
    let line = format!("model = \"{pad}\x1b]0;PWNED\x07\" = oops {pad}\n");
    assert!(line.len() > 200_000);
    for (harness, rel) in [("codex", ".codex/config.toml"), ("kimi-code", ".kimi-code/config.toml")] {
        let path = home.put(rel, line.as_bytes());
        let out = home.run(&["install", "--harness", harness, "--yes", "--no-trust"]);
        assert_eq!(out.status.code(), Some(2), "{harness}: {}", stderr(&out));
        let err = String::from_utf8(out.stderr.clone()).expect("whole characters only");
        assert!(err.len() < 2_000, "{harness}: {} bytes: {err}", err.len());
        assert!(err.contains(&path.display().to_string()) && err.contains("line 1, column"), "{harness}: {err}");
        assert!(err.contains("…é中x") || err.contains("…中xé") || err.contains("…xé中"), "{harness}: {err}");
        assert!(err.contains("= oops"), "{harness}: the column's own text is quoted: {err}");
        assert!(!err.contains('\x1b') && !err.contains('\x07'), "{harness}: {err}");
        assert_eq!(std::fs::read(&path).unwrap(), line.as_bytes(), "{harness}: untouched");
    }
}
