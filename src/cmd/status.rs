//! `ovmem status`: per harness and scope, what is detected, what ovmem installed, and whether
//! each entry is still as installed (or was edited, removed, or is waiting for trust).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use anyhow::Result;
use serde::Serialize;

use clap::Args;

use super::tilde;
use crate::env::Env;
use crate::harness::{self, Detection, InstallKind, Scope};
use crate::install::marker::{self, Owner};
use crate::install::plugin_file;
use crate::install::script_dir::script_runtime;
use crate::install::{apply::trust_state, editor::read_text, found, Target};
use crate::output::{self, Printer};
use crate::{edit::json::Document, receipt};

#[derive(Args)]
pub struct StatusArgs {
    /// Also report project scope for this directory
    #[arg(long, value_name = "DIR")]
    pub project: Option<PathBuf>,
    #[arg(long)]
    pub json: bool,
}

#[derive(Serialize)]
struct HarnessStatus {
    harness: String,
    name: String,
    detected: Detection,
    #[serde(skip_serializing_if = "Option::is_none")]
    version: Option<String>,
    /// The harness version ovmem's end-to-end tests ran.
    #[serde(skip_serializing_if = "Option::is_none")]
    tested: Option<String>,
    scopes: Vec<ScopeStatus>,
    /// Legacy memory integrations found for this harness (see `ovmem check`).
    legacy: Vec<String>,
}

#[derive(Serialize)]
struct ScopeStatus {
    scope: Scope,
    #[serde(skip_serializing_if = "Option::is_none")]
    project: Option<PathBuf>,
    location: PathBuf,
    installed: bool,
    /// Set when the receipt does not parse (`ovmem repair` rebuilds it).
    #[serde(skip_serializing_if = "Option::is_none")]
    receipt_error: Option<String>,
    entries: Vec<EntryStatus>,
    #[serde(skip_serializing_if = "Option::is_none")]
    trust: Option<String>,
}

#[derive(Serialize)]
struct EntryStatus {
    event: String,
    file: PathBuf,
    /// ok, edited, missing, unrecorded (an ovmem entry with no receipt), foreign (another
    /// ovmem home's), or unparseable (its file does not parse)
    state: &'static str,
}

/// The memory backend as status shows it: what is configured and, when it answers within
/// [`HEALTH_BUDGET`], that it does (`ovmem backend test` checks it fully).
#[derive(Serialize, Default)]
pub(crate) struct BackendStatus {
    kind: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    url: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    bank: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    user: Option<String>,
    token: bool,
    /// `None`: local, or not asked.
    #[serde(skip_serializing_if = "Option::is_none")]
    reachable: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    health: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
    /// A setting that says where memories go is invalid: the server is not used (`error` says
    /// which), and the bank or user is not the default the missing key would mean.
    #[serde(skip)]
    not_used: bool,
}

/// What waits to be stored or sent.
#[derive(Serialize, Default)]
pub(crate) struct QueueStatus {
    /// Memories in the local store not yet sent to the remote backend.
    outbox: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    outbox_oldest: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    last_send_error: Option<String>,
    /// Memories the server refused again and again: kept locally, no longer sent.
    parked: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    parked_error: Option<String>,
    /// Turns a hook could not store (the store was locked or broken), stored at the next session
    /// start.
    spooled: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    spooled_oldest: Option<i64>,
    /// Turns and prompts a running hook is storing right now (written ahead, under its lock): not
    /// waiting, and not in `spooled`.
    #[serde(skip_serializing_if = "is_zero")]
    spooled_in_flight: usize,
    /// Memories in the local store.
    memories: i64,
}

/// The runtime the hooks run, against this CLI.
#[derive(Serialize)]
struct RuntimeStatus {
    path: PathBuf,
    /// `absent`, `current`, `older`, `newer` or `unknown`.
    state: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    version: Option<String>,
    cli_version: &'static str,
    /// What to run when the hooks run an older (or unknown) runtime.
    #[serde(skip_serializing_if = "Option::is_none")]
    warning: Option<String>,
}

