//! One module per verb. Shared here: the refusal error (exit 2) and harness selection.

pub mod backend;
pub mod check;
pub mod demo;
pub mod install;
pub mod memory;
pub mod migrate;
pub mod status;
pub mod sync;
pub mod uninstall;

use std::io::IsTerminal;
use std::path::PathBuf;

use anyhow::Result;

use crate::cli::Selection;
use crate::env::Env;
use crate::harness::{self, Harness, Scope};
use crate::integrate;

/// ovmem will not go on without something from the user (a harness list, a confirmation).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Refusal(pub String);

pub fn interactive() -> bool {
    std::io::stdin().is_terminal() && std::io::stderr().is_terminal()
}

/// The scope and project a selection means: `--project` alone implies project scope.
pub fn scope_and_project(sel: &Selection) -> Result<(Scope, Option<PathBuf>)> {
    let scope = if sel.project.is_some() { Scope::Project } else { sel.scope };
    let project = match scope {
        Scope::Project => Some(integrate::project_dir(sel.project.as_deref())?),
        Scope::User => None,
    };
    Ok((scope, project))
}

/// The harnesses a command works on: `--harness`, else a prompt on a terminal, else a refusal
/// that lists what was detected.
pub fn select(sel: &Selection, env: &Env, verb: &str) -> Result<Vec<&'static Harness>> {
    if let Some(list) = &sel.harness {
        return harness::parse_list(list, env);
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
pub fn tilde(env: &Env, p: &std::path::Path) -> String {
    match p.strip_prefix(&env.home) {
        Ok(rest) => format!("~/{}", rest.display()),
        Err(_) => p.display().to_string(),
    }
}
