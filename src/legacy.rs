//! Older memory integrations: OpenViking's plugins and hooks adapters, Hindsight's Python and
//! Node integrations, and ovmem's own outdated or deprecated entries. A catalog of data files
//! (`manifests/legacy/*.toml`) says how each is recognised, by markers and never by guesswork;
//! [`scan`] turns that into findings (for `ovmem check`), and [`plan_removal`] derives the exact
//! edits and moves that take them out (for `ovmem migrate` and `ovmem uninstall --legacy`).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::rc::Rc;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use crate::edit::json::{Document, Node};
use crate::env::Env;
use crate::fsx;
use crate::harness::{self, Harness, InstallKind, Scope};
use crate::install::editor::{Edit, Editor};
use crate::install::found::{self, Parsed};
use crate::install::marker::{self, Owner};
use crate::install::script_dir::script_runtime;
use crate::install::{Refused, Target};

type Groups = Vec<Vec<String>>;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Integration {
    pub id: String,
    pub vendor: String,
    pub name: String,
    #[serde(default)]
    pub harnesses: Vec<String>,
    #[serde(default)]
    pub deprecated: bool,
    pub replacement: Option<String>,
    /// A JSON file whose `deprecated` / `replacement` fields (when present) override the above.
    pub deprecation_manifest: Option<String>,
    #[serde(default)]
    pub hooks: Vec<HookRule>,
    #[serde(default)]
    pub json_keys: Vec<JsonKeyRule>,
    #[serde(default)]
    pub toml_tables: Vec<TomlRule>,
    #[serde(default)]
    pub text_blocks: Vec<TextRule>,
    #[serde(default)]
    pub scripts: Vec<ScriptRule>,
    #[serde(default)]
    pub dirs: Vec<DirRule>,
}

/// Hook entries in a JSON hooks file: an entry is the integration's when its text contains every
/// string of any one group in `match`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HookRule {
    #[serde(default)]
    pub files: Vec<String>,
    #[serde(default)]
    pub project_files: Vec<String>,
    pub events_key: String,
    #[serde(rename = "match")]
    pub groups: Groups,
    #[serde(default)]
    pub ignore_case: bool,
}

/// Members of a JSON object (MCP servers, enabled plugins), by name or name prefix, optionally
/// also by markers in their value.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JsonKeyRule {
    #[serde(default)]
    pub files: Vec<String>,
    #[serde(default)]
    pub project_files: Vec<String>,
    pub object: String,
    #[serde(default)]
    pub names: Vec<String>,
    #[serde(default)]
    pub name_prefixes: Vec<String>,
    #[serde(default, rename = "match")]
    pub groups: Groups,
}

/// Tables under `parent` in a TOML file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TomlRule {
    #[serde(default)]
    pub files: Vec<String>,
    #[serde(default)]
    pub project_files: Vec<String>,
    pub parent: String,
    #[serde(default)]
    pub names: Vec<String>,
    #[serde(default)]
    pub name_prefixes: Vec<String>,
    #[serde(default, rename = "match")]
    pub groups: Groups,
}

/// A block of lines between two exact marker lines (shell rc files, sentinel blocks).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TextRule {
    #[serde(default)]
    pub files: Vec<String>,
    #[serde(default)]
    pub project_files: Vec<String>,
    pub begin: String,
    pub end: String,
}

/// Hook script files (one per event) in directories, with companion files that belong to them.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptRule {
    #[serde(default)]
    pub dirs: Vec<String>,
    #[serde(default)]
    pub project_dirs: Vec<String>,
    pub names: Vec<String>,
    #[serde(rename = "match")]
    pub groups: Groups,
    #[serde(default)]
    pub companions: Vec<String>,
}

/// Runtime directories the integration installed.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DirRule {
    #[serde(default)]
    pub paths: Vec<String>,
    #[serde(default)]
    pub project_paths: Vec<String>,
}

/// The embedded catalog.
pub fn catalog() -> Vec<Integration> {
    harness::LEGACY_FILES
        .iter()
        .map(|(name, text)| {
            let mut i: Integration =
                toml::from_str(text).unwrap_or_else(|e| panic!("manifests/legacy/{name} does not parse: {e}"));
            for r in i.hooks.iter_mut().filter(|r| r.ignore_case) {
                r.groups.iter_mut().flatten().for_each(|m| *m = m.to_lowercase());
            }
            i
        })
        .collect()
}

/// A text as an agent reads it, for markers to be found in: runs of `/` and `/./` taken as one
/// `/` (a path says the same either way), and blanks around a `.` left out (`lib . hooks_impl`
/// is Python's `lib.hooks_impl`); its lowercase too, made once on first use.
struct Normal {
    text: String,
    lower: std::cell::OnceCell<String>,
}

impl Normal {
    fn new(text: &str) -> Self {
        static SLASHES: std::sync::LazyLock<regex::Regex> =
            std::sync::LazyLock::new(|| regex::Regex::new(r"/(?:\.?/)+").expect("a valid regex"));
        static DOTS: std::sync::LazyLock<regex::Regex> =
            std::sync::LazyLock::new(|| regex::Regex::new(r"[ \t]*\.[ \t]*").expect("a valid regex"));
        Normal { text: DOTS.replace_all(&SLASHES.replace_all(text, "/"), ".").into_owned(), lower: Default::default() }
    }
}

