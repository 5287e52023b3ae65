//! The URI guard: local file tools cannot open virtual memory URIs (`viking://…`, `ovmem://…`),
//! so a tool call that would read one as a file is denied with a hint to use the memory tools.
//! Every path-like parameter counts (strings, arrays, glob fields, nested argument objects), and
//! shell commands are read as bash would run them: wrappers (`sh -c`, `eval`, `env`, `sudo`,
//! `timeout`, `xargs`, `find -exec` …), ANSI-C quoting, command substitution, variables,
//! here-strings and redirections. A mere mention is never denied: grepping source code for the
//! text `viking://`, echoing it, or a commit message naming it (OpenViking's guard denies those).

use std::collections::HashMap;

use serde_json::Value;

use crate::shell::{self, Part, Redir, Word};

/// Which kind of tool a harness tool name is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ToolKind {
    Read,
    Glob,
    Grep,
    Shell,
    Patch,
}

fn classify(tool: &str) -> ToolKind {
    let t = tool.trim().to_ascii_lowercase();
    if t.contains("patch") {
        ToolKind::Patch
    } else if ["bash", "shell", "command", "exec", "terminal", "process"].iter().any(|k| t.contains(k))
        || t == "sh"
        || t == "run"
        || t.starts_with("run_")
    {
        // `execute` (Factory Droid), `launch-process` (Auggie), `background_process` (Kilo Code).
        ToolKind::Shell
    } else if t.contains("glob") || t == "find" {
        // Pi's `find` takes a glob pattern and a path.
        ToolKind::Glob
    } else if t.contains("grep") || t.contains("search") {
        ToolKind::Grep
    } else {
        ToolKind::Read
    }
}

/// Parameters that name files or directories to read, in any harness's file tools.
const PATH_KEYS: &[&str] = &[
    "file_path",
    "filepath",
    "path",
    "paths",
    "absolute_path",
    "dir_path",
    "dirpath",
    "directory",
    "directory_path",
    "folder",
    "dir",
    "notebook_path",
    "uri",
    "uris",
    "target_uri",
    "target_file",
    "target_directory",
    "file",
    "files",
    "filename",
    "file_paths",
    "include",
    "includes",
    "source",
];
/// Glob parameters (Glob's `pattern`, Grep's `glob`, Cline's `file_pattern`): paths too.
const GLOB_KEYS: &[&str] = &["pattern", "patterns", "glob", "globs", "file_pattern"];
/// Working directories of shell tools.
const DIR_KEYS: &[&str] = &["dir_path", "directory", "cwd", "workdir", "working_directory"];
/// Command parameters of shell tools.
const COMMAND_KEYS: &[&str] = &["command", "cmd", "commands", "script", "command_line"];

/// `filePath` and `file_path` alike.
fn key_is(key: &str, set: &[&str]) -> bool {
    let k: String = key.chars().filter(|c| *c != '_' && *c != '-').collect::<String>().to_ascii_lowercase();
    set.iter().any(|s| s.replace('_', "") == k)
}

/// The memory URI in `s`, when `s` is one (a scheme from `schemes` followed by a non-empty path).
fn memory_uri<'a>(s: &'a str, schemes: &[String]) -> Option<&'a str> {
    let t = s.trim();
    schemes.iter().find_map(|scheme| {
        let head = t.get(..scheme.len())?;
        (head.eq_ignore_ascii_case(scheme) && t.len() > scheme.len()).then_some(t)
    })
}

/// Returns the reason to deny, or `None` to allow.
pub fn check(tool: &str, input: Option<&Value>, schemes: &[String], guarded: &[String]) -> Option<String> {
    if !guarded.iter().any(|g| g.eq_ignore_ascii_case(tool)) {
        return None;
    }
    let input = input?;
    let kind = classify(tool);
    // Some harnesses pass the arguments as a JSON string; a shell tool may get the bare command.
    let parsed;
    let input = match input {
        Value::String(s) => match serde_json::from_str::<Value>(s) {
            Ok(v) if v.is_object() || v.is_array() => {
                parsed = v;
                &parsed
            }
            _ if kind == ToolKind::Shell => {
                parsed = serde_json::json!({ "command": s });
                &parsed
            }
            _ => input,
        },
        _ => input,
    };
    let uri = match kind {
        ToolKind::Shell => shell_input(input, schemes),
        ToolKind::Patch => patch_input(input, schemes),
        kind => path_input(input, kind, schemes, 0),
    }?;
    Some(format!(
        "`{uri}` is a memory URI, not a file on this disk, so {tool} cannot open it. \
         Use the memory tools instead (the OpenViking or ovmem MCP `read` / `search` tools)."
    ))
}

/// The first memory URI in a path-like parameter, at any depth of the arguments.
fn path_input(v: &Value, kind: ToolKind, schemes: &[String], depth: usize) -> Option<String> {
    if depth > 6 {
        return None;
    }
    match v {
        Value::Object(m) => m.iter().find_map(|(k, val)| {
            let pathy = key_is(k, PATH_KEYS) || (kind != ToolKind::Grep || k != "pattern") && key_is(k, GLOB_KEYS);
            let pathy = pathy && !(kind == ToolKind::Grep && key_is(k, &["pattern", "patterns"]));
            if pathy {
                if let Some(u) = path_value(val, schemes) {
                    return Some(u);
                }
            }
            match val {
                Value::Object(_) | Value::Array(_) => path_input(val, kind, schemes, depth + 1),
                // Arguments nested as a JSON string (`"arguments": "{\"path\": …}"`).
                Value::String(s) if s.trim_start().starts_with(['{', '[']) => {
                    serde_json::from_str::<Value>(s).ok().and_then(|v| path_input(&v, kind, schemes, depth + 1))
                }
                _ => None,
            }
        }),
        Value::Array(a) => a.iter().find_map(|x| path_input(x, kind, schemes, depth + 1)),
        _ => None,
    }
}

/// A path value: a string (brace alternatives of a glob each count, `!exclusions` do not), or
/// an array of them.
fn path_value(v: &Value, schemes: &[String]) -> Option<String> {
    match v {
        Value::String(s) => brace_expand(s.trim()).into_iter().find_map(|alt| {
            let alt = alt.trim().trim_start_matches('@');
            memory_uri(alt, schemes).map(String::from)
        }),
        Value::Array(a) => a.iter().find_map(|x| path_value(x, schemes)),
        _ => None,
    }
}

/// `a{b,c}d` -> `abd`, `acd` (nested, at most 64 results); text without braces is itself.
fn brace_expand(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    expand_into(s, &mut out);
    out
}

fn expand_into(s: &str, out: &mut Vec<String>) {
    if out.len() >= 64 {
        return;
    }
    let Some(open) = s.find('{') else {
        out.push(s.to_string());
        return;
    };
    let mut depth = 0;
    let mut commas = Vec::new();
    let mut close = None;
    for (i, c) in s[open..].char_indices() {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    close = Some(open + i);
                    break;
                }
            }
            ',' if depth == 1 => commas.push(open + i),
            _ => {}
        }
    }
    let Some(close) = close.filter(|_| !commas.is_empty()) else {
        out.push(s.to_string());
        return;
    };
    let (head, tail) = (&s[..open], &s[close + 1..]);
    let mut start = open + 1;
    for end in commas.into_iter().chain(std::iter::once(close)) {
        expand_into(&format!("{head}{}{tail}", &s[start..end]), out);
        start = end + 1;
    }
}

