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
use crate::install::script_dir::script_runtime;
use crate::install::{apply::trust_state, found, plan::read_text, Target};
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
    /// ok, edited, missing, unrecorded (an ovmem entry with no receipt), or foreign (another
    /// ovmem home's)
    state: &'static str,
}

pub fn run(args: StatusArgs, env: &Env) -> Result<i32> {
    let env = env.clone();
    let project = args.project.as_deref().map(|p| super::project_dir(Some(p))).transpose()?;
    let legacy = crate::legacy::scan(&crate::legacy::Scan { env: &env, project: None }, false);
    let mut out = Vec::new();
    for h in harness::all() {
        let detected = h.detect(&env);
        let version = detected
            .binary
            .as_ref()
            .filter(|_| !h.manifest.version_args.is_empty())
            .and_then(|b| version_of(&env, b, &h.manifest.version_args));
        let mut scopes = Vec::new();
        let mut wanted = vec![(Scope::User, None)];
        if let Some(p) = &project {
            wanted.push((Scope::Project, Some(p.clone())));
        }
        for (_, r) in receipt::load_all(&env.ovmem_home())? {
            if r.harness == h.id() && r.scope == Scope::Project && !wanted.iter().any(|(_, p)| p == &r.project) {
                wanted.push((Scope::Project, r.project.clone()));
            }
        }
        for (scope, proj) in wanted {
            if h.scope(scope).is_err() {
                continue;
            }
            let target = Target { env: &env, harness: h, scope, project: proj.clone() };
            let location = target.location()?;
            let (rec, receipt_error) = match receipt::load(&target.receipt_path()) {
                Ok(r) => (r, None),
                Err(e) => (None, Some(format!("{e:#}"))),
            };
            let mut entries = entry_states(&target, &location, rec.as_ref());
            entries.extend(mcp_states(&target, rec.as_ref()));
            let installed = rec.is_some() || receipt_error.is_some() || entries.iter().any(|e| e.state != "foreign");
            let trust = match (&rec, installed, h.manifest.kind) {
                (Some(r), true, InstallKind::JsonHooks) => trust_state(&env, &target, r),
                _ => None,
            };
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
            version,
            tested: h.manifest.tested.clone(),
            scopes,
            legacy: found,
        });
    }
    if args.json {
        output::json(&out);
        return Ok(0);
    }
    let p = Printer::new();
    for s in &out {
        let det = match (&s.detected.binary, &s.detected.config) {
            (Some(b), _) => {
                format!("`{}`{}", tilde(&env, b), s.version.as_deref().map(|v| format!(" {v}")).unwrap_or_default())
            }
            (None, Some(c)) => format!("config `{}`", tilde(&env, c)),
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
                println!("    {label}: {} (`{}`)", p.dim(what), tilde(&env, &sc.location));
                continue;
            }
            let ok = sc.entries.iter().filter(|e| e.state == "ok").count();
            println!(
                "    {label}: {}, {ok}/{} entries intact (`{}`)",
                p.green("installed"),
                sc.entries.len(),
                tilde(&env, &sc.location)
            );
            for e in sc.entries.iter().filter(|e| e.state != "ok") {
                println!("      {} {} {} in `{}`", p.yellow("!"), e.event, e.state, tilde(&env, &e.file));
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
    Ok(0)
}

fn version_of(env: &Env, bin: &std::path::Path, args: &[String]) -> Option<String> {
    let mut child = std::process::Command::new(bin)
        .args(args)
        .env("PATH", env.safe_path())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .ok()?;
    let start = std::time::Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if start.elapsed() < std::time::Duration::from_secs(3) => {
                std::thread::sleep(std::time::Duration::from_millis(20))
            }
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
        }
    }
    let mut s = String::new();
    std::io::Read::read_to_string(&mut child.stdout.take()?, &mut s).ok()?;
    s.lines().next().map(|l| l.trim().to_string()).filter(|l| !l.is_empty())
}

/// The state of the `ovmem` MCP server entries the receipt records.
fn mcp_states(t: &Target, rec: Option<&receipt::Receipt>) -> Vec<EntryStatus> {
    let mut out = Vec::new();
    for f in rec.map(|r| r.files.as_slice()).unwrap_or(&[]) {
        let Some(e) = f.entries.iter().find(|e| e.event == "mcp") else { continue };
        let keys: Vec<&str> = e.key_path.split('.').collect();
        let value = read_text(t, &f.path)
            .ok()
            .and_then(|(_, t)| t)
            .and_then(|t| Document::parse(&t).ok())
            .and_then(|d| d.node_at(&keys).and_then(|n| d.value(n)));
        let state = match value {
            None => "missing",
            Some(v) if receipt::hash_value(&v) == e.sha256 => "ok",
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
                let found = read(&file).map(|text| found::in_file(t, &text)).unwrap_or_default();
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
    }
    out
}
