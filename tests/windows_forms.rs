//! The Windows forms of ovmem's hooks (nothing here runs on Windows: the forms are rendered,
//! parsed back and snapshotted): Codex `commandWindows` and Windsurf `powershell` (Windows-only
//! fields written on every OS), and what a Windows host gets instead of the POSIX command: Claude
//! Code's `shell: "powershell"` entry, Cline's `<Event>.ps1` files, the bare cmd.exe path for
//! Kiro CLI and Antigravity CLI (refused when cmd cannot carry it).
#![cfg(unix)]

mod common;

use std::path::Path;

use common::{stderr, tree_diff, Home};
use ovmem::harness::{self, Placeholders};
use ovmem::install::marker;

const WIN: &str = r"C:\Users\Ann O'Neil\.ovmem\bin\ovmem.exe";
const WIN_PLAIN: &str = r"C:\Users\ann\.ovmem\bin\ovmem.exe";
const UNIX: &str = "/home/ann/.ovmem/bin/ovmem";

fn render(template: &str, bin: &str, h: &str, event: &str) -> anyhow::Result<String> {
    let p = Placeholders {
        bin: Path::new(bin),
        harness: h,
        event,
        timeout: 30,
        matcher: "Read|Bash",
        ovmem_home: Path::new("/home/ann/.ovmem"),
    };
    harness::render(template, &p)
}

/// PowerShell's reading of `& '<path>' <args>`: the path with doubled quotes undone, the words.
fn ps_parse(cmd: &str) -> (String, Vec<String>) {
    ovmem::winshell::ps_hook_runtime(cmd).unwrap_or_else(|| panic!("not the call form: {cmd}"))
}

#[test]
fn windows_forms_rendered_for_every_shell() {
    let mut out = String::new();
    // Windows-only fields, as a Unix install writes them (the default location on Windows) and
    // as a Windows install writes them (its own runtime).
    for (t, h) in [("codex/group.json", "codex"), ("windsurf/entry.json", "windsurf")] {
        for bin in [UNIX, WIN] {
            let v: serde_json::Value = serde_json::from_str(&render(t, bin, h, "Stop").unwrap()).unwrap();
            let field = if h == "codex" { &v["hooks"][0]["commandWindows"] } else { &v["powershell"] };
            let cmd = field.as_str().unwrap();
            out.push_str(&format!("{t} from `{bin}`:\n  {cmd}\n"));
            assert!(cmd.starts_with("& "), "the call operator: {cmd}");
            if bin == WIN {
                let (path, words) = ps_parse(cmd);
                assert_eq!((path.as_str(), words), (WIN, vec!["hook".to_string(), h.to_string(), "Stop".to_string()]));
            } else {
                assert_eq!(cmd, format!(r"& (Join-Path $env:USERPROFILE '.ovmem\bin\ovmem.exe') hook {h} Stop"));
            }
        }
    }
    // What a Windows host gets in place of the POSIX command.
    for (t, h, e) in [
        ("claude-code/group-windows.json", "claude-code", "Stop"),
        ("claude-code/group-windows-matcher.json", "claude-code", "PreToolUse"),
    ] {
        let text = render(t, WIN, h, e).unwrap();
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        let hook = &v["hooks"][0];
        assert_eq!(hook["shell"], "powershell");
        let cmd = hook["command"].as_str().unwrap();
        assert_eq!(ps_parse(cmd).0, WIN);
        assert_eq!(marker::hook_runtime(cmd, h, Some(e)).as_deref(), Some(Path::new(WIN)), "{cmd}");
        out.push_str(&format!("{t}:\n{text}\n"));
    }
    let ps1 = render("cline/hook.ps1", WIN, "cline", "TaskStart").unwrap();
    assert!(ps1.starts_with('\u{feff}'), "UTF-8 with a BOM, or PowerShell 5.1 reads it in the ANSI code page");
    let line = ps1.lines().find_map(|l| l.strip_prefix("[Console]::In.ReadToEnd() | ")).unwrap();
    assert_eq!(ps_parse(line).0, WIN);
    assert_eq!(ovmem::install::script_dir::script_runtime(&ps1, "cline", "TaskStart").as_deref(), Some(Path::new(WIN)));
    assert!(ps1.trim_end().ends_with("exit $LASTEXITCODE"));
    out.push_str(&format!("cline/hook.ps1:\n{}\n", ps1.trim_start_matches('\u{feff}')));
    for (t, h, e) in [
        ("kiro-cli/entry-windows.json", "kiro-cli", "stop"),
        ("antigravity-cli/handler-windows.json", "antigravity-cli", "Stop"),
    ] {
        let text = render(t, WIN_PLAIN, h, e).unwrap();
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        let cmd = v["command"].as_str().unwrap();
        assert_eq!(cmd, format!("{WIN_PLAIN} hook {h} {e}"), "bare: cmd /C keeps no quotes intact");
        assert_eq!(marker::hook_runtime(cmd, h, Some(e)).as_deref(), Some(Path::new(WIN_PLAIN)));
        out.push_str(&format!("{t}:\n  {cmd}\n"));
        let err = render(t, WIN, h, e).unwrap_err().to_string();
        assert!(err.contains("cmd.exe") && err.contains("OVMEM_HOME"), "{err}");
        out.push_str(&format!("  from `{WIN}`: refused: {err}\n"));
    }
    insta::assert_snapshot!("windows_forms", out);
}

