//! `ovmem install`: stage the runtime, merge hooks into each selected harness's config, and
//! trust them where the harness gates hooks (Codex, TRAE CLI).

use anyhow::Result;
use serde::Serialize;

use super::{scope_and_project, select, tilde};
use crate::cli::InstallArgs;
use crate::env::Env;
use crate::harness::{Harness, Scope};
use crate::integrate::{self, Action, Options, Report, Target, Unparseable};
use crate::output::{self, Printer};
use crate::{receipt, trust};

#[derive(Serialize)]
struct HarnessResult {
    #[serde(flatten)]
    report: Option<Report>,
    harness: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    trust: Option<TrustReport>,
}

#[derive(Serialize, Default)]
pub struct TrustReport {
    /// trusted, pending, or not-needed
    pub state: String,
    pub message: String,
}

pub fn run(args: InstallArgs) -> Result<i32> {
    let env = Env::from_process()?;
    let sel = &args.sel;
    let harnesses = select(sel, &env, "install")?;
    let (scope, project) = scope_and_project(sel)?;
    let opts = Options { dry_run: sel.dry_run, force: sel.force };
    let code = install_harnesses(&env, &harnesses, scope, project.as_deref(), opts, sel.json, args.no_trust)?;
    if !sel.json {
        warn_legacy(&env, &harnesses, project.as_deref());
    }
    Ok(code)
}