fn shell_input(input: &Value, schemes: &[String]) -> Option<String> {
    let obj = input.as_object()?;
    let mut eval = Eval::new(schemes);
    for (k, v) in obj {
        if key_is(k, DIR_KEYS) {
            if let Some(u) = path_value(v, schemes) {
                return Some(u);
            }
        }
        if !key_is(k, COMMAND_KEYS) {
            continue;
        }
        let verdict = match v {
            Value::String(s) => eval.script(s, None),
            // An argv (Codex `shell`): already split, no shell in between.
            Value::Array(a) => eval.words(a.iter().filter_map(Value::as_str).map(String::from).collect(), None),
            _ => Ok(None),
        };
        if let Err(u) = verdict {
            return Some(u);
        }
    }
    None
}

/// `apply_patch` input: every file a patch adds, updates, deletes or moves to.
fn patch_input(input: &Value, schemes: &[String]) -> Option<String> {
    fn strings<'a>(v: &'a Value, out: &mut Vec<&'a str>) {
        match v {
            Value::String(s) => out.push(s),
            Value::Array(a) => a.iter().for_each(|x| strings(x, out)),
            Value::Object(m) => m.values().for_each(|x| strings(x, out)),
            _ => {}
        }
    }
    let mut all = Vec::new();
    strings(input, &mut all);
    all.iter().find_map(|s| patch_paths(s, schemes))
}

fn patch_paths(text: &str, schemes: &[String]) -> Option<String> {
    const HEADS: &[&str] =
        &["*** Add File:", "*** Update File:", "*** Delete File:", "*** Move to:", "--- ", "+++ ", "diff --git "];
    text.lines().find_map(|l| {
        let l = l.trim();
        let rest = HEADS.iter().find_map(|h| l.strip_prefix(h))?;
        rest.split_whitespace().find_map(|p| {
            let p = p.strip_prefix("a/").or_else(|| p.strip_prefix("b/")).unwrap_or(p);
            memory_uri(p, schemes).map(String::from)
        })
    })
}

/// Commands whose arguments are text, never files.
const TEXT_ONLY: &[&str] = &[
    "git",
    "gh",
    "glab",
    "ovmem",
    "ov",
    "openviking",
    "curl",
    "wget",
    "http",
    "https",
    "xh",
    "logger",
    "notify-send",
    "say",
    "man",
    "whatis",
    "which",
    "type",
    "hash",
    "test",
    "[",
    "[[",
    "true",
    "false",
    ":",
    "alias",
    "unalias",
    "set",
    "unset",
    "exit",
    "return",
    "trap",
    "kill",
    "sleep",
    "date",
    "expr",
    "basename",
    "dirname",
    "let",
    "shift",
    "ssh",
    "scp",
    "rsync",
    "mcp",
];
/// Interpreters: `-c`/`-e` code is text and the rest is argv; else the first argument is a script.
const INTERPRETERS: &[&str] =
    &["python", "python2", "python3", "node", "nodejs", "ruby", "php", "deno", "bun", "lua", "rscript", "osascript"];
const SHELLS: &[&str] = &["sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "fish", "yash", "rbash"];
/// Reserved words that start a compound command; the command follows them.
const RESERVED: &[&str] =
    &["!", "{", "}", "then", "do", "else", "elif", "if", "while", "until", "time", "fi", "done", "esac", "coproc"];
/// Commands that copy their input to their output when they are given no file.
const FILTERS: &[&str] =
    &["cat", "tac", "head", "tail", "sort", "uniq", "tee", "nl", "rev", "fold", "fmt", "cut", "tr", "less", "more"];

/// Nested shells and substitutions past this depth are not followed; a text that still holds a
/// memory URI is then denied rather than waved through.
const MAX_DEPTH: usize = 12;
/// Commands evaluated per check, for the same reason.
const MAX_STEPS: usize = 4000;

/// An evaluation of shell text: variables assigned so far, and the work budget. `Err(uri)`
/// means a command would open a memory URI as a file; `Ok(output)` is what the command is known
/// to print (echo, printf, filters of known input), for pipes and substitutions.
struct Eval<'a> {
    schemes: &'a [String],
    vars: HashMap<String, String>,
    /// What each process substitution (`<(…)`) prints, by the `/dev/fd` path it became.
    fds: HashMap<String, Option<String>>,
    depth: usize,
    steps: usize,
}

type Flow = Result<Option<String>, String>;

impl<'a> Eval<'a> {
    fn new(schemes: &'a [String]) -> Self {
        // `IFS` splits words on blanks unless a script says otherwise (`cat${IFS}viking://…`).
        let vars = HashMap::from([("IFS".to_string(), " ".to_string())]);
        Self { schemes, vars, fds: HashMap::new(), depth: 0, steps: 0 }
    }

    fn uri(&self, s: &str) -> Result<(), String> {
        match memory_uri(s, self.schemes) {
            Some(u) => Err(u.to_string()),
            None => Ok(()),
        }
    }

    /// A path argument: the word, each of its brace alternatives and, when it is `key=value`
    /// (`dd if=…`), the value.
    fn path(&self, s: &str) -> Result<(), String> {
        for alt in brace_expand(s) {
            self.uri(&alt)?;
            if let Some((_, v)) = alt.split_once('=') {
                self.uri(v)?;
            }
        }
        Ok(())
    }

    /// Too deep or too long to follow: deny only if the text holds a memory URI at all.
    fn give_up(&self, text: &str) -> Flow {
        let lower = text.to_ascii_lowercase();
        for scheme in self.schemes {
            if let Some(i) = lower.find(&scheme.to_ascii_lowercase()) {
                let end =
                    text[i..].find(|c: char| c.is_whitespace() || "'\"`;|&)".contains(c)).map_or(text.len(), |e| i + e);
                if end > i + scheme.len() {
                    return Err(text[i..end].to_string());
                }
            }
        }
        Ok(None)
    }

    fn script(&mut self, src: &str, stdin: Option<String>) -> Flow {
        if self.depth >= MAX_DEPTH || self.steps >= MAX_STEPS {
            return self.give_up(src);
        }
        self.depth += 1;
        let result = (|| {
            let mut last = None;
            let mut stdin = stdin;
            for pipeline in shell::parse(src) {
                let mut input = stdin.take();
                for cmd in &pipeline {
                    input = self.command(cmd, input)?;
                }
                last = input;
            }
            Ok(last)
        })();
        self.depth -= 1;
        result
    }

    fn command(&mut self, cmd: &shell::Command, stdin: Option<String>) -> Flow {
        self.steps += 1;
        if self.steps >= MAX_STEPS {
            let text: String = cmd.words.iter().filter_map(Word::literal).collect::<Vec<_>>().join(" ");
            return self.give_up(&text);
        }
        let mut stdin = stdin;
        for r in &cmd.redirects {
            let target = self.expand(&r.target)?;
            match r.kind {
                Redir::Read if self.fds.contains_key(target.trim()) => {
                    stdin = self.fds.get(target.trim()).cloned().flatten();
                }
                Redir::Read | Redir::Write => self.path(target.trim())?,
                Redir::HereString => stdin = Some(format!("{target}\n")),
                Redir::HereDoc => stdin = Some(target),
                Redir::Dup => {}
            }
        }
        let mut words = Vec::new();
        for w in &cmd.words {
            let text = self.expand(w)?;
            let expanded = w.parts.iter().any(|p| !matches!(p, Part::Lit(_)));
            if expanded && text.split_whitespace().count() > 1 {
                // Unquoted expansions split into fields; quoted ones do not. Both readings are
                // checked: the whole word and its fields.
                self.path(&text)?;
                words.extend(text.split_whitespace().map(String::from));
            } else {
                words.push(text);
            }
        }
        self.words(words, stdin)
    }

