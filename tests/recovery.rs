//! User data is sacred, whatever happened to ovmem's own records: no receipt (`rm -rf ~/.ovmem`,
//! a second `OVMEM_HOME`), a damaged receipt, hook groups shared with the user, comments inside
//! ovmem's entry or in containers it inserts into, read-only configs, and odd paths.
#![cfg(unix)]

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use common::{stderr, tree_diff, Home};

fn ovmem_hooks(text: &str) -> usize {
    text.matches("/bin/ovmem hook").count()
}

fn no_backups(home: &Home) {
    let left: Vec<_> = home
        .tree()
        .into_keys()
        .filter(|p| {
            let s = p.to_string_lossy();
            s.ends_with(".bak") || s.contains(".ovmem-tmp.")
        })
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}

#[test]
fn without_a_receipt_uninstall_gives_back_the_original_bytes() {
    for (harness, rel, fixture) in [
        ("claude-code", ".claude/settings.json", "empty-object-no-newline.json"),
        ("claude-code", ".claude/settings.json", "tabs-foreign-hooks.json"),
        ("cursor", ".cursor/hooks.json", "jsonc-crlf-trailing-commas.json"),
        ("codex", ".codex/hooks.json", "empty-hooks-compact.json"),
    ] {
        let home = Home::new();
        let original_bytes = Home::fixture(harness, fixture);
        home.put(rel, &original_bytes);
        let original = home.tree();
        home.ok(&["install", "--harness", harness]);
        // Every record of the install is gone.
        std::fs::remove_dir_all(home.path().join(".ovmem")).unwrap();
        let out = home.ok(&["uninstall", "--harness", harness, "--yes"]);
        assert_eq!(
            std::fs::read(home.path().join(rel)).unwrap(),
            original_bytes,
            "{harness}/{fixture}: {}",
            stderr(&out)
        );
        let diff = tree_diff(&original, &home.tree());
        assert!(diff.is_empty(), "{harness}/{fixture}: {diff:#?}");
    }
}

#[test]
fn without_a_receipt_only_ovmem_s_own_handler_leaves_a_shared_group() {
    let home = Home::new();
    let settings = home.put(".claude/settings.json", &Home::fixture("claude-code", "tabs-foreign-hooks.json"));
    home.ok(&["install", "--harness", "claude-code"]);
    // The user adds a command of their own to the group ovmem's Stop hook is in.
    let mut v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&settings).unwrap()).unwrap();
    let stops = v["hooks"]["Stop"].as_array_mut().unwrap();
    let ours = stops.iter_mut().find(|g| g.to_string().contains("ovmem hook claude-code Stop")).unwrap();
    ours["hooks"].as_array_mut().unwrap().push(serde_json::json!({"type": "command", "command": "say done"}));
    std::fs::write(&settings, serde_json::to_string_pretty(&v).unwrap()).unwrap();
    std::fs::remove_dir_all(home.path().join(".ovmem")).unwrap();
    home.ok(&["uninstall", "--harness", "claude-code", "--yes"]);
    let after = std::fs::read_to_string(&settings).unwrap();
    assert_eq!(ovmem_hooks(&after), 0, "{after}");
    assert!(after.contains("say done"), "the user's command in ovmem's group was removed: {after}");
    let original: serde_json::Value =
        serde_json::from_slice(&Home::fixture("claude-code", "tabs-foreign-hooks.json")).unwrap();
    for (event, groups) in original["hooks"].as_object().unwrap() {
        for g in groups.as_array().unwrap() {
            assert!(after.contains(g["hooks"][0]["command"].as_str().unwrap()), "{event}: lost {g}");
        }
    }

    // With a receipt, the same: ovmem's handler goes, the user's command stays.
    let home = Home::new();
    let settings = home.put(".claude/settings.json", b"{}\n");
    home.ok(&["install", "--harness", "claude-code"]);
    let mut v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&settings).unwrap()).unwrap();
    v["hooks"]["Stop"][0]["hooks"]
        .as_array_mut()
        .unwrap()
        .push(serde_json::json!({"type": "command", "command": "say done"}));
    std::fs::write(&settings, serde_json::to_string_pretty(&v).unwrap()).unwrap();
    let out = home.ok(&["install", "--harness", "claude-code"]);
    assert!(!stderr(&out).contains("Stop added"), "re-install duplicated the shared group: {}", stderr(&out));
    home.ok(&["uninstall", "--harness", "claude-code", "--yes"]);
    let after = std::fs::read_to_string(&settings).unwrap();
    assert_eq!(ovmem_hooks(&after), 0, "{after}");
    assert!(after.contains("say done"), "{after}");
}

