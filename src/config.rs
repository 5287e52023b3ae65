//! `$OVMEM_HOME/config.toml` and its `OVMEM_*` environment overrides: how memories are banked
//! and recalled. Every field has a default, so no config file is needed.
//!
//! A setting ovmem cannot use costs only that setting. A hook must run whatever the config says,
//! and it must keep the user's `redact_patterns` whatever else is wrong (without them, the
//! secrets they name are stored in clear), so it loads with [`Config::load_lenient`] and logs
//! what it ignored. A command the user runs loads with [`Config::load`], which refuses with
//! the same problems, so the mistake is seen where it can be fixed.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::env::Env;

/// Which memories are shared: per project (default), per agent within a project, per session,
/// or one bank for everything the user does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum BankMode {
    #[default]
    Project,
    Agent,
    Session,
    User,
}

/// Bounds of a hook's deadline (`deadline_ms`, `guard_deadline_ms`).
const MIN_DEADLINE_MS: u64 = 100;
const MAX_DEADLINE_MS: u64 = 60_000;

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    pub bank: BankMode,
    /// Memories injected per recall.
    pub recall_limit: usize,
    /// Prompts shorter than this (in characters) trigger no recall.
    pub min_prompt_chars: usize,
    /// Virtual memory URI schemes local file tools may not open.
    pub uri_schemes: Vec<String>,
    /// Longest prompt or reply stored, in characters: turns are stored whole; this only stops a
    /// pasted log or dump from filling the store (the cut is marked).
    pub max_memory_chars: usize,
    /// Hook deadline in milliseconds; past it the hook answers with a no-op.
    pub deadline_ms: u64,
    /// Deadline for tool guards, which sit in front of every tool call.
    pub guard_deadline_ms: u64,
    /// `[backend]`: where memories go beyond the local store (see `backend::settings`).
    pub backend: crate::backend::BackendConfig,
    /// Extra secret patterns to redact (regexes, or `{ name, pattern }` tables), on top of the
    /// built-in rules. A bad one is logged and ignored.
    pub redact_patterns: Vec<crate::redact::Pattern>,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            bank: BankMode::Project,
            recall_limit: 5,
            min_prompt_chars: 5,
            uri_schemes: vec!["viking://".into(), "ovmem://".into()],
            max_memory_chars: 100_000,
            deadline_ms: 4000,
            guard_deadline_ms: 1500,
            backend: crate::backend::BackendConfig::default(),
            redact_patterns: Vec::new(),
        }
    }
}

impl BankMode {
    fn parse(s: &str) -> Option<Self> {
        match s {
            "project" => Some(Self::Project),
            "agent" => Some(Self::Agent),
            "session" => Some(Self::Session),
            "user" => Some(Self::User),
            _ => None,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Self::Project => "project",
            Self::Agent => "agent",
            Self::Session => "session",
            Self::User => "user",
        }
    }
}

/// A setting ovmem could not use. It is ignored: that one setting keeps what it would be without
/// it, and every other setting applies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// What was not used: `` `OVMEM_RECALL_LIMIT` ``, `` `recall_limit` in `…/config.toml` ``, or
    /// the file itself.
    pub place: String,
    /// The setting: a key of the file, dotted (`recall_limit`, `backend.bank`,
    /// `redact_patterns[1]`), or a variable's name; `None` for the file as a whole.
    pub key: Option<String>,
    /// What is wrong with it. Never the value: a hook's log must not hold a secret pasted into
    /// the wrong key.
    pub what: String,
    /// What is used instead.
    pub instead: String,
    /// An environment variable's value, for the user's own terminal only (never a log).
    pub value: Option<String>,
    /// The file as a whole could not be used: none of its settings apply, its
    /// `redact_patterns` neither.
    pub whole_file: bool,
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}; {}", self.place, self.what, self.instead)
    }
}

/// How a hook's log line about a [`Problem`] starts, so the doctor (which reports each problem
/// once, as a finding) can tell it from a hook's own errors.
const LOG_PREFIX: &str = "config: ";

impl Problem {
    /// The line a hook logs (never the value).
    pub fn log_message(&self) -> String {
        match self.whole_file {
            true => format!("{LOG_PREFIX}{self}; every turn is stored with the built-in rules only until it is fixed"),
            false => format!("{LOG_PREFIX}{self}"),
        }
    }

    /// Whether a hook's log message is one of [`Problem::log_message`]'s.
    pub fn is_log_message(msg: &str) -> bool {
        msg.starts_with(LOG_PREFIX)
    }

