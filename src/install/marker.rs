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

/// The runtime an ovmem hook command runs, when `cmd` is exactly such a command for `harness`
/// (and `event`, when given).
pub fn hook_runtime(cmd: &str, harness: &str, event: Option<&str>) -> Option<PathBuf> {
    let w = shell_words(cmd);
    if w.len() != 4 || w[1] != "hook" || w[2] != harness || event.is_some_and(|e| w[3] != e) {
        return None;
    }
    let runtime = PathBuf::from(&w[0]);
    (is_runtime_path(&runtime) && cmd == command(&runtime, harness, &w[3])).then_some(runtime)
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
    (is_runtime_path(&runtime) && args.len() == 1 && args[0] == "mcp").then_some(runtime)
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
    handlers(entry)
        .into_iter()
        .find_map(|(_, h)| h.get("command").and_then(Value::as_str).and_then(|c| hook_runtime(c, harness, event)))
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
    fn handlers_of_groups_and_flat_entries() {
        let g = serde_json::json!({"matcher": "x", "hooks": [{"command": "a"}, {"command": "b"}]});
        assert_eq!(handlers(&g).len(), 2);
        let f = serde_json::json!({"command": "a", "timeout": 5});
        assert_eq!(handlers(&f)[0].0, None);
    }
}