/// Points at legacy memory integrations on the same harnesses: both would recall and store.
fn warn_legacy(env: &Env, harnesses: &[&'static Harness], project: Option<&std::path::Path>) {
    let report = crate::legacy::scan(&crate::legacy::Scan { env, project }, false);
    let ids: Vec<&str> = harnesses.iter().map(|h| h.id()).collect();
    let mut seen = std::collections::BTreeSet::new();
    for f in report
        .findings
        .iter()
        .filter(|f| matches!(f.kind, crate::legacy::Kind::Legacy | crate::legacy::Kind::Deprecated))
    {
        if f.harnesses.iter().any(|h| ids.contains(&h.as_str())) && seen.insert(f.integration.clone()) {
            Printer::new().warn(&format!(
                "{} is also installed ({}): memory would be recalled and stored twice. Run `{}` to replace it",
                f.integration,
                tilde(env, &f.file),
                f.fix
            ));
        }
    }
}

/// Installs ovmem into each harness (one transaction each), trusts where needed, and reports.
pub fn install_harnesses(
    env: &Env,
    harnesses: &[&'static Harness],
    scope: Scope,
    project: Option<&std::path::Path>,
    opts: Options,
    json: bool,
    no_trust: bool,
) -> Result<i32> {
    let env = env.clone();
    let project: Option<std::path::PathBuf> = project.map(std::path::Path::to_path_buf);
    let p = Printer::new();
    let staged = if opts.dry_run { None } else { integrate::stage_runtime(&env)? };
    let bar = progress(harnesses.len(), json);
    let mut results = Vec::new();
    let mut code = 0;
    for h in harnesses {
        bar.set_message(h.id().to_string());
        let target = Target { env: &env, harness: h, scope, project: project.clone() };
        let mut result = HarnessResult { report: None, harness: h.id().to_string(), error: None, trust: None };
        match target.install(opts) {
            Ok(report) => {
                if !opts.dry_run && h.manifest.trust.is_some() {
                    result.trust = Some(if no_trust {
                        TrustReport { state: "pending".into(), message: manual_trust_step(h) }
                    } else {
                        trust_hooks(&env, &target)
                    });
                }
                result.report = Some(report);
            }
            Err(e) => {
                code = code.max(if e.downcast_ref::<Unparseable>().is_some() { 2 } else { 1 });
                result.error = Some(format!("{e:#}"));
            }
        }
        results.push(result);
        bar.inc(1);
    }
    bar.finish_and_clear();
    if json {
        output::json(&serde_json::json!({"runtime": env.runtime_bin(), "dry_run": opts.dry_run, "harnesses": results}));
        return Ok(code);
    }
    if let Some(s) = staged {
        eprintln!("{} runtime `{}`", p.green("staged"), tilde(&env, &s));
    }
    for r in &results {
        print_result(&p, &env, r, opts.dry_run);
    }
    let ok: Vec<&str> = results.iter().filter(|r| r.error.is_none()).map(|r| r.harness.as_str()).collect();
    if opts.dry_run {
        eprintln!("\n{} nothing was written", p.bold("dry run:"));
    } else if !ok.is_empty() {
        let changed = results.iter().filter_map(|r| r.report.as_ref()).any(Report::changed);
        let scope_text = match (&project, scope) {
            (Some(p), Scope::Project) => format!("project `{}`", p.display()),
            _ => "user scope".into(),
        };
        eprintln!(
            "\n{} for {} ({scope_text}); hooks run `{}`",
            p.bold(if changed { "ovmem is installed" } else { "ovmem was already installed; nothing changed" }),
            ok.join(", "),
            tilde(&env, &env.runtime_bin())
        );
    }
    Ok(code)
}

fn progress(n: usize, json: bool) -> indicatif::ProgressBar {
    if n < 2 || json || !std::io::IsTerminal::is_terminal(&std::io::stderr()) {
        return indicatif::ProgressBar::hidden();
    }
    let bar = indicatif::ProgressBar::new(n as u64);
    if let Ok(style) = indicatif::ProgressStyle::with_template("{spinner} [{pos}/{len}] {msg}") {
        bar.set_style(style);
    }
    bar
}

pub fn manual_trust_step(h: &Harness) -> String {
    format!(
        "{} runs hooks only once they are trusted: start `{}`, open `/hooks`, and trust the ovmem entries",
        h.manifest.name,
        h.manifest.binaries.first().map(String::as_str).unwrap_or(h.id())
    )
}

/// Trusts ovmem's hooks through the harness's app-server and records what was written.
fn trust_hooks(env: &Env, target: &Target) -> TrustReport {
    let h = target.harness;
    let mechanism = h.manifest.trust.as_deref().unwrap_or_default();
    let Some(binary) = h.detect(env).binary else {
        return TrustReport {
            state: "pending".into(),
            message: format!(
                "`{}` is not on PATH, so ovmem could not trust its hooks. {}",
                h.manifest.binaries[0],
                manual_trust_step(h)
            ),
        };
    };
    let Ok(hooks_file) = target.location() else { return TrustReport::default() };
    let cwd = target.project.clone().unwrap_or_else(|| env.home.clone());
    let snap_source = h.manifest.trust_config.as_ref().and_then(|c| env.expand(c, None).ok());
    let rpath = receipt::path(&env.ovmem_home(), h.id(), target.scope, target.project.as_deref());
    let mut rec = match receipt::load(&rpath) {
        Ok(Some(r)) => r,
        _ => return TrustReport { state: "pending".into(), message: manual_trust_step(h) },
    };
    if rec.trust_snapshot.is_none() && rec.trust.is_empty() {
        rec.trust_snapshot = snap_source.and_then(|c| trust::snapshot(&env.ovmem_home(), &c).ok().flatten());
    }
    match trust::trust(&binary, mechanism, h.id(), &hooks_file, &cwd) {
        Ok(out) => {
            for w in out.written {
                rec.trust.retain(|t| t.key != w.key);
                rec.trust.push(w);
            }
            let _ = crate::fsx::write_atomic(&rpath, &rec.to_bytes(), Some(0o644));
            if out.pending.is_empty() && out.trusted > 0 {
                TrustReport {
                    state: "trusted".into(),
                    message: format!("{} ovmem hook(s) trusted in {}", out.trusted, h.manifest.name),
                }
            } else if out.trusted == 0 && out.pending.is_empty() && target.scope == Scope::Project {
                TrustReport {
                    state: "pending".into(),
                    message: format!(
                        "{} lists no hooks for `{}`: it loads project hooks only in trusted projects. Trust the project in {} \
                         (it asks on first start) and run `ovmem install` again; ovmem does not mark projects trusted for you",
                        h.manifest.name,
                        cwd.display(),
                        h.manifest.name
                    ),
                }
            } else {
                let mut msg =
                    format!("{} ovmem hook(s) still pending trust. {}", out.pending.len().max(1), manual_trust_step(h));
                if !out.problems.is_empty() {
                    msg.push_str(&format!(" ({} reported: {})", h.manifest.name, out.problems.join("; ")));
                }
                TrustReport { state: "pending".into(), message: msg }
            }
        }
        Err(e) => TrustReport {
            state: "pending".into(),
            message: format!("trusting failed: {e:#}. {}", manual_trust_step(h)),
        },
    }
}

fn print_result(p: &Printer, env: &Env, r: &HarnessResult, dry_run: bool) {
    if let Some(e) = &r.error {
        eprintln!("{} {}: {e}", p.red("✗"), p.bold(&r.harness));
        return;
    }
    let Some(report) = &r.report else { return };
    for f in &report.files {
        eprintln!("{} {} `{}`: {}", mark(p, f.change), p.bold(&r.harness), tilde(env, &f.path), f.change);
        for e in &f.entries {
            let (sym, text) = match e.action {
                Action::Added => (p.green("+"), "added"),
                Action::Updated => (p.green("~"), "updated"),
                Action::Unchanged => (p.dim("="), "unchanged"),
                Action::Removed => (p.yellow("-"), "removed"),
                Action::UserEdited => (p.yellow("!"), "edited by you"),
                Action::Conflict => (p.yellow("!"), "conflict"),
            };
            let detail = e.detail.as_deref().map(|d| format!(": {d}")).unwrap_or_default();
            eprintln!("    {sym} {} {text}{detail}", e.event);
        }
        for b in &f.backups {
            eprintln!("    {} `{}`", p.dim("backup"), tilde(env, b));
        }
        if dry_run {
            if let Some(d) = &f.diff {
                print!("{d}");
            }
        }
    }
    for w in &report.warnings {
        p.warn(w);
    }
    if let Some(t) = &r.trust {
        match t.state.as_str() {
            "trusted" => eprintln!("    {} {}", p.green("trusted"), t.message),
            "pending" => p.warn(&format!("trust pending: {}", t.message)),
            _ => {}
        }
    }
}

fn mark(p: &Printer, change: &str) -> String {
    match change {
        "unchanged" => p.dim("="),
        "deleted" => p.yellow("-"),
        _ => p.green("✓"),
    }
}