    /// What the user does about it: fix the key or the file, or fix or unset the variable.
    pub fn fix(&self, file: &Path) -> String {
        match (&self.key, self.value.is_some()) {
            (Some(var), true) => format!("fix or unset `{var}` (in your shell profile, or wherever it is set)"),
            (Some(key), false) => format!("fix or remove `{key}` in `{}`", file.display()),
            (None, _) => {
                format!("make `{}` valid TOML again (or move it away to start from the defaults)", file.display())
            }
        }
    }

    /// The problem as the user's terminal gets it: with an environment variable's value.
    pub fn for_terminal(&self) -> String {
        match &self.value {
            Some(v) => format!("{} (it is `{}`) {}; {}", self.place, crate::redact::scrub(v), self.what, self.instead),
            None => self.to_string(),
        }
    }
}

/// The config has settings ovmem cannot use: what a command the user runs says (and refuses
/// with, exit 2), so the mistake is seen and fixed. Hooks run on without those settings.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{}", describe(.path, .problems))]
pub struct Invalid {
    pub path: PathBuf,
    pub problems: Vec<Problem>,
}

fn describe(path: &Path, problems: &[Problem]) -> String {
    let list: String = problems.iter().map(|p| format!("\n  - {}", p.for_terminal())).collect();
    let hooks = if problems.iter().any(|p| p.whole_file) {
        "until it is fixed, hooks use the default for every setting and redact with the built-in rules only \
         (your redact_patterns are not applied)"
    } else {
        "until then, hooks ignore only these settings and apply the rest"
    };
    let vars = problems.iter().any(|p| p.value.is_some());
    let in_file = problems.iter().any(|p| p.value.is_none());
    let fix = match (in_file, vars) {
        (true, true) => format!("fix `{}` and the variable(s)", path.display()),
        (true, false) => format!("fix `{}`", path.display()),
        _ => "fix or unset the variable(s)".to_string(),
    };
    format!("ovmem's config has {} setting(s) it cannot use:{list}\n{fix}; {hooks}", problems.len())
}

impl Config {
    pub fn path(env: &Env) -> PathBuf {
        env.ovmem_home().join("config.toml")
    }

    /// The config for a command the user runs: any setting it cannot use is an error naming the
    /// file or variable (see [`Invalid`]).
    pub fn load(env: &Env) -> Result<Self, Invalid> {
        let (cfg, problems) = Self::load_lenient(env);
        if problems.is_empty() {
            Ok(cfg)
        } else {
            Err(Invalid { path: Self::path(env), problems })
        }
    }

    /// The config for a hook (and `ovmem mcp`), which must run whatever the config says: a value
    /// it cannot use (a junk `OVMEM_RECALL_LIMIT`, `recall_limit = "5"`, an unknown key, one bad
    /// entry of `redact_patterns`) costs only that setting, and is returned to be logged. Dropping
    /// the whole config instead would drop the user's `redact_patterns` with it, and store the
    /// secrets they name in clear.
    ///
    /// A file that is not TOML at all (or cannot be read) gives the defaults for everything,
    /// with a problem marked [`Problem::whole_file`]: the hook still stores the turn, redacted by
    /// the built-in rules, and logs loudly. Spooling the turn instead would protect nothing (a
    /// spooled turn is scrubbed the same way when it is taken on, and the spool is on the same
    /// disk), and refusing to store would lose what the user said.
    pub fn load_lenient(env: &Env) -> (Self, Vec<Problem>) {
        let path = Self::path(env);
        let mut problems = Vec::new();
        let mut cfg = Self::from_file(&path, &mut problems);
        if let Some(b) = env.var("OVMEM_BANK") {
            match BankMode::parse(b.trim()) {
                Some(m) => cfg.bank = m,
                None => problems.push(Problem::var(
                    "OVMEM_BANK",
                    b,
                    "is not one of project, agent, session, user",
                    format!("ignored, using bank = \"{}\"", cfg.bank.name()),
                )),
            }
        }
        if let Some(n) = env.var("OVMEM_RECALL_LIMIT") {
            match n.trim().parse() {
                Ok(v) => cfg.recall_limit = v,
                Err(_) => problems.push(Problem::var(
                    "OVMEM_RECALL_LIMIT",
                    n,
                    "is not a whole number",
                    format!("ignored, using recall_limit = {}", cfg.recall_limit),
                )),
            }
        }
        if let Some(n) = env.var("OVMEM_DEADLINE_MS") {
            match n.trim().parse() {
                Ok(v) => cfg.deadline_ms = v,
                Err(_) => problems.push(Problem::var(
                    "OVMEM_DEADLINE_MS",
                    n,
                    "is not a whole number of milliseconds",
                    format!("ignored, using deadline_ms = {}", cfg.deadline_ms.clamp(MIN_DEADLINE_MS, MAX_DEADLINE_MS)),
                )),
            }
        }
        if let Some(k) = env.var("OVMEM_BACKEND") {
            if crate::backend::Kind::parse(k).is_none() {
                problems.push(Problem::var(
                    "OVMEM_BACKEND",
                    k,
                    "is not one of local, hindsight, openviking",
                    "ignored, and no memory server is used until it is fixed or unset (memories stay in the local \
                     store)"
                        .into(),
                ));
            }
        }
        // A key that decides where memories go does not fall back to its default (another bank,
        // another user): the server is not used until it is fixed (see `decides_where`).
        for p in &mut problems {
            if p.key.as_deref().is_some_and(crate::backend::settings::decides_where) {
                p.instead =
                    "ignored, and the memory server is not used until it is fixed (memories stay in the local store)"
                        .into();
                cfg.backend.unusable.push(p.clone());
            }
        }
        // A hook answers within a minute whatever is asked (a harness waits no longer, and a
        // store's busy wait cannot be told more than `i32::MAX` ms).
        cfg.deadline_ms = cfg.deadline_ms.clamp(MIN_DEADLINE_MS, MAX_DEADLINE_MS);
        cfg.guard_deadline_ms = cfg.guard_deadline_ms.clamp(MIN_DEADLINE_MS, MAX_DEADLINE_MS);
        (cfg, problems)
    }

