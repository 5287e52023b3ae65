//! One module per verb, each with its own clap arguments. Shared here: the harness selection
//! flags, the refusal error (exit 2), and what every command does first (finish an interrupted
//! transaction, sweep temp files of dead processes).

pub mod backend;
pub mod check;
pub mod demo;
pub mod doctor;
pub mod install;
pub mod memory;
pub mod migrate;
pub mod repair;
pub mod status;
pub mod sync;
pub mod uninstall;

use std::io::IsTerminal;
use std::path::{Path, PathBuf};

use anyhow::Result;
use clap::Args;

use crate::env::Env;
use crate::fsx::{self, journal, InstallLock};
use crate::harness::{self, Harness, Scope};
use crate::output::Printer;

/// ovmem will not go on without something from the user (a harness list, a confirmation, a
/// usable argument): exit 2.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Refusal(pub String);

#[derive(Args, Clone)]
pub struct Selection {
    /// Comma-separated harness ids (claude-code, codex, cursor, cline, trae-cli, gemini-cli) or `all` (every detected one)
    #[arg(long, value_name = "LIST")]
    pub harness: Option<String>,
    /// Where to install: the user's own config, or one project's
    #[arg(long, value_enum, default_value = "user")]
    pub scope: Scope,
    /// The project for --scope project (default: the current directory)
    #[arg(long, value_name = "DIR")]
    pub project: Option<PathBuf>,
    /// Show the diff of every file, write nothing
    #[arg(long)]
    pub dry_run: bool,
    /// Do not ask for confirmation
    #[arg(long, short = 'y')]
    pub yes: bool,
    /// Report as JSON on stdout
    #[arg(long)]
    pub json: bool,
    /// Replace or remove ovmem entries even where the user edited them, edit read-only configs,
    /// take over another ovmem home's entries
    #[arg(long)]
    pub force: bool,
}

pub fn interactive() -> bool {
    std::io::stdin().is_terminal() && std::io::stderr().is_terminal()
}

/// Resolves `--project` (default: the current directory) to a canonical directory.
pub fn project_dir(arg: Option<&Path>) -> Result<PathBuf> {
    let p = match arg {
        Some(p) => p.to_path_buf(),
        None => std::env::current_dir().map_err(|e| Refusal(format!("could not read the current directory: {e}")))?,
    };
    let abs = if p.is_absolute() { p } else { std::env::current_dir()?.join(p) };
    match std::fs::metadata(&abs) {
        Err(_) => Err(Refusal(format!("the project directory `{}` does not exist", abs.display())).into()),
        Ok(m) if !m.is_dir() => {
            Err(Refusal(format!("`{}` is not a directory; --project takes a project's directory", abs.display()))
                .into())
        }
        Ok(_) => Ok(std::fs::canonicalize(&abs)?),
    }
}

/// The scope and project a selection means: `--project` alone implies project scope.
pub fn scope_and_project(sel: &Selection) -> Result<(Scope, Option<PathBuf>)> {
    let scope = if sel.project.is_some() { Scope::Project } else { sel.scope };
    let project = match scope {
        Scope::Project => Some(project_dir(sel.project.as_deref())?),
        Scope::User => None,
    };
    Ok((scope, project))
}

/// `--harness LIST`, as harnesses; an unknown name is a usage error.
pub fn parse_harnesses(list: &str, env: &Env) -> Result<Vec<&'static Harness>> {
    harness::parse_list(list, env).map_err(|e| Refusal(format!("{e:#}")).into())
}

/// The harnesses a command works on: `--harness`, else a prompt on a terminal, else a refusal
/// that lists what was detected.
pub fn select(sel: &Selection, env: &Env, verb: &str) -> Result<Vec<&'static Harness>> {
    if let Some(list) = &sel.harness {
        return parse_harnesses(list, env);
    }
    let all = harness::all();
    let found: Vec<bool> = all.iter().map(|h| h.detect(env).found()).collect();
    let names: Vec<&str> = all.iter().zip(&found).filter(|(_, f)| **f).map(|(h, _)| h.id()).collect();
    if !interactive() {
        return Err(Refusal(format!(
            "no --harness given and no terminal to ask on; detected: {}. Run `ovmem {verb} --harness {}`",
            if names.is_empty() { "none".to_string() } else { names.join(", ") },
            if names.is_empty() { "claude-code".to_string() } else { names.join(",") },
        ))
        .into());
    }
    let labels: Vec<String> = all
        .iter()
        .zip(&found)
        .map(|(h, f)| format!("{} ({}){}", h.id(), h.manifest.name, if *f { "" } else { " - not detected" }))
        .collect();
    let picked = dialoguer::MultiSelect::new()
        .with_prompt(format!("Harnesses to {verb} (space to toggle, enter to confirm)"))
        .items(&labels)
        .defaults(&found)
        .interact()?;
    if picked.is_empty() {
        return Err(Refusal("nothing selected".into()).into());
    }
    Ok(picked.into_iter().map(|i| &all[i]).collect())
}

/// `~/x` for paths under the home directory, for shorter messages.
pub fn tilde(env: &Env, p: &Path) -> String {
    match p.strip_prefix(&env.home) {
        Ok(rest) => format!("~/{}", rest.display()),
        Err(_) => p.display().to_string(),
    }
}

/// Directories where ovmem writes for the harnesses at user scope (and in `project`).
fn harness_dirs(env: &Env, project: Option<&Path>) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for h in harness::all() {
        let m = &h.manifest;
        let mut specs = vec![(m.scopes.user.as_ref(), None)];
        if let Some(p) = project {
            specs.push((m.scopes.project.as_ref(), Some(p)));
        }
        for (spec, proj) in specs {
            let Some(spec) = spec else { continue };
            for f in spec.file.iter().chain(&spec.mcp_file) {
                if let Some(d) = env.expand(f, proj).ok().and_then(|p| p.parent().map(Path::to_path_buf)) {
                    out.push(d);
                }
            }
            for d in spec.dir.iter().chain(&spec.fallback_dir) {
                if let Ok(d) = env.expand(d, proj) {
                    out.push(d);
                }
            }
        }
        if let Some(d) = m
            .trust_config
            .as_ref()
            .and_then(|c| env.expand(c, None).ok())
            .and_then(|p| p.parent().map(Path::to_path_buf))
        {
            out.push(d);
        }
    }
    out.sort();
    out.dedup();
    out
}

/// What every command does first: a transaction a dead process left is finished (rolled back,
/// or forward if it had committed), and ovmem's temp files of dead processes are swept. Commands
/// that change files wait for a running one; the others skip this while one runs.
pub fn startup(env: &Env, mutating: bool, project: Option<&Path>) {
    let home = env.ovmem_home();
    let p = Printer::new();
    if std::fs::symlink_metadata(journal::dir(&home)).is_ok() {
        let lock = if mutating { InstallLock::acquire(&home).ok() } else { InstallLock::try_acquire(&home) };
        if lock.is_some() {
            match journal::recover(&home) {
                Ok(Some(r)) => {
                    p.warn(&r.to_string());
                    for w in &r.warnings {
                        p.warn(w);
                    }
                }
                Ok(None) => {}
                Err(e) => p.warn(&format!("could not finish an interrupted transaction: {e:#}")),
            }
        }
    }
    let mut dirs = vec![home.clone(), home.join("bin"), home.join("receipts"), home.join("spool"), home.join("locks")];
    dirs.extend(harness_dirs(env, if mutating { project } else { None }));
    for d in dirs {
        fsx::sweep_temps(&d);
    }
}