/// Whether every marker of one of `groups` occurs in `text`. The markers of an `ignore_case`
/// rule are lowercase already ([`catalog`]).
fn matches(text: &Normal, groups: &Groups, ignore_case: bool) -> bool {
    let text = if ignore_case { text.lower.get_or_init(|| text.text.to_lowercase()) } else { &text.text };
    groups.iter().any(|g| !g.is_empty() && g.iter().all(|s| text.contains(s.as_str())))
}

#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq, PartialOrd, Ord)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    Legacy,
    Deprecated,
    Duplicate,
    OvmemDrift,
    TrustPending,
    /// Memories or spooled turns waiting far longer than a hook cycle (`ovmem check` only).
    StaleQueue,
}

#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Warning,
    Error,
}

#[derive(Debug, Clone, Serialize)]
pub struct Finding {
    pub file: PathBuf,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<usize>,
    /// The entry: `hooks.Stop[1]`, `mcpServers.openviking`, `[mcp_servers."openviking-memory"]`, a file or directory.
    pub entry: String,
    pub integration: String,
    pub vendor: String,
    pub kind: Kind,
    pub severity: Severity,
    pub message: String,
    pub fix: String,
    pub harnesses: Vec<String>,
}

/// A file that could not be read or parsed during a scan.
#[derive(Debug, Clone, Serialize)]
pub struct ScanError {
    pub file: PathBuf,
    pub error: String,
}

pub struct Scan<'a> {
    pub env: &'a Env,
    /// Only this repository tree (`--project`), else the user's own configs.
    pub project: Option<&'a Path>,
}

#[derive(Default, Serialize)]
pub struct Report {
    pub findings: Vec<Finding>,
    pub errors: Vec<ScanError>,
}

impl Scan<'_> {
    fn paths(&self, user: &[String], project: &[String]) -> Vec<PathBuf> {
        let list = if self.project.is_some() { project } else { user };
        let mut out: Vec<PathBuf> = list.iter().filter_map(|p| self.env.expand(p, self.project).ok()).collect();
        out.dedup();
        out
    }

    /// Reads a file of the scanned scope: within a project, never through a link out of it.
    fn read_bytes(&self, path: &Path) -> Result<Option<Vec<u8>>> {
        fsx::read_in(path, self.project)
    }

    /// What is at `path`, without following a link: a project's links are never followed out.
    fn kind_of(&self, path: &Path) -> Option<std::fs::FileType> {
        let m = std::fs::symlink_metadata(path).ok()?;
        if m.file_type().is_symlink() && self.project.is_none() {
            return std::fs::metadata(path).ok().map(|m| m.file_type());
        }
        Some(m.file_type())
    }

    fn is_dir(&self, path: &Path) -> bool {
        self.kind_of(path).is_some_and(|t| t.is_dir())
    }

    fn scope(&self) -> Scope {
        if self.project.is_some() {
            Scope::Project
        } else {
            Scope::User
        }
    }

    fn fix(&self, integ: &Integration) -> String {
        let mut s = String::from("ovmem migrate");
        let hs: Vec<&str> = integ.harnesses.iter().map(String::as_str).filter(|h| harness::find(h).is_some()).collect();
        if !hs.is_empty() {
            s.push_str(&format!(" --harness {}", hs.join(",")));
        }
        if let Some(p) = self.project {
            s.push_str(&format!(" --project {}", p.display()));
        }
        s
    }
}

/// The files one scan has read and parsed: many rules name the same file, and each is read and
/// parsed once (a large hostile config costs one parse, not one per rule).
#[derive(Default)]
struct Files {
    texts: HashMap<PathBuf, Option<fsx::Text>>,
    docs: HashMap<PathBuf, Option<Result<Rc<Document>, String>>>,
}

impl Files {
    fn text(&mut self, s: &Scan, path: &Path, errors: &mut Vec<ScanError>) -> Option<fsx::Text> {
        // `Text` moves the bytes read in, not a copy of them: `~/.claude.json` passes 100 MB.
        self.texts.entry(path.to_path_buf()).or_insert_with(|| read(s, path, errors).map(Into::into)).clone()
    }

    /// The parsed document at `path`; one that does not parse is an error in `errors` unless
    /// `quiet` (ovmem's own hook files: a harness config that does not parse holds no hook of
    /// ovmem's that runs).
    fn json(&mut self, s: &Scan, path: &Path, errors: &mut Vec<ScanError>, quiet: bool) -> Option<Rc<Document>> {
        if !self.docs.contains_key(path) {
            let doc = self.text(s, path, errors).map(|t| Document::parse(&t).map(Rc::new).map_err(|e| e.to_string()));
            self.docs.insert(path.to_path_buf(), doc);
        }
        match self.docs.get(path)?.as_ref()? {
            Ok(d) => Some(d.clone()),
            Err(e) => {
                if !quiet {
                    errors.push(ScanError { file: path.into(), error: format!("does not parse ({e})") });
                }
                None
            }
        }
    }
}

