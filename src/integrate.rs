//! The install/uninstall engine. For one harness and scope it computes, from each file's current
//! bytes, the bytes it should hold (a pure function, so it can be re-run when a harness rewrites
//! its config under us), then applies all files as one transaction under per-file locks and
//! records a receipt. Dry runs stop after computing and show a diff.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use serde::Serialize;
use serde_json::Value;

use crate::edit::json::Document;
use crate::env::Env;
use crate::fsx::{self, FileLock, Transaction};
use crate::harness::{self, Harness, InstallKind, Placeholders, Scope};
use crate::receipt::{self, Entry, FileRecord, Receipt};

/// A config file that cannot be parsed: ovmem refuses to touch it.
#[derive(Debug, thiserror::Error)]
#[error("`{path}` does not parse ({detail}); it was left untouched. Fix it (or move it aside) and run ovmem again")]
pub struct Unparseable {
    pub path: PathBuf,
    pub detail: String,
}

pub struct Target<'a> {
    pub env: &'a Env,
    pub harness: &'static Harness,
    pub scope: Scope,
    pub project: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, Default)]
pub struct Options {
    pub dry_run: bool,
    pub force: bool,
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum Action {
    Added,
    Updated,
    Unchanged,
    Removed,
    /// The user changed ovmem's entry since install; left alone (use --force).
    UserEdited,
    /// A file of the user's own sits where ovmem's would go; left alone.
    Conflict,
}

#[derive(Debug, Clone, Serialize)]
pub struct EntryNote {
    pub event: String,
    pub action: Action,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct FileReport {
    pub path: PathBuf,
    /// created, modified, deleted or unchanged
    pub change: &'static str,
    pub entries: Vec<EntryNote>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub diff: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub backups: Vec<PathBuf>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub harness: String,
    pub scope: Scope,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub project: Option<PathBuf>,
    pub files: Vec<FileReport>,
    pub warnings: Vec<String>,
    #[serde(skip)]
    pub receipt: Option<Receipt>,
}

impl Report {
    pub fn changed(&self) -> bool {
        self.files.iter().any(|f| f.change != "unchanged")
    }
}

/// The result of computing one file.
struct Computed {
    after: Option<String>,
    record: Option<FileRecord>,
    notes: Vec<EntryNote>,
    warnings: Vec<String>,
}

impl Computed {
    /// The file is absent and stays so: nothing to write, nothing to record.
    fn absent() -> Self {
        Self { after: None, record: None, notes: Vec::new(), warnings: Vec::new() }
    }
}

type ComputeFn<'a> = Box<dyn Fn(Option<&str>) -> Result<Computed> + 'a>;

struct Job<'a> {
    path: PathBuf,
    mode: Option<u32>,
    compute: ComputeFn<'a>,
}

impl Target<'_> {
    fn receipt_path(&self) -> PathBuf {
        receipt::path(&self.env.ovmem_home(), self.harness.id(), self.scope, self.project.as_deref())
    }

    fn placeholders<'b>(&'b self, bin: &'b Path, home: &'b Path, hook: &'b harness::HookSpec) -> Placeholders<'b> {
        Placeholders {
            bin,
            harness: self.harness.id(),
            event: &hook.event,
            timeout: hook.timeout.unwrap_or(30),
            matcher: hook.matcher.as_deref().unwrap_or(""),
            ovmem_home: home,
        }
    }

    /// The JSON file (json-hooks) or the directory (script-dir) for this scope.
    pub fn location(&self) -> Result<PathBuf> {
        let spec = self.harness.scope(self.scope)?;
        let pattern = spec.file.as_ref().or(spec.dir.as_ref()).context("manifest names no file or dir")?;
        self.env.expand(pattern, self.project.as_deref())
    }

    pub fn fallback(&self) -> Result<Option<(PathBuf, String)>> {
        let spec = self.harness.scope(self.scope)?;
        match &spec.fallback_dir {
            Some(d) => {
                Ok(Some((self.env.expand(d, self.project.as_deref())?, spec.fallback_note.clone().unwrap_or_default())))
            }
            None => Ok(None),
        }
    }

    /// Desired hook entries: (event, rendered text).
    pub fn desired(&self) -> Result<Vec<(String, String)>> {
        let bin = self.env.runtime_bin();
        let home = self.env.ovmem_home();
        let m = &self.harness.manifest;
        m.hooks
            .iter()
            .map(|hook| {
                let name = match (&hook.matcher, &m.template_with_matcher) {
                    (Some(_), Some(t)) => t,
                    _ => &m.template,
                };
                Ok((hook.event.clone(), harness::render(name, &self.placeholders(&bin, &home, hook))?))
            })
            .collect()
    }

