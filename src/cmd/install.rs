//! `ovmem install`: stage the runtime, merge hooks into each selected harness's config, and
//! trust them where the harness gates hooks (Codex, TRAE CLI); all one transaction.

use anyhow::Result;
use clap::Args;

use super::{scope_and_project, select, tilde, Selection};
use crate::env::Env;
use crate::harness::{Harness, Scope};
use crate::install::{self, Action, FileReport, HarnessResult, Options, Outcome, Target, Verb};
use crate::output::{self, Printer};

#[derive(Args)]
pub struct InstallArgs {
    #[command(flatten)]
    pub sel: Selection,
    /// Do not trust the new hooks in Codex / TRAE CLI (they stay pending until trusted in `/hooks`)
    #[arg(long)]
    pub no_trust: bool,
}

pub fn run(args: InstallArgs, env: &Env) -> Result<i32> {
    let sel = &args.sel;
    let harnesses = select(sel, env, "install")?;
    let (scope, project) = scope_and_project(sel)?;
    let opts = Options { dry_run: sel.dry_run, force: sel.force, no_trust: args.no_trust };
    let code = install_harnesses(env, &harnesses, scope, project.as_deref(), opts, sel.json)?;
    if !sel.json {
        warn_legacy(env, &harnesses, project.as_deref());
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

/// Installs ovmem into each harness (one transaction for all of them) and reports.
pub fn install_harnesses(
    env: &Env,
    harnesses: &[&'static Harness],
    scope: Scope,
    project: Option<&std::path::Path>,
    opts: Options,
    json: bool,
) -> Result<i32> {
    let targets: Vec<Target> =
        harnesses.iter().map(|h| Target { env, harness: h, scope, project: project.map(Into::into) }).collect();
    let bar = progress(harnesses.len(), json);
    let out = install::run(env, &targets, Verb::Install, opts);
    bar.finish_and_clear();
    let out = out?;
    if json {
        output::json(
            &serde_json::json!({"runtime": env.runtime_bin(), "dry_run": opts.dry_run, "harnesses": out.results}),
        );
        return Ok(out.code);
    }
    print_outcome(env, &out, opts.dry_run);
    let p = Printer::new();
    let ok: Vec<&str> = out.results.iter().filter(|r| r.error.is_none()).map(|r| r.harness.as_str()).collect();
    if opts.dry_run {
        eprintln!("\n{} nothing was written", p.bold("dry run:"));
    } else if !ok.is_empty() {
        let changed = out.results.iter().filter_map(|r| r.report.as_ref()).any(install::Report::changed)
            || out.results.iter().any(|r| r.trust.as_ref().is_some_and(|t| t.state == "trusted"));
        let scope_text = match (project, scope) {
            (Some(p), Scope::Project) => format!("project `{}`", p.display()),
            _ => "user scope".into(),
        };
        eprintln!(
            "\n{} for {} ({scope_text}); hooks run `{}`",
            p.bold(if changed { "ovmem is installed" } else { "ovmem was already installed; nothing changed" }),
            ok.join(", "),
            tilde(env, &env.runtime_bin())
        );
    }
    Ok(out.code)
}

fn progress(n: usize, json: bool) -> indicatif::ProgressBar {
    if n < 2 || json || !std::io::IsTerminal::is_terminal(&std::io::stderr()) {
        return indicatif::ProgressBar::hidden();
    }
    let bar = indicatif::ProgressBar::new_spinner();
    bar.set_message(format!("installing into {n} harnesses"));
    bar.enable_steady_tick(std::time::Duration::from_millis(80));
    bar
}

/// Human output of an install, uninstall or repair run.
pub fn print_outcome(env: &Env, out: &Outcome, dry_run: bool) {
    let p = Printer::new();
    if let Some(s) = &out.staged {
        eprintln!("{} runtime `{}`", p.green("staged"), tilde(env, s));
    }
    for r in &out.results {
        print_result(&p, env, r, dry_run);
    }
    for w in &out.warnings {
        p.warn(w);
    }
}

fn print_result(p: &Printer, env: &Env, r: &HarnessResult, dry_run: bool) {
    if let Some(e) = &r.error {
        eprintln!("{} {}: {e}", p.red("✗"), p.bold(&r.harness));
        return;
    }
    let Some(report) = &r.report else { return };
    for f in &report.files {
        print_file(p, env, &r.harness, f, dry_run);
    }
    for w in &report.warnings {
        p.warn(w);
    }
    if let Some(t) = &r.trust {
        match t.state.as_str() {
            "trusted" => eprintln!("    {} {}", p.green("trusted"), t.message),
            "already-trusted" => eprintln!("    {} {}", p.dim("="), t.message),
            "pending" => p.warn(&format!("trust pending: {}", t.message)),
            _ => {}
        }
        for w in &t.problems {
            p.warn(&format!("{} reported: {w}", r.harness));
        }
    }
}

pub fn print_file(p: &Printer, env: &Env, harness: &str, f: &FileReport, dry_run: bool) {
    let mark = match f.change {
        "unchanged" => p.dim("="),
        "deleted" => p.yellow("-"),
        _ => p.green("✓"),
    };
    eprintln!("{mark} {} `{}`: {}", p.bold(harness), tilde(env, &f.path), f.change);
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