    /// A word's text: parameters from earlier assignments (unset ones empty, or their default),
    /// substitutions checked and replaced by their known output.
    fn expand(&mut self, w: &Word) -> Result<String, String> {
        let mut out = String::new();
        for p in &w.parts {
            match p {
                Part::Lit(s) => out.push_str(s),
                Part::Param { name, op } => {
                    let value = self.vars.get(name).cloned();
                    match op {
                        Some((op, word)) if op.contains('-') || op.contains('=') => {
                            match value.filter(|v| !v.is_empty() || !op.starts_with(':')) {
                                Some(v) => out.push_str(&v),
                                None => {
                                    let d = self.expand(word)?;
                                    if op.contains('=') {
                                        self.vars.insert(name.clone(), d.clone());
                                    }
                                    out.push_str(&d);
                                }
                            }
                        }
                        Some((op, word)) if op.contains('+') => {
                            // A variable the script never set may be set in the environment.
                            if value.is_none_or(|v| !v.is_empty() || !op.starts_with(':')) {
                                out.push_str(&self.expand(word)?);
                            }
                        }
                        _ => out.push_str(&value.unwrap_or_default()),
                    }
                }
                Part::Subst(src) => {
                    let printed = self.script(src, None)?;
                    out.push_str(printed.as_deref().unwrap_or_default().trim_end_matches('\n'));
                }
                Part::ProcSubst(src) => {
                    let printed = self.script(src, None)?;
                    let path = format!("/dev/fd/{}", 63 + self.fds.len());
                    self.fds.insert(path.clone(), printed);
                    out.push_str(&path);
                }
            }
        }
        Ok(out)
    }