    fn from_file(path: &Path, problems: &mut Vec<Problem>) -> Self {
        let whole = |what: String| Problem {
            place: format!("`{}`", path.display()),
            key: None,
            what,
            instead: "none of its settings apply: every setting has its default and only the built-in redaction \
                      rules apply (not its redact_patterns)"
                .into(),
            value: None,
            whole_file: true,
        };
        let bytes = match crate::fsx::read_opt(path) {
            Ok(None) => return Self::default(),
            Ok(Some(b)) => b,
            Err(e) => {
                problems.push(whole(format!("could not be read ({e:#})")));
                return Self::default();
            }
        };
        let text = String::from_utf8_lossy(&bytes);
        match toml::from_str::<toml::Table>(&text) {
            Ok(table) => settle(table, "", path, problems),
            Err(e) => {
                // The parser's own rendering quotes the line, which may hold a secret: only where.
                let line = e.span().map(|s| text[..s.start.min(text.len())].matches('\n').count() + 1);
                let at = line.map(|l| format!("line {l}: ")).unwrap_or_default();
                let msg: Vec<&str> = e.message().lines().map(str::trim).filter(|l| !l.is_empty()).collect();
                problems.push(whole(format!("is not valid TOML ({at}{})", msg.join(", "))));
                Self::default()
            }
        }
    }
}

impl Problem {
    fn var(name: &str, value: &str, what: &str, instead: String) -> Self {
        Self {
            place: format!("`{name}`"),
            key: Some(name.to_string()),
            what: what.into(),
            instead,
            value: Some(value.to_string()),
            whole_file: false,
        }
    }

    /// `key` of `file` that would not deserialise (`e`), whose default is `default`.
    fn key(key: &str, file: &Path, e: &toml::de::Error, default: Option<&toml::Value>) -> Self {
        let msg = e.message();
        // serde's messages quote the value first ("invalid type: string \"5\", expected usize"):
        // only what was expected is kept.
        let what = if msg.starts_with("unknown field") {
            "is not a setting ovmem knows (a typo?)".to_string()
        } else {
            match msg.find("expected ") {
                Some(i) => format!("has a value of the wrong kind ({})", msg[i..].trim()),
                None => "has a value ovmem cannot use".to_string(),
            }
        };
        let instead = match default {
            Some(d) => format!("ignored, using the default {key} = {d}"),
            None if msg.starts_with("unknown field") => "ignored".to_string(),
            None => "ignored, left unset".to_string(),
        };
        Self {
            place: format!("`{key}` in `{}`", file.display()),
            key: Some(key.to_string()),
            what,
            instead,
            value: None,
            whole_file: false,
        }
    }
}

