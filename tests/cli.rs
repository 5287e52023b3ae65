//! The command line as a user meets it, through the built binary against throwaway homes:
//! `install --uninstall`, harness names and aliases, usage errors, empty results, messages that
//! say what happened once, closed pipes, `status` speed, the backend flags, the queue in `status`
//! and `check`, and `migrate` carrying the old integrations' server settings. The terminal picker
//! is driven in tmux (send-keys, capture-pane), as a person would.
#![cfg(unix)]

mod common;

use std::collections::BTreeMap;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::{stderr, Home, RefusingPort, FIXTURES, OVMEM};
use serde_json::Value;

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn json(o: &Output) -> Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}{}", stdout(o), stderr(o)))
}

/// Every file under `root` by relative path: (bytes, mode); directories as `None`.
fn rel_tree(root: &Path) -> BTreeMap<PathBuf, Option<(Vec<u8>, u32)>> {
    common::tree(root)
        .into_iter()
        .map(|(p, e)| {
            let rel = p.strip_prefix(root).unwrap().to_path_buf();
            let v = match e {
                common::Entry::File(b, m) => Some((b, m)),
                _ => None,
            };
            (rel, v)
        })
        .collect()
}

/// A home's files with the home's own path written as `~`, so two homes can be compared.
fn norm_tree(home: &Home) -> BTreeMap<PathBuf, Option<(String, u32)>> {
    let root = home.path().display().to_string();
    rel_tree(home.path())
        .into_iter()
        .map(|(p, v)| (p, v.map(|(b, m)| (String::from_utf8_lossy(&b).replace(&root, "~"), m))))
        .collect()
}

/// Where two trees differ (paths only, for a readable failure).
fn differences<V: PartialEq>(a: &BTreeMap<PathBuf, V>, b: &BTreeMap<PathBuf, V>) -> Vec<String> {
    let mut out: Vec<String> = a
        .iter()
        .filter(|(p, v)| b.get(*p) != Some(v))
        .map(|(p, _)| format!("{} differs or is missing", p.display()))
        .collect();
    out.extend(b.keys().filter(|p| !a.contains_key(*p)).map(|p| format!("{} is new", p.display())));
    out
}

/// The registry, as `ovmem harnesses --format json` gives it.
fn registry() -> Vec<Value> {
    let out = Home::new().ok(&["harnesses", "--format", "json"]);
    json(&out).as_array().unwrap().clone()
}

/// A home with hand-edited configs of several harnesses (comments, tabs, hooks of other tools).
fn edited_home() -> Home {
    let home = Home::new();
    home.put(".claude/settings.json", &Home::fixture("claude-code", "tabs-foreign-hooks.json"));
    home.put(".codex/hooks.json", &Home::fixture("codex", "four-spaces-foreign.json"));
    home.put(".gemini/settings.json", &Home::fixture("gemini-cli", "settings-auth-foreign-hooks.json"));
    home
}

// ------------------------------------------------------------------------------------------------
// Item 1: `install --uninstall`, names and aliases

#[test]
fn install_uninstall_does_exactly_what_uninstall_does() {
    let a = edited_home();
    let b = edited_home();
    let original = rel_tree(a.path());
    let list = "claude,codex,gemini";
    for h in [&a, &b] {
        h.ok(&["install", "--harness", list]);
    }
    // Dry runs, JSON or not, say the same, byte for byte (the homes' paths aside).
    for extra in [&["--dry-run"][..], &["--dry-run", "--json"], &["--json", "--dry-run", "--force"]] {
        let via_install = a.run(&[&["install", "--harness", list, "--uninstall"][..], extra].concat());
        let via_uninstall = b.run(&[&["uninstall", "--harness", list][..], extra].concat());
        let norm = |o: &Output, h: &Home| {
            (
                o.status.code(),
                stdout(o).replace(&h.path().display().to_string(), "~"),
                stderr(o).replace(&h.path().display().to_string(), "~"),
            )
        };
        assert_eq!(norm(&via_install, &a), norm(&via_uninstall, &b), "{extra:?}");
        assert_eq!(via_install.status.code(), Some(0), "{}", stderr(&via_install));
    }
    // Both homes are alike (receipts aside: they hold hashes of each home's own paths).
    let configs = |h: &Home| {
        let mut t = norm_tree(h);
        t.retain(|p, _| !p.starts_with(".ovmem/receipts"));
        t
    };
    assert_eq!(differences(&configs(&a), &configs(&b)), Vec::<String>::new());
    // Without a terminal or --yes, both refuse alike.
    let r1 = a.run(&["install", "--harness", list, "--uninstall", "--json"]);
    let r2 = b.run(&["uninstall", "--harness", list, "--json"]);
    assert_eq!((r1.status.code(), r2.status.code()), (Some(2), Some(2)), "{}", stderr(&r1));
    // The real thing: both homes end up identical, and exactly as they were before install.
    let o1 = a.ok(&["install", "--harness", list, "--uninstall", "--yes", "--json"]);
    let o2 = b.ok(&["uninstall", "--harness", list, "--yes", "--json"]);
    assert_eq!(
        stdout(&o1).replace(&a.path().display().to_string(), "~"),
        stdout(&o2).replace(&b.path().display().to_string(), "~")
    );
    assert_eq!(
        differences(&original, &rel_tree(a.path())),
        Vec::<String>::new(),
        "install --uninstall --yes restores it"
    );
    assert_eq!(differences(&original, &rel_tree(b.path())), Vec::<String>::new());
    // Flags that make no sense with --uninstall are usage errors, and change nothing.
    for bad in [&["--no-trust"][..], &["--backend", "local"]] {
        let out = a.run(&[&["install", "--harness", list, "--uninstall", "--yes"][..], bad].concat());
        assert_eq!(out.status.code(), Some(2), "{bad:?}: {}", stderr(&out));
    }
    assert_eq!(differences(&original, &rel_tree(a.path())), Vec::<String>::new());
}

#[test]
fn install_uninstall_at_project_scope() {
    let home = Home::new();
    let proj = home.path().join("work/app");
    std::fs::create_dir_all(&proj).unwrap();
    home.put("work/app/.claude/settings.json", &Home::fixture("claude-code", "jsonc-comments.json"));
    let before = rel_tree(home.path());
    let p = proj.to_str().unwrap();
    home.ok(&["install", "--harness", "claude-code", "--project", p]);
    assert!(std::fs::read_to_string(proj.join(".claude/settings.json")).unwrap().contains("ovmem hook claude-code"));
    let out =
        home.ok(&["install", "--harness", "claude-code", "--scope", "project", "--project", p, "--uninstall", "--yes"]);
    assert!(stderr(&out).contains("removed"), "{}", stderr(&out));
    assert_eq!(differences(&before, &rel_tree(home.path())), Vec::<String>::new());
}

#[test]
fn every_id_and_alias_names_its_harness_in_any_case() {
    let home = Home::new();
    for h in registry() {
        let id = h["id"].as_str().unwrap();
        let mut names: Vec<String> = vec![id.to_string(), id.to_uppercase(), id.replace('-', "_")];
        names.extend(h["aliases"].as_array().unwrap().iter().map(|a| a.as_str().unwrap().to_string()));
        for name in names {
            let out = home.run(&["install", "--harness", &name, "--dry-run", "--json"]);
            assert_eq!(out.status.code(), Some(0), "{name}: {}", stderr(&out));
            assert_eq!(json(&out)["harnesses"][0]["harness"], id, "{name}");
        }
    }
    // The peers' names users type for the six harnesses ovmem has always had.
    for (name, id) in [
        ("claude", "claude-code"),
        ("trae", "trae-cli"),
        ("traecli", "trae-cli"),
        ("gemini", "gemini-cli"),
        ("cline-cli", "cline"),
        ("cursor-cli", "cursor"),
        ("codex-cli", "codex"),
    ] {
        let out = home.run(&["install", "--harness", name, "--dry-run", "--json"]);
        assert_eq!(json(&out)["harnesses"][0]["harness"], id, "{name}");
    }
    // A list with an alias and its id twice is one harness, once.
    let out = home.run(&["install", "--harness", "claude,claude-code, CLAUDE", "--dry-run", "--json"]);
    assert_eq!(json(&out)["harnesses"].as_array().unwrap().len(), 1);
}