/// Reads a text file for scanning: `None` when absent; errors are recorded.
fn read(s: &Scan, path: &Path, errors: &mut Vec<ScanError>) -> Option<String> {
    match s.read_bytes(path) {
        Ok(Some(b)) => match String::from_utf8(b) {
            Ok(s) => Some(s),
            Err(_) => {
                errors.push(ScanError { file: path.into(), error: "not UTF-8 text".into() });
                None
            }
        },
        Ok(None) => None,
        Err(e) => {
            errors.push(ScanError { file: path.into(), error: format!("{e:#}") });
            None
        }
    }
}

fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].matches('\n').count() + 1
}

fn dotted(key: &str) -> Vec<&str> {
    key.split('.').collect()
}

/// The deprecation status of an integration, reading its installed manifest when it names one.
fn deprecation(env: &Env, integ: &Integration) -> (bool, Option<String>) {
    let mut deprecated = integ.deprecated;
    let mut replacement = integ.replacement.clone();
    if let Some(p) = integ.deprecation_manifest.as_ref().and_then(|p| env.expand(p, None).ok()) {
        if let Some(v) =
            fsx::read_opt(&p).ok().flatten().and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
        {
            if v.get("deprecated").and_then(serde_json::Value::as_bool) == Some(true) {
                deprecated = true;
                if let Some(r) = v.get("replacement").and_then(serde_json::Value::as_str) {
                    replacement =
                        Some(format!("{r} (per {}); with ovmem: {}", p.display(), replacement.unwrap_or_default()));
                }
            }
        }
    }
    (deprecated, replacement)
}

/// Finds every legacy integration, duplicate and ovmem drift in the scanned scope.
pub fn scan(s: &Scan, with_trust: bool) -> Report {
    let mut r = Report::default();
    // (file, event) -> memory integrations hooked there, for duplicate detection.
    let mut per_event: PerEvent = BTreeMap::new();
    let mut files = Files::default();
    let integrations = catalog();
    // Each integration's finding, but for where it is.
    let found: Vec<Finding> = integrations
        .iter()
        .map(|integ| {
            let (deprecated, replacement) = deprecation(s.env, integ);
            Finding {
                file: PathBuf::new(),
                line: None,
                entry: String::new(),
                integration: integ.id.clone(),
                vendor: integ.vendor.clone(),
                kind: if deprecated { Kind::Deprecated } else { Kind::Legacy },
                severity: if deprecated { Severity::Error } else { Severity::Warning },
                message: format!(
                    "{} ({}){}{}",
                    integ.name,
                    integ.vendor,
                    if deprecated { " is deprecated" } else { " is a legacy memory integration" },
                    replacement.as_deref().map(|r| format!("; replaced by {r}")).unwrap_or_default()
                ),
                fix: s.fix(integ),
                harnesses: integ.harnesses.clone(),
            }
        })
        .collect();
    let push = |r: &mut Report, n: usize, file: &Path, line: Option<usize>, entry: String| {
        r.findings.push(Finding { file: file.to_path_buf(), line, entry, ..found[n].clone() });
    };
    // Hook rules by file and events object: each entry's text is normalised once, for every rule.
    let mut hook_rules: BTreeMap<(PathBuf, &str), Vec<(usize, &HookRule)>> = BTreeMap::new();
    for (n, integ) in integrations.iter().enumerate() {
        for rule in &integ.hooks {
            for file in s.paths(&rule.files, &rule.project_files) {
                hook_rules.entry((file, rule.events_key.as_str())).or_default().push((n, rule));
            }
        }
    }
    for ((file, events_key), rules) in &hook_rules {
        let Some(doc) = files.json(s, file, &mut r.errors, false) else { continue };
        let Some(events) = doc.node_at(&dotted(events_key)) else { continue };
        for m in events.members() {
            for (i, el) in m.value.elements().iter().enumerate() {
                let text = Normal::new(&decoded(&doc, el));
                for (n, _) in rules.iter().filter(|(_, rule)| matches(&text, &rule.groups, rule.ignore_case)) {
                    push(&mut r, *n, file, Some(line_of(doc.text(), el.start)), format!("{events_key}.{}[{i}]", m.key));
                    let ids = per_event.entry((file.clone(), m.key.clone())).or_default();
                    ids.insert(integrations[*n].id.clone(), 1);
                }
            }
        }
    }
    for (n, integ) in integrations.iter().enumerate() {
        for rule in &integ.json_keys {
            for file in s.paths(&rule.files, &rule.project_files) {
                let Some(doc) = files.json(s, &file, &mut r.errors, false) else { continue };
                for (name, node) in json_key_hits(&doc, rule) {
                    push(&mut r, n, &file, Some(line_of(doc.text(), node.start)), format!("{}.{name}", rule.object));
                }
            }
        }
        for rule in &integ.toml_tables {
            for file in s.paths(&rule.files, &rule.project_files) {
                let Some(text) = files.text(s, &file, &mut r.errors) else { continue };
                let doc = match crate::edit::toml::parse(&text) {
                    Ok(d) => d,
                    Err(e) => {
                        r.errors.push(ScanError { file: file.clone(), error: format!("does not parse ({e})") });
                        continue;
                    }
                };
                for name in toml_hits(&doc, rule) {
                    let line =
                        text.lines().position(|l| l.trim_start().starts_with('[') && l.contains(&name)).map(|i| i + 1);
                    push(&mut r, n, &file, line, format!("[{}.\"{name}\"]", rule.parent));
                }
            }
        }
        for rule in &integ.text_blocks {
            for file in s.paths(&rule.files, &rule.project_files) {
                let Some(text) = files.text(s, &file, &mut r.errors) else { continue };
                if let Some(i) = text.lines().position(|l| l.trim_end() == rule.begin) {
                    push(&mut r, n, &file, Some(i + 1), format!("block `{}`", rule.begin));
                }
            }
        }
        for rule in &integ.scripts {
            for (_, name, path) in script_hits(s, rule, &mut r.errors) {
                push(&mut r, n, &path, Some(1), name.clone());
                per_event
                    .entry((path.parent().unwrap_or(Path::new("/")).to_path_buf(), name))
                    .or_default()
                    .insert(integ.id.clone(), 1);
            }
        }
        for rule in &integ.dirs {
            for dir in s.paths(&rule.paths, &rule.project_paths) {
                if s.is_dir(&dir) {
                    push(&mut r, n, &dir, None, "runtime directory".into());
                }
            }
        }
    }
    let all: Vec<&'static Harness> = harness::all().iter().collect();
    ovmem_findings(s, with_trust, &mut r, &mut per_event, &mut files, &all);
    for ((file, event), ids) in per_event {
        let runs: usize = ids.values().sum();
        if runs > 1 {
            let list: Vec<&str> = ids.keys().map(String::as_str).collect();
            let ovmem_only = list == ["ovmem"];
            let message = if ovmem_only {
                format!("{runs} ovmem hooks run on {event}: memory is recalled and stored {runs} times")
            } else {
                format!(
                    "{} memory integrations run on {event} ({}): memory is recalled and stored more than once",
                    ids.len(),
                    list.join(", ")
                )
            };
            // Exact copies of ovmem's entry go with a reinstall (edited ones by hand); others with
            // a migration.
            let project = s.project.map(|p| format!(" --project {}", p.display())).unwrap_or_default();
            let fix = if ovmem_only {
                format!("ovmem install{project} (drops exact copies of ovmem's entry; delete edited ones by hand)")
            } else {
                format!("ovmem migrate{project}")
            };
            // Each integration as many times as it runs here (`ovmem+ovmem`: two of ovmem's).
            let each: Vec<&str> = ids.iter().flat_map(|(id, n)| std::iter::repeat_n(id.as_str(), *n)).collect();
            r.findings.push(Finding {
                file,
                line: None,
                entry: event.clone(),
                integration: each.join("+"),
                vendor: "several".into(),
                kind: Kind::Duplicate,
                severity: Severity::Error,
                message,
                fix,
                harnesses: Vec::new(),
            });
        }
    }
    r.findings.sort_by(|a, b| (&a.file, a.line, &a.entry).cmp(&(&b.file, b.line, &b.entry)));
    // Every rule that reads a file meets its error again: one error per file.
    let mut seen = BTreeSet::new();
    r.errors.retain(|e| seen.insert(e.file.clone()));
    r
}