/// `table` as a `T`, key by key: a key that does not fit (a wrong type, an unknown name) is left
/// out and reported, so it costs only itself. `prefix` names a nested table (`backend.`).
fn settle<T>(table: toml::Table, prefix: &str, file: &Path, problems: &mut Vec<Problem>) -> T
where
    T: Default + Serialize + serde::de::DeserializeOwned,
{
    let defaults = toml::Table::try_from(T::default()).unwrap_or_default();
    let mut kept = toml::Table::new();
    for (key, value) in table {
        let name = format!("{prefix}{key}");
        let value = match (name.as_str(), value) {
            ("redact_patterns", v) => patterns(v, file, problems),
            ("backend", toml::Value::Table(t)) => {
                let b: crate::backend::BackendConfig = settle(t, "backend.", file, problems);
                toml::Value::try_from(b).unwrap_or_else(|_| toml::Value::Table(toml::Table::new()))
            }
            (_, v) => v,
        };
        let mut candidate = kept.clone();
        candidate.insert(key.clone(), value);
        match toml::Value::Table(candidate.clone()).try_into::<T>() {
            Ok(_) => kept = candidate,
            Err(e) => problems.push(Problem::key(&name, file, &e, defaults.get(&key))),
        }
    }
    toml::Value::Table(kept).try_into().unwrap_or_default()
}

