//! `ovmem uninstall`: remove exactly what the receipts say ovmem added (and ovmem-marked
//! entries of older installs), the trust records it wrote, and the directories it created.

use anyhow::Result;

use super::{interactive, scope_and_project, tilde, Refusal};
use crate::cli::UninstallArgs;
use crate::env::Env;
use crate::harness::{self, Harness};
use crate::integrate::{Action, Options, Target, Unparseable};
use crate::output::{self, Printer};
use crate::{receipt, trust};

pub fn run(args: UninstallArgs) -> Result<i32> {
    let env = Env::from_process()?;
    let sel = &args.sel;
    let (scope, project) = scope_and_project(sel)?;
    let harnesses: Vec<&'static Harness> = match &sel.harness {
        Some(list) => harness::parse_list(list, &env)?,
        None => harness::all().iter().filter(|h| h.scope(scope).is_ok()).collect(),
    };
    if !sel.yes && !sel.dry_run {
        let names: Vec<&str> = harnesses.iter().map(|h| h.id()).collect();
        if !interactive() {
            return Err(Refusal(format!(
                "uninstall changes config files of {}; pass --yes to go ahead (or --dry-run to see the diff)",
                names.join(", ")
            ))
            .into());
        }
        let go = dialoguer::Confirm::new()
            .with_prompt(format!("Remove ovmem from {} ({} scope)?", names.join(", "), scope.as_str()))
            .default(false)
            .interact()?;
        if !go {
            return Err(Refusal("nothing was changed".into()).into());
        }
    }
    let opts = Options { dry_run: sel.dry_run, force: sel.force };
    let p = Printer::new();
    let mut code = 0;
    let mut reports = Vec::new();
    for h in harnesses {
        let target = Target { env: &env, harness: h, scope, project: project.clone() };
        let rpath = receipt::path(&env.ovmem_home(), h.id(), scope, project.as_deref());
        let old = receipt::load(&rpath).ok().flatten();
        match target.uninstall(opts) {
            Ok(report) => {
                let mut untrusted = 0;
                if !opts.dry_run {
                    if let Some(r) = &old {
                        match trust::untrust(&r.trust, r.trust_snapshot.as_deref()) {
                            Ok(n) => untrusted = n,
                            Err(e) => p.warn(&format!("{}: could not remove trust records: {e:#}", h.id())),
                        }
                        if let Some(s) = &r.trust_snapshot {
                            let _ = std::fs::remove_file(s);
                        }
                    }
                }
                if !sel.json {
                    print_report(&p, &env, &report, opts.dry_run);
                    if untrusted > 0 {
                        eprintln!("    {} {untrusted} trust record(s)", p.yellow("-"));
                    }
                }
                reports.push(serde_json::json!({"report": report, "trust_records_removed": untrusted}));
            }
            Err(e) => {
                code = code.max(if e.downcast_ref::<Unparseable>().is_some() { 2 } else { 1 });
                if !sel.json {
                    eprintln!("{} {}: {e:#}", p.red("✗"), p.bold(h.id()));
                }
                reports.push(serde_json::json!({"harness": h.id(), "error": format!("{e:#}")}));
            }
        }
    }
    if !opts.dry_run && receipt::load_all(&env.ovmem_home())?.is_empty() {
        // Nothing installed anywhere: the staged runtime goes too. Memories stay.
        let bin = env.runtime_bin();
        let home = env.ovmem_home();
        let _ = std::fs::remove_dir_all(home.join("locks"));
        crate::fsx::remove_empty_dirs(&[receipt::dir(&home)]);
        if bin.exists() && std::fs::remove_file(&bin).is_ok() {
            crate::fsx::remove_empty_dirs(&[home.clone(), bin.parent().unwrap().to_path_buf()]);
            if !sel.json {
                let db = home.join("memory.db");
                let kept =
                    if db.exists() { format!("; memories stay in `{}`", tilde(&env, &db)) } else { String::new() };
                eprintln!("{} runtime `{}`{kept}", p.yellow("removed"), tilde(&env, &bin));
            }
        }
    }
    if sel.json {
        output::json(&serde_json::json!({"dry_run": opts.dry_run, "scope": scope, "harnesses": reports}));
    }
    Ok(code)
}

fn print_report(p: &Printer, env: &Env, r: &crate::integrate::Report, dry_run: bool) {
    if r.files.iter().all(|f| f.entries.is_empty() && f.change == "unchanged") {
        eprintln!("{} {}: not installed ({} scope)", p.dim("·"), p.bold(&r.harness), r.scope.as_str());
        return;
    }
    for f in &r.files {
        eprintln!("{} {} `{}`: {}", p.green("✓"), p.bold(&r.harness), tilde(env, &f.path), f.change);
        for e in &f.entries {
            match e.action {
                Action::Removed => eprintln!("    {} {} removed", p.yellow("-"), e.event),
                _ => eprintln!("    {} {} {}", p.yellow("!"), e.event, e.detail.as_deref().unwrap_or("left in place")),
            }
        }
        if dry_run {
            if let Some(d) = &f.diff {
                print!("{d}");
            }
        }
    }
}