#[test]
fn a_second_ovmem_home_neither_takes_over_nor_removes_the_first_one_s_hooks() {
    let home = Home::new();
    let original = Home::fixture("cursor", "compact-foreign.json");
    let hooks = home.put(".cursor/hooks.json", &original);
    let first = home.path().join("first");
    let second = home.path().join("second");
    let run = |ovmem_home: &Path, args: &[&str]| home.cmd(args).env("OVMEM_HOME", ovmem_home).output().unwrap();
    assert!(run(&first, &["install", "--harness", "cursor,cline"]).status.success());
    let installed = home.tree();
    let out = run(&second, &["install", "--harness", "cursor,cline"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains(&first.display().to_string()), "{}", stderr(&out));
    // Uninstall from the second home (no receipt there) leaves the first home's hooks alone.
    let out = run(&second, &["uninstall", "--harness", "cursor,cline", "--yes"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("another ovmem home"), "{}", stderr(&out));
    let now = home.tree();
    let diff = tree_diff(&installed, &now);
    assert!(diff.is_empty(), "{diff:#?}");
    assert!(run(&first, &["uninstall", "--harness", "cursor,cline", "--yes"]).status.success());
    assert_eq!(std::fs::read(&hooks).unwrap(), original);
    // A home whose runtime is gone is not "another ovmem": its dead hooks are taken over.
    assert!(run(&first, &["install", "--harness", "cursor"]).status.success());
    std::fs::remove_dir_all(&first).unwrap();
    let out = run(&second, &["install", "--harness", "cursor"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("took over"), "{}", stderr(&out));
    let text = std::fs::read_to_string(&hooks).unwrap();
    assert!(!text.contains("first/bin") && text.matches("second/bin/ovmem hook").count() == 7, "{text}");
}

#[test]
fn comments_inside_ovmem_s_entry_do_not_hide_it() {
    let home = Home::new();
    let settings = home.put(".claude/settings.json", b"{\n  \"theme\": \"dark\"\n}\n");
    home.ok(&["install", "--harness", "claude-code"]);
    let text = std::fs::read_to_string(&settings).unwrap();
    let at = text.find("hook claude-code Stop").unwrap();
    let t = at + text[at..].find("\"timeout\"").unwrap();
    let commented = format!("{}/* why: keep */ {}", &text[..t], &text[t..]);
    std::fs::write(&settings, &commented).unwrap();
    home.ok(&["install", "--harness", "claude-code"]);
    let again = std::fs::read_to_string(&settings).unwrap();
    assert_eq!(again.matches("hook claude-code Stop").count(), 1, "re-install duplicated it: {again}");
    home.ok(&["uninstall", "--harness", "claude-code", "--yes"]);
    let left = std::fs::read_to_string(&settings).unwrap();
    assert_eq!(ovmem_hooks(&left), 0, "{left}");
    assert_eq!(left, "{\n  \"theme\": \"dark\"\n}\n");
    no_backups(&home);
}

#[test]
fn whitespace_and_comments_in_empty_containers_come_back() {
    for src in [
        "{\"hooks\": { /* add hooks here */ }}",
        "{\n  \"hooks\": {\n  }\n}\n",
        "{ }",
        "{\n\t// nothing yet\n}\n",
        "{\n  \"hooks\": {\n    \"Stop\": [\n      // off for now\n    ]\n  }\n}\n",
        "{\n  \"hooks\": {\n    \"Stop\": [ ]\n  }\n}\n",
    ] {
        let home = Home::new();
        let settings = home.put(".claude/settings.json", src.as_bytes());
        home.ok(&["install", "--harness", "claude-code"]);
        let installed = std::fs::read_to_string(&settings).unwrap();
        for c in ["add hooks here", "nothing yet", "off for now"] {
            assert_eq!(src.contains(c), installed.contains(c), "{src:?} -> {installed}");
        }
        assert_eq!(ovmem_hooks(&installed), 5, "{installed}");
        home.ok(&["uninstall", "--harness", "claude-code", "--yes"]);
        assert_eq!(std::fs::read_to_string(&settings).unwrap(), src);
        // And without the receipt, from the pristine copy.
        home.ok(&["install", "--harness", "claude-code"]);
        std::fs::remove_dir_all(home.path().join(".ovmem")).unwrap();
        home.ok(&["uninstall", "--harness", "claude-code", "--yes"]);
        assert_eq!(std::fs::read_to_string(&settings).unwrap(), src, "without a receipt");
        no_backups(&home);
    }
}

#[test]
fn read_only_configs_are_refused_unless_forced_and_keep_their_mode() {
    let home = Home::new();
    let original = Home::fixture("claude-code", "tabs-foreign-hooks.json");
    let settings = home.put(".claude/settings.json", &original);
    std::fs::set_permissions(&settings, std::fs::Permissions::from_mode(0o444)).unwrap();
    let out = home.run(&["install", "--harness", "claude-code,cursor"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("read-only") && stderr(&out).contains("--force"), "{}", stderr(&out));
    assert_eq!(std::fs::read(&settings).unwrap(), original);
    assert!(home.path().join(".cursor/hooks.json").exists(), "the other harness still installs");
    let out = home.ok(&["install", "--harness", "claude-code", "--force"]);
    assert!(stderr(&out).contains("read-only"), "{}", stderr(&out));
    assert_eq!(ovmem_hooks(&std::fs::read_to_string(&settings).unwrap()), 5);
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&settings), 0o444);
    let out = home.run(&["uninstall", "--harness", "claude-code", "--yes"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    home.ok(&["uninstall", "--harness", "claude-code", "--yes", "--force"]);
    assert_eq!(std::fs::read(&settings).unwrap(), original);
    assert_eq!(mode(&settings), 0o444);
}

#[test]
fn a_relative_ovmem_home_never_reaches_a_hook_command() {
    let home = Home::new();
    let out = home.cmd(&["install", "--harness", "claude-code,cline"]).env("OVMEM_HOME", "rel/ovmem").output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("relative"), "it says so: {}", stderr(&out));
    let abs = home.path().join("rel/ovmem/bin/ovmem");
    let text = std::fs::read_to_string(home.path().join(".claude/settings.json")).unwrap();
    assert_eq!(text.matches(&format!("{} hook", abs.display())).count(), 5, "{text}");
    let script = std::fs::read_to_string(home.path().join("Documents/Cline/Hooks/TaskStart")).unwrap();
    assert!(script.contains(&format!("exec {} hook", abs.display())), "{script}");
    // The hooks work from anywhere.
    let cmd = format!("{} hook claude-code Stop", abs.display());
    let out = std::process::Command::new("sh")
        .args(["-c", &cmd])
        .current_dir("/")
        .env_clear()
        .env("HOME", home.path())
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success());
    let out = home.cmd(&["uninstall", "--yes"]).env("OVMEM_HOME", "rel/ovmem").output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!home.path().join(".claude").exists() && !home.path().join("rel/ovmem").exists());
}

#[test]
fn odd_paths_are_carried_verbatim_or_refused() {
    // A `{{…}}` in the home path is a path, not a placeholder.
    let t = tempfile::tempdir().unwrap();
    let odd = t.path().join("{{EVENT}} {{x}/o'neil {{HARNESS}}");
    std::fs::create_dir_all(&odd).unwrap();
    let run = |args: &[&str], ovmem_home: Option<&Path>| {
        let mut c = std::process::Command::new(common::OVMEM);
        c.args(args).env_clear().env("HOME", &odd).env("PATH", "/usr/bin:/bin").current_dir(&odd);
        if let Some(h) = ovmem_home {
            c.env("OVMEM_HOME", h);
        }
        c.output().unwrap()
    };
    let out = run(&["install", "--harness", "claude-code,cline,cursor"], None);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = std::fs::read_to_string(odd.join(".claude/settings.json")).unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let cmd = v["hooks"]["Stop"][0]["hooks"][0]["command"].as_str().unwrap();
    assert_eq!(ovmem::harness::shell_words(cmd)[0], odd.join(".ovmem/bin/ovmem").to_string_lossy());
    assert!(run(&["uninstall", "--yes"], None).status.success());
    assert_eq!(std::fs::read_dir(&odd).unwrap().count(), 0, "uninstall left files");

    // A newline cannot be carried by a hook command: refused, nothing written.
    let nl = t.path().join("a\nb");
    let out = run(&["install", "--harness", "claude-code"], Some(&nl));
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("line break"), "{}", stderr(&out));
    assert!(!odd.join(".claude").exists() && !nl.exists());
}

