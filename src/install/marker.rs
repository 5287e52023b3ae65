//! How ovmem knows its own entries: by exact marker, never by a name. A hook is ovmem's when its
//! command is byte for byte what ovmem writes, `<OVMEM_HOME>/bin/ovmem hook <harness> <event>`
//! (the path absolute and shell-quoted as ovmem quotes it); an MCP server when it runs
//! `<OVMEM_HOME>/bin/ovmem mcp`. Whose `OVMEM_HOME` it is then decides who may touch it.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::harness::{shell_quote, shell_words};

/// The hook command ovmem writes for `runtime`.
pub fn command(runtime: &Path, harness: &str, event: &str) -> String {
    format!("{} hook {harness} {event}", shell_quote(&runtime.to_string_lossy()))
}

/// Whether `p` looks like a staged runtime: an absolute `…/bin/ovmem`.
pub fn is_runtime_path(p: &Path) -> bool {
    p.is_absolute()
        && p.file_name().is_some_and(|n| n == "ovmem")
        && p.parent().and_then(Path::file_name).is_some_and(|n| n == "bin")
}

/// Whether `runtime` (a [`is_runtime_path`]) may be an `OVMEM_HOME`'s staged runtime: one that is
/// gone (a removed or moved home), or one in a directory ovmem keeps its receipts or locks in. An
/// `ovmem` the user installed and runs by hand (`~/.local/bin`, `/usr/local/bin`, `~/.cargo/bin`)
/// is not: an entry that runs it is the user's own, and its directory is no home of ovmem's, to
/// refuse for or to remove a runtime from.
pub fn staged(runtime: &Path) -> bool {
    let Some(home) = runtime.parent().and_then(Path::parent) else { return false };
    std::fs::symlink_metadata(runtime).is_err() || home.join("receipts").is_dir() || home.join("locks").is_dir()
}

/// `…\bin\ovmem.exe` / `…/bin/ovmem` as a string, for Windows paths too (on any host).
fn is_runtime_str(p: &str) -> bool {
    let parts: Vec<&str> = p.split(['/', '\\']).collect();
    (p.starts_with('/') || crate::winshell::is_windows_path(p))
        && parts.len() >= 3
        && matches!(parts[parts.len() - 1], "ovmem" | "ovmem.exe")
        && parts[parts.len() - 2] == "bin"
}

/// The runtime an ovmem hook command runs, when `cmd` is exactly such a command for `harness`
/// (and `event`, when given): the POSIX form ovmem writes, or the PowerShell form
/// (`& '<path>' hook …`) it writes for a Windows host.
pub fn hook_runtime(cmd: &str, harness: &str, event: Option<&str>) -> Option<PathBuf> {
    if cmd.starts_with("& '") {
        let (path, w) = crate::winshell::ps_hook_runtime(cmd)?;
        let ok = w.len() == 3 && w[0] == "hook" && w[1] == harness && event.is_none_or(|e| w[2] == e);
        let exact = cmd == format!("{} hook {harness} {}", crate::winshell::ps_call(Path::new(&path)), w.get(2)?);
        return (ok && exact && is_runtime_str(&path)).then(|| PathBuf::from(path));
    }
    // The bare cmd.exe form a Windows host gets (`C:\…\ovmem.exe hook <h> <e>`, never quoted).
    let bare: Vec<&str> = cmd.split(' ').collect();
    if bare.len() == 4 && crate::winshell::is_windows_path(bare[0]) {
        let ok = bare[1] == "hook" && bare[2] == harness && event.is_none_or(|e| bare[3] == e);
        let exact = crate::winshell::cmd_path(Path::new(bare[0])).as_deref() == Ok(bare[0]);
        return (ok && exact && is_runtime_str(bare[0])).then(|| PathBuf::from(bare[0]));
    }
    let w = shell_words(cmd);
    if w.len() != 4 || w[1] != "hook" || w[2] != harness || event.is_some_and(|e| w[3] != e) {
        return None;
    }
    let runtime = PathBuf::from(&w[0]);
    (is_runtime_path(&runtime) && cmd == command(&runtime, harness, &w[3]) && staged(&runtime)).then_some(runtime)
}

