//! `ovmem migrate` (and `ovmem uninstall --legacy`): take out the legacy integrations ovmem
//! recognises, and only those, with the same safety as install (diff preview, backups, one
//! transaction, refusal on unparseable files); runtime directories and hook scripts are moved to
//! `$OVMEM_HOME/backups/<time>/`, never deleted. Then install ovmem in their place.

use std::collections::BTreeSet;
use std::path::PathBuf;

use anyhow::Result;

use super::{interactive, scope_and_project, tilde, Refusal};
use crate::cli::Selection;
use crate::env::Env;
use crate::fsx::Transaction;
use crate::harness::{self, Harness};
use crate::integrate::Options;
use crate::legacy::{self, Kind, Scan};
use crate::output::{self, Printer};

pub fn run(sel: &Selection, install_after: bool) -> Result<i32> {
    let env = Env::from_process()?;
    let (_, project) = scope_and_project(sel)?;
    let scan = Scan { env: &env, project: project.as_deref() };
    let report = legacy::scan(&scan, false);
    if let Some(e) = report.errors.first() {
        return Err(crate::integrate::Unparseable { path: e.file.clone(), detail: e.error.clone() }.into());
    }
    let wanted: Option<Vec<String>> = match sel.harness.as_deref() {
        None | Some("all") => None,
        Some(list) => Some(harness::parse_list(list, &env)?.iter().map(|h| h.id().to_string()).collect()),
    };
    let selected: BTreeSet<String> = report
        .findings
        .iter()
        .filter(|f| matches!(f.kind, Kind::Legacy | Kind::Deprecated))
        .filter(|f| wanted.as_ref().is_none_or(|w| f.harnesses.iter().any(|h| w.contains(h))))
        .map(|f| f.integration.clone())
        .collect();
    let mut targets: Vec<&'static Harness> = Vec::new();
    for f in report.findings.iter().filter(|f| selected.contains(&f.integration)) {
        for h in f.harnesses.iter().filter_map(|h| harness::find(h)) {
            if wanted.as_ref().is_none_or(|w| w.iter().any(|x| x == h.id()))
                && !targets.iter().any(|t| t.id() == h.id())
            {
                targets.push(h);
            }
        }
    }
    let p = Printer::new();
    let plan = legacy::plan_removal(&scan, &selected)?;
    if selected.is_empty() {
        eprintln!("{} no legacy integrations to migrate", p.green("ok:"));
    } else if !sel.json {
        eprintln!("{} {}", p.bold("removing:"), selected.iter().cloned().collect::<Vec<_>>().join(", "));
        for (path, (before, after)) in &plan.edits {
            eprintln!("  {} `{}`", p.yellow("edit"), tilde(&env, path));
            if sel.dry_run {
                let name = path.display().to_string();
                print!(
                    "{}",
                    similar::TextDiff::from_lines(before, after)
                        .unified_diff()
                        .header(&format!("a{name}"), &format!("b{name}"))
                );
            }
        }
        for m in &plan.moves {
            eprintln!("  {} `{}` (to a backup)", p.yellow("move"), tilde(&env, m));
        }
    }
    if sel.dry_run {
        if sel.json {
            output::json(
                &serde_json::json!({"dry_run": true, "remove": selected, "edits": plan.edits.keys().collect::<Vec<_>>(), "moves": plan.moves}),
            );
        }
        return Ok(0);
    }
    if !selected.is_empty() && !sel.yes {
        if !interactive() {
            return Err(Refusal(
                "migrate changes config files; pass --yes to go ahead (or --dry-run to see the diff)".into(),
            )
            .into());
        }
        if !dialoguer::Confirm::new().with_prompt("Remove these legacy integrations?").default(false).interact()? {
            return Err(Refusal("nothing was changed".into()).into());
        }
    }
    let backup_root = env.ovmem_home().join("backups").join(timestamp());
    let mut moved: Vec<(PathBuf, PathBuf)> = Vec::new();
    if !selected.is_empty() {
        let mut tx = Transaction::new();
        for (path, (_, after)) in &plan.edits {
            let _lock = crate::fsx::FileLock::acquire(&env.ovmem_home(), &crate::fsx::resolve(path)?)?;
            tx.write(path, after.as_bytes(), None, None)?;
        }
        for m in &plan.moves {
            moved.push((m.clone(), legacy::move_to_backup(m, &backup_root)?));
        }
        tx.commit();
    }
    let mut code = 0;
    if install_after && !targets.is_empty() {
        let (scope, _) = scope_and_project(sel)?;
        code = super::install::install_harnesses(
            &env,
            &targets,
            scope,
            project.as_deref(),
            Options { dry_run: false, force: sel.force },
            sel.json,
            false,
        )?;
    }
    if sel.json {
        output::json(
            &serde_json::json!({"removed": selected, "edited": plan.edits.keys().collect::<Vec<_>>(), "moved": moved, "installed": targets.iter().map(|h| h.id()).collect::<Vec<_>>()}),
        );
    } else if !selected.is_empty() {
        eprintln!(
            "{} {} legacy integration(s); file backups are `<file>.ovmem.bak`{}",
            p.green("removed"),
            selected.len(),
            if moved.is_empty() {
                String::new()
            } else {
                format!(", moved items are under `{}`", tilde(&env, &backup_root))
            }
        );
    }
    Ok(code)
}

/// `YYYYMMDD-HHMMSS` (UTC) for backup folder names.
fn timestamp() -> String {
    let now = crate::store::now();
    let date = crate::runtime::format_date(now).replace('-', "");
    let s = now.rem_euclid(86_400);
    format!("{date}-{:02}{:02}{:02}-{}", s / 3600, s / 60 % 60, s % 60, std::process::id())
}