/// A JSON node's text with its escapes decoded (`\/` is `/`, `\u002d` is `-`): what the agent
/// that parses the file runs.
fn decoded(doc: &Document, node: &Node) -> String {
    doc.value(node).map(|v| v.to_string()).unwrap_or_else(|| doc.slice(node).to_string())
}

/// A TOML item's keys and values, strings decoded (their escapes and quoting undone).
fn toml_text(item_arg: &toml_edit::Item) -> String {
    fn value(v: &toml_edit::Value, out: &mut String) {
        match v {
            toml_edit::Value::String(s) => out.push_str(s.value()),
            toml_edit::Value::Array(a) => a.iter().for_each(|x| value(x, out)),
            toml_edit::Value::InlineTable(t) => t.iter().for_each(|(k, x)| {
                out.push_str(k);
                out.push('\n');
                value(x, out)
            }),
            other => out.push_str(&other.to_string()),
        }
        out.push('\n');
    }
    fn item(i: &toml_edit::Item, out: &mut String) {
        match i {
            toml_edit::Item::Value(v) => value(v, out),
            toml_edit::Item::Table(t) => t.iter().for_each(|(k, x)| {
                out.push_str(k);
                out.push('\n');
                item(x, out)
            }),
            toml_edit::Item::ArrayOfTables(a) => a.iter().for_each(|t| {
                t.iter().for_each(|(k, x)| {
                    out.push_str(k);
                    out.push('\n');
                    item(x, out)
                })
            }),
            toml_edit::Item::None => {}
        }
    }
    let mut out = String::new();
    item(item_arg, &mut out);
    out
}

fn json_key_hits<'d>(doc: &'d Document, rule: &JsonKeyRule) -> Vec<(String, &'d Node)> {
    let Some(obj) = doc.node_at(&dotted(&rule.object)) else { return Vec::new() };
    obj.members()
        .iter()
        .filter(|m| rule.names.contains(&m.key) || rule.name_prefixes.iter().any(|p| m.key.starts_with(p.as_str())))
        .filter(|m| rule.groups.is_empty() || matches(&Normal::new(&decoded(doc, &m.value)), &rule.groups, false))
        .map(|m| (m.key.clone(), &m.value))
        .collect()
}