#[test]
fn usage_errors_exit_2() {
    let home = Home::new();
    let file = home.put("notes.txt", b"x");
    for args in [
        vec!["install", "--harness", "claude-code", "--project", file.to_str().unwrap()],
        vec!["uninstall", "--project", file.to_str().unwrap(), "--yes"],
        vec!["check", "--project", file.to_str().unwrap()],
        vec!["status", "--project", file.to_str().unwrap()],
    ] {
        let out = home.run(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains("is not a directory"), "{args:?}: {}", stderr(&out));
    }
    let out = home.run(&["install", "--harness", "claude-code", "--project", "/no/such/dir"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("does not exist"));
    assert!(!home.path().join(".ovmem").exists());
}

#[test]
fn a_damaged_receipt_is_rebuilt_by_repair_and_uninstall_is_exact_again() {
    let home = Home::new();
    let claude = Home::fixture("claude-code", "empty-object-no-newline.json");
    home.put(".claude/settings.json", &claude);
    home.put(".cursor/hooks.json", &Home::fixture("cursor", "pretty-guard.json"));
    let original = home.tree();
    home.ok(&["install", "--harness", "claude-code,cursor,cline"]);
    let receipt = home.path().join(".ovmem/receipts/claude-code.user.json");
    std::fs::write(&receipt, b"{\"schema\": 1, \"harn").unwrap();
    // Acting on a damaged receipt is refused, with the way out.
    let out = home.run(&["uninstall", "--harness", "claude-code", "--yes"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("ovmem repair --harness claude-code"), "{}", stderr(&out));
    let status = home.ok(&["status"]);
    assert!(String::from_utf8_lossy(&status.stdout).contains("receipt damaged"));
    // A lost receipt too.
    std::fs::remove_file(home.path().join(".ovmem/receipts/cursor.user.json")).unwrap();
    let out = home.ok(&["repair"]);
    let err = stderr(&out);
    assert!(err.contains("claude-code: rebuilt") && err.contains("cursor: rebuilt"), "{err}");
    assert!(err.contains("cline: the receipt is fine"), "{err}");
    let status: serde_json::Value = serde_json::from_slice(&home.ok(&["status", "--json"]).stdout).unwrap();
    for h in ["claude-code", "cursor"] {
        let s = status["harnesses"].as_array().unwrap().iter().find(|x| x["harness"] == h).unwrap();
        assert!(s["scopes"][0]["entries"].as_array().unwrap().iter().all(|e| e["state"] == "ok"), "{s}");
    }
    home.ok(&["uninstall", "--yes"]);
    let diff = tree_diff(&original, &home.tree());
    assert!(diff.is_empty(), "{diff:#?}");
    no_backups(&home);
}

/// Edits the user makes to ovmem's entries after install: a key added to the Codex and Claude
/// Code MCP servers, a Claude Code hook's timeout changed, a line added to the Cline Stop script
/// and to the opencode plugin. Returns what each edit leaves in its file, to look for.
fn edit_ovmem_s_entries(home: &Home) -> Vec<(std::path::PathBuf, &'static str)> {
    let codex = home.path().join(".codex/config.toml");
    let mut toml = std::fs::read_to_string(&codex).unwrap();
    toml.push_str("env = { MY_TOKEN = \"user-secret\" }\n");
    std::fs::write(&codex, toml).unwrap();
    let claude = home.path().join(".claude.json");
    let mut v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&claude).unwrap()).unwrap();
    v["mcpServers"]["ovmem"]["env"] = serde_json::json!({"MY_TOKEN": "user-secret2"});
    std::fs::write(&claude, serde_json::to_string_pretty(&v).unwrap()).unwrap();
    let settings = home.path().join(".claude/settings.json");
    let mut v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&settings).unwrap()).unwrap();
    v["hooks"]["Stop"][0]["hooks"][0]["timeout"] = serde_json::json!(99);
    std::fs::write(&settings, serde_json::to_string_pretty(&v).unwrap()).unwrap();
    let cline = home.path().join("Documents/Cline/Hooks/TaskComplete");
    let mut script = std::fs::read_to_string(&cline).unwrap();
    script.push_str("# user: keep this line\n");
    std::fs::write(&cline, script).unwrap();
    let plugin = home.path().join(".config/opencode/plugin/ovmem.js");
    let mut js = std::fs::read_to_string(&plugin).unwrap();
    js.push_str("// user: keep this line too\n");
    std::fs::write(&plugin, js).unwrap();
    vec![
        (codex, "user-secret\""),
        (claude, "user-secret2"),
        (settings, "\"timeout\": 99"),
        (cline, "user: keep this line"),
        (plugin, "user: keep this line too"),
    ]
}