    /// One command, already split into words.
    fn words(&mut self, words: Vec<String>, stdin: Option<String>) -> Flow {
        let mut i = 0;
        while i < words.len() && is_assignment(&words[i]) {
            let (k, v) = words[i].split_once('=').expect("an assignment");
            self.vars.insert(k.to_string(), v.to_string());
            i += 1;
        }
        while i < words.len() && RESERVED.contains(&words[i].as_str()) {
            i += 1;
        }
        let Some(program) = words.get(i) else { return Ok(None) };
        let name = program.rsplit('/').next().unwrap_or(program).to_ascii_lowercase();
        let args: Vec<String> = words[i + 1..].to_vec();
        // A program named by a memory URI is a file read too (`viking://x/run.sh`).
        self.uri(program)?;
        match name.as_str() {
            "echo" => Ok(Some(echo(&args))),
            "printf" => {
                let (var, rest) = match args.first().map(String::as_str) {
                    Some("-v") if args.len() > 1 => (Some(args[1].clone()), &args[2..]),
                    _ => (None, &args[..]),
                };
                let printed = printf(rest);
                match var {
                    Some(v) => {
                        self.vars.insert(v, printed);
                        Ok(None)
                    }
                    None => Ok(Some(printed)),
                }
            }
            "export" | "local" | "declare" | "typeset" | "readonly" => {
                for a in args.iter().filter(|a| is_assignment(a)) {
                    let (k, v) = a.split_once('=').expect("an assignment");
                    self.vars.insert(k.to_string(), v.to_string());
                }
                Ok(None)
            }
            "for" | "select" => {
                if let (Some(var), Some("in")) = (args.first(), args.get(1).map(String::as_str)) {
                    let items = &args[2..];
                    // A loop variable holds each item in turn: a memory URI among them is what matters.
                    let pick = items.iter().find(|x| memory_uri(x, self.schemes).is_some()).or(items.first());
                    self.vars.insert(var.clone(), pick.cloned().unwrap_or_default());
                }
                Ok(None)
            }
            "case" | "function" => Ok(None),
            n if TEXT_ONLY.contains(&n) || n.starts_with("openviking") => Ok(None),
            n if SHELLS.contains(&n) => self.shell(&args, stdin),
            "busybox" | "toybox" => self.words(args, stdin),
            "eval" => self.script(&args.join(" "), stdin),
            "source" | "." => match args.first() {
                Some(f) if self.fds.contains_key(f) => match self.fds.get(f).cloned().flatten() {
                    Some(script) => self.script(&script, None),
                    None => Ok(None),
                },
                Some(f) => self.path(f).map(|_| None),
                None => Ok(None),
            },
            "read" => {
                // `read [-r] name…` takes its values from stdin.
                let names: Vec<&String> = args.iter().filter(|a| !a.starts_with('-')).collect();
                if let (Some(text), Some(first)) = (stdin.as_deref(), names.first()) {
                    let line = text.lines().next().unwrap_or_default().trim().to_string();
                    self.vars.insert(first.to_string(), line);
                }
                Ok(None)
            }
            "base64" | "basenc" if args.iter().any(|a| a == "-d" || a == "--decode" || a == "-D") => {
                let files = self.generic(&args, &[])?;
                let decoded = stdin.filter(|_| files.is_empty()).and_then(|t| {
                    let clean: String = t.chars().filter(|c| !c.is_whitespace()).collect();
                    crate::redact::base64_decode(&clean).map(|b| String::from_utf8_lossy(&b).into_owned())
                });
                Ok(decoded)
            }
            "rev" => {
                let files = self.generic(&args, &[])?;
                Ok(stdin.filter(|_| files.is_empty()).map(|t| {
                    t.lines().map(|l| l.chars().rev().collect::<String>()).collect::<Vec<_>>().join("\n") + "\n"
                }))
            }
            "xxd" if args.iter().any(|a| a == "-r") && args.iter().any(|a| a == "-p" || a == "-ps") => {
                Ok(stdin.map(|t| {
                    let hex: String = t.chars().filter(char::is_ascii_hexdigit).collect();
                    let bytes: Vec<u8> = (0..hex.len() / 2)
                        .filter_map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).ok())
                        .collect();
                    String::from_utf8_lossy(&bytes).into_owned()
                }))
            }
            "xargs" => self.xargs(&args, stdin),
            "find" => self.find(&args),
            "parallel" => self.parallel(&args),
            "apply_patch" | "applypatch" => {
                let text = format!("{}\n{}", args.join("\n"), stdin.unwrap_or_default());
                match patch_paths(&text, self.schemes) {
                    Some(u) => Err(u),
                    None => Ok(None),
                }
            }
            n if INTERPRETERS.iter().any(|i| {
                n == *i || (n.starts_with(i) && n[i.len()..].chars().all(|c| c.is_ascii_digit() || c == '.'))
            }) =>
            {
                self.interpreter(&args)
            }
            n if FILTERS.contains(&n) => {
                let files = self.generic(&args, &opts_with_value(n))?;
                Ok(if files.iter().all(|f| f == "-") { stdin } else { None })
            }
            n => match wrapped(n, &args) {
                Some(Wrapped::Argv(inner)) => self.words(inner, stdin),
                Some(Wrapped::Script(s)) => self.script(&s, stdin),
                Some(Wrapped::Text) => Ok(None),
                None => match pattern_spec(n) {
                    Some(spec) => self.pattern_first(&args, &spec).map(|_| None),
                    None => self.generic(&args, &opts_with_value(n)).map(|_| None),
                },
            },
        }
    }

    /// Positional arguments are files; `--opt=value` values too. Returns the positionals.
    fn generic(&self, args: &[String], with_value: &[&str]) -> Result<Vec<String>, String> {
        let mut files = Vec::new();
        let mut i = 0;
        let mut options = true;
        while i < args.len() {
            let a = &args[i];
            if options && a == "--" {
                options = false;
            } else if options && a.starts_with("--") {
                if let Some((_, v)) = a.split_once('=') {
                    self.path(v)?;
                } else if with_value.contains(&a.as_str()) {
                    if let Some(v) = args.get(i + 1) {
                        self.path(v)?;
                    }
                    i += 1;
                }
            } else if options && a.starts_with('-') && a.len() > 1 {
                if with_value.contains(&a.as_str()) {
                    if let Some(v) = args.get(i + 1) {
                        self.path(v)?;
                    }
                    i += 1;
                }
            } else {
                self.path(a)?;
                files.push(a.clone());
            }
            i += 1;
        }
        Ok(files)
    }

    fn shell(&mut self, args: &[String], stdin: Option<String>) -> Flow {
        let mut j = 0;
        let mut command = false;
        while j < args.len() {
            let a = args[j].as_str();
            if a == "--" || a == "-" {
                j += 1;
                break;
            }
            if let Some(long) = a.strip_prefix("--") {
                match long {
                    "rcfile" | "init-file" => {
                        if let Some(f) = args.get(j + 1) {
                            self.path(f)?;
                        }
                        j += 1;
                    }
                    "command" => command = true,
                    _ => {}
                }
                j += 1;
                continue;
            }
            if (a.starts_with('-') || a.starts_with('+')) && a.len() > 1 {
                let flags = &a[1..];
                if a.starts_with('-') && flags.contains('c') {
                    command = true;
                }
                if flags.contains('o') || flags.contains('O') {
                    j += 1;
                }
                j += 1;
                continue;
            }
            break;
        }
        if command {
            let Some(script) = args.get(j) else { return Ok(None) };
            // `sh -c 'script' name arg…`: the arguments are `$0`, `$1`, … and `$@` inside.
            let params = args.get(j + 1..).unwrap_or_default();
            for (k, a) in params.iter().enumerate().take(10) {
                self.vars.insert(k.to_string(), a.clone());
            }
            let all = params.get(1..).unwrap_or_default().join(" ");
            self.vars.insert("@".into(), all.clone());
            self.vars.insert("*".into(), all);
            return self.script(script, stdin);
        }
        match args.get(j) {
            Some(file) if self.fds.contains_key(file) => match self.fds.get(file).cloned().flatten() {
                Some(script) => self.script(&script, None),
                None => Ok(None),
            },
            Some(file) => {
                self.path(file)?;
                Ok(None)
            }
            None => match stdin {
                Some(script) => self.script(&script, None),
                None => Ok(None),
            },
        }
    }

    fn interpreter(&mut self, args: &[String]) -> Flow {
        for (i, a) in args.iter().enumerate() {
            match a.as_str() {
                "-c" | "-e" | "--eval" | "-E" | "-r" | "-m" | "-p" | "--print" => return Ok(None),
                s if s.starts_with('-') => continue,
                _ => {
                    self.path(&args[i])?;
                    return Ok(None);
                }
            }
        }
        Ok(None)
    }

    fn xargs(&mut self, args: &[String], stdin: Option<String>) -> Flow {
        let mut i = 0;
        let mut replace: Option<String> = None;
        let mut delim: Option<char> = None;
        let mut lines = false;
        let mut from_file = false;
        let mut file_input = None;
        while i < args.len() {
            let a = args[i].as_str();
            if !a.starts_with('-') || a == "-" {
                break;
            }
            if a == "--" {
                i += 1;
                break;
            }
            let (flag, glued) = if a.starts_with("--") {
                match a.split_once('=') {
                    Some((f, v)) => (f.to_string(), Some(v.to_string())),
                    None => (a.to_string(), None),
                }
            } else {
                let flag: String = a.chars().take(2).collect();
                let rest = &a[flag.len()..];
                (flag, (!rest.is_empty()).then(|| rest.to_string()))
            };
            let takes = [
                "-E",
                "-I",
                "-L",
                "-n",
                "-P",
                "-s",
                "-d",
                "-a",
                "--arg-file",
                "--delimiter",
                "--max-args",
                "--max-lines",
                "--max-procs",
                "--max-chars",
                "--process-slot-var",
            ];
            let value = if takes.contains(&flag.as_str()) && glued.is_none() {
                i += 1;
                args.get(i).cloned()
            } else {
                glued
            };
            match flag.as_str() {
                "-I" | "-i" | "--replace" => {
                    replace = Some(value.unwrap_or_else(|| "{}".into()));
                    lines = true;
                }
                "-L" | "-l" | "--max-lines" => lines = true,
                "-0" | "--null" => delim = Some('\0'),
                "-d" | "--delimiter" => delim = value.and_then(|v| v.chars().next()),
                "-a" | "--arg-file" => {
                    match value {
                        Some(f) if self.fds.contains_key(&f) => file_input = self.fds.get(&f).cloned().flatten(),
                        Some(f) => self.path(&f)?,
                        None => {}
                    }
                    from_file = true;
                }
                _ => {}
            }
            i += 1;
        }
        let command: Vec<String> = if i < args.len() { args[i..].to_vec() } else { vec!["echo".into()] };
        let input = if from_file { file_input } else { stdin };
        let items: Vec<String> = match (&input, delim) {
            (None, _) => Vec::new(),
            (Some(t), Some(d)) => {
                t.split(d).map(|s| s.trim_end_matches('\n').to_string()).filter(|s| !s.is_empty()).collect()
            }
            (Some(t), None) if lines => t.lines().map(|l| l.trim().to_string()).filter(|l| !l.is_empty()).collect(),
            (Some(t), None) => shell::words(t),
        };
        match replace {
            Some(r) if !items.is_empty() => {
                for item in items.iter().take(256) {
                    let argv = command.iter().map(|w| w.replace(&r, item)).collect();
                    self.words(argv, None)?;
                }
                Ok(None)
            }
            _ => {
                let mut argv = command;
                argv.extend(items.into_iter().take(4096));
                self.words(argv, None)
            }
        }
    }

    fn find(&mut self, args: &[String]) -> Flow {
        let mut i = 0;
        while i < args.len() && matches!(args[i].as_str(), "-H" | "-L" | "-P" | "-O0" | "-O1" | "-O2" | "-O3") {
            i += 1;
        }
        while i < args.len()
            && !(args[i].starts_with('-') && args[i].len() > 1)
            && !matches!(args[i].as_str(), "(" | "!" | ",")
        {
            self.path(&args[i])?;
            i += 1;
        }
        const ONE_ARG: &[&str] = &[
            "-name",
            "-iname",
            "-path",
            "-ipath",
            "-regex",
            "-iregex",
            "-lname",
            "-ilname",
            "-wholename",
            "-iwholename",
            "-type",
            "-xtype",
            "-maxdepth",
            "-mindepth",
            "-user",
            "-group",
            "-uid",
            "-gid",
            "-perm",
            "-size",
            "-mtime",
            "-atime",
            "-ctime",
            "-mmin",
            "-amin",
            "-cmin",
            "-links",
            "-inum",
            "-printf",
            "-fprintf",
            "-regextype",
            "-context",
            "-fstype",
            "-used",
        ];
        const FILE_ARG: &[&str] =
            &["-files0-from", "-newer", "-anewer", "-cnewer", "-samefile", "-fls", "-fprint", "-fprint0"];
        while i < args.len() {
            let a = args[i].as_str();
            if matches!(a, "-exec" | "-execdir" | "-ok" | "-okdir") {
                let end = args[i + 1..].iter().position(|w| w == ";" || w == "+").map_or(args.len(), |p| i + 1 + p);
                self.words(args[i + 1..end].to_vec(), None)?;
                i = end + 1;
                continue;
            }
            if FILE_ARG.contains(&a) || (a.starts_with("-newer") && a.len() == 8) {
                if let Some(f) = args.get(i + 1) {
                    self.path(f)?;
                }
                i += 2;
                continue;
            }
            i += if ONE_ARG.contains(&a) { 2 } else { 1 };
        }
        Ok(None)
    }

    fn parallel(&mut self, args: &[String]) -> Flow {
        let split = args.iter().position(|a| a == ":::" || a == "::::");
        let (command, items) = match split {
            Some(p) => (&args[..p], &args[p + 1..]),
            None => (args, &[][..]),
        };
        let command: Vec<String> = command.iter().skip_while(|a| a.starts_with('-')).cloned().collect();
        if split.is_some_and(|p| args[p] == "::::") {
            for f in items {
                self.path(f)?;
            }
            return self.words(command, None);
        }
        if items.is_empty() {
            return self.words(command, None);
        }
        for item in items.iter().take(256) {
            let mut argv: Vec<String> = command.iter().map(|w| w.replace("{}", item)).collect();
            if !command.iter().any(|w| w.contains("{}")) {
                argv.push(item.clone());
            }
            self.words(argv, None)?;
        }
        Ok(None)
    }

    /// grep, sed, awk, jq and kin: the first positional (unless given by an option) is a
    /// pattern or program, text; option values that are files and the other positionals are
    /// paths.
    fn pattern_first(&self, args: &[String], spec: &PatternSpec) -> Result<(), String> {
        let mut i = 0;
        let mut options = true;
        let mut have_pattern = false;
        let mut positionals = Vec::new();
        while i < args.len() {
            let a = args[i].as_str();
            if options && a == "--" {
                options = false;
                i += 1;
                continue;
            }
            if options && a.starts_with("--") && a.len() > 2 {
                let (flag, value) = match a.split_once('=') {
                    Some((f, v)) => (f, Some(v.to_string())),
                    None => (a, None),
                };
                let role = spec.long.iter().find(|(f, _)| *f == flag).map(|(_, r)| *r);
                let value = match (role, value) {
                    (Some(_), Some(v)) => Some(v),
                    (Some(Role::Two), None) => {
                        i += 2;
                        args.get(i).cloned()
                    }
                    (Some(_), None) => {
                        i += 1;
                        args.get(i).cloned()
                    }
                    (None, v) => v.filter(|_| false),
                };
                match (role, value) {
                    (Some(Role::File), Some(v)) | (Some(Role::Two), Some(v)) => {
                        self.path(&v)?;
                        have_pattern |= spec.file_gives_pattern;
                    }
                    (Some(Role::Pattern), _) => have_pattern = true,
                    _ => {}
                }
                i += 1;
                continue;
            }
            if options && a.starts_with('-') && a.len() > 1 && !a[1..].starts_with(|c: char| c.is_ascii_digit()) {
                for (k, c) in a[1..].char_indices() {
                    let Some(role) = spec.short.iter().find(|(f, _)| *f == c).map(|(_, r)| *r) else { continue };
                    let rest = &a[1 + k + c.len_utf8()..];
                    let value = if rest.is_empty() {
                        i += 1;
                        args.get(i).cloned()
                    } else {
                        Some(rest.to_string())
                    };
                    match role {
                        Role::Pattern => have_pattern = true,
                        Role::File | Role::Two => {
                            if let Some(v) = value {
                                self.path(&v)?;
                            }
                            have_pattern |= spec.file_gives_pattern;
                        }
                        Role::Value => {}
                    }
                    break;
                }
                i += 1;
                continue;
            }
            positionals.push(a.to_string());
            i += 1;
        }
        let files = if have_pattern { &positionals[..] } else { positionals.get(1..).unwrap_or_default() };
        for f in files {
            if spec.assignments && is_assignment(f) {
                continue;
            }
            self.path(f)?;
        }
        Ok(())
    }
}

