//! Shell text evaluated as bash would run it, for the URI guard: words, quoting, variables,
//! substitutions, pipes, wrappers and redirections, within a depth and step budget.

use super::*;

/// Commands whose arguments are text, never files.
pub(super) const TEXT_ONLY: &[&str] = &[
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
pub(super) const INTERPRETERS: &[&str] =
    &["python", "python2", "python3", "node", "nodejs", "ruby", "php", "deno", "bun", "lua", "rscript", "osascript"];
pub(super) const SHELLS: &[&str] = &["sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "fish", "yash", "rbash"];
/// Reserved words that start a compound command; the command follows them.
pub(super) const RESERVED: &[&str] =
    &["!", "{", "}", "then", "do", "else", "elif", "if", "while", "until", "time", "fi", "done", "esac", "coproc"];
/// Commands that copy their input to their output when they are given no file.
pub(super) const FILTERS: &[&str] =
    &["cat", "tac", "head", "tail", "sort", "uniq", "tee", "nl", "rev", "fold", "fmt", "cut", "tr", "less", "more"];

/// Nested shells and substitutions past this depth are not followed; a text that still holds a
/// memory URI is then denied rather than waved through.
pub(super) const MAX_DEPTH: usize = 12;
/// Commands evaluated per check, for the same reason.
pub(super) const MAX_STEPS: usize = 4000;

/// An evaluation of shell text: variables assigned so far, and the work budget. `Err(uri)`
/// means a command would open a memory URI as a file; `Ok(output)` is what the command is known
/// to print (echo, printf, filters of known input), for pipes and substitutions.
pub(super) struct Eval<'a> {
    schemes: &'a [String],
    vars: HashMap<String, String>,
    /// What each process substitution (`<(…)`) prints, by the `/dev/fd` path it became.
    fds: HashMap<String, Option<String>>,
    depth: usize,
    steps: usize,
}

type Flow = Result<Option<String>, String>;

impl<'a> Eval<'a> {
    pub(super) fn new(schemes: &'a [String]) -> Self {
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

    pub(super) fn script(&mut self, src: &str, stdin: Option<String>) -> Flow {
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
    pub(super) fn words(&mut self, words: Vec<String>, stdin: Option<String>) -> Flow {
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
