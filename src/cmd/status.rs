//! `ovmem status`: per harness and scope, what is detected, what ovmem installed, and whether
//! each entry is still as installed (or was edited, removed, or is waiting for trust).

use std::path::PathBuf;

use anyhow::Result;
use serde::Serialize;

use super::tilde;
use crate::cli::StatusArgs;
use crate::env::Env;
use crate::harness::{self, Detection, InstallKind, Scope};
use crate::integrate::{self, entry_is_ours, script_is_ours, Target};
use crate::output::{self, Printer};
use crate::{edit::json::Document, fsx, receipt, trust};

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
    entries: Vec<EntryStatus>,
    #[serde(skip_serializing_if = "Option::is_none")]
    trust: Option<String>,
}

#[derive(Serialize)]
struct EntryStatus {
    event: String,
    file: PathBuf,
    /// ok, edited, missing, or unrecorded (an ovmem entry with no receipt)
    state: &'static str,
}

pub fn run(args: StatusArgs) -> Result<i32> {
    let env = Env::from_process()?;
    let project = args.project.as_deref().map(|p| integrate::project_dir(Some(p))).transpose()?;
    let legacy = crate::legacy::scan(&crate::legacy::Scan { env: &env, project: None }, false);
    let mut out = Vec::new();
    for h in harness::all() {
        let detected = h.detect(&env);
        let version = detected
            .binary
            .as_ref()
            .filter(|_| !h.manifest.version_args.is_empty())
            .and_then(|b| version_of(b, &h.manifest.version_args));
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
            let rec = receipt::load(&receipt::path(&env.ovmem_home(), h.id(), scope, proj.as_deref()))?;
            let mut entries = entry_states(h, &location, rec.as_ref());
            entries.extend(mcp_states(rec.as_ref()));
            let installed = rec.is_some() || !entries.is_empty();
            let trust = match (&h.manifest.trust, installed, &detected.binary) {
                (Some(m), true, Some(bin)) if h.manifest.kind == InstallKind::JsonHooks => {
                    let cwd = proj.clone().unwrap_or_else(|| env.home.clone());
                    Some(match trust::status(bin, m, h.id(), &location, &cwd) {
                        Ok((n, pending)) if pending.is_empty() && n > 0 => "trusted".to_string(),
                        Ok((_, pending)) if !pending.is_empty() => {
                            format!("trust pending ({} hook(s)); open `/hooks` in {}", pending.len(), h.manifest.name)
                        }
                        Ok(_) => format!(
                            "trust pending: {} lists none of ovmem's hooks (is the project trusted?)",
                            h.manifest.name
                        ),
                        Err(e) => format!("trust unknown: {e:#}"),
                    })
                }
                (Some(_), true, None) => Some(format!("trust unknown: `{}` is not on PATH", h.manifest.binaries[0])),
                _ => None,
            };
            scopes.push(ScopeStatus { scope, project: proj, location, installed, entries, trust });
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
            if !sc.installed {
                println!("    {label}: {} (`{}`)", p.dim("not installed"), tilde(&env, &sc.location));
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

fn version_of(bin: &std::path::Path, args: &[String]) -> Option<String> {
    let mut child = std::process::Command::new(bin)
        .args(args)
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
fn mcp_states(rec: Option<&receipt::Receipt>) -> Vec<EntryStatus> {
    let mut out = Vec::new();
    for f in rec.map(|r| r.files.as_slice()).unwrap_or(&[]) {
        let Some(e) = f.entries.iter().find(|e| e.event == "mcp") else { continue };
        let keys: Vec<&str> = e.key_path.split('.').collect();
        let value = fsx::read_opt(&f.path)
            .ok()
            .flatten()
            .and_then(|b| String::from_utf8(b).ok())
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
fn entry_states(h: &harness::Harness, location: &std::path::Path, rec: Option<&receipt::Receipt>) -> Vec<EntryStatus> {
    let mut out = Vec::new();
    match h.manifest.kind {
        InstallKind::JsonHooks => {
            let key = h.manifest.events_key.as_deref().unwrap_or("hooks");
            let doc = fsx::read_opt(location)
                .ok()
                .flatten()
                .and_then(|b| String::from_utf8(b).ok())
                .and_then(|t| Document::parse(&t).ok());
            let recorded: Vec<receipt::Entry> =
                rec.and_then(|r| r.file(location)).map(|f| f.entries.clone()).unwrap_or_default();
            let events: Vec<String> = doc
                .as_ref()
                .and_then(|d| d.node_at(&[key]))
                .map(|n| n.members().iter().map(|m| m.key.clone()).collect())
                .unwrap_or_default();
            for event in
                events.iter().chain(recorded.iter().map(|e| &e.event)).collect::<std::collections::BTreeSet<_>>()
            {
                let doc = doc.as_ref().expect("events come from the document or the receipt");
                let found: Vec<serde_json::Value> = doc
                    .node_at(&[key, event])
                    .map(|a| {
                        a.elements()
                            .iter()
                            .filter_map(|n| doc.value(n))
                            .filter(|v| entry_is_ours(v, h.id(), Some(event)))
                            .collect()
                    })
                    .unwrap_or_default();
                let want = recorded.iter().find(|e| &e.event == event);
                let state = match (found.first(), want) {
                    (None, None) => continue,
                    (None, Some(_)) => "missing",
                    (Some(_), None) => "unrecorded",
                    (Some(v), Some(w)) if receipt::hash_value(v) == w.sha256 => "ok",
                    (Some(_), Some(_)) => "edited",
                };
                out.push(EntryStatus { event: event.clone(), file: location.to_path_buf(), state });
            }
        }
        InstallKind::ScriptDir => {
            let files: Vec<receipt::FileRecord> = rec.map(|r| r.files.clone()).unwrap_or_default();
            for f in &files {
                let event = f.entries.first().map(|e| e.event.clone()).unwrap_or_default();
                let state = match fsx::read_opt(&f.path).ok().flatten() {
                    None => "missing",
                    Some(b) if f.entries.first().is_some_and(|e| e.sha256 == fsx::sha256_hex(&b)) => "ok",
                    Some(_) => "edited",
                };
                out.push(EntryStatus { event, file: f.path.clone(), state });
            }
            for hook in &h.manifest.hooks {
                let p = location.join(&hook.event);
                if !files.iter().any(|f| f.path == p)
                    && fsx::read_opt(&p)
                        .ok()
                        .flatten()
                        .is_some_and(|b| script_is_ours(&String::from_utf8_lossy(&b), h.id(), &hook.event))
                {
                    out.push(EntryStatus { event: hook.event.clone(), file: p, state: "unrecorded" });
                }
            }
        }
    }
    out
}