#[test]
fn without_a_receipt_an_entry_the_user_edited_is_left_and_reported_as_with_one() {
    const HARNESSES: &str = "claude-code,codex,cline,opencode";
    for repaired in [false, true] {
        let home = Home::new();
        home.put(".claude/settings.json", b"{\"model\": \"x\"}\n");
        home.ok(&["install", "--harness", HARNESSES]);
        let edits = edit_ovmem_s_entries(&home);
        std::fs::remove_dir_all(home.path().join(".ovmem")).unwrap();
        if repaired {
            // `repair` rebuilds the receipt from the markers: the edits count as edits there too.
            home.ok(&["repair"]);
        } else {
            // Install without a receipt does not put ovmem's entry back over the edit either.
            let err = stderr(&home.ok(&["install", "--harness", HARNESSES]));
            assert!(err.contains("edited since install; left as it is (--force replaces it)"), "{err}");
        }
        let err = stderr(&home.ok(&["uninstall", "--harness", HARNESSES, "--yes"]));
        for (path, edit) in &edits {
            let now = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}\n{err}", path.display()));
            assert!(now.contains(edit), "repaired {repaired}: {} lost the user's edit:\n{now}\n{err}", path.display());
        }
        // Each is reported (the Stop hook, both MCP servers, the script and the plugin).
        let reported = err.matches("left in place (--force removes it)").count();
        assert!(reported >= 5, "repaired {repaired}: {reported} reported:\n{err}");
        // Entries nobody edited still go.
        let settings = std::fs::read_to_string(home.path().join(".claude/settings.json")).unwrap();
        assert_eq!(ovmem_hooks(&settings), 1, "{settings}");
        // --force takes the edited entries out, and the files ovmem created with them.
        home.ok(&["uninstall", "--harness", HARNESSES, "--yes", "--force"]);
        assert!(!home.path().join(".codex/config.toml").exists());
        assert!(!home.path().join("Documents/Cline/Hooks/TaskComplete").exists());
        let settings = std::fs::read_to_string(home.path().join(".claude/settings.json")).unwrap();
        assert_eq!(ovmem_hooks(&settings), 0, "{settings}");
    }
}

