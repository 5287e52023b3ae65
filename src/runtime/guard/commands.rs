//! What the guard knows about individual commands: which options take values, which
//! arguments are patterns, what wrappers run, and what `echo` and `printf` print.

/// What an option's value is, for pattern-first commands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Role {
    /// The pattern (so no positional pattern follows).
    Pattern,
    /// A file that is read.
    File,
    /// Two values, the second a file (`jq --slurpfile name file`).
    Two,
    /// Some other value.
    Value,
}

pub(super) struct PatternSpec {
    pub(super) short: Vec<(char, Role)>,
    pub(super) long: Vec<(&'static str, Role)>,
    /// `-f file` supplies the pattern or program (grep, sed, awk, jq).
    pub(super) file_gives_pattern: bool,
    /// `var=value` positionals are assignments, not files (awk).
    pub(super) assignments: bool,
}

pub(super) fn pattern_spec(name: &str) -> Option<PatternSpec> {
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
pub(super) fn opts_with_value(name: &str) -> Vec<&'static str> {
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
pub(super) enum Wrapped {
    /// Another command, already split.
    Argv(Vec<String>),
    /// A shell string.
    Script(String),
    /// Nothing that opens files (`command -v x`).
    Text,
}

/// The command a wrapper (`env`, `sudo`, `nohup`, `timeout 5`, `nice -n 5`, `su -c …`) runs.
pub(super) fn wrapped(name: &str, args: &[String]) -> Option<Wrapped> {
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
pub(super) fn echo(args: &[String]) -> String {
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
pub(super) fn printf(args: &[String]) -> String {
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
pub(super) fn unescape(s: &str) -> String {
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

pub(super) fn is_assignment(w: &str) -> bool {
    w.split_once('=').is_some_and(|(k, _)| {
        !k.is_empty()
            && !k.starts_with(|c: char| c.is_ascii_digit())
            && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    })
}