/// Every usable entry of `redact_patterns`: one that is not a pattern is reported and the others
/// still apply. A lone pattern where a list belongs is used as a list of one (a secret it names
/// stays out of the store either way). A regex that does not compile, or matches the empty
/// string, is reported here and left out (`redact::check_pattern`), so `redact::configure`
/// is handed only valid ones (compiled once: the check's regex is the one it uses).
fn patterns(v: toml::Value, file: &Path, problems: &mut Vec<Problem>) -> toml::Value {
    let key = |i: Option<usize>| match i {
        Some(i) => format!("redact_patterns[{i}]"),
        None => "redact_patterns".to_string(),
    };
    let place = |i: Option<usize>| format!("`{}` in `{}`", key(i), file.display());
    let problem = |i: Option<usize>, what: &str, instead: &str| Problem {
        place: place(i),
        key: Some(key(i)),
        what: what.into(),
        instead: instead.into(),
        value: None,
        whole_file: false,
    };
    let lone = !v.is_array();
    let items = match v {
        toml::Value::Array(a) => a,
        one @ (toml::Value::String(_) | toml::Value::Table(_)) => {
            problems.push(problem(None, "is one pattern, not a list", "used as a list of one"));
            vec![one]
        }
        _ => {
            problems.push(problem(
                None,
                "is not a list of patterns",
                "ignored: only the built-in redaction rules apply",
            ));
            return toml::Value::Array(Vec::new());
        }
    };
    let mut kept = Vec::new();
    for (i, item) in items.into_iter().enumerate() {
        let i = if lone { None } else { Some(i) };
        let item = match item.clone().try_into::<crate::redact::Pattern>() {
            Ok(_) => item,
            Err(_) => {
                // A table with a pattern but no usable name still redacts, under the generic label.
                let pattern =
                    item.as_table().and_then(|t| t.get("pattern")).and_then(|p| p.as_str()).map(str::to_string);
                match pattern {
                    Some(p) => {
                        problems.push(problem(i, "has no usable `name`", "its pattern is used, labelled custom"));
                        toml::Value::String(p)
                    }
                    None => {
                        problems.push(problem(
                            i,
                            "is neither a regex (a string) nor a `{ name, pattern }` table",
                            "ignored, the other patterns apply",
                        ));
                        continue;
                    }
                }
            }
        };
        // A regex that does not compile (or matches the empty string) costs only itself: the
        // built-in rules and the other patterns still redact every turn, which is stored (refusing
        // to store would lose what the user said, and spooling it would protect nothing: a
        // spooled turn is redacted the same way). Reported here, once per hook, as a config
        // problem the doctor lists once.
        let regex = match &item {
            toml::Value::String(p) => Some(p.as_str()),
            other => other.get("pattern").and_then(toml::Value::as_str),
        };
        if let Some(Err(why)) = regex.map(crate::redact::check_pattern) {
            problems.push(problem(
                i,
                &why,
                "ignored: the built-in redaction rules and the other patterns still apply to every turn",
            ));
            continue;
        }
        kept.push(item);
    }
    toml::Value::Array(kept)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A deadline past any harness's patience (or past what the store's busy wait can be told)
    /// is held to a minute, and one too short to do anything to a tenth of a second.
    #[test]
    fn a_deadline_is_held_within_bounds() {
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path().display().to_string();
        let load = |ms: &str| {
            let vars = [("HOME", home.as_str()), ("OVMEM_HOME", home.as_str()), ("OVMEM_DEADLINE_MS", ms)];
            let env = Env::from_vars(vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()).unwrap();
            Config::load(&env).unwrap().deadline_ms
        };
        assert_eq!(load("2684354559"), MAX_DEADLINE_MS);
        assert_eq!(load("1"), MIN_DEADLINE_MS);
        assert_eq!(load("2500"), 2500);
    }

    fn lenient(toml: &str, vars: &[(&str, &str)]) -> (Config, Vec<Problem>) {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join("config.toml"), toml).unwrap();
        let home = tmp.path().display().to_string();
        let mut all = vec![("HOME", home.as_str()), ("OVMEM_HOME", home.as_str())];
        all.extend_from_slice(vars);
        let env = Env::from_vars(all.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()).unwrap();
        assert_eq!(Config::load(&env).is_err(), !Config::load_lenient(&env).1.is_empty());
        Config::load_lenient(&env)
    }

    /// A key of the wrong type, an unknown key and a junk variable cost only themselves; the
    /// patterns, the backend and the other keys apply.
    #[test]
    fn a_bad_setting_costs_only_itself() {
        let (cfg, problems) = lenient(
            "recall_limit = \"5\"\nmax_memory_chars = 40\nnope = 1\nredact_patterns = [\"A-[0-9]+\", 3, { pattern = \"B-[0-9]+\" }]\n\
             [backend]\nkind = \"hindsight\"\nrecall_budget_ms = \"fast\"\n",
            &[("OVMEM_BANK", "projects"), ("OVMEM_DEADLINE_MS", " 2500 ")],
        );
        assert_eq!(
            (cfg.recall_limit, cfg.max_memory_chars, cfg.deadline_ms, cfg.bank),
            (5, 40, 2500, BankMode::Project)
        );
        assert_eq!(
            cfg.redact_patterns,
            vec![crate::redact::Pattern::Plain("A-[0-9]+".into()), crate::redact::Pattern::Plain("B-[0-9]+".into())]
        );
        assert_eq!((cfg.backend.kind, cfg.backend.recall_budget_ms), (crate::backend::Kind::Hindsight, 1500));
        let places: Vec<&str> = problems.iter().map(|p| p.place.split(' ').next().unwrap()).collect();
        assert_eq!(
            places,
            [
                "`backend.recall_budget_ms`",
                "`nope`",
                "`recall_limit`",
                "`redact_patterns[1]`",
                "`redact_patterns[2]`",
                "`OVMEM_BANK`"
            ]
        );
        assert!(problems.iter().all(|p| !p.to_string().contains("projects") && !p.to_string().contains("fast")));
        // A lone pattern where a list belongs still redacts.
        let (cfg, problems) = lenient("redact_patterns = \"A-[0-9]+\"\n", &[]);
        assert_eq!((cfg.redact_patterns.len(), problems.len()), (1, 1));
    }

    /// A regex that does not compile, or that matches the empty string, costs only itself: the
    /// other patterns apply, and the problem names its key and the regex error, never the pattern.
    #[test]
    fn a_bad_regex_costs_only_itself_and_is_named_by_its_key() {
        let (cfg, problems) = lenient(
            "redact_patterns = [\"ACME-[0-9]{6}\", \"hunter2-(\", { name = \"badge\", pattern = \"x*\" }, \
             { name = \"pin\", pattern = \"PIN-[0-9]{4}\" }]\n",
            &[],
        );
        assert_eq!(
            cfg.redact_patterns,
            vec![
                crate::redact::Pattern::Plain("ACME-[0-9]{6}".into()),
                crate::redact::Pattern::Named { name: "pin".into(), pattern: "PIN-[0-9]{4}".into() }
            ]
        );
        let found: Vec<(Option<&str>, &str)> = problems.iter().map(|p| (p.key.as_deref(), p.what.as_str())).collect();
        assert_eq!(
            found,
            [
                (Some("redact_patterns[1]"), "is not a valid regex (unclosed group)"),
                (Some("redact_patterns[2]"), "matches the empty string (it would redact everything)")
            ]
        );
        assert!(problems.iter().all(|p| !p.to_string().contains("hunter2") && p.instead.contains("built-in")));
        let (cfg, problems) = lenient("redact_patterns = \"(\"\n", &[]);
        assert!(cfg.redact_patterns.is_empty());
        assert_eq!(problems.iter().filter(|p| p.key.as_deref() == Some("redact_patterns")).count(), 2);
    }

    /// A file that is not TOML gives the defaults, marked as the whole file, and never quotes it.
    #[test]
    fn a_file_that_is_not_toml_is_one_problem_that_never_quotes_it() {
        let (cfg, problems) = lenient("redact_patterns = [\"hunter2-[0-9]+\"\nbank =\n", &[]);
        assert!(cfg.redact_patterns.is_empty());
        assert_eq!(problems.len(), 1);
        assert!(problems[0].whole_file && problems[0].what.contains("line 2"), "{}", problems[0]);
        assert!(!problems[0].to_string().contains("hunter2"), "{}", problems[0]);
    }
}