#[test]
fn a_json_file_ovmem_created_keeps_a_comment_the_user_wrote_into_it() {
    let home = Home::new();
    home.ok(&["install", "--harness", "cursor"]);
    let hooks = home.path().join(".cursor/hooks.json");
    let text = std::fs::read_to_string(&hooks).unwrap();
    let commented = text.replacen('{', "{\n  // my note: hooks for the team go here\n", 1);
    std::fs::write(&hooks, &commented).unwrap();
    home.ok(&["uninstall", "--harness", "cursor", "--yes"]);
    let after = std::fs::read_to_string(&hooks).expect("the file with the user's comment was deleted");
    assert!(after.contains("my note"), "{after}");
}

/// `uninstall --yes` where nothing of ovmem's is installed and some harness's config does not
/// parse (or is a directory): it says which file it could not read and exits 0, as the docs say
/// of nothing installed (it exited 2). Where a receipt records ovmem's entries in that file it is
/// still refused, exit 2, the file untouched; and so without a receipt when another file of the
/// harness holds ovmem's hooks (found by marker).
#[test]
fn uninstall_with_nothing_installed_warns_of_an_unreadable_config_and_exits_0() {
    let home = Home::new();
    let broken = home.put(".claude/settings.json", b"{\"model\": \n");
    std::fs::create_dir_all(home.path().join(".gemini/settings.json")).unwrap();
    let before = home.tree();
    let out = home.run(&["uninstall", "--yes"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("warning") && err.contains(&format!("could not read `{}`", broken.display())), "{err}");
    assert!(err.contains(".gemini/settings.json` (it is a directory"), "{err}");
    assert!(err.contains("nothing to remove"), "{err}");
    assert_eq!(home.tree(), before, "nothing was touched");
    let out = home.run(&["uninstall", "--yes", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let claude = v["harnesses"].as_array().unwrap().iter().find(|h| h["harness"] == "claude-code").unwrap();
    assert!(claude["skipped"].as_str().unwrap().contains("does not parse"), "{v:#}");
    assert!(claude.get("error").is_none(), "{v:#}");

    // A receipt records ovmem's entries there: refused, untouched.
    std::fs::write(&broken, b"{\"model\": \"x\"}\n").unwrap();
    home.ok(&["install", "--harness", "claude-code"]);
    let installed = std::fs::read(&broken).unwrap();
    let cut = &installed[..installed.len() - 3];
    std::fs::write(&broken, cut).unwrap();
    let out = home.run(&["uninstall", "--yes"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("does not parse"), "{}", stderr(&out));
    assert_eq!(std::fs::read(&broken).unwrap(), cut);
    // No receipt, but `~/.claude.json` holds ovmem's MCP entry: still refused.
    std::fs::remove_dir_all(home.path().join(".ovmem/receipts")).unwrap();
    let out = home.run(&["uninstall", "--yes"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert_eq!(std::fs::read(&broken).unwrap(), cut);
}