fn runtime_status(env: &Env) -> RuntimeStatus {
    use crate::upgrade::{self, Staged};
    let staged = upgrade::staged(env);
    let (state, version, warning) = match &staged {
        Staged::Absent => ("absent", None, None),
        Staged::Current => ("current", Some(upgrade::cli_version().to_string()), None),
        Staged::Older { staged } => ("older", Some(staged.clone()), Some(upgrade::stale_message(env, staged))),
        Staged::Newer { staged } => ("newer", Some(staged.clone()), None),
        Staged::Unknown { .. } => ("unknown", None, upgrade::warning(env)),
    };
    RuntimeStatus { path: env.runtime_bin(), state, version, cli_version: upgrade::cli_version(), warning }
}

/// How long status waits for the memory server's health answer (in parallel with the rest).
const HEALTH_BUDGET: std::time::Duration = std::time::Duration::from_millis(200);

pub(crate) fn backend_status(env: &Env) -> BackendStatus {
    let settings = match crate::backend::Settings::load(env) {
        Ok(s) => s,
        Err(e) => return BackendStatus { kind: "unknown".into(), error: Some(format!("{e:#}")), ..Default::default() },
    };
    let mut b = BackendStatus {
        kind: settings.kind.value.id().into(),
        url: settings.url.as_ref().map(|u| crate::backend::redact_url(&u.value)),
        bank: settings.bank.as_ref().map(|u| u.value.clone()),
        user: settings.user.as_ref().map(|u| u.value.clone()),
        token: settings.token.is_some(),
        not_used: settings.kind.value != crate::backend::Kind::Local && !settings.unusable.is_empty(),
        ..Default::default()
    };
    match crate::backend::connect(&settings, Some(&env.ovmem_home().join("state"))) {
        Ok(None) => {}
        Ok(Some(remote)) => match remote.health(HEALTH_BUDGET) {
            Ok(h) => (b.reachable, b.health) = (Some(true), Some(h)),
            Err(e) => (b.reachable, b.error) = (Some(false), Some(e.to_string())),
        },
        Err(e) => (b.reachable, b.error) = (Some(false), Some(e.to_string())),
    }
    b
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

pub(crate) fn queue_status(env: &Env) -> QueueStatus {
    let d = crate::runtime::spool::depth(env);
    let mut q = QueueStatus {
        spooled: d.waiting,
        spooled_oldest: d.oldest,
        spooled_in_flight: d.in_flight,
        ..Default::default()
    };
    let db = env.ovmem_home().join("memory.db");
    if db.exists() {
        crate::home::private_umask();
        let store = crate::store::Store::open(&db, std::time::Duration::from_millis(200));
        if let Ok(stats) = store.and_then(|s| s.stats()) {
            q.outbox = stats.queued;
            q.outbox_oldest = stats.queued_since;
            // Stored by an older ovmem, maybe with a server's escape sequences in it.
            q.last_send_error = stats.last_send_error.map(|e| crate::termsafe::clean(&e).into_owned());
            q.parked = stats.parked;
            q.parked_error = stats.parked_error.map(|e| crate::termsafe::clean(&e).into_owned());
            q.memories = stats.memories;
        }
    }
    q
}

/// A scope whose trust Codex (or TRAE CLI) must be asked about.
struct TrustAsk {
    harness: usize,
    scope: usize,
}

/// What a trust answer depends on: the binary, the hooks file, the trust config, the receipt and
/// the project, as they are now.
fn trust_key(env: &Env, t: &Target, location: &Path) -> Option<String> {
    let bin = t.harness.detect(env).binary?;
    let files = [
        crate::cache::file_key(&bin)?,
        crate::cache::file_key(location).unwrap_or_default(),
        t.harness
            .manifest
            .trust_config
            .as_ref()
            .and_then(|c| env.expand(c, None).ok())
            .and_then(|p| crate::cache::file_key(&p))
            .unwrap_or_default(),
        crate::cache::file_key(&t.receipt_path()).unwrap_or_default(),
        t.project.as_ref().map(|p| p.display().to_string()).unwrap_or_default(),
    ];
    let parts: Vec<&str> = files.iter().map(String::as_str).collect();
    Some(crate::cache::key("trust", &parts))
}

/// Where a failed trust answer is kept: under its key and the current ten minutes, so it is
/// asked again at the latest ten minutes later.
fn unanswered(key: &str) -> String {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_secs();
    format!("{key}@{}", now / 600)
}

pub fn run(args: StatusArgs, env: &Env) -> Result<i32> {
    let env = env.clone();
    let project = args.project.as_deref().map(|p| super::project_dir(Some(p))).transpose()?;
    // The server's health (200 ms at most) is asked while the rest runs.
    let (backend, queue, out) = std::thread::scope(|s| -> Result<_> {
        let backend = s.spawn(|| backend_status(&env));
        let queue = queue_status(&env);
        let out = harnesses(&env, project.as_deref())?;
        Ok((backend.join().unwrap_or_default(), queue, out))
    })?;
    let runtime = runtime_status(&env);
    if args.json {
        output::json(&serde_json::json!({"harnesses": out, "backend": backend, "queue": queue, "runtime": runtime}));
        config_problems(&Printer::new(), &env);
        return Ok(0);
    }
    let p = Printer::new();
    print_harnesses(&p, &env, &out);
    print_backend(&p, &backend, &queue);
    if let Some(w) = &runtime.warning {
        p.warn(w);
    }
    config_problems(&p, &env);
    Ok(0)
}

/// The settings the hooks ignore (on stderr, so `--json` stays one document): the hooks only log
/// them, and this is where the user sees them.
fn config_problems(p: &Printer, env: &Env) {
    let (_, problems) = crate::config::Config::load_lenient(env);
    for problem in &problems {
        p.warn(&format!("config: {}; fix it (`ovmem doctor` checks)", problem.for_terminal()));
    }
}

fn harnesses(env: &Env, project: Option<&Path>) -> Result<Vec<HarnessStatus>> {
    let legacy = crate::legacy::scan(&crate::legacy::Scan { env, project: None }, false);
    let receipts = receipt::load_all(&env.ovmem_home())?;
    let mut cache = crate::cache::Cache::load(env);
    let mut out = Vec::new();
    let mut asks: Vec<TrustAsk> = Vec::new();
    let mut binaries: Vec<(PathBuf, Vec<String>)> = Vec::new();
    let mut versioned: Vec<usize> = Vec::new();
    for h in harness::all() {
        let detected = h.detect(env);
        if let Some(b) = &detected.binary {
            versioned.push(out.len());
            binaries.push((b.clone(), h.manifest.version_args.clone()));
        }
        let mut scopes = Vec::new();
        let mut wanted = vec![(Scope::User, None)];
        if let Some(p) = project {
            wanted.push((Scope::Project, Some(p.to_path_buf())));
        }
        for (_, r) in &receipts {
            if r.harness == h.id() && r.scope == Scope::Project && !wanted.iter().any(|(_, p)| p == &r.project) {
                wanted.push((Scope::Project, r.project.clone()));
            }
        }
        for (scope, proj) in wanted {
            if h.scope(scope).is_err() {
                continue;
            }
            let target = Target { env, harness: h, scope, project: proj.clone() };
            let location = target.location()?;
            let (rec, receipt_error) = match receipt::load(&target.receipt_path()) {
                Ok(r) => (r, None),
                Err(e) => (None, Some(format!("{e:#}"))),
            };
            let mut entries = entry_states(&target, &location, rec.as_ref());
            entries.extend(mcp_states(&target, rec.as_ref()));
            unparseable(&target, &mut entries);
            let installed = rec.is_some() || receipt_error.is_some() || entries.iter().any(|e| e.state != "foreign");
            let mut trust = None;
            if rec.is_some() && installed && h.manifest.kind == InstallKind::JsonHooks && h.manifest.trust.is_some() {
                let key = trust_key(env, &target, &location);
                let found = key.as_ref().and_then(|k| cache.get(k).or_else(|| cache.get(&unanswered(k))));
                match found {
                    Some(v) => trust = v,
                    None => asks.push(TrustAsk { harness: out.len(), scope: scopes.len() }),
                }
            }
            scopes.push(ScopeStatus { scope, project: proj, location, installed, receipt_error, entries, trust });
        }
        // A finding belongs to this harness when it sits under one of the harness's own locations.
        let roots: Vec<PathBuf> = h
            .manifest
            .scopes
            .user
            .iter()
            .flat_map(|sc| sc.detect.iter().chain(sc.file.iter()).chain(sc.dir.iter()))
            .filter_map(|p| env.expand(p, None).ok())
            .collect();
        let mut found: Vec<String> = legacy
            .findings
            .iter()
            .filter(|f| matches!(f.kind, crate::legacy::Kind::Legacy | crate::legacy::Kind::Deprecated))
            .filter(|f| f.harnesses.iter().any(|x| x == h.id()))
            .filter(|f| f.harnesses.len() == 1 || roots.iter().any(|r| f.file.starts_with(r)))
            .map(|f| f.integration.clone())
            .collect();
        found.sort();
        found.dedup();
        out.push(HarnessStatus {
            harness: h.id().into(),
            name: h.manifest.name.clone(),
            detected,
            version: None,
            tested: h.manifest.tested.clone(),
            scopes,
            legacy: found,
        });
    }
    // The slow part, all at once: versions (npm packages are read, not run; other binaries are
    // cached by their identity) and trust listings (cached by the files they depend on).
    let all = harness::all();
    let asked: Vec<Target> = asks
        .iter()
        .map(|a| {
            let sc = &out[a.harness].scopes[a.scope];
            Target { env, harness: &all[a.harness], scope: sc.scope, project: sc.project.clone() }
        })
        .collect();
    let (versions, trusts) = std::thread::scope(|s| {
        let handles: Vec<_> = asked
            .iter()
            .map(|target| {
                s.spawn(move || {
                    let rec = receipt::load(&target.receipt_path()).ok().flatten()?;
                    trust_state(env, target, &rec)
                })
            })
            .collect();
        let versions = crate::version::versions(env, &mut cache, &binaries);
        (versions, handles.into_iter().map(|h| h.join().ok().flatten()).collect::<Vec<_>>())
    });
    for (i, v) in versioned.into_iter().zip(versions) {
        out[i].version = v;
    }
    for ((a, target), t) in asks.iter().zip(&asked).zip(trusts) {
        // Keyed by the files as they are after the answer: a harness may write its own files
        // while it answers, and the next run would miss. A settled answer holds until they
        // change; "trust unknown" (no answer, a failure) for a few minutes only, so a harness
        // that does not answer costs its timeout once, not at every `ovmem status`.
        let key = target.location().ok().and_then(|l| trust_key(env, target, &l));
        if let (Some(k), Some(answer)) = (&key, t.as_deref()) {
            let k = if answer.starts_with("trust unknown") { unanswered(k) } else { k.clone() };
            cache.put(k, t.clone());
        }
        out[a.harness].scopes[a.scope].trust = t;
    }
    cache.save(env);
    Ok(out)
}

fn noteworthy(s: &HarnessStatus) -> bool {
    s.detected.found() || s.scopes.iter().any(|sc| sc.installed) || !s.legacy.is_empty()
}

fn print_harnesses(p: &Printer, env: &Env, out: &[HarnessStatus]) {
    for s in out.iter().filter(|s| noteworthy(s)) {
        let det = match (&s.detected.binary, &s.detected.config) {
            (Some(b), _) => {
                format!("`{}`{}", tilde(env, b), s.version.as_deref().map(|v| format!(" {v}")).unwrap_or_default())
            }
            (None, Some(c)) => format!("config `{}`", tilde(env, c)),
            (None, None) => p.dim("not detected"),
        };
        let tested = s.tested.as_deref().map(|t| p.dim(&format!(" (ovmem tested with {t})"))).unwrap_or_default();
        println!("{} {}: {det}{tested}", p.bold(&s.harness), p.dim(&format!("({})", s.name)));
        for sc in &s.scopes {
            let label = match &sc.project {
                Some(pr) => format!("project `{}`", pr.display()),
                None => "user".into(),
            };
            if let Some(e) = &sc.receipt_error {
                println!("    {label}: {} {e}", p.yellow("receipt damaged:"));
            }
            if !sc.installed {
                let foreign = sc.entries.iter().any(|e| e.state == "foreign");
                let what = if foreign {
                    "not installed from this ovmem home; another home's hooks are there"
                } else {
                    "not installed"
                };
                println!("    {label}: {} (`{}`)", p.dim(what), tilde(env, &sc.location));
                continue;
            }
            let ok = sc.entries.iter().filter(|e| e.state == "ok").count();
            println!(
                "    {label}: {}, {ok}/{} entries intact (`{}`)",
                p.green("installed"),
                sc.entries.len(),
                tilde(env, &sc.location)
            );
            for e in sc.entries.iter().filter(|e| e.state != "ok") {
                if e.state == "unparseable" {
                    let file = tilde(env, &e.file);
                    println!(
                        "      {} {}: `{file}` does not parse (`ovmem doctor` says where)",
                        p.yellow("!"),
                        e.event
                    );
                    continue;
                }
                println!("      {} {} {} in `{}`", p.yellow("!"), e.event, e.state, tilde(env, &e.file));
            }
            if let Some(t) = &sc.trust {
                let t = if t == "trusted" { p.green(t) } else { p.yellow(t) };
                println!("      {t}");
            }
        }
        if !s.legacy.is_empty() {
            println!(
                "    {} {} (see `ovmem check`, replace with `ovmem migrate --harness {}`)",
                p.yellow("legacy:"),
                s.legacy.join(", "),
                s.harness
            );
        }
    }
    let quiet: Vec<&str> = out.iter().filter(|s| !noteworthy(s)).map(|s| s.harness.as_str()).collect();
    if quiet.len() == out.len() {
        println!(
            "no harness detected on this machine, and ovmem is not installed anywhere (not detected: {}; ovmem looks \
             for their binaries on PATH and for their config directories)",
            quiet.join(", ")
        );
    } else if !quiet.is_empty() {
        println!("{}", p.dim(&format!("not detected: {}", quiet.join(", "))));
    }
}

fn print_backend(p: &Printer, b: &BackendStatus, q: &QueueStatus) {
    let reach = match (b.reachable, &b.health, &b.error) {
        (_, _, Some(e)) if b.not_used => format!(": {} {e}", p.red("not used:")),
        (Some(true), Some(h), _) => format!(": {}", p.green(&format!("reachable ({h})"))),
        (Some(false), _, Some(e)) if e.contains("did not answer within") => {
            format!(": {}", p.dim("no answer within 200 ms (`ovmem backend test` waits longer)"))
        }
        (Some(false), _, Some(e)) => format!(": {} {e}", p.yellow("not reachable:")),
        _ => String::new(),
    };
    let what = match b.kind.as_str() {
        "local" => "local (memories stay in this machine's store)".to_string(),
        "unknown" => format!("{} {}", p.red("unreadable:"), b.error.as_deref().unwrap_or_default()),
        kind => {
            let url = b.url.as_deref().unwrap_or("(no URL)");
            let scope = match (&b.bank, &b.user) {
                (Some(bank), _) => format!(", bank `{bank}`"),
                (None, Some(user)) => format!(", user `{user}`"),
                (None, None) if kind == "hindsight" && !b.not_used => ", a team bank per repository".to_string(),
                _ => String::new(),
            };
            format!("{kind} at {url}{scope}{}", if b.token { ", token set" } else { "" })
        }
    };
    println!("{} {what}{reach}", p.bold("backend:"));
    let mut waiting = Vec::new();
    if q.outbox > 0 {
        let age = q.outbox_oldest.map(|t| format!(", the oldest from {}", format_age(t))).unwrap_or_default();
        let why = q.last_send_error.as_deref().map(|e| format!("; last error: {e}")).unwrap_or_default();
        waiting.push(format!(
            "{} waiting to be sent{age}{why} (`ovmem sync` sends them)",
            output::count(q.outbox, "memory", "memories")
        ));
    }
    if q.parked > 0 {
        let why = q.parked_error.as_deref().map(|e| format!(" (last reason: {e})")).unwrap_or_default();
        waiting.push(format!(
            "{} parked: refused by the server{why}; kept locally, `ovmem sync --retry-parked` sends them again",
            output::count(q.parked, "memory", "memories")
        ));
    }
    if q.spooled > 0 {
        let age = q.spooled_oldest.map(|t| format!(", the oldest from {}", format_age(t))).unwrap_or_default();
        waiting.push(format!(
            "{} spooled, stored at the next session start{age}",
            output::count(q.spooled as i64, "turn", "turns")
        ));
    }
    let mut stored = format!("{} in the local store", output::count(q.memories, "memory", "memories"));
    if q.spooled_in_flight > 0 {
        stored.push_str(&format!(
            "; {} being stored by a running hook",
            output::count(q.spooled_in_flight as i64, "turn", "turns")
        ));
    }
    if waiting.is_empty() {
        println!("{} nothing waiting; {stored}", p.bold("queue:"));
    } else {
        println!("{} {}; {stored}", p.bold("queue:"), p.yellow(&waiting.join("; ")));
    }
}

/// `2026-12-01 (3 h ago)` for unix seconds.
pub fn format_age(t: i64) -> String {
    let ago = (crate::store::now() - t).max(0);
    let rel = match ago {
        a if a < 120 => format!("{a} s ago"),
        a if a < 7200 => format!("{} min ago", a / 60),
        a if a < 172_800 => format!("{} h ago", a / 3600),
        a => format!("{} days ago", a / 86_400),
    };
    format!("{} ({rel})", crate::runtime::format_date(t))
}

/// An entry "missing" from a file that does not parse is not known to be missing: it is said so
/// (`does not parse`), and `ovmem install` names the line and column.
fn unparseable(t: &Target, entries: &mut [EntryStatus]) {
    for e in entries.iter_mut().filter(|e| e.state == "missing") {
        let Some(text) = read_text(t, &e.file).ok().and_then(|(_, t)| t) else { continue };
        let broken = match e.file.extension().and_then(|x| x.to_str()) {
            Some("toml") => text.parse::<toml::Table>().is_err(),
            Some("json" | "jsonc") => Document::parse(&text).is_err(),
            _ => false,
        };
        if broken {
            e.state = "unparseable";
        }
    }
}

/// The state of the `ovmem` MCP server entries the receipt records.
fn mcp_states(t: &Target, rec: Option<&receipt::Receipt>) -> Vec<EntryStatus> {
    let mut out = Vec::new();
    for f in rec.map(|r| r.files.as_slice()).unwrap_or(&[]) {
        let Some(e) = f.entries.iter().find(|e| e.event == "mcp") else { continue };
        let keys: Vec<&str> = e.key_path.split('.').collect();
        let text = read_text(t, &f.path).ok().and_then(|(_, t)| t);
        let toml = f.format == "toml";
        let value = match &text {
            Some(t) if toml => crate::install::mcp_toml::value_at(t, &keys),
            Some(t) => Document::parse(t).ok().and_then(|d| d.node_at(&keys).and_then(|n| d.value(n))),
            None => None,
        };
        let hash =
            |v: &serde_json::Value| if toml { crate::install::mcp_toml::hash(v) } else { receipt::hash_value(v) };
        let state = match value {
            None => "missing",
            Some(v) if hash(&v) == e.sha256 => "ok",
            Some(_) => "edited",
        };
        out.push(EntryStatus { event: "mcp server".into(), file: f.path.clone(), state });
    }
    out
}

/// The state of each ovmem entry at a location, against the receipt.
fn entry_states(t: &Target, location: &Path, rec: Option<&receipt::Receipt>) -> Vec<EntryStatus> {
    let h = t.harness;
    let ours = t.env.runtime_bin();
    let mut out = Vec::new();
    let read = |p: &Path| read_text(t, p).ok().and_then(|(_, t)| t);
    match h.manifest.kind {
        InstallKind::JsonHooks | InstallKind::TomlHooks => {
            let mut files = t.hook_files().unwrap_or_default();
            for f in rec.map(|r| r.files.as_slice()).unwrap_or(&[]) {
                if matches!(f.format.as_str(), "json" | "toml")
                    && f.entries.iter().any(|e| !matches!(e.event.as_str(), "mcp" | "member"))
                    && !files.contains(&f.path)
                {
                    files.push(f.path.clone());
                }
            }
            for file in files {
                let found = read(&file).map(|text| found::in_text(t, &text)).unwrap_or_default();
                let recorded: Vec<receipt::Entry> = rec
                    .and_then(|r| r.file(&file))
                    .map(|f| {
                        f.entries.iter().filter(|e| !matches!(e.event.as_str(), "mcp" | "member")).cloned().collect()
                    })
                    .unwrap_or_default();
                let events: BTreeSet<&String> =
                    found.iter().map(|f| &f.event).chain(recorded.iter().map(|e| &e.event)).collect();
                for event in events {
                    let here: Vec<(&serde_json::Value, Owner)> = found
                        .iter()
                        .filter(|f| &f.event == event)
                        .map(|f| (&f.value, marker::owner(&f.runtime, &ours)))
                        .collect();
                    let mine = here.iter().find(|(_, o)| *o == Owner::Us).map(|(v, _)| *v);
                    let want = recorded.iter().find(|e| &e.event == event);
                    let state = match (mine, want) {
                        (None, None) if !here.is_empty() => "foreign",
                        (None, None) => continue,
                        (None, Some(_)) => "missing",
                        (Some(_), None) => "unrecorded",
                        (Some(v), Some(w)) if receipt::hash_value(v) == w.sha256 => "ok",
                        (Some(_), Some(_)) => "edited",
                    };
                    out.push(EntryStatus { event: event.clone(), file: file.clone(), state });
                }
            }
        }
        InstallKind::ScriptDir => {
            let files: Vec<receipt::FileRecord> = rec.map(|r| r.files.clone()).unwrap_or_default();
            for f in files.iter().filter(|f| f.format == "script") {
                let event = f.entries.first().map(|e| e.event.clone()).unwrap_or_default();
                let state = match read(&f.path) {
                    None => "missing",
                    Some(b) if f.entries.first().is_some_and(|e| e.sha256 == crate::fsx::sha256_hex(b.as_bytes())) => {
                        "ok"
                    }
                    Some(_) => "edited",
                };
                out.push(EntryStatus { event, file: f.path.clone(), state });
            }
            for hook in &h.manifest.hooks {
                let p = location.join(&hook.event);
                if files.iter().any(|f| f.path == p) {
                    continue;
                }
                if let Some(r) = read(&p).and_then(|b| script_runtime(&b, h.id(), &hook.event)) {
                    let state = if marker::owner(&r, &ours) == Owner::Us { "unrecorded" } else { "foreign" };
                    out.push(EntryStatus { event: hook.event.clone(), file: p, state });
                }
            }
        }
        InstallKind::PluginFile => {
            let recorded = rec.and_then(|r| r.file(location)).and_then(|f| f.entries.first()).map(|e| e.sha256.clone());
            let text = read(location);
            let mine =
                text.as_deref().and_then(|x| plugin_file::plugin_runtime(x, h.id())).map(|r| marker::owner(&r, &ours));
            let state = match (text.as_deref(), mine, recorded) {
                (None, _, None) => return out,
                (None, _, Some(_)) => "missing",
                (Some(x), _, Some(w)) if crate::fsx::sha256_hex(x.as_bytes()) == w => "ok",
                (Some(_), Some(Owner::Us), None) => "unrecorded",
                (Some(_), Some(_), None) => "foreign",
                (Some(_), None, None) => return out,
                (Some(_), _, Some(_)) => "edited",
            };
            out.push(EntryStatus { event: plugin_file::EVENT.into(), file: location.to_path_buf(), state });
        }
    }
    out
}