    /// Serialises every ovmem process working on this harness and scope: taken before the
    /// receipt is read, so concurrent runs never act on a stale receipt.
    fn scope_lock(&self, opts: Options) -> Result<Option<FileLock>> {
        if opts.dry_run {
            return Ok(None);
        }
        FileLock::acquire(&self.env.ovmem_home(), &self.receipt_path()).map(Some)
    }

    pub fn install(&self, opts: Options) -> Result<Report> {
        self.apply(true, opts)
    }

    pub fn uninstall(&self, opts: Options) -> Result<Report> {
        self.apply(false, opts)
    }

    /// Installs (or uninstalls) every file of this harness and scope as one transaction.
    fn apply(&self, install: bool, opts: Options) -> Result<Report> {
        let _lock = self.scope_lock(opts)?;
        let old = receipt::load(&self.receipt_path())?;
        let mut jobs = match self.harness.manifest.kind {
            InstallKind::JsonHooks => vec![self.json_job(install, old.as_ref(), opts)?],
            InstallKind::ScriptDir => self.script_jobs(install, old.as_ref(), opts)?,
        };
        jobs.extend(self.mcp_job(install, old.as_ref(), opts)?);
        self.run(jobs, old, opts, install)
    }

    /// The `ovmem` MCP server entry, where the manifest and scope name one.
    fn mcp_job<'a>(&'a self, install: bool, old: Option<&Receipt>, opts: Options) -> Result<Option<Job<'a>>> {
        let m = &self.harness.manifest;
        let (Some(template), Some(key)) = (&m.mcp_template, &m.mcp_key) else { return Ok(None) };
        let Some(file) = &self.harness.scope(self.scope)?.mcp_file else { return Ok(None) };
        let path = self.env.expand(file, self.project.as_deref())?;
        let bin = self.env.runtime_bin();
        let home = self.env.ovmem_home();
        let hook = harness::HookSpec { event: "mcp".into(), matcher: None, timeout: None };
        let value: Value = serde_json::from_str(&harness::render(template, &self.placeholders(&bin, &home, &hook))?)?;
        let record = old.and_then(|r| r.file(&path)).cloned();
        let p = path.clone();
        let key = key.clone();
        Ok(Some(Job {
            path,
            mode: Some(0o600),
            compute: Box::new(move |text| {
                if install {
                    member_install(&p, text, &key, MCP_NAME, &value, record.as_ref(), opts.force)
                } else {
                    member_uninstall(&p, text, &key, MCP_NAME, record.as_ref(), opts.force)
                }
            }),
        }))
    }

    fn json_job<'a>(&'a self, install: bool, old: Option<&Receipt>, opts: Options) -> Result<Job<'a>> {
        let path = self.location()?;
        let record = old.and_then(|r| r.file(&path)).cloned();
        let desired = if install { self.desired()? } else { Vec::new() };
        let p = path.clone();
        let compute: ComputeFn<'a> = Box::new(move |text| {
            if install {
                json_install(self.harness, &p, text, &desired, record.as_ref(), opts.force)
            } else {
                json_uninstall(self.harness, &p, text, record.as_ref(), opts.force)
            }
        });
        Ok(Job { path, mode: Some(0o644), compute })
    }

    fn script_jobs<'a>(&'a self, install: bool, old: Option<&Receipt>, opts: Options) -> Result<Vec<Job<'a>>> {
        let dir = self.location()?;
        let fallback = self.fallback()?;
        let mut jobs = Vec::new();
        if install {
            for (event, content) in self.desired()? {
                let mut path = dir.join(&event);
                let mut note = None;
                let record = |p: &Path| old.and_then(|r| r.file(p)).cloned();
                // A file of the user's own at the primary name: use the fallback location, which
                // the harness also reads, or leave the event out.
                if let Some(existing) = fsx::read_opt(&path)? {
                    let existing = String::from_utf8_lossy(&existing);
                    if !script_is_ours(&existing, self.harness.id(), &event) {
                        match &fallback {
                            Some((fb, why)) => {
                                note = Some(format!(
                                    "`{}` belongs to someone else and was left alone; installed at `{}` instead ({why})",
                                    path.display(),
                                    fb.join(&event).display()
                                ));
                                path = fb.join(&event);
                            }
                            None => note = Some(format!("`{}` belongs to someone else", path.display())),
                        }
                    }
                }
                let rec = record(&path);
                let ev = event.clone();
                let harness_id = self.harness.id();
                let force = opts.force;
                let p = path.clone();
                jobs.push(Job {
                    path,
                    mode: Some(0o755),
                    compute: Box::new(move |text| {
                        let mut c = script_install(harness_id, &p, &ev, &content, text, rec.as_ref(), force);
                        if let (Ok(c), Some(n)) = (&mut c, &note) {
                            c.warnings.push(n.clone());
                        }
                        c
                    }),
                });
            }
        } else {
            let mut paths: Vec<PathBuf> = old
                .map(|r| r.files.iter().filter(|f| f.format == "script").map(|f| f.path.clone()).collect())
                .unwrap_or_default();
            // Without a receipt, or for older installs, find ovmem's scripts by their marker.
            for d in std::iter::once(dir.clone()).chain(fallback.iter().map(|f| f.0.clone())) {
                for hook in &self.harness.manifest.hooks {
                    let p = d.join(&hook.event);
                    if !paths.contains(&p)
                        && fsx::read_opt(&p)?.is_some_and(|b| {
                            script_is_ours(&String::from_utf8_lossy(&b), self.harness.id(), &hook.event)
                        })
                    {
                        paths.push(p);
                    }
                }
            }
            for path in paths {
                let rec = old.and_then(|r| r.file(&path)).cloned();
                let harness_id = self.harness.id();
                let force = opts.force;
                let p = path.clone();
                jobs.push(Job {
                    path,
                    mode: None,
                    compute: Box::new(move |text| script_uninstall(harness_id, &p, text, rec.as_ref(), force)),
                });
            }
        }
        Ok(jobs)
    }

    /// Computes every job, then (unless dry-run) writes the changed files as one transaction.
    fn run(&self, jobs: Vec<Job<'_>>, old: Option<Receipt>, opts: Options, install: bool) -> Result<Report> {
        let home = self.env.ovmem_home();
        let mut report = Report {
            harness: self.harness.id().to_string(),
            scope: self.scope,
            project: self.project.clone(),
            files: Vec::new(),
            warnings: Vec::new(),
            receipt: None,
        };
        let mut locks = Vec::new();
        if !opts.dry_run {
            // The receipt itself is already locked by `scope_lock`.
            let mut targets: Vec<PathBuf> = jobs.iter().map(|j| fsx::resolve(&j.path)).collect::<Result<_>>()?;
            targets.sort();
            targets.dedup();
            for t in &targets {
                locks.push(FileLock::acquire(&home, t)?);
            }
        }
        let mut tx = Transaction::new();
        let mut records = Vec::new();
        for job in &jobs {
            let real = fsx::resolve(&job.path)?;
            let mut before = read_text(&real)?;
            let mut computed = (job.compute)(before.as_deref())?;
            let mut file_report = FileReport {
                path: job.path.clone(),
                change: change_kind(before.as_deref(), computed.after.as_deref()),
                entries: computed.notes.clone(),
                diff: None,
                backups: Vec::new(),
            };
            if opts.dry_run {
                file_report.diff = diff(&job.path, before.as_deref(), computed.after.as_deref());
            } else if file_report.change != "unchanged" {
                // Harnesses rewrite their own configs at any time: re-read right before
                // replacing, and redo the edit on what is there now.
                for _ in 0..5 {
                    let now = read_text(&real)?;
                    if now == before {
                        break;
                    }
                    before = now;
                    computed = (job.compute)(before.as_deref())?;
                }
                file_report.change = change_kind(before.as_deref(), computed.after.as_deref());
                file_report.entries = computed.notes.clone();
                let prior_bak = old.as_ref().and_then(|r| r.file(&job.path)).and_then(|f| f.backup_hash.clone());
                match &computed.after {
                    Some(after) if Some(after) != before.as_ref() => {
                        let created_dirs = match real.parent() {
                            Some(parent) => tx.create_dirs(parent)?,
                            None => Vec::new(),
                        };
                        if let Some(r) = computed.record.as_mut() {
                            if r.created_dirs.is_empty() {
                                r.created_dirs = created_dirs;
                            }
                        }
                        let w = tx.write(&job.path, after.as_bytes(), job.mode, prior_bak.as_deref())?;
                        if let Some(r) = computed.record.as_mut() {
                            r.backup_hash = w.backup_hash.clone().or(prior_bak);
                        }
                        file_report.backups.extend(w.pristine_backup.into_iter().chain(w.backup));
                        report.warnings.extend(w.warnings);
                    }
                    None if before.is_some() => tx.remove(&job.path)?,
                    _ => {}
                }
            }
            if let Some(mut r) = computed.record.take() {
                // Keep what an earlier install knew about directories and backups.
                if let Some(prev) = old.as_ref().and_then(|o| o.file(&r.path)) {
                    if r.created_dirs.is_empty() {
                        r.created_dirs = prev.created_dirs.clone();
                    }
                    r.backup_hash = r.backup_hash.or_else(|| prev.backup_hash.clone());
                }
                records.push(r);
            }
            report.warnings.extend(computed.warnings);
            report.files.push(file_report);
        }
        let mut new_receipt = None;
        if install {
            let r = Receipt {
                schema: receipt::SCHEMA,
                ovmem_version: env!("CARGO_PKG_VERSION").to_string(),
                harness: self.harness.id().to_string(),
                scope: self.scope,
                project: self.project.clone(),
                runtime: self.env.runtime_bin(),
                files: records,
                trust: old.as_ref().map(|o| o.trust.clone()).unwrap_or_default(),
                trust_snapshot: old.as_ref().and_then(|o| o.trust_snapshot.clone()),
            };
            new_receipt = Some(r);
        }
        if !opts.dry_run {
            let rp = self.receipt_path();
            match &new_receipt {
                Some(r) if old.as_ref() != Some(r) => {
                    tx.create_dirs(rp.parent().expect("receipts dir"))?;
                    tx.write_plain(&rp, &r.to_bytes())?;
                }
                Some(_) => {}
                None => {
                    // Uninstall: the receipt goes once nothing of ovmem's is left to track.
                    let kept = report.files.iter().flat_map(|f| &f.entries).any(|e| e.action == Action::UserEdited);
                    if !kept {
                        tx.remove(&rp)?;
                    }
                }
            }
            tx.commit();
            if !install {
                let written: Vec<PathBuf> = report.files.iter().flat_map(|f| f.backups.iter().cloned()).collect();
                for f in &report.files {
                    cleanup_backups(&f.path, &written);
                }
                // Every directory ovmem created, deepest first, so a parent made for one file goes
                // once the children made for another are gone.
                let mut dirs: Vec<PathBuf> =
                    old.iter().flat_map(|o| o.files.iter()).flat_map(|f| f.created_dirs.iter().cloned()).collect();
                dirs.sort_by_key(|d| std::cmp::Reverse(d.components().count()));
                dirs.dedup();
                for d in dirs {
                    fsx::remove_empty_dirs(&[d]);
                }
            }
        }
        report.receipt = new_receipt;
        drop(locks);
        Ok(report)
    }
}