#[test]
fn powershell_quoting_survives_every_quote_powershell_knows() {
    for path in [
        r"C:\Users\O'Neil\.ovmem\bin\ovmem.exe",
        "C:\\Users\\O\u{2019}Neil\\.ovmem\\bin\\ovmem.exe",
        r"C:\a''b\bin\ovmem.exe",
    ] {
        let cmd = format!("{} hook codex Stop", ovmem::winshell::ps_call(Path::new(path)));
        assert_eq!(ps_parse(&cmd).0, path, "{cmd}");
        // Inside the single quotes, every quote is doubled: none ends the string early.
        let inner = &cmd[3..cmd.rfind('\'').unwrap()];
        for q in ['\'', '\u{2019}'] {
            assert!(inner.split(q).skip(1).step_by(2).all(|s| s.is_empty()), "{cmd}");
        }
        // Nothing PowerShell expands inside single quotes is special: `$`, backticks stay text.
        assert!(!cmd.contains('"'), "{cmd}");
    }
}

#[test]
fn a_windows_host_gets_ps1_hooks_and_powershell_entries_and_loses_them_again() {
    let home = Home::new();
    home.put(".kiro/agents/a.json", b"{\"name\": \"a\"}\n");
    let original = home.tree();
    let out = home
        .cmd(&["install", "--harness", "cline,claude-code,codex,kiro-cli"])
        .env("OVMEM_TEST_WINDOWS_HOST", "1")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let hooks = home.path().join("Documents/Cline/Hooks");
    for e in ["TaskStart", "TaskResume", "UserPromptSubmit", "TaskComplete", "TaskCancel", "PreToolUse"] {
        let ps1 = std::fs::read_to_string(hooks.join(format!("{e}.ps1"))).unwrap();
        assert!(ps1.contains(&format!("hook cline {e}")), "{e}");
        assert!(hooks.join(e).is_file(), "the extension's own name stays for other OSes");
    }
    let claude: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(home.path().join(".claude/settings.json")).unwrap()).unwrap();
    assert_eq!(claude["hooks"]["Stop"][0]["hooks"][0]["shell"], "powershell");
    // Installing again changes nothing: ovmem knows its PowerShell entries.
    let again = home
        .cmd(&["install", "--harness", "cline,claude-code,codex,kiro-cli"])
        .env("OVMEM_TEST_WINDOWS_HOST", "1")
        .output()
        .unwrap();
    assert!(stderr(&again).contains("already installed"), "{}", stderr(&again));
    let st = home.cmd(&["status", "--json"]).env("OVMEM_TEST_WINDOWS_HOST", "1").output().unwrap();
    let v: serde_json::Value = serde_json::from_slice(&st.stdout).unwrap();
    for h in ["cline", "claude-code"] {
        let s = v["harnesses"].as_array().unwrap().iter().find(|x| x["harness"] == h).unwrap();
        assert!(s["scopes"][0]["entries"].as_array().unwrap().iter().all(|e| e["state"] == "ok"), "{s}");
    }
    home.ok(&["uninstall", "--yes"]);
    assert_eq!(tree_diff(&original, &home.tree()), Vec::<String>::new());

    // On Unix no `.ps1` is written: the Cline CLI takes `<Event>.ps1` for a hook on every OS.
    let home = Home::new();
    home.ok(&["install", "--harness", "cline"]);
    assert!(!hooks_ps1(&home.path().join("Documents/Cline/Hooks")));
}

fn hooks_ps1(dir: &Path) -> bool {
    std::fs::read_dir(dir).unwrap().flatten().any(|e| e.path().extension().is_some_and(|x| x == "ps1"))
}