fn toml_parent<'d>(doc: &'d toml_edit::DocumentMut, parent: &str) -> Option<&'d dyn toml_edit::TableLike> {
    let mut item: &toml_edit::Item = doc.as_item();
    for k in parent.split('.') {
        item = item.get(k)?;
    }
    item.as_table_like()
}

fn toml_hits(doc: &toml_edit::DocumentMut, rule: &TomlRule) -> Vec<String> {
    let Some(t) = toml_parent(doc, &rule.parent) else { return Vec::new() };
    t.iter()
        .filter(|(k, _)| {
            rule.names.iter().any(|n| n == k) || rule.name_prefixes.iter().any(|p| k.starts_with(p.as_str()))
        })
        .filter(|(_, v)| rule.groups.is_empty() || matches(&Normal::new(&toml_text(v)), &rule.groups, false))
        .map(|(k, _)| k.to_string())
        .collect()
}

/// (dir, event name, path) of script files that match.
/// The hook scripts of `rule` that hold its markers. One that cannot be read as a regular file
/// (a FIFO, a link out of the project, one past the size cap) is an error in `errors`, not
/// skipped: the agent may still run it.
fn script_hits(s: &Scan, rule: &ScriptRule, errors: &mut Vec<ScanError>) -> Vec<(PathBuf, String, PathBuf)> {
    let mut out = Vec::new();
    for dir in s.paths(&rule.dirs, &rule.project_dirs) {
        for name in &rule.names {
            let p = dir.join(name);
            if s.kind_of(&p).is_none_or(|t| t.is_dir()) {
                continue;
            }
            match s.read_bytes(&p) {
                Ok(Some(b)) if matches(&Normal::new(&String::from_utf8_lossy(&b)), &rule.groups, false) => {
                    out.push((dir.clone(), name.clone(), p))
                }
                Ok(_) => {}
                Err(e) => errors.push(ScanError { file: p, error: format!("{e:#}") }),
            }
        }
    }
    out
}

/// Per (file, event): the memory integrations hooked there, and how many entries each has (ovmem's
/// counted one by one: two copies of its entry run twice).
type PerEvent = BTreeMap<(PathBuf, String), BTreeMap<String, usize>>;