/// What an option's value is, for pattern-first commands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    /// The pattern (so no positional pattern follows).
    Pattern,
    /// A file that is read.
    File,
    /// Two values, the second a file (`jq --slurpfile name file`).
    Two,
    /// Some other value.
    Value,
}

struct PatternSpec {
    short: Vec<(char, Role)>,
    long: Vec<(&'static str, Role)>,
    /// `-f file` supplies the pattern or program (grep, sed, awk, jq).
    file_gives_pattern: bool,
    /// `var=value` positionals are assignments, not files (awk).
    assignments: bool,
}

fn pattern_spec(name: &str) -> Option<PatternSpec> {
    use Role::*;
    let spec = |short: &[(char, Role)], long: &[(&'static str, Role)]| PatternSpec {
        short: short.to_vec(),
        long: long.to_vec(),
        file_gives_pattern: true,
        assignments: false,
    };
    let grep_long: &[(&str, Role)] = &[
        ("--regexp", Pattern),
        ("--file", File),
        ("--max-count", Value),
        ("--after-context", Value),
        ("--before-context", Value),
        ("--context", Value),
        ("--include", Value),
        ("--exclude", Value),
        ("--exclude-dir", Value),
        ("--exclude-from", File),
        ("--label", Value),
        ("--devices", Value),
        ("--directories", Value),
        ("--binary-files", Value),
        ("--glob", Value),
        ("--iglob", Value),
        ("--type", Value),
        ("--type-not", Value),
        ("--type-add", Value),
        ("--ignore-file", File),
        ("--replace", Value),
        ("--threads", Value),
        ("--max-depth", Value),
        ("--max-columns", Value),
        ("--max-filesize", Value),
        ("--encoding", Value),
        ("--pre", Value),
        ("--pre-glob", Value),
        ("--sort", Value),
        ("--sortr", Value),
        ("--color", Value),
        ("--colors", Value),
        ("--engine", Value),
        ("--path-separator", Value),
        ("--field-match-separator", Value),
        ("--field-context-separator", Value),
        ("--context-separator", Value),
        ("--file-search-regex", Value),
    ];
    Some(match name {
        "grep" | "egrep" | "fgrep" | "zgrep" | "ggrep" => spec(
            &[
                ('e', Pattern),
                ('f', File),
                ('m', Value),
                ('A', Value),
                ('B', Value),
                ('C', Value),
                ('d', Value),
                ('D', Value),
            ],
            grep_long,
        ),
        "rg" | "ripgrep" => spec(
            &[
                ('e', Pattern),
                ('f', File),
                ('g', Value),
                ('t', Value),
                ('T', Value),
                ('j', Value),
                ('M', Value),
                ('r', Value),
                ('E', Value),
                ('m', Value),
                ('A', Value),
                ('B', Value),
                ('C', Value),
                ('d', Value),
            ],
            grep_long,
        ),
        "ag" | "ack" | "ack-grep" | "pt" | "ugrep" | "ug" => spec(
            &[
                ('e', Pattern),
                ('f', File),
                ('G', Value),
                ('g', Value),
                ('m', Value),
                ('A', Value),
                ('B', Value),
                ('C', Value),
            ],
            grep_long,
        ),
        "sed" | "gsed" => spec(
            &[('e', Pattern), ('f', File), ('l', Value)],
            &[("--expression", Pattern), ("--file", File), ("--line-length", Value)],
        ),
        "awk" | "gawk" | "mawk" | "nawk" | "busybox-awk" => PatternSpec {
            assignments: true,
            ..spec(
                &[('f', File), ('v', Value), ('F', Value), ('W', Value), ('e', Pattern), ('i', File), ('l', Value)],
                &[
                    ("--file", File),
                    ("--assign", Value),
                    ("--field-separator", Value),
                    ("--source", Pattern),
                    ("--include", File),
                ],
            )
        },
        "perl" => spec(&[('e', Pattern), ('E', Pattern), ('I', Value), ('M', Value), ('m', Value), ('x', Value)], &[]),
        "jq" | "gojq" | "jaq" | "yq" => spec(
            &[('f', File), ('L', Value)],
            &[
                ("--from-file", File),
                ("--arg", Value),
                ("--argjson", Value),
                ("--slurpfile", Two),
                ("--rawfile", Two),
                ("--indent", Value),
            ],
        ),
        _ => return None,
    })
}

/// Options that take a value, for commands read generically.
fn opts_with_value(name: &str) -> Vec<&'static str> {
    match name {
        "head" | "tail" => vec!["-n", "-c", "--lines", "--bytes"],
        "cut" => vec!["-d", "-f", "-c", "-b"],
        "sort" => vec!["-k", "-t", "-S", "-T", "-o"],
        "tr" | "fold" | "fmt" | "nl" => vec!["-w", "-s", "-v", "-i"],
        "cp" | "mv" | "install" | "ln" => vec!["-t", "--target-directory", "-S", "--suffix"],
        "tar" => vec!["-C", "--directory", "-X", "--exclude-from", "-T", "--files-from"],
        _ => Vec::new(),
    }
}

/// What a wrapper command runs.
enum Wrapped {
    /// Another command, already split.
    Argv(Vec<String>),
    /// A shell string.
    Script(String),
    /// Nothing that opens files (`command -v x`).
    Text,
}

/// The command a wrapper (`env`, `sudo`, `nohup`, `timeout 5`, `nice -n 5`, `su -c …`) runs.
fn wrapped(name: &str, args: &[String]) -> Option<Wrapped> {
    // (flags whose value is the next word, how many positionals come before the command)
    let (with_value, leading): (&[&str], usize) = match name {
        "nohup" | "time" | "builtin" | "unbuffer" | "chronic" | "ifne" | "setsid" | "caffeinate"
        | "dbus-run-session" | "catchsegv" | "xvfb-run" | "firejail" | "proxychains" | "proxychains4" | "torsocks"
        | "fakeroot" | "sg" => (&["-n", "-s", "-e", "-p", "-f", "-w", "-l", "-a"], 0),
        "exec" => (&["-a"], 0),
        "command" => {
            if args.iter().take_while(|a| a.starts_with('-')).any(|a| a.contains('v') || a.contains('V')) {
                return Some(Wrapped::Text);
            }
            (&[], 0)
        }
        "env" => {
            if let Some(p) = args.iter().position(|a| a == "-S" || a == "--split-string") {
                return args.get(p + 1).map(|s| Wrapped::Script(s.clone()));
            }
            if let Some(s) =
                args.iter().find_map(|a| a.strip_prefix("--split-string=").or_else(|| a.strip_prefix("-S")))
            {
                if !s.is_empty() {
                    return Some(Wrapped::Script(s.to_string()));
                }
            }
            (&["-u", "--unset", "-C", "--chdir", "-P", "-a", "--argv0"], 0)
        }
        "sudo" | "doas" | "sudoedit" => (
            &[
                "-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U", "-T", "-R", "--user", "--group", "--prompt",
                "--chdir", "--host",
            ],
            0,
        ),
        "nice" => (&["-n", "--adjustment"], 0),
        "ionice" => (&["-c", "-n", "-p", "-P", "-u", "--class", "--classdata"], 0),
        "stdbuf" => (&["-i", "-o", "-e"], 0),
        "taskset" => (&["-c"], 1),
        "chrt" => (&[], 1),
        "timeout" | "gtimeout" => (&["-s", "-k", "--signal", "--kill-after"], 1),
        "flock" => {
            if let Some(p) = args.iter().position(|a| a == "-c" || a == "--command") {
                return args.get(p + 1).map(|s| Wrapped::Script(s.clone()));
            }
            (&["-w", "--timeout", "-E", "--conflict-exit-code"], 1)
        }
        "watch" => {
            let skip: &[&str] =
                &["-n", "--interval", "-d", "--differences", "-g", "-e", "-t", "-b", "-c", "-x", "-p", "-q"];
            let mut i = 0;
            while i < args.len() && args[i].starts_with('-') {
                i += if args[i] == "-n" || args[i] == "--interval" || args[i] == "-q" { 2 } else { 1 };
                let _ = skip;
            }
            return Some(Wrapped::Script(args.get(i..).unwrap_or_default().join(" ")));
        }
        "su" | "runuser" | "script" | "sudo-sh" => {
            if let Some(s) = args.iter().find_map(|a| a.strip_prefix("--command=")) {
                return Some(Wrapped::Script(s.to_string()));
            }
            let cluster =
                |a: &String| a == "--command" || (a.starts_with('-') && !a.starts_with("--") && a.contains('c'));
            if let Some(p) = args.iter().position(cluster) {
                return args.get(p + 1).map(|s| Wrapped::Script(s.clone()));
            }
            if let Some(p) = args.iter().position(|a| a == "--") {
                return Some(Wrapped::Argv(args[p + 1..].to_vec()));
            }
            return Some(Wrapped::Text);
        }
        "strace" | "ltrace" => (&["-o", "-e", "-p", "-s", "-u", "-E", "-a", "-b", "-I", "-P", "-X"], 0),
        "valgrind" | "gdb" | "perf" | "hyperfine" => return None,
        _ => return None,
    };
    let mut i = 0;
    while i < args.len() {
        let a = args[i].as_str();
        if a == "--" {
            i += 1;
            break;
        }
        if name == "env" && is_assignment(a) {
            i += 1;
            continue;
        }
        if a.starts_with('-') && a.len() > 1 {
            i += if with_value.contains(&a) { 2 } else { 1 };
            continue;
        }
        break;
    }
    let rest = args.get(i + leading..).unwrap_or_default();
    // `sudo -s`/`-i` with a command runs it through the shell.
    if matches!(name, "sudo" | "doas") && args[..i].iter().any(|a| a == "-s" || a == "-i") && !rest.is_empty() {
        return Some(Wrapped::Script(rest.join(" ")));
    }
    if name == "sudoedit" {
        return Some(Wrapped::Argv(std::iter::once("cat".to_string()).chain(rest.iter().cloned()).collect()));
    }
    Some(Wrapped::Argv(rest.to_vec()))
}

/// `echo`'s output (`-n`, `-e`, `-E` handled).
fn echo(args: &[String]) -> String {
    let mut i = 0;
    let mut newline = true;
    let mut escapes = false;
    while let Some(a) = args.get(i) {
        if a.len() > 1 && a.starts_with('-') && a[1..].chars().all(|c| "neE".contains(c)) {
            newline &= !a.contains('n');
            escapes = a.contains('e') || (escapes && !a.contains('E'));
            i += 1;
        } else {
            break;
        }
    }
    let mut s = args[i..].join(" ");
    if escapes {
        s = unescape(&s);
    }
    if newline {
        s.push('\n');
    }
    s
}

/// `printf`'s output: `%s`, `%b`, `%q`, `%d`… take arguments in turn; the format repeats while
/// arguments remain.
fn printf(args: &[String]) -> String {
    let Some(format) = args.first() else { return String::new() };
    let format = unescape(format);
    let mut rest = args[1..].iter();
    let mut out = String::new();
    for _ in 0..64 {
        let mut used = false;
        let mut chars = format.chars().peekable();
        while let Some(c) = chars.next() {
            if c != '%' {
                out.push(c);
                continue;
            }
            // flags, width, precision
            while chars.peek().is_some_and(|c| "-+ #0123456789.*".contains(*c)) {
                chars.next();
            }
            match chars.next() {
                Some('%') => out.push('%'),
                Some('b') => {
                    used = true;
                    out.push_str(&unescape(rest.next().map(String::as_str).unwrap_or_default()));
                }
                Some(_) => {
                    used = true;
                    out.push_str(rest.next().map(String::as_str).unwrap_or_default());
                }
                None => out.push('%'),
            }
        }
        if !used || rest.len() == 0 {
            break;
        }
    }
    out
}

/// Backslash escapes as `echo -e` and `printf` read them.
fn unescape(s: &str) -> String {
    let mut out = String::new();
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some('r') => out.push('\r'),
            Some('\\') => out.push('\\'),
            Some('a') => out.push('\x07'),
            Some('e') => out.push('\x1b'),
            Some('x') => {
                let hex: String = std::iter::from_fn(|| chars.next_if(char::is_ascii_hexdigit)).take(2).collect();
                out.extend(u32::from_str_radix(&hex, 16).ok().and_then(char::from_u32));
            }
            Some(d @ '0'..='7') => {
                let mut oct = d.to_string();
                oct.extend(std::iter::from_fn(|| chars.next_if(|c| ('0'..='7').contains(c))).take(3));
                out.extend(u32::from_str_radix(&oct, 8).ok().and_then(char::from_u32));
            }
            Some(o) => {
                out.push('\\');
                out.push(o);
            }
            None => out.push('\\'),
        }
    }
    out
}