#[test]
fn every_unknown_harness_in_a_list_is_named_on_the_first_line_and_the_list_is_short_lines() {
    let home = Home::new();
    let out = home.run(&["install", "--harness", "claud,codex,zzzz, gemni,zzzz", "--dry-run"]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    let mut lines = err.lines();
    let first = lines.next().unwrap();
    // Each unknown name once, in order, with its suggestion; the known `codex` is not named.
    assert!(
        first.contains(
            "unknown harnesses `claud` (did you mean `claude-code`?), `zzzz`, `gemni` (did you mean `gemini-cli`?)"
        ),
        "{err}"
    );
    assert_eq!(first.matches("zzzz").count(), 1, "{err}");
    assert!(!first.contains("claude-code (claude"), "the list is not on the first line: {err}");
    let rest: Vec<&str> = lines.collect();
    assert!(rest.len() >= 3, "{err}");
    for l in &rest {
        assert!(l.chars().count() <= 80, "a long line: {l:?}");
    }
    let list = rest.join(" ");
    for h in registry() {
        assert!(list.contains(h["id"].as_str().unwrap()), "{} missing: {err}", h["id"]);
    }
    assert!(home.tree().is_empty());
}

#[test]
fn an_unknown_harness_lists_every_name_and_suggests_the_closest() {
    let home = Home::new();
    let reg = registry();
    let out = home.run(&["install", "--harness", "zzzz"]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains("unknown harness `zzzz`") && !err.contains("did you mean"), "{err}");
    for h in &reg {
        assert!(err.contains(h["id"].as_str().unwrap()), "{err}");
        for a in h["aliases"].as_array().unwrap() {
            assert!(err.contains(a.as_str().unwrap()), "alias {a} missing: {err}");
        }
    }
    // A typo of each id (a letter dropped, two swapped) suggests that id.
    for h in &reg {
        let id = h["id"].as_str().unwrap();
        let chars: Vec<char> = id.chars().collect();
        let dropped: String = chars[..chars.len() - 1].iter().collect();
        let mut swapped = chars.clone();
        swapped.swap(0, 1);
        for typo in [dropped, swapped.into_iter().collect::<String>()] {
            if reg.iter().any(|o| {
                o["id"] == typo.as_str() || o["aliases"].as_array().unwrap().iter().any(|a| a == typo.as_str())
            }) {
                continue; // the typo is itself a name
            }
            let out = home.run(&["uninstall", "--harness", &typo, "--dry-run"]);
            assert_eq!(out.status.code(), Some(2), "{typo}");
            assert!(
                stderr(&out).contains(&format!("`{id}`")) && stderr(&out).contains("did you mean"),
                "{typo}: {}",
                stderr(&out)
            );
        }
    }
    for (typo, want) in [("claud", "claude-code"), ("gemni", "gemini-cli"), ("codx", "codex"), ("Cursr", "cursor")] {
        let out = home.run(&["install", "--harness", typo, "--dry-run"]);
        assert!(stderr(&out).contains(&format!("did you mean `{want}`?")), "{typo}: {}", stderr(&out));
    }
    // Same rules everywhere a harness is named.
    for args in [
        &["migrate", "--harness", "gemni", "--dry-run"][..],
        &["repair", "--harness", "gemni"],
        &["demo", "--harness", "gemni"],
    ] {
        let out = home.run(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(stderr(&out).contains("did you mean `gemini-cli`?"), "{args:?}: {}", stderr(&out));
    }
    assert!(home.tree().is_empty(), "nothing was written: {:?}", home.tree().keys().collect::<Vec<_>>());
}

/// Every list of harnesses a user sees comes from the registry.
#[test]
fn help_and_install_sh_list_the_registry() {
    let home = Home::new();
    let reg = registry();
    for args in [&["install", "--help"][..], &["uninstall", "--help"], &["install", "-h"]] {
        let text = stdout(&home.ok(args));
        for h in &reg {
            assert!(text.contains(h["id"].as_str().unwrap()), "{args:?} lacks {}: {text}", h["id"]);
        }
    }
    let ids = stdout(&home.ok(&["harnesses", "--format", "ids"]));
    assert_eq!(ids.trim(), reg.iter().map(|h| h["id"].as_str().unwrap()).collect::<Vec<_>>().join(","));
    let text = stdout(&home.ok(&["harnesses"]));
    assert_eq!(text.lines().count(), reg.len(), "{text}");
    let md = stdout(&home.ok(&["harnesses", "--format", "markdown"]));
    for h in &reg {
        assert!(md.contains(&format!("| `{}` | {} |", h["id"].as_str().unwrap(), h["name"].as_str().unwrap())), "{md}");
    }
    // install.sh asks the binary it just built, and names no harness itself.
    let sh = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("install.sh")).unwrap();
    assert!(sh.contains("harnesses --format ids"), "{sh}");
    for h in &reg {
        let id = h["id"].as_str().unwrap();
        assert!(!sh.contains(&format!("{id},")) && !sh.contains(&format!(",{id}")), "install.sh types `{id}` by hand");
    }
}

// ------------------------------------------------------------------------------------------------
// Item 6: friendlier messages, exit codes, pipes

#[test]
fn usage_errors_exit_2_and_change_nothing() {
    let home = Home::new();
    home.put("afile", b"x");
    let cases: &[&[&str]] = &[
        &["install", "--harness", "nope"],
        &["install", "--bogus-flag"],
        &["install", "--harness", "claude-code", "--project", "afile"],
        &["install", "--harness", "claude-code", "--project", "missing-dir"],
        &["install", "--harness", ","],
        &["install", "--harness", "claude-code", "--api-url", "http://h:1"],
        &["install", "--harness", "claude-code", "--backend", "hindsight"],
        &["install", "--harness", "claude-code", "--backend", "hindsight", "--api-url", "localhost:8888"],
        &["install", "--harness", "claude-code", "--backend", "hindsight", "--api-url", "http://h:1", "--api-key", "k"],
        &["install", "--harness", "claude-code", "--backend", "openviking", "--api-url", "http://h:1", "--bank", "b"],
        &["install", "--harness", "claude-code", "--backend", "local", "--api-url", "http://h:1"],
        &["install", "--harness", "claude-code", "--backend", "hindsight", "--api-url", "http://h:1", "--bank", "a/b"],
        &["install", "--harness", "claude-code", "--backend", "redis"],
        &["memory", "add", "  "],
        &["memory", "forget"],
        &["demo", "--harness", "nope"],
        &["completions", "nosh"],
        &["status", "--project", "missing-dir"],
    ];
    for args in cases {
        let out = home.run(args);
        assert_eq!(out.status.code(), Some(2), "ovmem {args:?}: {}{}", stdout(&out), stderr(&out));
        assert!(!stderr(&out).contains("panicked"), "{args:?}");
    }
    let left: Vec<PathBuf> = rel_tree(home.path()).into_keys().filter(|p| !p.starts_with(".ovmem")).collect();
    assert_eq!(left, vec![PathBuf::from("afile")]);
    assert!(!home.path().join(".ovmem/config.toml").exists(), "no backend was saved by a refused install");
}

#[test]
fn empty_results_say_so() {
    let home = Home::new();
    let out = home.ok(&["memory", "list"]);
    assert!(stdout(&out).is_empty() && stderr(&out).contains("no memories yet"), "{}", stderr(&out));
    let out = home.ok(&["memory", "list", "--all"]);
    assert!(stderr(&out).contains("no memories yet"), "{}", stderr(&out));
    let out = home.ok(&["memory", "search", "staging database"]);
    assert!(stderr(&out).contains("no memories match"), "{}", stderr(&out));
    let out = home.ok(&["memory", "list", "--json"]);
    assert_eq!(json(&out), serde_json::json!([]));
    let out = home.ok(&["status"]);
    assert!(stdout(&out).contains("no harness detected on this machine"), "{}", stdout(&out));
    assert!(stdout(&out).contains("backend: local"), "{}", stdout(&out));
    let out = home.ok(&["check"]);
    assert!(stderr(&out).contains("no legacy, deprecated or duplicate memory integrations found"), "{}", stderr(&out));
    let out = home.ok(&["uninstall"]);
    assert!(stderr(&out).contains("ovmem is not installed (user scope); nothing to remove"), "{}", stderr(&out));
}

/// A config that does not parse is one error of `check` (exit 2), however many rules read it.
#[test]
fn check_names_a_file_that_does_not_parse_once() {
    let home = Home::new();
    let settings = home.path().join(".claude/settings.json");
    std::fs::create_dir_all(settings.parent().unwrap()).unwrap();
    std::fs::write(&settings, "{\"hooks\": {\n").unwrap();
    let out = home.run(&["check"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert_eq!(stdout(&out).matches("settings.json: does not parse").count(), 1, "{}", stdout(&out));
    assert!(stderr(&out).contains("0 finding(s), 1 unreadable file(s)"), "{}", stderr(&out));
    let v = json(&home.run(&["check", "--format", "json"]));
    assert_eq!(v["errors"].as_array().unwrap().len(), 1, "{v}");
}

#[test]
fn uninstall_with_nothing_installed_needs_no_yes_and_writes_nothing() {
    let home = edited_home();
    let before = rel_tree(home.path());
    for args in [
        &["uninstall"][..],
        &["uninstall", "--harness", "claude-code,codex"],
        &["install", "--harness", "codex", "--uninstall"],
    ] {
        let out = home.run(args);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", stderr(&out));
        assert!(
            stderr(&out).contains("not installed") && stderr(&out).contains("nothing to remove"),
            "{}",
            stderr(&out)
        );
        assert_eq!(stderr(&out).lines().count(), 1, "said once: {}", stderr(&out));
    }
    let out = home.ok(&["uninstall", "--json"]);
    assert!(json(&out)["harnesses"].is_array());
    assert_eq!(
        differences(&before, &rel_tree(home.path())),
        Vec::<String>::new(),
        "nothing was written, not even ~/.ovmem"
    );
    // Once something is installed, removing it still needs a confirmation.
    home.ok(&["install", "--harness", "codex"]);
    let out = home.run(&["uninstall"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--yes") && stderr(&out).contains("codex"), "{}", stderr(&out));
}

/// Nothing of ovmem's is installed, so nothing is asked and nothing is refused: the file is named
/// in a warning and uninstall exits 0 (a receipt recording entries there still refuses, exit 2:
/// tests/recovery.rs).
#[test]
fn uninstall_names_a_file_it_cannot_read_instead_of_asking() {
    let home = Home::new();
    home.put(".claude/settings.json", b"{\"hooks\": {\"Stop\": [}");
    for args in [&["uninstall"][..], &["uninstall", "--harness", "claude-code"], &["uninstall", "--yes"]] {
        let out = home.run(args);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", stderr(&out));
        let err = stderr(&out);
        assert!(err.contains("~/.claude/settings.json") || err.contains(".claude/settings.json"), "{err}");
        assert!(err.contains("does not parse") && !err.contains("--yes"), "{err}");
    }
}

#[test]
fn a_reinstall_that_changes_nothing_says_so_once() {
    let home = edited_home();
    let first = home.ok(&["install", "--harness", "claude-code,codex,gemini-cli,cline"]);
    assert!(stderr(&first).contains("ovmem is installed for"), "{}", stderr(&first));
    let again = home.ok(&["install", "--harness", "claude-code,codex,gemini-cli,cline"]);
    let err = stderr(&again);
    let lines: Vec<&str> = err.lines().filter(|l| !l.starts_with("warning: trust pending")).collect();
    assert_eq!(
        lines,
        vec!["ovmem is already installed for claude-code, codex, gemini-cli, cline (user scope); nothing changed"],
        "{err}"
    );
    // One file changed by hand: only that harness is reported, the others once each.
    std::fs::remove_file(home.path().join(".gemini/settings.json")).unwrap();
    let out = home.ok(&["install", "--harness", "claude-code,gemini-cli"]);
    let err = stderr(&out);
    assert!(err.contains("= claude-code: unchanged (`~/.claude/settings.json`, `~/.claude.json`)"), "{err}");
    assert!(err.contains("gemini-cli `~/.gemini/settings.json`: created"), "{err}");
    assert!(!err.contains("SessionStart unchanged"), "unchanged entries are not listed one by one: {err}");
}

/// Codex's trust message says "trusted" once (it used to read "trusted trusted 5 ovmem hook(s)").
#[test]
fn trust_is_reported_once() {
    let Some(bin) = e2e_bin("codex") else { return };
    let home = Home::new();
    let path = format!("{}:/usr/bin:/bin", bin.display());
    let run = |args: &[&str]| home.cmd(args).env("PATH", &path).output().unwrap();
    let out = run(&["install", "--harness", "codex"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    assert_eq!(err.matches("trusted").count(), 1, "{err}");
    assert!(err.contains("✓ trusted 5 ovmem hook(s) in Codex CLI"), "{err}");
    let out = run(&["install", "--harness", "codex"]);
    assert_eq!(
        stderr(&out).trim(),
        "ovmem is already installed for codex (user scope); nothing changed (5 ovmem hook(s) already trusted in Codex CLI)"
    );
}

/// A process whose stdout (or stderr) reader is already gone: it must end quietly, never panic.
fn with_closed_pipe(home: &Home, args: &[&str], stream: &str) -> std::process::ExitStatus {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let mut cmd = home.cmd(args);
    let (err_r, err_w) = std::io::pipe().unwrap();
    match stream {
        "stdout" => cmd.stdout(writer).stderr(err_w),
        _ => cmd.stdout(Stdio::null()).stderr(writer),
    };
    let mut child = cmd.spawn().unwrap();
    drop(cmd);
    let status = child.wait().unwrap();
    if stream == "stdout" {
        let mut text = String::new();
        std::io::Read::read_to_string(&mut { err_r }, &mut text).unwrap();
        assert!(!text.contains("panicked") && !text.contains("Broken pipe"), "ovmem {args:?}: {text}");
    }
    assert_ne!(status.code(), Some(101), "ovmem {args:?} panicked");
    assert!(status.success() || status.signal() == Some(libc::SIGPIPE), "ovmem {args:?}: {status:?}");
    status
}

#[test]
fn a_closed_pipe_ends_every_command_quietly() {
    let home = Home::new();
    home.ok(&["install", "--harness", "claude-code,cursor"]);
    for i in 0..40 {
        home.ok(&["memory", "add", &format!("fact number {i} about the release process and its many steps")]);
    }
    for args in [
        &["completions", "bash"][..],
        &["completions", "zsh"],
        &["status"],
        &["status", "--json"],
        &["memory", "list"],
        &["memory", "list", "--json"],
        &["memory", "search", "release process"],
        &["memory", "export"],
        &["--help"],
        &["install", "--help"],
        &["harnesses"],
        &["check", "--format", "json"],
        &["install", "--harness", "claude-code", "--dry-run"],
        &["uninstall", "--dry-run"],
        &["backend", "show"],
    ] {
        with_closed_pipe(&home, args, "stdout");
        with_closed_pipe(&home, args, "stderr");
    }
    // The same through a shell, as people type it.
    let out = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "'{OVMEM}' completions bash | head -1; '{OVMEM}' memory list | head -1; '{OVMEM}' status | head -1"
        ))
        .env_clear()
        .env("HOME", home.path())
        .env("PATH", "/usr/bin:/bin")
        .current_dir(home.path())
        .output()
        .unwrap();
    assert!(stderr(&out).is_empty(), "{}", stderr(&out));
    assert_eq!(stdout(&out).lines().count(), 3, "{}", stdout(&out));
}

// ------------------------------------------------------------------------------------------------
// `ovmem status`: fast, and cached by the binaries' identity

/// The e2e CLI's bin directory (installed by tests/e2e/install-clis.sh), or a SKIPPED note.
fn e2e_bin(name: &str) -> Option<PathBuf> {
    let dir = std::env::var_os("OVMEM_E2E_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(std::env::var("HOME").unwrap()).join(".cache/ovmem-e2e"));
    let bin = dir.join(name).join("node_modules/.bin");
    if bin.join(name).exists() {
        return Some(bin);
    }
    let why = format!("{name} is not installed in {} (tests/e2e/install-clis.sh)", dir.display());
    if std::env::var("OVMEM_E2E_REQUIRED").is_ok_and(|v| v == "1") {
        panic!("{why}");
    }
    let _ = writeln!(std::io::stderr(), "SKIPPED (not a pass): {why}");
    None
}

#[test]
fn status_runs_no_harness_cli_with_every_e2e_cli_on_path() {
    let Some(claude) = e2e_bin("claude") else { return };
    let root = claude.parent().unwrap().parent().unwrap().parent().unwrap();
    let bins: Vec<String> = std::fs::read_dir(root)
        .unwrap()
        .flatten()
        .map(|e| e.path().join("node_modules/.bin"))
        .filter(|p| p.is_dir())
        .map(|p| p.display().to_string())
        .collect();
    let path = format!("{}:/usr/bin:/bin", bins.join(":"));
    let home = Home::new();
    let run = |args: &[&str]| {
        let t = Instant::now();
        let out = home.cmd(args).env("PATH", &path).output().unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        (out, t.elapsed())
    };
    run(&["install", "--harness", "all"]);
    let (first, cold) = run(&["status", "--json"]);
    let mut times: Vec<Duration> = (0..7).map(|_| run(&["status"]).1).collect();
    times.sort();
    let median = times[times.len() / 2];
    let _ = writeln!(
        std::io::stderr(),
        "status with {} CLI dirs on PATH: first run {} ms, then median {} ms (max {} ms)",
        bins.len(),
        cold.as_millis(),
        median.as_millis(),
        times.last().unwrap().as_millis()
    );
    // The figure itself is printed above (a benchmark's job, not a test's); this bound only
    // catches the regression that matters, status running the CLIs (a Node start-up each, for
    // every one of them), and still holds on a loaded machine.
    assert!(median < Duration::from_millis(1000), "status took {median:?}: does it run the harness CLIs?");
    // Every detected npm CLI has its version, without running it.
    let v = json(&first);
    for h in v["harnesses"].as_array().unwrap() {
        if h["detected"]["binary"].as_str().is_some_and(|b| b.contains("node_modules")) {
            assert!(h["version"].is_string(), "{h}");
        }
    }
    let (again, _) = run(&["status", "--json"]);
    assert_eq!(json(&again)["harnesses"], v["harnesses"], "cached answers are the same answers");
}

#[test]
fn a_binarys_version_is_probed_once_and_again_after_an_upgrade() {
    let home = Home::new();
    let bin = home.path().join("tools");
    std::fs::create_dir_all(&bin).unwrap();
    let calls = home.path().join("calls");
    let script = |version: &str| {
        let p = bin.join("codex");
        std::fs::write(&p, format!("#!/bin/sh\necho x >> '{}'\necho 'codex-cli {version}'\n", calls.display()))
            .unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    };
    script("9.1.0");
    let path = format!("{}:/usr/bin:/bin", bin.display());
    let status = || {
        let out = home.cmd(&["status", "--json"]).env("PATH", &path).output().unwrap();
        let v = json(&out);
        let codex = v["harnesses"].as_array().unwrap().iter().find(|h| h["harness"] == "codex").unwrap().clone();
        codex["version"].as_str().unwrap_or_default().to_string()
    };
    let probes = || std::fs::read_to_string(&calls).map(|s| s.lines().count()).unwrap_or(0);
    assert_eq!(status(), "codex-cli 9.1.0");
    assert_eq!(status(), "codex-cli 9.1.0");
    assert_eq!(probes(), 1, "the second status used the cache");
    std::thread::sleep(Duration::from_millis(20));
    script("9.10.0");
    assert_eq!(status(), "codex-cli 9.10.0", "an upgraded binary is asked again");
    assert_eq!(probes(), 2);
    let cache = home.path().join(".ovmem/cache/status.json");
    assert_eq!(std::fs::metadata(&cache).unwrap().permissions().mode() & 0o777, 0o600);
    // A binary that never answers costs the probe budget once, not every time.
    std::fs::write(bin.join("codex"), "#!/bin/sh\nsleep 30\n").unwrap(); // its sleep goes with it (a process group)
    let t = Instant::now();
    assert_eq!(status(), "");
    assert!(t.elapsed() < Duration::from_secs(4), "{:?}", t.elapsed());
    let t = Instant::now();
    status();
    assert!(t.elapsed() < Duration::from_millis(500), "{:?}", t.elapsed());
    // Uninstall takes the cache with everything else.
    home.cmd(&["install", "--harness", "cursor"]).env("PATH", &path).output().unwrap();
    home.cmd(&["uninstall", "--yes"]).env("PATH", &path).output().unwrap();
    assert!(!home.path().join(".ovmem").exists(), "{:?}", rel_tree(home.path()).keys().collect::<Vec<_>>());
}

/// A Codex whose app-server never answers makes the trust state "unknown" within a few seconds;
/// `status` never sits on it for install's 20 s.
#[test]
fn a_hung_app_server_costs_status_seconds_not_twenty() {
    let home = Home::new();
    let bin = home.path().join("tools");
    std::fs::create_dir_all(&bin).unwrap();
    let p = bin.join("codex");
    std::fs::write(&p, "#!/bin/sh\ncase \"$1\" in --version) echo 'codex-cli 9.1.0';; *) sleep 60;; esac\n").unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!("{}:/usr/bin:/bin", bin.display());
    let out = home.cmd(&["install", "--harness", "codex", "--no-trust"]).env("PATH", &path).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let t = Instant::now();
    let out = home.cmd(&["status"]).env("PATH", &path).output().unwrap();
    let took = t.elapsed();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(took < Duration::from_secs(9), "status took {took:?}");
    assert!(text.contains("trust unknown"), "{text}");
}

// ------------------------------------------------------------------------------------------------
// Issue 9: --backend flags, status and check showing the backend and the queue

/// A server that accepts connections and never answers.
fn silent_url() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for conn in listener.incoming().flatten() {
            std::thread::spawn(move || {
                let mut conn = conn;
                let mut buf = [0u8; 1024];
                while matches!(std::io::Read::read(&mut conn, &mut buf), Ok(n) if n > 0) {}
            });
        }
    });
    url
}

fn all_text(home: &Home) -> String {
    rel_tree(home.path())
        .into_iter()
        .filter(|(p, _)| !p.ends_with("credentials.toml"))
        .filter_map(|(_, v)| v.map(|(b, _)| String::from_utf8_lossy(&b).into_owned()))
        .collect()
}

#[test]
fn install_backend_flags_save_the_server_and_never_print_the_token() {
    let home = Home::new();
    let dead = RefusingPort::new();
    let url = dead.url();
    let token = "hs-token-f00d-4711";
    // The token through stdin, as the help recommends.
    let mut child = home
        .cmd(&[
            "install",
            "--harness",
            "claude-code",
            "--backend",
            "hindsight",
            "--api-url",
            &url,
            "--api-token",
            "-",
            "--bank",
            "team-x",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(format!("{token}\n").as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    let text = format!("{}{}", stdout(&out), stderr(&out));
    assert!(out.status.success(), "{text}");
    assert!(!text.contains(token), "{text}");
    assert!(text.contains(&format!("backend: Hindsight at {url}, bank `team-x`, with a token")), "{text}");
    assert!(text.contains("saved in `~/.ovmem/credentials.toml` (0600)") && text.contains("cannot reach"), "{text}");
    let cfg = std::fs::read_to_string(home.path().join(".ovmem/config.toml")).unwrap();
    assert!(cfg.contains("kind = \"hindsight\"") && cfg.contains(&url) && cfg.contains("bank = \"team-x\""), "{cfg}");
    let cred = home.path().join(".ovmem/credentials.toml");
    assert_eq!(std::fs::metadata(&cred).unwrap().permissions().mode() & 0o777, 0o600);
    assert!(std::fs::read_to_string(&cred).unwrap().contains(token));
    assert!(!all_text(&home).contains(token), "the token is only in credentials.toml");
    // status says what is configured, quickly, and never the token.
    let t = Instant::now();
    let st = home.ok(&["status"]);
    assert!(t.elapsed() < Duration::from_secs(1));
    let s = stdout(&st);
    assert!(s.contains(&format!("backend: hindsight at {url}, bank `team-x`, token set: not reachable")), "{s}");
    let v = json(&home.ok(&["status", "--json"]));
    assert_eq!(v["backend"]["kind"], "hindsight");
    assert_eq!((v["backend"]["token"].as_bool(), v["backend"]["reachable"].as_bool()), (Some(true), Some(false)));
    assert!(!v.to_string().contains(token));

    // The token from the environment, and as an argument (with a warning about shell history).
    let ov = home
        .cmd(&[
            "install",
            "--harness",
            "claude-code",
            "--backend",
            "openviking",
            "--api-url",
            &url,
            "--user",
            "ann",
            "--json",
        ])
        .env("OPENVIKING_API_KEY", "ov-key-from-env-99")
        .output()
        .unwrap();
    assert!(ov.status.success(), "{}", stderr(&ov));
    let v = json(&ov);
    assert_eq!(v["backend"]["kind"], "openviking");
    assert_eq!(v["backend"]["token"]["from"], "$OPENVIKING_API_KEY");
    assert!(!format!("{}{}", stdout(&ov), stderr(&ov)).contains("ov-key-from-env-99"));
    let cfg = std::fs::read_to_string(home.path().join(".ovmem/config.toml")).unwrap();
    assert!(cfg.contains("kind = \"openviking\"") && cfg.contains("user = \"ann\"") && !cfg.contains("bank"), "{cfg}");
    let out = home.ok(&[
        "install",
        "--harness",
        "claude-code",
        "--backend",
        "hindsight",
        "--api-url",
        &url,
        "--api-token",
        "argv-token-1",
    ]);
    assert!(stderr(&out).contains("shell history") && !stderr(&out).contains("argv-token-1"), "{}", stderr(&out));
    // Without --api-url, the configured URL of that kind is kept.
    let out = home.ok(&["install", "--harness", "claude-code", "--backend", "hindsight"]);
    assert!(stderr(&out).contains(&format!("Hindsight at {url}")), "{}", stderr(&out));
    // A dry run says what it would save and saves nothing.
    let before = rel_tree(home.path());
    let out = home.ok(&["install", "--harness", "claude-code", "--backend", "local", "--dry-run"]);
    assert!(stderr(&out).contains("dry run: backend: local"), "{}", stderr(&out));
    assert_eq!(differences(&before, &rel_tree(home.path())), Vec::<String>::new());
    // --backend local switches back; without --backend nothing about the backend changes.
    home.ok(&["install", "--harness", "claude-code", "--backend", "local"]);
    let cfg = std::fs::read_to_string(home.path().join(".ovmem/config.toml")).unwrap();
    assert!(cfg.contains("kind = \"local\""), "{cfg}");
    home.ok(&["install", "--harness", "cursor"]);
    assert_eq!(std::fs::read_to_string(home.path().join(".ovmem/config.toml")).unwrap(), cfg);
}

#[test]
fn a_password_in_the_server_url_is_never_shown() {
    let home = Home::new();
    let dead = RefusingPort::new();
    let url = dead.url().replace("http://", "http://ann:url-pass-5150@");
    // install refuses to save it (config.toml never holds a credential) and says what to give.
    let out = home.run(&["install", "--harness", "cursor", "--backend", "hindsight", "--api-url", &url, "--json"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("--api-token -"), "{}", stderr(&out));
    let mut shown = format!("{}{}", stdout(&out), stderr(&out));
    // One written by hand (or by an older ovmem) is never shown either.
    home.put(".ovmem/config.toml", format!("[backend]\nkind = \"hindsight\"\nurl = \"{url}\"\n").as_bytes());
    for args in [&["status"][..], &["status", "--json"], &["backend", "show"]] {
        let out = home.ok(args);
        shown.push_str(&format!("{}{}", stdout(&out), stderr(&out)));
    }
    assert!(shown.contains("http://***@127.0.0.1:"), "{shown}");
    assert!(!shown.contains("url-pass-5150"), "{shown}");
}

/// One junk key in `[backend]` costs only itself in `backend show` and `status`: the server and
/// its valid settings are shown and the bad key is named (without its value). A bank of the
/// wrong type keeps memories off the server, and says so, instead of using another bank.
#[test]
fn a_junk_backend_key_is_named_and_the_rest_is_shown() {
    let home = Home::new();
    let dead = RefusingPort::new();
    let url = dead.url();
    let server = format!("[backend]\nkind = \"hindsight\"\nurl = \"{url}\"\n");
    home.put(".ovmem/config.toml", format!("{server}recall_budget_ms = \"soon-7731\"\n").as_bytes());
    let out = home.ok(&["backend", "show"]);
    let (text, err) = (stdout(&out), stderr(&out));
    assert!(text.contains("hindsight") && text.contains(&url), "{text}");
    assert!(err.contains("backend.recall_budget_ms") && !err.contains("soon-7731"), "{err}");
    let v = json(&home.ok(&["backend", "show", "--json"]));
    assert_eq!(v["kind"]["value"], "hindsight");
    assert_eq!(v["problems"].as_array().unwrap().len(), 1, "{v}");
    let v = json(&home.ok(&["status", "--json"]));
    assert_eq!((v["backend"]["kind"].as_str(), v["backend"]["url"].as_str()), (Some("hindsight"), Some(url.as_str())));
    // A bank of the wrong type: the server is not used, and every view says why.
    home.put(".ovmem/config.toml", format!("{server}bank = [\"team\"]\n").as_bytes());
    let v = json(&home.ok(&["status", "--json"]));
    let why = v["backend"]["error"].as_str().unwrap_or_default().to_string();
    assert!(why.contains("backend.bank") && why.contains("local store"), "{v}");
    let out = home.run(&["backend", "test"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("backend.bank"), "{}", stderr(&out));
}

/// A turn a running hook wrote ahead to the spool (under the lock it holds while it lives) is
/// that hook's to store: `status` and `sync` do not count it as spooled, `sync` exits 0 and leaves
/// it, and both say it is being stored by a running hook. Once the hook is gone (its lock with
/// it) the file waits like any spooled item, and `sync` stores it.
#[test]
fn a_turn_a_live_hook_wrote_ahead_is_not_counted_as_spooled() {
    let home = Home::new();
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    let item = serde_json::json!({
        "kind": "turn", "id": "a1b2c3d4e5f6a7b8c9d0", "bank": "acme", "harness": "claude-code",
        "session": "s-live", "prompt": "which port does the api use?", "reply": "port 7011",
        "at": now, "taken_at": now,
    });
    let path = home.put(&format!(".ovmem/spool/{now}-turn-0badcafe-a1b2c3d4e5f6.json"), item.to_string().as_bytes());
    // The hook's lock (an exclusive advisory lock on the file, as spool::Ahead holds it).
    let lock = std::fs::File::open(&path).unwrap();
    lock.try_lock().unwrap();
    let v = json(&home.ok(&["status", "--json"]));
    assert_eq!((v["queue"]["spooled"].as_u64(), v["queue"]["spooled_in_flight"].as_u64()), (Some(0), Some(1)), "{v}");
    let text = stdout(&home.ok(&["status"]));
    assert!(text.contains("1 turn being stored by a running hook") && !text.contains("spooled"), "{text}");
    let out = home.run(&["sync", "--json"]);
    let v = json(&out);
    assert_eq!(out.status.code(), Some(0), "{v}");
    assert_eq!((v["spooled_waiting"].as_u64(), v["spooled_in_flight"].as_u64()), (Some(0), Some(1)), "{v}");
    assert!(path.exists(), "left to the hook that holds it");
    // The hook is gone: the turn waits for a replay, and `sync` stores it.
    drop(lock);
    let v = json(&home.ok(&["status", "--json"]));
    assert_eq!(v["queue"]["spooled"].as_u64(), Some(1), "{v}");
    let v = json(&home.ok(&["sync", "--json"]));
    assert_eq!((v["spooled_stored"].as_u64(), v["spooled_waiting"].as_u64()), (Some(1), Some(0)), "{v}");
    assert!(!path.exists());
}

/// `bank = 5` (not a string): hooks keep memories off the server (fail closed), and `backend
/// show` and `status` say so. Neither describes the bank as what an unset one means (a team
/// bank per project), nor `user` as the key's: the key is shown as invalid, with what hooks do.
#[test]
fn backend_show_describes_an_invalid_bank_as_invalid_not_as_the_team_bank() {
    let home = Home::new();
    let dead = RefusingPort::new();
    let url = dead.url();
    home.put(".ovmem/config.toml", format!("[backend]\nkind = \"hindsight\"\nurl = \"{url}\"\nbank = 5\n").as_bytes());
    let text = stdout(&home.ok(&["backend", "show"]));
    let bank = text.lines().find(|l| l.starts_with("bank")).unwrap_or_default();
    assert!(!text.contains("team bank"), "{text}");
    assert!(
        bank.contains("invalid") && bank.contains("send nothing to the server") && bank.contains("config.toml"),
        "{text}"
    );
    assert!(text.contains("not used"), "{text}");
    let v = json(&home.ok(&["backend", "show", "--json"]));
    assert!(v["bank"]["invalid"].as_str().is_some_and(|w| w.contains("wrong kind")), "{v}");
    assert!(v["bank"]["hooks"].as_str().is_some_and(|h| h.contains("nothing to the server")), "{v}");
    let text = stdout(&home.ok(&["status"]));
    let line = text.lines().find(|l| l.starts_with("backend:")).unwrap_or_default();
    assert!(!line.contains("team bank") && line.contains("not used") && line.contains("backend.bank"), "{text}");
    // OpenViking's `user` likewise: not "from the API key".
    home.put(
        ".ovmem/config.toml",
        format!("[backend]\nkind = \"openviking\"\nurl = \"{url}\"\nuser = [\"ann\"]\n").as_bytes(),
    );
    let text = stdout(&home.ok(&["backend", "show"]));
    let user = text.lines().find(|l| l.starts_with("user")).unwrap_or_default();
    assert!(user.contains("invalid") && !user.contains("API key"), "{text}");
}

#[test]
fn status_waits_for_a_silent_server_only_200_ms() {
    let home = Home::new();
    let url = silent_url();
    home.ok(&["install", "--harness", "cursor", "--backend", "hindsight", "--api-url", &url]);
    let t = Instant::now();
    let out = home.ok(&["status"]);
    let took = t.elapsed();
    assert!(took < Duration::from_millis(800), "{took:?}");
    assert!(stdout(&out).contains("no answer within 200 ms (`ovmem backend test` waits longer)"), "{}", stdout(&out));
}

#[test]
fn status_shows_the_queue_and_check_reports_an_old_one() {
    let home = Home::new();
    let dead = RefusingPort::new();
    let url = dead.url();
    home.ok(&["install", "--harness", "claude-code", "--backend", "hindsight", "--api-url", &url]);
    let proj = home.path().join("proj");
    std::fs::create_dir_all(&proj).unwrap();
    for (event, body) in [
        (
            "UserPromptSubmit",
            serde_json::json!({"session_id": "s1", "cwd": proj, "hook_event_name": "UserPromptSubmit", "prompt": "The staging port is 5433, remember it"}),
        ),
        (
            "Stop",
            serde_json::json!({"session_id": "s1", "cwd": proj, "hook_event_name": "Stop", "last_assistant_message": "Noted: 5433."}),
        ),
    ] {
        let mut child =
            home.cmd(&["hook", "claude-code", event]).stdin(Stdio::piped()).stdout(Stdio::null()).spawn().unwrap();
        child.stdin.take().unwrap().write_all(body.to_string().as_bytes()).unwrap();
        assert!(child.wait().unwrap().success());
    }
    let v = json(&home.ok(&["status", "--json"]));
    assert_eq!(v["queue"]["outbox"], 1, "{}", v["queue"]);
    assert!(v["queue"]["last_send_error"].as_str().unwrap().contains("connection refused"), "{}", v["queue"]);
    let s = stdout(&home.ok(&["status"]));
    assert!(s.contains("queue: 1 memory waiting to be sent, the oldest from"), "{s}");
    assert!(s.contains("; 1 memory in the local store"), "{s}");
    assert!(s.contains("`ovmem sync` sends them"), "{s}");
    // A fresh queue is no finding; one older than a day is.
    assert_eq!(home.run(&["check"]).status.code(), Some(0));
    let db = rusqlite::Connection::open(home.path().join(".ovmem/memory.db")).unwrap();
    db.execute("UPDATE outbox SET created_at = created_at - 2 * 86400", []).unwrap();
    drop(db);
    let out = home.run(&["check", "--format", "json"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let v = json(&out);
    let f =
        v["findings"].as_array().unwrap().iter().find(|f| f["kind"] == "stale-queue").expect("a stale-queue finding");
    let msg = f["message"].as_str().unwrap();
    assert!(msg.contains("1 memory has waited since") && msg.contains("2 days ago") && msg.contains(&url), "{msg}");
    assert!(f["fix"].as_str().unwrap().contains("ovmem sync"));
    let out = home.run(&["check"]);
    assert!(stdout(&out).contains("outbox") && stdout(&out).contains("ovmem backend test"), "{}", stdout(&out));
    // A repository check in CI is about the repository, not this machine's queue.
    assert_eq!(home.run(&["check", "--project", proj.to_str().unwrap()]).status.code(), Some(0));
}

// ------------------------------------------------------------------------------------------------
// Issue 9 item 6: migrate carries the old integration's server settings

/// A home with hindsight-cline installed globally: its hook files, lib/ and a settings.json.
fn hindsight_cline_home(settings: &str) -> Home {
    let home = Home::new();
    let src = Path::new(FIXTURES).join("legacy-home/Documents/Cline/Hooks");
    for name in ["TaskStart", "UserPromptSubmit", "TaskComplete", "TaskCancel"] {
        let p = home.put(&format!("Documents/Cline/Hooks/{name}"), &std::fs::read(src.join(name)).unwrap());
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    home.put("Documents/Cline/Hooks/lib/hooks_impl.py", &std::fs::read(src.join("lib/hooks_impl.py")).unwrap());
    home.put("Documents/Cline/Hooks/settings.json", settings.as_bytes());
    home
}

fn cline_settings(url: &str, token: Option<&str>, bank: &str) -> String {
    serde_json::to_string_pretty(&serde_json::json!({
        "version": "0.1.0", "hindsightApiUrl": url, "hindsightApiToken": token, "bankId": bank,
        "autoRecall": true, "recallBudget": "mid", "retainContext": "cline", "apiPort": 9077,
        "bankIdPrefix": "", "dynamicBankId": false, "agentName": "cline", "debug": false
    }))
    .unwrap()
}

fn config(home: &Home) -> String {
    std::fs::read_to_string(home.path().join(".ovmem/config.toml")).unwrap_or_default()
}

#[test]
fn migrate_carries_hindsight_clines_server_bank_and_token() {
    let dead = RefusingPort::new();
    let url = dead.url();
    let home = hindsight_cline_home(&cline_settings(&url, Some("hs-cline-token-3141"), "cline"));
    let out = home.ok(&["migrate", "--harness", "cline", "--dry-run"]);
    assert!(
        stderr(&out).contains(&format!(
            "backend: would carry over hindsight-cline's memory server: Hindsight at {url}, bank `cline`, with a token"
        )),
        "{}",
        stderr(&out)
    );
    assert!(!home.path().join(".ovmem/config.toml").exists());
    let out = home.ok(&["migrate", "--harness", "cline", "--yes"]);
    let text = format!("{}{}", stdout(&out), stderr(&out));
    assert!(!text.contains("hs-cline-token-3141"), "{text}");
    assert_eq!(text.matches("carried over").count(), 1, "{text}");
    assert!(
        text.contains("backend carried over from hindsight-cline (`~/Documents/Cline/Hooks/settings.json`)"),
        "{text}"
    );
    let cfg = config(&home);
    assert!(
        cfg.contains("kind = \"hindsight\"")
            && cfg.contains(&format!("url = \"{url}\""))
            && cfg.contains("bank = \"cline\""),
        "{cfg}"
    );
    assert!(std::fs::read_to_string(home.path().join(".ovmem/credentials.toml"))
        .unwrap()
        .contains("hs-cline-token-3141"));
    assert!(home.path().join("Documents/Cline/Hooks/TaskStart").exists());
    assert!(!home.path().join("Documents/Cline/Hooks/settings.json").exists(), "moved to the backup");
    // Running it again: nothing left to migrate, nothing changes.
    let out = home.ok(&["migrate", "--harness", "cline", "--yes"]);
    assert!(stderr(&out).contains("no legacy integrations to migrate"), "{}", stderr(&out));
    assert_eq!(config(&home).matches("[backend]").count(), 1);
}

#[test]
fn migrate_keeps_a_backend_the_user_chose_unless_forced() {
    let (old_port, their_port) = (RefusingPort::new(), RefusingPort::new());
    let (old, theirs) = (old_port.url(), their_port.url());
    let settings = cline_settings(&old, None, "old-bank");
    // Another server configured: kept, and said so.
    let home = hindsight_cline_home(&settings);
    home.ok(&["install", "--harness", "cursor", "--backend", "openviking", "--api-url", &theirs, "--user", "me"]);
    let before = config(&home);
    let out = home.ok(&["migrate", "--harness", "cline", "--yes"]);
    assert!(
        stderr(&out).contains("ovmem's backend is already OpenViking") && stderr(&out).contains("--force"),
        "{}",
        stderr(&out)
    );
    assert_eq!(config(&home), before);
    // --force switches.
    let home = hindsight_cline_home(&settings);
    home.ok(&["install", "--harness", "cursor", "--backend", "openviking", "--api-url", &theirs]);
    home.ok(&["migrate", "--harness", "cline", "--yes", "--force"]);
    assert!(config(&home).contains("bank = \"old-bank\"") && config(&home).contains(&old), "{}", config(&home));
    // The same server already configured: nothing to do, said once.
    let home = hindsight_cline_home(&settings);
    home.ok(&[
        "install",
        "--harness",
        "cursor",
        "--backend",
        "hindsight",
        "--api-url",
        &format!("{old}/"),
        "--bank",
        "old-bank",
    ]);
    let out = home.ok(&["migrate", "--harness", "cline", "--yes"]);
    assert!(stderr(&out).contains("ovmem already uses hindsight-cline's memory server"), "{}", stderr(&out));
}

#[test]
fn migrate_never_adopts_settings_from_a_project() {
    let home = Home::new();
    let proj = home.path().join("repo");
    let src = Path::new(FIXTURES).join("legacy-home/Documents/Cline/Hooks");
    for name in ["TaskStart", "UserPromptSubmit", "TaskComplete", "TaskCancel"] {
        let p = home.put(&format!("repo/.clinerules/hooks/{name}"), &std::fs::read(src.join(name)).unwrap());
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    home.put("repo/.clinerules/hooks/lib/hooks_impl.py", &std::fs::read(src.join("lib/hooks_impl.py")).unwrap());
    home.put("repo/.clinerules/hooks/settings.json", cline_settings("https://evil.example", Some("t"), "x").as_bytes());
    let out = home.ok(&["migrate", "--harness", "cline", "--project", proj.to_str().unwrap(), "--yes"]);
    let err = stderr(&out);
    assert!(err.contains("settings inside a project are not adopted"), "{err}");
    assert!(
        err.contains(
            "ovmem install --harness all --backend hindsight --api-url https://evil.example --bank x --api-token -"
        ),
        "{err}"
    );
    assert!(!config(&home).contains("evil"), "{}", config(&home));
}

#[test]
fn migrate_guesses_nothing_when_old_integrations_disagree() {
    let dead = RefusingPort::new();
    let home = hindsight_cline_home(&cline_settings(&dead.url(), None, "cline"));
    // OpenViking's Cursor plugin too, with its own server.
    let lh = Path::new(FIXTURES).join("legacy-home");
    home.put(".cursor/hooks.json", &std::fs::read(lh.join(".cursor/hooks.json")).unwrap());
    home.put(
        ".openviking/agent-integrations/cursor/integration.json",
        &std::fs::read(lh.join(".openviking/agent-integrations/cursor/integration.json")).unwrap(),
    );
    home.put(".openviking/ovcli.conf", br#"{"url": "http://127.0.0.1:1", "api_key": "ov-k"}"#);
    let out = home.ok(&["migrate", "--yes"]);
    let err = stderr(&out);
    assert!(err.contains("used different memory servers, so none was carried over"), "{err}");
    assert!(
        err.contains("ovmem install --harness all --backend openviking --api-url http://127.0.0.1:1 --api-key -"),
        "{err}"
    );
    assert!(!err.contains("ov-k\""), "{err}");
    assert!(
        !config(&home).contains("kind = \"hindsight\"") && !config(&home).contains("openviking"),
        "{}",
        config(&home)
    );
    // One at a time, each carries.
    let home = hindsight_cline_home(&cline_settings("http://127.0.0.1:2", None, "cline"));
    home.put(".openviking/ovcli.conf", br#"{"url": "http://127.0.0.1:1"}"#);
    home.ok(&["migrate", "--harness", "cline", "--yes"]);
    assert!(config(&home).contains("http://127.0.0.1:2"));
}

#[test]
fn migrate_refuses_unreadable_old_settings_until_forced() {
    let home = hindsight_cline_home("{\"hindsightApiToken\": \"leak-me-not\",\n broken");
    let before = rel_tree(home.path());
    let out = home.run(&["migrate", "--harness", "cline", "--yes"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("not valid JSON (line 2)") && !stderr(&out).contains("leak-me-not"),
        "{}",
        stderr(&out)
    );
    assert_eq!(differences(&before, &rel_tree(home.path())), Vec::<String>::new(), "nothing changed");
    let out = home.ok(&["migrate", "--harness", "cline", "--yes", "--force"]);
    assert!(stderr(&out).contains("its settings were not carried over"), "{}", stderr(&out));
    assert!(!home.path().join(".ovmem/config.toml").exists());
}

// ------------------------------------------------------------------------------------------------
// The terminal picker and confirmations, in tmux

/// A tmux server of the test's own (its own socket), stopped when dropped.
struct Tmux {
    socket: String,
    dir: tempfile::TempDir,
}

impl Tmux {
    fn start(home: &Home, args: &str) -> Option<Self> {
        if Command::new("tmux").arg("-V").output().is_err() {
            let why = "tmux is not installed (apt-get install tmux)";
            if std::env::var("OVMEM_E2E_REQUIRED").is_ok_and(|v| v == "1") {
                panic!("{why}");
            }
            let _ = writeln!(std::io::stderr(), "SKIPPED (not a pass): {why}");
            return None;
        }
        use std::sync::atomic::{AtomicU32, Ordering};
        static N: AtomicU32 = AtomicU32::new(0);
        let t = Tmux {
            socket: format!("ovmem-test-{}-{}", std::process::id(), N.fetch_add(1, Ordering::SeqCst)),
            dir: tempfile::tempdir().unwrap(),
        };
        let script = format!(
            "cd '{home}' && env -i HOME='{home}' PATH=/usr/bin:/bin TERM=xterm-256color '{OVMEM}' {args}; echo EXIT:$?; sleep 300",
            home = home.path().display()
        );
        let ok = t.tmux(&["new-session", "-d", "-s", "t", "-x", "160", "-y", "40", &script]).status.success();
        assert!(ok, "tmux new-session failed");
        Some(t)
    }

    fn tmux(&self, args: &[&str]) -> Output {
        Command::new("tmux")
            .env("TMUX_TMPDIR", self.dir.path())
            .arg("-L")
            .arg(&self.socket)
            .args(args)
            .output()
            .unwrap()
    }

    fn screen(&self) -> String {
        stdout(&self.tmux(&["capture-pane", "-p", "-t", "t"]))
    }

    fn keys(&self, keys: &[&str]) {
        for k in keys {
            self.tmux(&["send-keys", "-t", "t", k]);
            std::thread::sleep(Duration::from_millis(60));
        }
    }

    /// Waits until the screen shows `text` (5 s at most).
    fn wait_for(&self, text: &str) -> String {
        let t = Instant::now();
        loop {
            let s = self.screen();
            if s.contains(text) {
                return s;
            }
            // Generous: an install behind the prompt stages a 100 MB debug binary, which a loaded
            // machine took more than 5 s to do.
            assert!(t.elapsed() < Duration::from_secs(20), "`{text}` never appeared:\n{s}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn cursor_visible(&self) -> bool {
        stdout(&self.tmux(&["display", "-p", "-t", "t", "#{cursor_flag}"])).trim() == "1"
    }

    /// The pid of ovmem in the pane (the shell's child).
    fn ovmem_pid(&self) -> i32 {
        let sh: i32 = stdout(&self.tmux(&["display", "-p", "-t", "t", "#{pane_pid}"])).trim().parse().unwrap();
        let children = std::fs::read_to_string(format!("/proc/{sh}/task/{sh}/children")).unwrap();
        children.split_whitespace().next().unwrap().parse().unwrap()
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        self.tmux(&["kill-server"]);
    }
}

#[test]
fn the_picker_preselects_nothing_marks_what_is_installed_and_asks_before_writing() {
    let home = Home::new();
    std::fs::create_dir_all(home.path().join(".claude")).unwrap();
    std::fs::create_dir_all(home.path().join(".gemini")).unwrap();
    home.ok(&["install", "--harness", "gemini-cli"]);
    let Some(t) = Tmux::start(&home, "install") else { return };
    let s = t.wait_for("Install ovmem:");
    assert!(!s.contains("[x]"), "nothing is selected at first:\n{s}");
    let row = |name: &str| s.lines().find(|l| l.contains(&format!("] {name} "))).unwrap_or_default().to_string();
    assert!(row("claude-code").contains("detected `~/.claude`"), "{s}");
    assert!(row("gemini-cli").contains("installed in `~/.gemini/settings.json`"), "{s}");
    assert!(row("cursor").contains("not detected"), "{s}");
    assert!(!t.cursor_visible(), "the cursor is hidden while the picker is up");
    // Enter with nothing selected explains instead of doing anything.
    t.keys(&["Enter"]);
    t.wait_for("nothing selected");
    // Select claude-code, accept: the plan is shown and a question asked.
    t.keys(&["Space", "Enter"]);
    let s = t.wait_for("Write these changes? [Y/n]");
    assert!(s.contains("✔ Install ovmem: claude-code"), "{s}");
    assert!(s.contains("claude-code  `~/.claude/settings.json` (created: SessionStart, UserPromptSubmit, Stop, PreToolUse, SessionEnd)"), "{s}");
    assert!(s.contains("`~/.claude.json` (created: MCP server `ovmem`)"), "{s}");
    assert!(!home.path().join(".claude/settings.json").exists(), "nothing is written before the answer");
    t.keys(&["n"]);
    let s = t.wait_for("EXIT:");
    assert!(s.contains("nothing was changed") && s.contains("EXIT:2"), "{s}");
    assert!(!home.path().join(".claude/settings.json").exists());
    assert!(t.cursor_visible());
    drop(t);
    // Again, and yes this time.
    let Some(t) = Tmux::start(&home, "install") else { return };
    t.wait_for("Install ovmem:");
    t.keys(&["Space", "Enter"]);
    t.wait_for("Write these changes?");
    t.keys(&["y"]);
    let s = t.wait_for("EXIT:");
    assert!(s.contains("ovmem is installed for claude-code") && s.contains("EXIT:0"), "{s}");
    assert!(std::fs::read_to_string(home.path().join(".claude/settings.json"))
        .unwrap()
        .contains("ovmem hook claude-code"));
}

#[test]
fn the_picker_cancels_on_esc_q_ctrl_c_and_signals_with_the_terminal_restored() {
    let home = Home::new();
    std::fs::create_dir_all(home.path().join(".claude")).unwrap();
    let before = rel_tree(home.path());
    for (keys, code) in
        [(&["Space", "Escape"][..], "EXIT:2"), (&["Down", "Space", "q"], "EXIT:2"), (&["Space", "C-c"], "EXIT:130")]
    {
        let Some(t) = Tmux::start(&home, "install") else { return };
        t.wait_for("Install ovmem:");
        t.keys(keys);
        let s = t.wait_for("EXIT:");
        assert!(s.contains(code), "{keys:?}:\n{s}");
        assert!(t.cursor_visible(), "{keys:?}: the cursor is shown again");
        if code == "EXIT:130" {
            assert!(s.contains("cancelled with Ctrl-C; nothing was changed"), "{s}");
        } else {
            assert!(s.contains("✘ Install ovmem: cancelled") && s.contains("nothing was changed"), "{s}");
        }
        assert_eq!(differences(&before, &rel_tree(home.path())), Vec::<String>::new(), "{keys:?}");
    }
    // SIGTERM and SIGHUP while the picker waits: the terminal is given back too.
    for (sig, code) in [(libc::SIGTERM, "EXIT:143"), (libc::SIGHUP, "EXIT:129")] {
        let Some(t) = Tmux::start(&home, "install") else { return };
        t.wait_for("Install ovmem:");
        assert!(!t.cursor_visible());
        // SAFETY: a signal to the ovmem process this test started.
        assert_eq!(unsafe { libc::kill(t.ovmem_pid(), sig) }, 0);
        let s = t.wait_for("EXIT:");
        assert!(s.contains(code), "{sig}:\n{s}");
        assert!(t.cursor_visible(), "signal {sig}: cursor shown");
        // The terminal is back in cooked mode: typed text is echoed by the line discipline.
        t.keys(&["echo-check"]);
        t.wait_for("echo-check");
    }
    assert_eq!(differences(&before, &rel_tree(home.path())), Vec::<String>::new());
}

#[test]
fn uninstall_on_a_terminal_shows_what_goes_and_asks() {
    let home = Home::new();
    home.ok(&["install", "--harness", "codex,cursor"]);
    let Some(t) = Tmux::start(&home, "uninstall") else { return };
    let s = t.wait_for("Remove ovmem from codex, cursor? [y/N]");
    assert!(s.contains("ovmem will remove (user scope):"), "{s}");
    assert!(s.contains("codex  `~/.codex/hooks.json`: delete (ovmem created it)"), "{s}");
    t.keys(&["Enter"]);
    let s = t.wait_for("EXIT:");
    assert!(s.contains("nothing was changed") && s.contains("EXIT:2"), "enter means no: {s}");
    assert!(home.path().join(".codex/hooks.json").exists());
    drop(t);
    let Some(t) = Tmux::start(&home, "uninstall") else { return };
    t.wait_for("[y/N]");
    t.keys(&["y"]);
    let s = t.wait_for("EXIT:");
    assert!(s.contains("EXIT:0") && s.contains("removed runtime"), "{s}");
    assert!(!home.path().join(".codex/hooks.json").exists());
}

#[test]
fn a_token_typed_at_the_terminal_is_not_echoed() {
    let home = Home::new();
    let dead = RefusingPort::new();
    let url = dead.url();
    let args = format!("install --harness cursor --backend hindsight --api-url {url} --api-token -");
    let Some(t) = Tmux::start(&home, &args) else { return };
    t.wait_for("Hindsight API token:");
    t.keys(&["typed-secret-8086", "Enter"]);
    let s = t.wait_for("EXIT:");
    assert!(s.contains("EXIT:0"), "{s}");
    assert!(!s.contains("typed-secret-8086"), "the token was echoed:\n{s}");
    assert!(s.contains("with a token"), "{s}");
    let cred = std::fs::read_to_string(home.path().join(".ovmem/credentials.toml")).unwrap();
    assert!(cred.contains("api_token = \"typed-secret-8086\""), "{cred}");
    // Echo is back on afterwards.
    t.keys(&["echo-is-on"]);
    t.wait_for("echo-is-on");
}

/// docs/harnesses.md's table of harness names is `ovmem harnesses --format markdown`, between its markers.
#[test]
fn the_docs_list_the_registry() {
    let readme = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/harnesses.md")).unwrap();
    let start = "<!-- harness-names: generated by `ovmem harnesses --format markdown`; tests/cli.rs checks it -->\n";
    let end = "<!-- /harness-names -->";
    let i = readme.find(start).expect("docs/harnesses.md has the harness-names block") + start.len();
    let j = readme[i..].find(end).expect("the harness-names block is closed") + i;
    let want = stdout(&Home::new().ok(&["harnesses", "--format", "markdown"]));
    assert_eq!(
        &readme[i..j],
        want,
        "docs/harnesses.md's harness table is out of date: paste `cargo run -q -- harnesses --format markdown` between the markers"
    );
}