/// ovmem's own entries: outdated runtime paths, deprecated adapters, trust still pending.
fn ovmem_findings(
    s: &Scan,
    with_trust: bool,
    r: &mut Report,
    per_event: &mut PerEvent,
    files: &mut Files,
    harnesses: &[&'static Harness],
) {
    let bin = s.env.runtime_bin();
    let project_flag = s.project.map(|p| format!(" --project {}", p.display())).unwrap_or_default();
    for h in harnesses.iter().copied() {
        let target = Target { env: s.env, harness: h, scope: s.scope(), project: s.project.map(Path::to_path_buf) };
        let Ok(location) = target.location() else { continue };
        let desired: BTreeMap<String, String> =
            target.desired().unwrap_or_default().into_iter().map(|d| (d.event, d.text)).collect();
        let finding = |file: &Path, line, entry, kind, severity, message, fix| Finding {
            file: file.to_path_buf(),
            line,
            entry,
            integration: "ovmem".into(),
            vendor: "ovmem".into(),
            kind,
            severity,
            message,
            fix,
            harnesses: vec![h.id().to_string()],
        };
        // An ovmem entry that runs another runtime, or differs from what this version installs.
        let judge = |r: &mut Report, file: &Path, line, entry, event: &str, runtime: &Path, current: bool| {
            let install = format!("ovmem install --harness {}{project_flag}", h.id());
            let (message, fix) = if let Owner::Other { live, home, .. } = marker::owner(runtime, &bin) {
                let whose = if live {
                    format!("another ovmem home's runtime (`{}`)", home.display())
                } else {
                    "a runtime that no longer exists".to_string()
                };
                let fix = if live {
                    format!("{install} --force (or uninstall it with OVMEM_HOME={} first)", home.display())
                } else {
                    install
                };
                (
                    format!(
                        "ovmem hook runs `{}`, {whose}, not the current runtime `{}`",
                        runtime.display(),
                        bin.display()
                    ),
                    fix,
                )
            } else if !current {
                (
                    format!("ovmem's {event} entry differs from what this ovmem version installs (an older version's, or edited by hand)"),
                    format!("{install} (add --force to replace a hand edit)"),
                )
            } else {
                return;
            };
            r.findings.push(finding(file, line, entry, Kind::OvmemDrift, Severity::Warning, message, fix));
        };
        let mut installed = false;
        match h.manifest.kind {
            InstallKind::JsonHooks | InstallKind::TomlHooks => {
                for file in target.hook_files().unwrap_or_default() {
                    if s.kind_of(&file).is_none() {
                        continue;
                    }
                    // Each file parsed once per scan: the legacy rules above have read most.
                    let (doc, text);
                    let parsed = if h.manifest.kind == InstallKind::JsonHooks {
                        let Some(d) = files.json(s, &file, &mut r.errors, true) else { continue };
                        doc = d;
                        Parsed::Json(&doc)
                    } else {
                        let Some(t) = files.text(s, &file, &mut r.errors) else { continue };
                        text = t;
                        Parsed::Toml(&text)
                    };
                    for f in found::running_in_file(&target, parsed) {
                        // Each of ovmem's entries counts, edited ones too: two on one event run twice.
                        *per_event
                            .entry((file.clone(), f.event.clone()))
                            .or_default()
                            .entry("ovmem".into())
                            .or_default() += 1;
                        if !f.exact {
                            let message = format!(
                                "ovmem's {} hook was edited by hand (`{}`) and still runs ovmem; this ovmem no \
                                 longer knows it as its own, so install puts another beside it and uninstall leaves it",
                                f.event, f.command
                            );
                            let fix = format!(
                                "put back ovmem's command `{}`, or delete the entry and run `ovmem install --harness \
                                 {}{project_flag}`",
                                marker::command(&bin, h.id(), &f.event),
                                h.id()
                            );
                            let (line, kind) = (Some(f.line), Kind::OvmemDrift);
                            r.findings.push(finding(&file, line, f.entry, kind, Severity::Warning, message, fix));
                            continue;
                        }
                        installed = true;
                        let current = desired.get(&f.event).and_then(|d| match h.manifest.kind {
                            InstallKind::TomlHooks => crate::install::toml_hooks::body_value(d).ok(),
                            _ => serde_json::from_str::<serde_json::Value>(d).ok(),
                        });
                        judge(
                            r,
                            &file,
                            Some(f.line),
                            f.entry.clone(),
                            &f.event,
                            &f.runtime,
                            current.is_none_or(|w| w == f.value),
                        );
                    }
                }
            }
            InstallKind::ScriptDir => {
                let fallback = target.fallback().ok().flatten().map(|(dir, _)| dir);
                for dir in std::iter::once(location.clone()).chain(fallback) {
                    for hook in &h.manifest.hooks {
                        let p = dir.join(&hook.event);
                        let Some(text) =
                            s.read_bytes(&p).ok().flatten().map(|b| String::from_utf8_lossy(&b).into_owned())
                        else {
                            continue;
                        };
                        let Some(runtime) = script_runtime(&text, h.id(), &hook.event) else { continue };
                        installed = true;
                        // A script per event and directory: the same name in the fallback
                        // directory is the same hook, found again.
                        per_event.entry((location.clone(), hook.event.clone())).or_default().insert("ovmem".into(), 1);
                        let current = desired.get(&hook.event).is_none_or(|d| *d == text);
                        judge(r, &p, Some(1), hook.event.clone(), &hook.event, &runtime, current);
                    }
                }
            }
            InstallKind::PluginFile => {
                let Some(text) = files.text(s, &location, &mut r.errors) else { continue };
                let Some(runtime) = crate::install::plugin_file::plugin_runtime(&text, h.id()) else { continue };
                installed = true;
                let current = crate::install::plugin_file::desired(&target).is_ok_and(|d| *d == *text);
                judge(r, &location, Some(1), "plugin".into(), "plugin", &runtime, current);
            }
        }
        if installed && h.manifest.deprecated {
            let message = format!(
                "ovmem's {} adapter is deprecated{}",
                h.manifest.name,
                h.manifest.replacement.as_deref().map(|r| format!("; replaced by {r}")).unwrap_or_default()
            );
            let fix = format!("ovmem uninstall --harness {} --yes", h.id());
            let mut f = finding(&location, None, h.id().to_string(), Kind::Deprecated, Severity::Error, message, fix);
            f.integration = format!("ovmem-{}", h.id());
            r.findings.push(f);
        }
        if installed && with_trust && h.manifest.kind == InstallKind::JsonHooks {
            let rec = crate::receipt::load(&target.receipt_path()).ok().flatten();
            if let (Some(_), Some(binary), Some(rec)) = (&h.manifest.trust, h.detect(s.env).binary, rec) {
                if let Ok((_, pending)) = crate::install::trust::status(s.env, &target, &binary, &rec) {
                    if !pending.is_empty() {
                        let message = format!("{} will not run ovmem's hooks until they are trusted", h.manifest.name);
                        let fix =
                            format!("ovmem install --harness {} (or open `/hooks` in {})", h.id(), h.manifest.name);
                        let entry = format!("{} hook(s)", pending.len());
                        r.findings.push(finding(
                            &location,
                            None,
                            entry,
                            Kind::TrustPending,
                            Severity::Warning,
                            message,
                            fix,
                        ));
                    }
                }
            }
        }
    }
}

/// One rule of an integration, as it applies to one file.
#[derive(Debug, Clone)]
enum Rule {
    Hooks(HookRule),
    JsonKeys(JsonKeyRule),
    Toml(TomlRule),
    Text(TextRule),
}

/// Takes the selected integrations' entries out of one file: an editor of the install pipeline,
/// so migrate gets the same journal, backups and concurrent-write handling as install.
pub struct Strip {
    pub path: PathBuf,
    rules: Vec<Rule>,
}

fn unparseable(path: &Path, detail: impl ToString) -> anyhow::Error {
    Refused::Unparseable { path: path.to_path_buf(), detail: detail.to_string() }.into()
}

impl Editor for Strip {
    fn edit(&self, text: Option<&str>) -> Result<Edit> {
        let Some(text) = text else { return Ok(Edit::keep(None)) };
        let mut cur = text.to_string();
        for rule in &self.rules {
            cur = strip_rule(&self.path, &cur, rule)?;
        }
        Ok(Edit { after: Some(cur), ..Edit::default() })
    }
}

fn strip_rule(path: &Path, text: &str, rule: &Rule) -> Result<String> {
    match rule {
        Rule::Hooks(rule) => {
            let mut doc = Document::parse(text).map_err(|e| unparseable(path, e))?;
            let key = dotted(&rule.events_key);
            let events: Vec<String> =
                doc.node_at(&key).map(|n| n.members().iter().map(|m| m.key.clone()).collect()).unwrap_or_default();
            for event in events {
                let mut p = key.clone();
                p.push(&event);
                let arr = doc.node_at(&p).cloned().expect("member");
                let hits: Vec<usize> = arr
                    .elements()
                    .iter()
                    .enumerate()
                    .filter(|(_, e)| matches(&Normal::new(&decoded(&doc, e)), &rule.groups, rule.ignore_case))
                    .map(|(i, _)| i)
                    .collect();
                for i in hits.iter().rev() {
                    doc.remove_child(&p, *i).map_err(|e| anyhow::anyhow!(e))?;
                }
                if !hits.is_empty() && doc.node_at(&p).is_some_and(|a| a.elements().is_empty()) {
                    let idx = doc.member_index(&key, &event).expect("member");
                    doc.remove_child(&key, idx).map_err(|e| anyhow::anyhow!(e))?;
                }
            }
            Ok(doc.finish())
        }
        Rule::JsonKeys(rule) => {
            let mut doc = Document::parse(text).map_err(|e| unparseable(path, e))?;
            let names: Vec<String> = json_key_hits(&doc, rule).into_iter().map(|(n, _)| n).collect();
            let obj = dotted(&rule.object);
            for n in names {
                let idx = doc.member_index(&obj, &n).expect("member");
                doc.remove_child(&obj, idx).map_err(|e| anyhow::anyhow!(e))?;
            }
            Ok(doc.finish())
        }
        Rule::Toml(rule) => {
            let mut doc = crate::edit::toml::parse(text).map_err(|e| unparseable(path, e))?;
            let names = toml_hits(&doc, rule);
            if names.is_empty() {
                return Ok(text.to_string());
            }
            let mut item: &mut toml_edit::Item = doc.as_item_mut();
            for k in rule.parent.split('.') {
                item = item.get_mut(k).context("toml parent vanished")?;
            }
            let table = item.as_table_like_mut().context("toml parent is not a table")?;
            for n in &names {
                table.remove(n);
            }
            Ok(crate::edit::toml::render(text, &doc))
        }
        Rule::Text(rule) => Ok(strip_block(text, &rule.begin, &rule.end).unwrap_or_else(|| text.to_string())),
    }
}

/// What taking the selected integrations out means: an editor for each file to edit, and paths
/// to move into a backup directory.
#[derive(Default)]
pub struct Removal {
    pub edits: Vec<Strip>,
    pub moves: Vec<PathBuf>,
    /// Things left alone, and why (a project's symlink out of the project).
    pub skipped: Vec<String>,
}

/// The edits and moves that remove every entry of `integrations` in the scanned scope.
pub fn plan_removal(s: &Scan, integrations: &BTreeSet<String>) -> Result<Removal> {
    let mut out = Removal::default();
    let catalog: Vec<Integration> = catalog().into_iter().filter(|i| integrations.contains(&i.id)).collect();
    let add = |out: &mut Removal, file: PathBuf, rule: Rule| match out.edits.iter_mut().find(|e| e.path == file) {
        Some(e) => e.rules.push(rule),
        None => out.edits.push(Strip { path: file, rules: vec![rule] }),
    };
    for integ in &catalog {
        for rule in &integ.hooks {
            for file in s.paths(&rule.files, &rule.project_files) {
                add(&mut out, file, Rule::Hooks(rule.clone()));
            }
        }
        for rule in &integ.json_keys {
            for file in s.paths(&rule.files, &rule.project_files) {
                add(&mut out, file, Rule::JsonKeys(rule.clone()));
            }
        }
        for rule in &integ.toml_tables {
            for file in s.paths(&rule.files, &rule.project_files) {
                add(&mut out, file, Rule::Toml(rule.clone()));
            }
        }
        for rule in &integ.text_blocks {
            for file in s.paths(&rule.files, &rule.project_files) {
                add(&mut out, file, Rule::Text(rule.clone()));
            }
        }
        for rule in &integ.scripts {
            let hits = script_hits(s, rule, &mut Vec::new());
            for (dir, _, path) in &hits {
                out.moves.push(path.clone());
                // Companions go once no script of this rule's names is left in the directory.
                let others_left = rule
                    .names
                    .iter()
                    .any(|n| s.kind_of(&dir.join(n)).is_some() && !hits.iter().any(|(_, _, p)| p == &dir.join(n)));
                if others_left {
                    continue;
                }
                for c in &rule.companions {
                    let cp = dir.join(c);
                    let Some(kind) = s.kind_of(&cp) else { continue };
                    if kind.is_symlink() {
                        out.skipped.push(format!(
                            "`{}` is a symlink (to `{}`); ovmem does not move links out of a project",
                            cp.display(),
                            std::fs::read_link(&cp).unwrap_or_default().display()
                        ));
                    } else if !out.moves.contains(&cp) {
                        out.moves.push(cp);
                    }
                }
            }
        }
        for rule in &integ.dirs {
            for dir in s.paths(&rule.paths, &rule.project_paths) {
                if s.is_dir(&dir) && !out.moves.contains(&dir) {
                    out.moves.push(dir);
                }
            }
        }
    }
    // Only files that exist and that some rule changes.
    let mut kept = Vec::new();
    for e in out.edits {
        let Some(bytes) = s.read_bytes(&e.path)? else { continue };
        let text = String::from_utf8(bytes).map_err(|_| unparseable(&e.path, "not UTF-8"))?;
        if e.edit(Some(&text))?.after.as_deref() != Some(text.as_str()) {
            kept.push(e);
        }
    }
    out.edits = kept;
    Ok(out)
}

/// Removes the lines from `begin` to `end` (inclusive); `None` when there is no complete block.
pub fn strip_block(text: &str, begin: &str, end: &str) -> Option<String> {
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let b = lines.iter().position(|l| l.trim_end() == begin)?;
    let e = b + lines[b..].iter().position(|l| l.trim_end() == end)?;
    let mut out: String = lines[..b].concat();
    out.push_str(&lines[e + 1..].concat());
    Some(out)
}

/// Moves `path` into `backup_root`, mirroring its absolute path, so that it can be put back. A
/// symlink moves as a symlink; nothing is followed.
pub fn move_to_backup(path: &Path, backup_root: &Path) -> Result<PathBuf> {
    let rel = path.strip_prefix("/").unwrap_or(path);
    let dest = backup_root.join(rel);
    fsx::move_no_follow(path, &dest)?;
    Ok(dest)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A catalog entry that does not parse would panic on a user's machine.
    #[test]
    fn every_catalog_entry_parses_and_names_known_harnesses() {
        let c = catalog();
        assert!(c.len() >= 7);
        let mut ids = BTreeSet::new();
        for i in &c {
            assert!(ids.insert(i.id.clone()), "duplicate id {}", i.id);
            for h in &i.harnesses {
                assert!(harness::find(h).is_some(), "{}: unknown harness {h}", i.id);
            }
            for r in &i.hooks {
                assert!(r.groups.iter().all(|g| !g.is_empty()), "{}: an empty match group matches everything", i.id);
            }
        }
    }

    /// ovmem's own adapters can be retired: an installed harness whose manifest says
    /// `deprecated = true` is reported with its `replacement`.
    #[test]
    fn a_deprecated_ovmem_manifest_is_reported_with_its_replacement() {
        let home = tempfile::tempdir().unwrap();
        let env = Env::from_vars([("HOME".to_string(), home.path().to_string_lossy().into_owned())].into()).unwrap();
        let manifest = include_str!("../manifests/claude-code.toml").replace(
            "kind = \"json-hooks\"",
            "kind = \"json-hooks\"\ndeprecated = true\nreplacement = \"the claude-code-v2 adapter\"",
        );
        let h: &'static Harness = Box::leak(Box::new(Harness::from_manifest(&manifest, "claude-code").unwrap()));
        assert!(h.manifest.deprecated);
        let target = Target { env: &env, harness: h, scope: Scope::User, project: None };
        let plan = crate::install::plan::plan(&target, crate::install::Verb::Install, Default::default()).unwrap();
        for f in &plan.files {
            std::fs::create_dir_all(f.real.parent().unwrap()).unwrap();
            std::fs::write(&f.real, f.after.as_deref().unwrap()).unwrap();
        }
        let s = Scan { env: &env, project: None };
        let mut r = Report::default();
        ovmem_findings(&s, false, &mut r, &mut BTreeMap::new(), &mut Files::default(), &[h]);
        let f = r.findings.iter().find(|f| f.kind == Kind::Deprecated).expect("deprecated finding");
        assert!(f.message.contains("the claude-code-v2 adapter"), "{}", f.message);
        assert_eq!(f.severity, Severity::Error);
        // The same install under the registered (current) manifest is clean.
        let mut r = Report::default();
        ovmem_findings(
            &s,
            false,
            &mut r,
            &mut BTreeMap::new(),
            &mut Files::default(),
            &[harness::find("claude-code").unwrap()],
        );
        assert!(r.findings.is_empty(), "{:?}", r.findings);
    }

    #[test]
    fn blocks_are_stripped_exactly() {
        let t = "a\n# >>> x >>>\nexport X=1\n# <<< x <<<\nb\n";
        assert_eq!(strip_block(t, "# >>> x >>>", "# <<< x <<<").unwrap(), "a\nb\n");
        assert_eq!(strip_block("a\n# >>> x >>>\nno end\n", "# >>> x >>>", "# <<< x <<<"), None);
    }

    #[test]
    fn markers_need_every_string_of_a_group() {
        let g: Groups = vec![vec!["openviking".into(), "auto-recall.mjs".into()]];
        assert!(matches(&Normal::new("node /x/openviking/scripts/auto-recall.mjs"), &g, false));
        assert!(!matches(&Normal::new("node /x/scripts/auto-recall.mjs"), &g, false));
        assert!(matches(&Normal::new("NODE /OPENVIKING/AUTO-RECALL.MJS"), &g, true));
        assert!(matches(&Normal::new("node //x/./openviking/scripts/auto-recall . mjs"), &g, false));
    }
}