/// After uninstall: once a file is back to its pristine bytes, the backups have nothing left to
/// protect, so the pristine copy and the `.bak` this very uninstall wrote go too. Otherwise they
/// stay, and say how to get the old file back.
fn cleanup_backups(path: &Path, written_now: &[PathBuf]) {
    let Ok(real) = fsx::resolve(path) else { return };
    let pristine = fsx::sibling(&real, ".ovmem.bak");
    let Ok(orig) = std::fs::read(&pristine) else { return };
    if std::fs::read(&real).ok().as_ref() == Some(&orig) {
        let bak = fsx::sibling(&real, ".bak");
        if written_now.contains(&bak) || std::fs::read(&bak).ok().as_ref() == Some(&orig) {
            let _ = std::fs::remove_file(&bak);
        }
        let _ = std::fs::remove_file(&pristine);
    }
}

fn read_text(path: &Path) -> Result<Option<String>> {
    match fsx::read_opt(path)? {
        None => Ok(None),
        Some(b) => String::from_utf8(b)
            .map(Some)
            .map_err(|_| Unparseable { path: path.to_path_buf(), detail: "it is not UTF-8 text".into() }.into()),
    }
}

fn change_kind(before: Option<&str>, after: Option<&str>) -> &'static str {
    match (before, after) {
        (None, Some(_)) => "created",
        (Some(_), None) => "deleted",
        (Some(a), Some(b)) if a != b => "modified",
        _ => "unchanged",
    }
}