/// The program of the first simple command in `cmd` that runs ovmem's hook runtime for
/// `harness` (`<…>/ovmem hook <harness> …`), the command read as the shell reads it: quotes,
/// blanks, comments, variable assignments before it and other commands around it do not hide it.
/// A command that only names ovmem in an argument (`echo …/ovmem hook …`) does not run it. This
/// is how `check` and `doctor` find ovmem's entries edited by hand, which the harness runs all
/// the same; which entries are ovmem's own to edit stays the exact marker ([`hook_runtime`]).
pub fn runs_hook(cmd: &str, harness: &str) -> Option<String> {
    let assignment = |w: &str| {
        w.split_once('=').is_some_and(|(name, _)| {
            !name.is_empty()
                && !name.starts_with(|c: char| c.is_ascii_digit())
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        })
    };
    use crate::shell::Part;
    crate::shell::parse(cmd).iter().flatten().find_map(|c| {
        let mut w = c.words.iter().skip_while(|w| w.literal().is_some_and(|w| assignment(&w)));
        // The program may be reached through a variable (`$HOME/.ovmem/bin/ovmem`): its name is
        // the end of its last literal part.
        let program = w.next()?;
        let Some(Part::Lit(tail)) = program.parts.last() else { return None };
        let ovmem = matches!(tail.rsplit(['/', '\\']).next(), Some("ovmem" | "ovmem.exe"));
        let hook = w.next()?.literal().is_some_and(|x| x == "hook");
        let ours = w.next()?.literal().is_some_and(|x| x == harness);
        (ovmem && hook && ours).then(|| program.literal().unwrap_or_else(|| format!("…{tail}")))
    })
}

/// The command line and runtime of an ovmem handler object: its `command` is ovmem's command
/// line, or (the argv form a harness runs without a shell, ZCode's `type: "process"`) its
/// `command` is the runtime itself and its `args` exactly `["hook", harness, event]`.
pub fn handler_runtime(h: &Value, harness: &str, event: Option<&str>) -> Option<(String, PathBuf)> {
    let cmd = h.get("command")?.as_str()?;
    match h.get("args") {
        Some(Value::Array(args)) => {
            let w: Vec<&str> = args.iter().map(Value::as_str).collect::<Option<_>>()?;
            let ok = w.len() == 3 && w[0] == "hook" && w[1] == harness && event.is_none_or(|e| w[2] == e);
            (ok && is_runtime_str(cmd)).then(|| (command(Path::new(cmd), harness, w[2]), PathBuf::from(cmd)))
        }
        Some(_) => None,
        None => hook_runtime(cmd, harness, event).map(|r| (cmd.to_string(), r)),
    }
}

/// The runtime an MCP server entry runs, when it is `<…>/bin/ovmem mcp`: a `command` string with
/// `args: ["mcp"]`, or a `command` argv array `[<runtime>, "mcp"]` (opencode, Kilo Code).
pub fn mcp_runtime(v: &Value) -> Option<PathBuf> {
    let (runtime, args): (&str, Vec<&Value>) = match v.get("command")? {
        Value::String(c) => (c, v.get("args")?.as_array()?.iter().collect()),
        Value::Array(argv) if v.get("args").is_none() => (argv.first()?.as_str()?, argv.iter().skip(1).collect()),
        _ => return None,
    };
    let runtime = PathBuf::from(runtime);
    (is_runtime_path(&runtime) && args.len() == 1 && args[0] == "mcp" && staged(&runtime)).then_some(runtime)
}

/// Who an entry running `runtime` belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Owner {
    /// This `OVMEM_HOME`.
    Us,
    /// Another `OVMEM_HOME`; `live` when its runtime is still there (an install someone uses),
    /// not when it is gone (a removed or moved home, whose hooks fail on every turn).
    Other { runtime: PathBuf, home: PathBuf, live: bool },
}

pub fn owner(runtime: &Path, ours: &Path) -> Owner {
    let same = runtime == ours
        || matches!((std::fs::canonicalize(runtime), std::fs::canonicalize(ours)), (Ok(a), Ok(b)) if a == b);
    if same {
        return Owner::Us;
    }
    let home = runtime.parent().and_then(Path::parent).unwrap_or(Path::new("/")).to_path_buf();
    Owner::Other { runtime: runtime.to_path_buf(), home, live: runtime.is_file() }
}

/// The `command` strings anywhere inside a hook entry.
pub fn commands(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                match x {
                    Value::String(s) if k == "command" => out.push(s.clone()),
                    _ => commands(x, out),
                }
            }
        }
        Value::Array(a) => a.iter().for_each(|x| commands(x, out)),
        _ => {}
    }
}

/// The handlers of a hook entry: the entry itself when it has a `command` (Cursor's flat
/// entries), else the command objects in its arrays (a Claude-style group's `hooks`), each with
/// the array key and index.
pub fn handlers(entry: &Value) -> Vec<(Option<(String, usize)>, &Value)> {
    if entry.get("command").is_some() {
        return vec![(None, entry)];
    }
    let mut out = Vec::new();
    if let Value::Object(m) = entry {
        for (k, v) in m {
            if let Value::Array(a) = v {
                for (i, h) in a.iter().enumerate() {
                    if h.get("command").is_some() {
                        out.push((Some((k.clone(), i)), h));
                    }
                }
            }
        }
    }
    out
}

