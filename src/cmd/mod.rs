//! One module per verb, each with its own clap arguments. Shared here: the harness selection
//! flags, the refusal error (exit 2), and what every command does first (finish an interrupted
//! transaction, sweep temp files of dead processes).

pub mod backend;
pub mod carry;
pub mod check;
pub mod demo;
pub mod doctor;
pub mod harnesses;
pub mod install;
pub mod memory;
pub mod migrate;
pub mod repair;
pub mod status;
pub mod sync;
pub mod ui;
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
    #[arg(long, value_name = "LIST", help = harness_help(), long_help = harness_long_help())]
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

/// `--harness`'s help, from the registry.
fn harness_help() -> String {
    let ids: Vec<&str> = harness::all().iter().map(|h| h.id()).collect();
    format!("Comma-separated harnesses ({}) or `all` (every detected one)", ids.join(", "))
}

fn harness_long_help() -> String {
    format!(
        "Comma-separated harnesses, by id or alias: {}; or `all` (every harness detected on this machine). \
         `ovmem harnesses` lists them",
        harness::names_text()
    )
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

/// The harnesses a command works on: `--harness`, else a picker on a terminal (nothing selected
/// at first; each row says whether the harness was detected and where ovmem is installed), else a
/// refusal that lists what was detected. `Ok(None)`: the user cancelled the picker.
pub fn select(sel: &Selection, env: &Env, verb: &str) -> Result<Option<Vec<&'static Harness>>> {
    if let Some(list) = &sel.harness {
        return parse_harnesses(list, env).map(Some);
    }
    let all = harness::all();
    let detected: Vec<harness::Detection> = all.iter().map(|h| h.detect(env)).collect();
    let names: Vec<&str> = all.iter().zip(&detected).filter(|(_, d)| d.found()).map(|(h, _)| h.id()).collect();
    if !interactive() {
        return Err(Refusal(format!(
            "no --harness given and no terminal to ask on; detected: {}. Run `ovmem {verb} --harness {}`",
            if names.is_empty() { "none".to_string() } else { names.join(", ") },
            if names.is_empty() { "claude-code".to_string() } else { names.join(",") },
        ))
        .into());
    }
    let (scope, project) = scope_and_project(sel)?;
    let name_width = all.iter().map(|h| h.manifest.name.chars().count()).max().unwrap_or(0);
    let items: Vec<crate::prompt::Item> = all
        .iter()
        .zip(&detected)
        .map(|(h, d)| {
            let found = match (&d.binary, &d.config) {
                (Some(b), _) => format!("detected `{}`", tilde(env, b)),
                (None, Some(c)) => format!("detected `{}`", tilde(env, c)),
                (None, None) => "not detected".to_string(),
            };
            let target = crate::install::Target { env, harness: h, scope, project: project.clone() };
            let installed = match (h.scope(scope), target.receipt_path().exists()) {
                (Err(_), _) => format!("; no {} scope", scope.as_str()),
                (Ok(_), true) => match target.location() {
                    Ok(l) => format!("; installed in `{}`", tilde(env, &l)),
                    Err(_) => "; installed".to_string(),
                },
                (Ok(_), false) => String::new(),
            };
            crate::prompt::Item {
                label: h.id().to_string(),
                detail: format!("{:<name_width$}  {found}{installed}", h.manifest.name),
                dim: !d.found() || h.scope(scope).is_err(),
            }
        })
        .collect();
    let where_ = match &project {
        Some(p) => format!(" (project `{}`)", tilde(env, p)),
        None => String::new(),
    };
    let prompt = format!("{} ovmem{where_}:", if verb == "install" { "Install" } else { verb });
    Ok(crate::prompt::multi_select(&prompt, &items)?.map(|picked| picked.into_iter().map(|i| &all[i]).collect()))
}

/// `~/x` for paths under the home directory, for shorter messages. A path can come from a
/// project (a committed symlink's target, a file's name): its terminal escapes are dropped.
pub fn tilde(env: &Env, p: &Path) -> String {
    let shown = match p.strip_prefix(&env.home) {
        Ok(rest) => format!("~/{}", rest.display()),
        Err(_) => p.display().to_string(),
    };
    crate::termsafe::clean(&shown).into_owned()
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
    if let Some(left) = crate::cmd::migrate::unfinished(env) {
        p.warn(&format!(
            "a migrate was interrupted before ovmem was installed for {}; `ovmem migrate` finishes it",
            left.join(", ")
        ));
    }
    let mut dirs = vec![home.clone(), home.join("bin"), home.join("receipts"), home.join("spool"), home.join("locks")];
    dirs.extend(harness_dirs(env, if mutating { project } else { None }));
    for d in dirs {
        fsx::sweep_temps(&d);
    }
}