fn is_assignment(w: &str) -> bool {
    w.split_once('=').is_some_and(|(k, _)| {
        !k.is_empty()
            && !k.starts_with(|c: char| c.is_ascii_digit())
            && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schemes() -> Vec<String> {
        vec!["viking://".into(), "ovmem://".into()]
    }

    fn guarded() -> Vec<String> {
        [
            "Read",
            "Glob",
            "Grep",
            "Bash",
            "LS",
            "NotebookRead",
            "read_file",
            "read_many_files",
            "glob",
            "list_directory",
            "search_file_content",
            "grep_search",
            "run_shell_command",
            "execute_command",
            "list_files",
            "search_files",
            "shell",
            "exec_command",
            "apply_patch",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect()
    }

    fn deny(tool: &str, input: Value) -> bool {
        check(tool, Some(&input), &schemes(), &guarded()).is_some()
    }

    fn bash(cmd: &str) -> bool {
        deny("Bash", json!({ "command": cmd }))
    }

    #[test]
    fn denies_reading_memory_uris() {
        assert!(deny("Read", json!({"file_path": "viking://user/memories/profile.md"})));
        assert!(deny("Read", json!({"file_path": "OVMEM://x"})));
        assert!(deny("Glob", json!({"pattern": "viking://resources/**"})));
        assert!(deny("Grep", json!({"pattern": "TODO", "path": "viking://resources"})));
        assert!(deny("read_file", json!({"path": "viking://a"})));
        assert!(bash("cat viking://user/memories/profile.md"));
        assert!(bash("cat 'viking://x y' | head"));
        assert!(bash("cd /tmp && ls -la viking://resources/"));
        assert!(bash("grep TODO viking://resources/a.md"));
        assert!(deny("execute_command", json!({"command": "head -n 5 ovmem://m/1"})));
    }

    /// The file and shell tools of the harnesses added with issue 12, with their own parameter
    /// names (from the real CLIs' tool schemas).
    #[test]
    fn the_newer_harnesses_tools() {
        let tools: Vec<String> =
            ["view", "LS", "Execute", "launch-process", "background_process", "find", "list_directory", "read", "bash"]
                .iter()
                .map(|s| s.to_string())
                .collect();
        let deny = |tool: &str, input: Value| check(tool, Some(&input), &schemes(), &tools).is_some();
        assert!(deny("view", json!({"path": "viking://user/memories/profile.md", "view_range": [1, 5]})));
        assert!(deny("LS", json!({"directory_path": "viking://resources", "ignorePatterns": []})));
        assert!(deny("Execute", json!({"command": "cat viking://m/a", "riskLevel": "low", "summary": "x"})));
        assert!(deny("launch-process", json!({"command": "head viking://m/a", "wait": true, "cwd": "/p"})));
        assert!(deny("background_process", json!({"command": "cat ovmem://m/1"})));
        assert!(deny("find", json!({"pattern": "*.md", "path": "viking://resources"})));
        assert!(deny("read", json!({"filePath": "viking://m/a"})));
        assert!(deny("bash", json!({"command": "cat viking://m/a", "description": "x"})));
        // A mention is not a read; a tool no adapter guards is never judged.
        assert!(!deny("Execute", json!({"command": "grep -r viking:// src", "riskLevel": "low"})));
        assert!(!deny("launch-process", json!({"command": "echo viking://x"})));
        assert!(!deny("write", json!({"filePath": "viking://m/a"})));
    }

    #[test]
    fn every_path_like_parameter_counts() {
        let cases = [
            ("read_many_files", json!({"paths": ["src/a.rs", "viking://m/a"]})),
            ("read_many_files", json!({"paths": ["src"], "include": ["*.md", "viking://m/**"]})),
            ("read_many_files", json!({"include": "viking://m/**"})),
            ("glob", json!({"pattern": "{src/*,viking://m/*}"})),
            ("glob", json!({"pattern": "*.md", "path": "viking://m"})),
            ("glob", json!({"pattern": "*.md", "dir_path": "viking://m"})),
            ("search_file_content", json!({"pattern": "x", "path": "viking://m"})),
            ("search_file_content", json!({"pattern": "x", "include": "viking://m/*.md"})),
            ("grep_search", json!({"pattern": "x", "dir_path": "viking://m"})),
            ("list_directory", json!({"path": "viking://m"})),
            ("list_directory", json!({"dir_path": "viking://m"})),
            ("Grep", json!({"pattern": "x", "glob": "viking://m/*.md"})),
            ("Grep", json!({"pattern": "x", "path": ".", "glob": "{*.rs,viking://*}"})),
            ("LS", json!({"path": "viking://m"})),
            ("NotebookRead", json!({"notebook_path": "viking://m/n.ipynb"})),
            ("Read", json!({"filePath": "viking://m/a"})),
            ("list_files", json!({"path": "viking://m", "recursive": true})),
            ("search_files", json!({"path": ".", "regex": "x", "file_pattern": "viking://m/*"})),
            ("search_files", json!({"path": "viking://m", "regex": "x"})),
            ("read_file", json!({"args": {"file": [{"path": "src/a.rs"}, {"path": "viking://m/a"}]}})),
            ("run_shell_command", json!({"command": "ls", "directory": "viking://m"})),
            ("shell", json!({"command": ["cat", "viking://m/a"]})),
            ("shell", json!({"command": ["bash", "-lc", "cat viking://m/a"], "workdir": "/w"})),
            ("exec_command", json!({"cmd": "cat viking://m/a"})),
            (
                "apply_patch",
                json!({"input": "*** Begin Patch\n*** Update File: viking://m/a\n@@\n-a\n+b\n*** End Patch"}),
            ),
            (
                "shell",
                json!({"command": ["apply_patch", "*** Begin Patch\n*** Add File: viking://m/b\n+x\n*** End Patch"]}),
            ),
            ("Read", json!("{\"file_path\": \"viking://m/a\"}")),
            ("Read", json!({"arguments": "{\"path\": \"viking://m/a\"}"})),
            ("Bash", json!("cat viking://m/a")),
        ];
        for (tool, input) in cases {
            assert!(deny(tool, input.clone()), "{tool} {input} was allowed");
        }
    }

    #[test]
    fn shell_wrappers_quoting_and_substitution_do_not_hide_a_read() {
        for cmd in [
            "sh -c 'cat viking://m/a'",
            "bash -c \"head viking://m/a\"",
            "bash -lc 'cd /tmp; cat viking://m/a'",
            "zsh -c 'cat viking://m/a'",
            "/bin/sh -ec 'cat viking://m/a'",
            "eval 'cat viking://m/a'",
            "eval cat viking://m/a",
            "env FOO=1 cat viking://m/a",
            "env -i PATH=/bin cat viking://m/a",
            "env -S 'cat viking://m/a'",
            "sudo cat viking://m/a",
            "sudo -u root -E cat viking://m/a",
            "nohup cat viking://m/a &",
            "timeout 5 cat viking://m/a",
            "timeout -s KILL 5s cat viking://m/a",
            "nice -n 10 cat viking://m/a",
            "command cat viking://m/a",
            "exec cat viking://m/a",
            "time cat viking://m/a",
            "xargs cat <<< viking://m/a",
            "echo viking://m/a | xargs cat",
            "printf 'viking://m/a\\n' | xargs -I{} cat {}",
            "echo viking://m/a | xargs -n1 head -5",
            "xargs -a viking://m/list cat",
            "find viking://m -name '*.md'",
            "find . -name x -exec cat viking://m/a \\;",
            "find . -exec sh -c 'cat viking://m/a' \\;",
            "cat $'viking://m/a'",
            "cat $'\\x76iking://m/a'",
            "cat $'\\166iking://m/a'",
            "cat vik''ing://m/a",
            "cat \"viking:\"//m/a",
            "cat $(echo viking://m/a)",
            "cat `echo viking://m/a`",
            "cat \"$(printf 'viking://%s' m/a)\"",
            "echo $(cat viking://m/a)",
            "x=$(cat viking://m/a)",
            "u=viking://m/a; cat \"$u\"",
            "export U=viking://m/a && cat $U",
            "cat ${NOPE:-viking://m/a}",
            "for f in viking://m/a; do cat \"$f\"; done",
            "cat < viking://m/a",
            "wc -l <viking://m/a",
            "exec 3< viking://m/a",
            "echo 'cat viking://m/a' | sh",
            "bash <<< 'cat viking://m/a'",
            "sh <<EOF\ncat viking://m/a\nEOF",
            "cat {viking://m/a,b}",
            "if true; then cat viking://m/a; fi",
            "{ cat viking://m/a; }",
            "(cat viking://m/a)",
            "source viking://m/a.sh",
            ". viking://m/a.sh",
            "bash viking://m/a.sh",
            "python3 viking://m/a.py",
            "grep -f viking://m/patterns src/",
            "rg --file=viking://m/p .",
            "sed -f viking://m/a.sed x",
            "awk -f viking://m/a.awk x",
            "jq . viking://m/a.json",
            "jq --slurpfile x viking://m/a.json -n '$x'",
            "dd if=viking://m/a of=/tmp/x",
            "cp viking://m/a /tmp/",
            "tar -cf /tmp/x.tar -C viking://m .",
            "parallel cat ::: viking://m/a",
            "watch cat viking://m/a",
            "su -c 'cat viking://m/a' root",
            "strace -o /tmp/t cat viking://m/a",
            "cat --number -- viking://m/a",
            "less viking://m/a",
            "cat <(cat viking://m/a)",
            "cat${IFS}viking://m/a",
            "c=cat; $c viking://m/a",
            "$(echo cat) viking://m/a",
            "cat ${HOME:+viking://m/a}",
            "sh -c 'cat \"$1\"' _ viking://m/a",
            "bash -c 'exec \"$@\"' _ cat viking://m/a",
            "read u <<< viking://m/a; cat $u",
            "echo Y2F0IHZpa2luZzovL20vYQ== | base64 -d | sh",
            "eval \"$(echo Y2F0IHZpa2luZzovL20vYQ== | base64 --decode)\"",
            "echo a/m//:gnikiv | rev | xargs cat",
            "bash <(echo 'cat viking://m/a')",
            "source <(printf 'cat viking://m/a')",
            "xargs -0 cat < <(printf 'viking://m/a')",
            "xargs -a <(echo viking://m/a) cat",
            "script -qc 'cat viking://m/a' /dev/null",
            "su -lc 'cat viking://m/a' root",
            "busybox cat viking://m/a",
            "cat 0<viking://m/a",
            "< viking://m/a cat",
            "sh -c \"sh -c 'sh -c \\\"cat viking://m/a\\\"'\"",
        ] {
            assert!(bash(cmd), "allowed: {cmd}");
        }
    }

    #[test]
    fn never_denies_text_mentions_or_ordinary_paths() {
        assert!(!deny("Grep", json!({"pattern": "viking://", "path": "/src"})));
        assert!(!deny("Grep", json!({"pattern": "viking://x", "path": "src", "glob": "*.rs"})));
        assert!(!deny("search_file_content", json!({"pattern": "viking://m/a"})));
        assert!(!deny("search_files", json!({"path": "src", "regex": "viking://m", "file_pattern": "*.ts"})));
        assert!(!deny("read_many_files", json!({"paths": ["src/"], "exclude": ["viking://x"]})));
        for cmd in [
            "grep -rn 'viking://' src/",
            "grep -rn viking://m/a src/",
            "rg -e viking://x src",
            "rg -e viking:// .",
            "rg --fixed-strings 'viking://m' -g '*.md'",
            "rg 'viking://' | head -5",
            "echo see viking://x",
            "echo viking://x > /tmp/note.txt",
            "git commit -m 'docs: viking://x'",
            "git commit -m \"see viking://x\"",
            "git log --grep=viking://x",
            "printf '%s' 'viking://'",
            "printf '%s\\n' viking://m/a",
            "cat viking://",
            "sed -i 's#viking://#ovmem://#g' docs/a.md",
            "sed -e 's/viking:\\/\\///' a.md",
            "awk '/viking:/ {print}' notes.md",
            "jq '.uri == \"viking://m/a\"' data.json",
            "python3 -c \"print('viking://m/a')\"",
            "node -e 'console.log(\"viking://m/a\")'",
            "python3 tool.py --uri viking://m/a",
            "find . -name '*viking://*'",
            "find src -type f -exec grep -l 'viking://' {} +",
            "curl -d 'uri=viking://m/a' http://127.0.0.1:1933/api",
            "ovmem memory search viking://m/a",
            "bash -c 'echo viking://m/a'",
            "echo viking://m/a | xargs echo",
            "echo viking://m/a | xargs -I{} grep {} src/",
            "xargs echo <<< viking://m/a",
            "cat README.md | grep viking://",
            "cat <<'EOF' > notes.md\nuse viking://m/a\nEOF",
            "echo $(printf viking://m/a)",
            "U=viking://m/a; echo \"$U\"",
            "grep -rl 'viking://' src | xargs sed -i 's/viking:/ov:/'",
            "ls -la src/viking",
            "cat /tmp/viking://x",
            "cat ./viking://x",
            "echo \"cat viking://m/a\"",
            "test -e viking://m/a && echo yes",
        ] {
            assert!(!bash(cmd), "denied: {cmd}");
        }
        assert!(!deny("Read", json!({"file_path": "/home/u/viking/notes.md"})));
        assert!(!deny("Read", json!({"file_path": "/tmp/viking://x"})));
        assert!(!deny("Write", json!({"file_path": "viking://x"})));
        assert!(!bash(""));
        assert!(!deny("Bash", json!({"command": 42})));
        assert!(!deny("Bash", json!({})));
    }

    #[test]
    fn pathological_inputs_end_quickly() {
        assert!(bash(&("eval ".repeat(40) + "cat viking://m/a")), "past the depth limit a URI is denied");
        assert!(!bash(&("eval ".repeat(8) + "echo viking://m/a")), "a mention within the limit stays a mention");
        let mut nested = "cat viking://m/a".to_string();
        for _ in 0..5 {
            nested = format!("sh -c {}", shell::quote(&nested));
        }
        assert!(bash(&nested), "{nested}");
        let wide = "echo a; ".repeat(20_000) + "cat viking://m/a";
        let t = std::time::Instant::now();
        assert!(bash(&wide));
        assert!(t.elapsed() < std::time::Duration::from_secs(2));
        let bomb = "$(".repeat(500) + "cat viking://m/a" + &")".repeat(500);
        assert!(bash(&bomb));
        assert!(!bash(&"$(".repeat(500)));
    }

    proptest::proptest! {
        #[test]
        fn check_never_panics(cmd in "[ -~\\n]{0,80}") {
            let _ = bash(&cmd);
        }

        #[test]
        fn check_never_panics_on_unicode(cmd in "(\\PC|[-'\"$`\\\\(){}<>|;&]){0,60}") {
            let _ = bash(&cmd);
            let _ = bash(&format!("xargs -{cmd} cat"));
            let _ = deny("Read", json!({ "file_path": cmd, "paths": [cmd] }));
        }
    }
}