/// The runtime of the ovmem handler in `entry`, if it has one.
pub fn entry_runtime(entry: &Value, harness: &str, event: Option<&str>) -> Option<PathBuf> {
    handlers(entry).into_iter().find_map(|(_, h)| handler_runtime(h, harness, event).map(|(_, r)| r))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_exact_command_is_ovmem_s() {
        let r = Some(PathBuf::from("/a b/bin/ovmem"));
        assert_eq!(hook_runtime("'/a b/bin/ovmem' hook codex Stop", "codex", Some("Stop")), r);
        assert!(hook_runtime("/old/bin/ovmem hook codex Stop", "codex", None).is_some());
        for not in [
            "./tools/ovmem hook codex Stop",
            "tools/bin/ovmem hook codex Stop",
            "/x/not-ovmem hook codex Stop",
            "/x/ovmem hook codex Stop",
            "/x/bin/ovmem hook cursor stop",
            "node /x/bin/ovmem hook codex Stop",
            "/x/bin/ovmem hook codex Stop --extra",
            "/x/bin/ovmem hook codex Stop; rm -rf ~",
            "'/x/bin/ovmem' hook codex Stop",
            "/x/bin/ovmem  hook codex Stop",
        ] {
            assert_eq!(hook_runtime(not, "codex", None), None, "{not}");
        }
    }

    #[test]
    fn an_edited_command_that_still_runs_ovmem_s_hook_is_read_as_the_shell_reads_it() {
        let bin = Some("/h/.ovmem/bin/ovmem".to_string());
        for edited in [
            "/h/.ovmem/bin/ovmem  hook codex Stop",
            "\"/h/.ovmem/bin/ovmem\" hook codex Stop",
            "'/h/.ovmem/bin/ovmem' hook codex Stop",
            "/h/.ovmem/bin/ovmem hook codex Stop # keep",
            "/h/.ovmem/bin/ovmem hook codex Stop; true",
            "X=1 /h/.ovmem/bin/ovmem hook codex Stop",
            "sleep 5 && /h/.ovmem/bin/ovmem hook codex Stop",
            "/h/.ovmem/bin/ovmem hook codex Stop --extra",
        ] {
            assert_eq!(runs_hook(edited, "codex"), bin, "{edited}");
        }
        let through_a_variable = runs_hook("$HOME/.ovmem/bin/ovmem hook codex Stop", "codex");
        assert_eq!(through_a_variable.as_deref(), Some("…/.ovmem/bin/ovmem"));
        for not in [
            "echo /h/.ovmem/bin/ovmem hook codex Stop",
            "notify-send 'ovmem hook codex Stop'",
            "logger \"$(date) ran /h/.ovmem/bin/ovmem hook codex Stop\"",
            "true # /h/.ovmem/bin/ovmem hook codex Stop",
            "/usr/bin/not-ovmem hook codex Stop",
            "/h/.ovmem/bin/ovmem hook cursor stop",
            "/h/.ovmem/bin/ovmem mcp",
        ] {
            assert_eq!(runs_hook(not, "codex"), None, "{not}");
        }
    }

    #[test]
    fn powershell_and_argv_forms_are_recognised_exactly() {
        let ps = r"& 'C:\Users\Ann O''Neil\.ovmem\bin\ovmem.exe' hook claude-code Stop";
        assert_eq!(
            hook_runtime(ps, "claude-code", Some("Stop")),
            Some(PathBuf::from(r"C:\Users\Ann O'Neil\.ovmem\bin\ovmem.exe"))
        );
        for not in [
            r"& 'C:\x\bin\ovmem.exe' hook claude-code Stop; rm x",
            r"& 'C:\x\ovmem.exe' hook claude-code Stop",
            r"&  'C:\x\bin\ovmem.exe' hook claude-code Stop",
            r"& 'C:\x\bin\ovmem.exe' hook codex Stop",
        ] {
            assert_eq!(hook_runtime(not, "claude-code", None), None, "{not}");
        }
        let argv =
            serde_json::json!({"type": "process", "command": "/h/.ovmem/bin/ovmem", "args": ["hook", "zcode", "Stop"]});
        let (cmd, r) = handler_runtime(&argv, "zcode", Some("Stop")).unwrap();
        assert_eq!((cmd.as_str(), r), ("/h/.ovmem/bin/ovmem hook zcode Stop", PathBuf::from("/h/.ovmem/bin/ovmem")));
        let extra = serde_json::json!({"command": "/h/.ovmem/bin/ovmem", "args": ["hook", "zcode", "Stop", "-x"]});
        assert!(handler_runtime(&extra, "zcode", None).is_none());
        let wrong = serde_json::json!({"command": "/h/tools/ovmem", "args": ["hook", "zcode", "Stop"]});
        assert!(handler_runtime(&wrong, "zcode", None).is_none());
    }

    #[test]
    fn handlers_of_groups_and_flat_entries() {
        let g = serde_json::json!({"matcher": "x", "hooks": [{"command": "a"}, {"command": "b"}]});
        assert_eq!(handlers(&g).len(), 2);
        let f = serde_json::json!({"command": "a", "timeout": 5});
        assert_eq!(handlers(&f)[0].0, None);
    }
}