fn diff(path: &Path, before: Option<&str>, after: Option<&str>) -> Option<String> {
    if before == after {
        return None;
    }
    let a = before.unwrap_or("");
    let b = after.unwrap_or("");
    let name = path.display().to_string();
    let d = similar::TextDiff::from_lines(a, b);
    let old_name = if before.is_some() { format!("a{name}") } else { "/dev/null".into() };
    let new_name = if after.is_some() { format!("b{name}") } else { "/dev/null".into() };
    Some(d.unified_diff().context_radius(3).header(&old_name, &new_name).to_string())
}

fn parse(path: &Path, text: &str) -> Result<Document> {
    let doc = Document::parse(text).map_err(|e| Unparseable { path: path.to_path_buf(), detail: e.to_string() })?;
    if !doc.root.is_object() {
        return Err(
            Unparseable { path: path.to_path_buf(), detail: "the top level is not a JSON object".into() }.into()
        );
    }
    Ok(doc)
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

/// Whether a hook entry (a group or a flat entry) is one of ovmem's for this harness.
pub fn entry_is_ours(v: &Value, harness: &str, event: Option<&str>) -> bool {
    let mut cmds = Vec::new();
    commands(v, &mut cmds);
    cmds.iter().any(|c| harness::is_ovmem_hook_command(c, harness, event))
}

fn json_install(
    h: &Harness,
    path: &Path,
    text: Option<&str>,
    desired: &[(String, String)],
    record: Option<&FileRecord>,
    force: bool,
) -> Result<Computed> {
    let created = text.is_none() || record.is_some_and(|r| r.created);
    let mut doc = parse(path, text.unwrap_or("{}\n"))?;
    let mut created_keys: Vec<String> = record.map(|r| r.created_keys.clone()).unwrap_or_default();
    let mut notes = Vec::new();
    let mut entries = Vec::new();
    for (k, v) in &h.manifest.root_defaults {
        if doc.root.member(k).is_none() {
            let v = serde_json::to_value(v)?;
            doc.insert_member(&[], k, &v).map_err(|e| anyhow::anyhow!(e))?;
            push_unique(&mut created_keys, k.clone());
        }
    }
    let key = h.manifest.events_key.as_deref().context("json-hooks manifest needs events_key")?;
    match doc.root.member(key) {
        None => {
            doc.insert_member(&[], key, &Value::Object(Default::default())).map_err(|e| anyhow::anyhow!(e))?;
            push_unique(&mut created_keys, key.to_string());
        }
        Some(n) if !n.is_object() => {
            return Err(Unparseable { path: path.into(), detail: format!("`{key}` is not an object") }.into());
        }
        Some(_) => {}
    }
    for (event, rendered) in desired {
        let value: Value = serde_json::from_str(rendered)?;
        let hash = receipt::hash_value(&value);
        let key_path = format!("{key}.{event}");
        let recorded = record.and_then(|r| r.entries.iter().find(|e| e.event == *event)).map(|e| e.sha256.clone());
        let events = doc.node_at(&[key]).expect("events object exists").clone();
        let Some(arr) = events.member(event).cloned() else {
            doc.insert_member(&[key], event, &Value::Array(vec![value])).map_err(|e| anyhow::anyhow!(e))?;
            push_unique(&mut created_keys, key_path.clone());
            notes.push(EntryNote { event: event.clone(), action: Action::Added, detail: None });
            entries.push(Entry { event: event.clone(), key_path, sha256: hash });
            continue;
        };
        if !arr.is_array() {
            return Err(Unparseable { path: path.into(), detail: format!("`{key_path}` is not an array") }.into());
        }
        let ours: Vec<(usize, Option<Value>)> = arr
            .elements()
            .iter()
            .enumerate()
            .filter_map(|(i, n)| {
                let v = doc.value(n);
                v.as_ref().is_some_and(|v| entry_is_ours(v, h.id(), Some(event))).then_some((i, v))
            })
            .collect();
        let Some((first, current)) = ours.first().cloned() else {
            doc.push_element(&[key, event], &value).map_err(|e| anyhow::anyhow!(e))?;
            notes.push(EntryNote { event: event.clone(), action: Action::Added, detail: None });
            entries.push(Entry { event: event.clone(), key_path, sha256: hash });
            continue;
        };
        let current = current.expect("ours parsed");
        let current_hash = receipt::hash_value(&current);
        // Exact duplicates of ovmem's entry (say, from a copied config) are dropped.
        for (i, v) in ours.iter().skip(1).rev() {
            if v.as_ref() == Some(&current) || v.as_ref() == Some(&value) {
                doc.remove_child(&[key, event], *i).map_err(|e| anyhow::anyhow!(e))?;
            }
        }
        if current == value {
            notes.push(EntryNote { event: event.clone(), action: Action::Unchanged, detail: None });
            entries.push(Entry { event: event.clone(), key_path, sha256: hash });
        } else if still_ours(force, recorded.as_deref(), &current_hash) {
            let node = doc.node_at(&[key, event]).expect("array").elements()[first].clone();
            doc.replace_value(&node, &value).map_err(|e| anyhow::anyhow!(e))?;
            notes.push(EntryNote { event: event.clone(), action: Action::Updated, detail: None });
            entries.push(Entry { event: event.clone(), key_path, sha256: hash });
        } else {
            notes.push(EntryNote {
                event: event.clone(),
                action: Action::UserEdited,
                detail: Some("ovmem's entry was edited since install; left as it is (--force replaces it)".into()),
            });
            entries.push(Entry { event: event.clone(), key_path, sha256: recorded.unwrap_or(current_hash) });
        }
    }
    Ok(Computed {
        after: Some(doc.finish()),
        record: Some(FileRecord {
            path: path.to_path_buf(),
            format: "json".into(),
            created,
            created_dirs: record.map(|r| r.created_dirs.clone()).unwrap_or_default(),
            created_keys,
            entries,
            backup_hash: None,
        }),
        notes,
        warnings: Vec::new(),
    })
}

fn json_uninstall(
    h: &Harness,
    path: &Path,
    text: Option<&str>,
    record: Option<&FileRecord>,
    force: bool,
) -> Result<Computed> {
    let Some(text) = text else {
        return Ok(Computed::absent());
    };
    let mut doc = parse(path, text)?;
    let key = h.manifest.events_key.as_deref().context("json-hooks manifest needs events_key")?;
    let mut notes = Vec::new();
    let mut emptied = Vec::new();
    let events: Vec<String> =
        doc.node_at(&[key]).map(|n| n.members().iter().map(|m| m.key.clone()).collect()).unwrap_or_default();
    for event in events {
        let arr = doc.node_at(&[key, &event]).cloned().expect("member exists");
        let recorded = record.and_then(|r| r.entries.iter().find(|e| e.event == event)).map(|e| e.sha256.clone());
        let mut removed_any = false;
        for (i, n) in arr.elements().iter().enumerate().rev() {
            let Some(v) = doc.value(n) else { continue };
            if !entry_is_ours(&v, h.id(), None) {
                continue;
            }
            if !still_ours(force, recorded.as_deref(), &receipt::hash_value(&v)) {
                notes.push(EntryNote {
                    event: event.clone(),
                    action: Action::UserEdited,
                    detail: Some("edited since install; left in place (--force removes it)".into()),
                });
                continue;
            }
            doc.remove_child(&[key, &event], i).map_err(|e| anyhow::anyhow!(e))?;
            removed_any = true;
            notes.push(EntryNote { event: event.clone(), action: Action::Removed, detail: None });
        }
        if removed_any && doc.node_at(&[key, &event]).is_some_and(|a| a.elements().is_empty()) {
            emptied.push(event);
        }
    }
    let created_keys: &[String] = record.map(|r| r.created_keys.as_slice()).unwrap_or(&[]);
    for event in emptied {
        let kp = format!("{key}.{event}");
        if record.is_none() || created_keys.contains(&kp) {
            let idx = doc.member_index(&[key], &event).expect("member");
            doc.remove_child(&[key], idx).map_err(|e| anyhow::anyhow!(e))?;
        }
    }
    let events_empty = doc.node_at(&[key]).is_some_and(|n| n.members().is_empty());
    if events_empty && created_keys.iter().any(|k| k == key) {
        let idx = doc.member_index(&[], key).expect("member");
        doc.remove_child(&[], idx).map_err(|e| anyhow::anyhow!(e))?;
    }
    // Keys ovmem added at the top (Cursor's `version`) go too: the file returns to its bytes.
    for k in h.manifest.root_defaults.keys() {
        if created_keys.contains(k) {
            if let Some(idx) = doc.member_index(&[], k) {
                doc.remove_child(&[], idx).map_err(|e| anyhow::anyhow!(e))?;
            }
        }
    }
    let created = record.is_some_and(|r| r.created);
    let after = if created && doc.root.members().is_empty() { None } else { Some(doc.finish()) };
    Ok(Computed { after, record: None, notes, warnings: Vec::new() })
}

/// Whether ovmem may replace or remove one of its own entries whose current hash is `current`:
/// when forced, when no receipt records it, or when it is still what the receipt recorded.
/// Anything else is an entry the user edited since install.
fn still_ours(force: bool, recorded: Option<&str>, current: &str) -> bool {
    force || recorded.is_none_or(|r| r == current)
}

/// The name ovmem's MCP server is registered under.
pub const MCP_NAME: &str = "ovmem";

/// Whether an MCP server entry runs some ovmem binary's `mcp` (any install path).
fn mcp_entry_is_ours(v: &Value) -> bool {
    v.get("command").and_then(Value::as_str).is_some_and(|c| Path::new(c).file_name().is_some_and(|n| n == "ovmem"))
        && v.get("args").and_then(Value::as_array).is_some_and(|a| a.first().and_then(Value::as_str) == Some("mcp"))
}

/// Puts `name: value` into the object at dotted `key` (creating it, and the file, when missing).
fn member_install(
    path: &Path,
    text: Option<&str>,
    key: &str,
    name: &str,
    value: &Value,
    record: Option<&FileRecord>,
    force: bool,
) -> Result<Computed> {
    let created = text.is_none() || record.is_some_and(|r| r.created);
    let mut doc = parse(path, text.unwrap_or("{}\n"))?;
    let mut created_keys: Vec<String> = record.map(|r| r.created_keys.clone()).unwrap_or_default();
    let keys: Vec<&str> = key.split('.').collect();
    for i in 0..keys.len() {
        match doc.node_at(&keys[..=i]) {
            None => {
                doc.insert_member(&keys[..i], keys[i], &Value::Object(Default::default()))
                    .map_err(|e| anyhow::anyhow!(e))?;
                push_unique(&mut created_keys, keys[..=i].join("."));
            }
            Some(n) if !n.is_object() => {
                return Err(Unparseable {
                    path: path.into(),
                    detail: format!("`{}` is not an object", keys[..=i].join(".")),
                }
                .into());
            }
            Some(_) => {}
        }
    }
    let hash = receipt::hash_value(value);
    let recorded = record.and_then(|r| r.entries.first()).map(|e| e.sha256.clone());
    let mut full = keys.clone();
    full.push(name);
    let (action, sha, detail) = match doc.node_at(&full).cloned() {
        None => {
            doc.insert_member(&keys, name, value).map_err(|e| anyhow::anyhow!(e))?;
            (Action::Added, hash, None)
        }
        Some(node) => {
            let current = doc.value(&node).unwrap_or(Value::Null);
            let current_hash = receipt::hash_value(&current);
            if current == *value {
                (Action::Unchanged, hash, None)
            } else if !mcp_entry_is_ours(&current) && !force {
                (
                    Action::Conflict,
                    current_hash,
                    Some(format!("an MCP server named `{name}` that is not ovmem's is already there; left alone")),
                )
            } else if still_ours(force, recorded.as_deref(), &current_hash) {
                doc.replace_value(&node, value).map_err(|e| anyhow::anyhow!(e))?;
                (Action::Updated, hash, None)
            } else {
                (
                    Action::UserEdited,
                    recorded.unwrap_or(current_hash),
                    Some("edited since install; left as it is (--force replaces it)".into()),
                )
            }
        }
    };
    let ours = action != Action::Conflict;
    Ok(Computed {
        after: Some(doc.finish()),
        record: ours.then(|| FileRecord {
            path: path.to_path_buf(),
            format: "json".into(),
            created,
            created_dirs: record.map(|r| r.created_dirs.clone()).unwrap_or_default(),
            created_keys,
            entries: vec![Entry { event: "mcp".into(), key_path: format!("{key}.{name}"), sha256: sha }],
            backup_hash: None,
        }),
        notes: vec![EntryNote { event: "mcp".into(), action, detail }],
        warnings: Vec::new(),
    })
}

/// Takes `name` out of the object at dotted `key` again, with the containers ovmem created.
fn member_uninstall(
    path: &Path,
    text: Option<&str>,
    key: &str,
    name: &str,
    record: Option<&FileRecord>,
    force: bool,
) -> Result<Computed> {
    let Some(text) = text else { return Ok(Computed::absent()) };
    let mut doc = parse(path, text)?;
    let keys: Vec<&str> = key.split('.').collect();
    let mut full = keys.clone();
    full.push(name);
    let mut notes = Vec::new();
    if let Some(node) = doc.node_at(&full).cloned() {
        let current = doc.value(&node).unwrap_or(Value::Null);
        let recorded = record.and_then(|r| r.entries.first()).map(|e| e.sha256.clone());
        if !mcp_entry_is_ours(&current) && record.is_none() {
            // Someone else's server under the same name, never ovmem's: not touched.
        } else if !still_ours(force, recorded.as_deref(), &receipt::hash_value(&current)) {
            notes.push(EntryNote {
                event: "mcp".into(),
                action: Action::UserEdited,
                detail: Some("edited since install; left in place (--force removes it)".into()),
            });
        } else {
            let idx = doc.member_index(&keys, name).expect("member");
            doc.remove_child(&keys, idx).map_err(|e| anyhow::anyhow!(e))?;
            notes.push(EntryNote { event: "mcp".into(), action: Action::Removed, detail: None });
        }
    }
    let created_keys: &[String] = record.map(|r| r.created_keys.as_slice()).unwrap_or(&[]);
    for i in (0..keys.len()).rev() {
        let here = keys[..=i].join(".");
        if created_keys.contains(&here) && doc.node_at(&keys[..=i]).is_some_and(|n| n.members().is_empty()) {
            let idx = doc.member_index(&keys[..i], keys[i]).expect("member");
            doc.remove_child(&keys[..i], idx).map_err(|e| anyhow::anyhow!(e))?;
        }
    }
    let created = record.is_some_and(|r| r.created);
    let after = if created && doc.root.members().is_empty() { None } else { Some(doc.finish()) };
    Ok(Computed { after, record: None, notes, warnings: Vec::new() })
}

fn push_unique(v: &mut Vec<String>, s: String) {
    if !v.contains(&s) {
        v.push(s);
    }
}

pub fn script_is_ours(text: &str, harness: &str, event: &str) -> bool {
    text.lines()
        .any(|l| l.strip_prefix("exec ").is_some_and(|c| harness::is_ovmem_hook_command(c, harness, Some(event))))
}

fn script_install(
    harness: &str,
    path: &Path,
    event: &str,
    content: &str,
    text: Option<&str>,
    record: Option<&FileRecord>,
    force: bool,
) -> Result<Computed> {
    let hash = fsx::sha256_hex(content.as_bytes());
    let entry = |sha: String| Entry {
        event: event.to_string(),
        key_path: path.file_name().unwrap().to_string_lossy().into(),
        sha256: sha,
    };
    let rec = |sha: String| FileRecord {
        path: path.to_path_buf(),
        format: "script".into(),
        created: true,
        created_dirs: record.map(|r| r.created_dirs.clone()).unwrap_or_default(),
        created_keys: Vec::new(),
        entries: vec![entry(sha)],
        backup_hash: None,
    };
    let note = |action| vec![EntryNote { event: event.to_string(), action, detail: None }];
    match text {
        None => Ok(Computed {
            after: Some(content.into()),
            record: Some(rec(hash)),
            notes: note(Action::Added),
            warnings: vec![],
        }),
        Some(t) if t == content => Ok(Computed {
            after: Some(content.into()),
            record: Some(rec(hash)),
            notes: note(Action::Unchanged),
            warnings: vec![],
        }),
        Some(t) if script_is_ours(t, harness, event) => {
            let current = fsx::sha256_hex(t.as_bytes());
            let recorded = record.and_then(|r| r.entries.first()).map(|e| e.sha256.clone());
            if still_ours(force, recorded.as_deref(), &current) {
                Ok(Computed {
                    after: Some(content.into()),
                    record: Some(rec(hash)),
                    notes: note(Action::Updated),
                    warnings: vec![],
                })
            } else {
                Ok(Computed {
                    after: Some(t.into()),
                    record: Some(rec(recorded.unwrap_or(current))),
                    notes: vec![EntryNote {
                        event: event.into(),
                        action: Action::UserEdited,
                        detail: Some(
                            "ovmem's hook file was edited since install; left as it is (--force replaces it)".into(),
                        ),
                    }],
                    warnings: vec![],
                })
            }
        }
        Some(t) => Ok(Computed {
            after: Some(t.into()),
            record: None,
            notes: vec![EntryNote {
                event: event.into(),
                action: Action::Conflict,
                detail: Some(format!(
                    "`{}` is not ovmem's; left alone, so this event is not installed",
                    path.display()
                )),
            }],
            warnings: vec![],
        }),
    }
}

fn script_uninstall(
    harness: &str,
    path: &Path,
    text: Option<&str>,
    record: Option<&FileRecord>,
    force: bool,
) -> Result<Computed> {
    let event = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let Some(t) = text else {
        return Ok(Computed::absent());
    };
    let recorded = record.and_then(|r| r.entries.first()).map(|e| e.sha256.clone());
    let current = fsx::sha256_hex(t.as_bytes());
    if !script_is_ours(t, harness, &event) || !still_ours(force, recorded.as_deref(), &current) {
        return Ok(Computed {
            after: Some(t.into()),
            record: None,
            notes: vec![EntryNote {
                event,
                action: Action::UserEdited,
                detail: Some(format!("`{}` changed since install; left in place (--force removes it)", path.display())),
            }],
            warnings: vec![],
        });
    }
    Ok(Computed {
        after: None,
        record: None,
        notes: vec![EntryNote { event, action: Action::Removed, detail: None }],
        warnings: vec![],
    })
}

/// Copies the running binary to `$OVMEM_HOME/bin/ovmem` (atomically, only when it differs), so
/// hook commands keep one stable path across upgrades.
pub fn stage_runtime(env: &Env) -> Result<Option<PathBuf>> {
    let dest = env.runtime_bin();
    let exe = std::env::current_exe().context("could not find the running ovmem binary")?;
    if fsx::resolve(&exe).ok() == fsx::resolve(&dest).ok() {
        return Ok(None);
    }
    let bytes = std::fs::read(&exe).with_context(|| format!("could not read `{}`", exe.display()))?;
    if fsx::read_opt(&dest)?.as_deref() == Some(&bytes[..]) {
        return Ok(None);
    }
    let dir = dest.parent().expect("bin dir");
    std::fs::create_dir_all(dir).with_context(|| format!("could not create `{}`", dir.display()))?;
    fsx::write_atomic(&dest, &bytes, Some(0o755))?;
    Ok(Some(dest))
}

/// Resolves `--project` (default: the current directory) to an absolute path.
pub fn project_dir(arg: Option<&Path>) -> Result<PathBuf> {
    let p = match arg {
        Some(p) => p.to_path_buf(),
        None => std::env::current_dir().context("could not read the current directory")?,
    };
    let abs = if p.is_absolute() { p } else { std::env::current_dir()?.join(p) };
    if !abs.is_dir() {
        bail!("the project directory `{}` does not exist", abs.display());
    }
    Ok(std::fs::canonicalize(&abs).unwrap_or(abs))
}
