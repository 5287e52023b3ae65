//! After an upgrade by any path (npm, pip, install.sh, cargo), the hooks still run the copy
//! `ovmem install` staged in `$OVMEM_HOME/bin`. The first command of a newer CLI replaces that
//! copy atomically when it is older (versions compared, never mtimes), and status, doctor and
//! install say so plainly when it could not be (or `OVMEM_NO_RESTAGE=1` keeps it).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use semver::Version;

use crate::env::Env;
use crate::fsx::{self, InstallLock};

/// How long the staged runtime may take to answer `--version`.
const VERSION_BUDGET: Duration = Duration::from_secs(3);

/// The staged runtime compared with this CLI.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Staged {
    /// Nothing staged: ovmem is not installed (nothing to keep current).
    Absent,
    /// This very binary, or one of the same version.
    Current,
    /// Older than this CLI: the hooks run `staged`.
    Older { staged: String },
    /// Newer than this CLI (an older CLI never downgrades the hooks).
    Newer { staged: String },
    /// It did not say which version it is (damaged, not executable, hung).
    Unknown { why: String },
}

/// This CLI's version.
pub fn cli_version() -> &'static str {
    env!("CARGO_PKG_VERSION")
}

/// The staged runtime's state, asking it for its version when it is not this binary.
pub fn staged(env: &Env) -> Staged {
    let bin = env.runtime_bin();
    if std::fs::symlink_metadata(&bin).is_err() {
        return Staged::Absent;
    }
    if is_this_binary(&bin) {
        return Staged::Current;
    }
    let said = match version_of(&bin) {
        Ok(v) => v,
        Err(e) => return Staged::Unknown { why: format!("{e:#}") },
    };
    let Some(theirs) = said.strip_prefix("ovmem ").and_then(|v| Version::parse(v.trim()).ok()) else {
        return Staged::Unknown { why: format!("`{} --version` said `{said}`", bin.display()) };
    };
    let ours = Version::parse(cli_version()).expect("Cargo's version is semver");
    match theirs.cmp(&ours) {
        std::cmp::Ordering::Less => Staged::Older { staged: theirs.to_string() },
        std::cmp::Ordering::Equal => Staged::Current,
        std::cmp::Ordering::Greater => Staged::Newer { staged: theirs.to_string() },
    }
}

fn is_this_binary(bin: &Path) -> bool {
    let Ok(exe) = std::env::current_exe() else { return false };
    match (fsx::resolve_in(&exe, None), fsx::resolve_in(bin, None)) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

/// `bin --version`'s first line, within [`VERSION_BUDGET`].
fn version_of(bin: &Path) -> Result<String> {
    let mut child = Command::new(bin)
        .arg("--version")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .with_context(|| format!("could not run `{}`", bin.display()))?;
    let started = Instant::now();
    loop {
        if child.try_wait()?.is_some() {
            break;
        }
        if started.elapsed() > VERSION_BUDGET {
            let _ = child.kill();
            let _ = child.wait();
            anyhow::bail!("`{} --version` did not answer within {} s", bin.display(), VERSION_BUDGET.as_secs());
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let out = child.wait_with_output()?;
    anyhow::ensure!(out.status.success(), "`{} --version` exited {}", bin.display(), out.status);
    Ok(String::from_utf8_lossy(&out.stdout).lines().next().unwrap_or_default().trim().to_string())
}

/// What a command says when the hooks run an older runtime than this CLI, with what to run.
pub fn stale_message(env: &Env, staged: &str) -> String {
    format!(
        "the hooks run ovmem {staged} (`{}`), older than this ovmem {}; run `ovmem install --harness {}` to update them",
        crate::cmd::tilde(env, &env.runtime_bin()),
        cli_version(),
        installed_ids(env).join(","),
    )
}

/// The harnesses with a receipt, for the command to run.
fn installed_ids(env: &Env) -> Vec<String> {
    let mut ids: Vec<String> =
        crate::receipt::load_all(&env.ovmem_home()).unwrap_or_default().into_iter().map(|(_, r)| r.harness).collect();
    ids.sort();
    ids.dedup();
    if ids.is_empty() {
        ids.push("<harness>".into());
    }
    ids
}

/// The warning status, doctor and install show, if the hooks run an older (or unknown) runtime.
pub fn warning(env: &Env) -> Option<String> {
    match staged(env) {
        Staged::Older { staged } => Some(stale_message(env, &staged)),
        Staged::Unknown { why } => Some(format!(
            "the hooks' runtime `{}` does not say its version ({why}); run `ovmem install --harness {}` to restage it",
            crate::cmd::tilde(env, &env.runtime_bin()),
            installed_ids(env).join(",")
        )),
        _ => None,
    }
}

/// Whether restaging is turned off (`OVMEM_NO_RESTAGE=1`: keep the hooks' runtime as it is).
fn restage_off() -> bool {
    std::env::var_os("OVMEM_NO_RESTAGE").is_some_and(|v| !v.is_empty() && v != "0")
}

/// What start-up did about the staged runtime.
#[derive(Debug, PartialEq, Eq)]
pub enum Restaged {
    /// Nothing to do (or turned off, or nothing staged).
    No,
    /// The runtime at `path` was `from` and is now this binary.
    Done { path: PathBuf, from: String },
}

/// Replaces an older staged runtime with this binary, atomically (a temp file beside it, then a
/// rename: a hook starting meanwhile runs either the old or the new copy, whole). Under the
/// installer lock; a command holding it (an install under way) stages the runtime itself.
pub fn restage_if_older(env: &Env) -> Result<Restaged> {
    if restage_off() {
        return Ok(Restaged::No);
    }
    let Staged::Older { staged: from } = staged(env) else { return Ok(Restaged::No) };
    let home = env.ovmem_home();
    let Some(_lock) = InstallLock::try_acquire(&home) else {
        anyhow::bail!("another ovmem command holds the installer lock");
    };
    // Another CLI may have restaged it while this one waited.
    if !matches!(staged(env), Staged::Older { .. }) {
        return Ok(Restaged::No);
    }
    let exe = std::env::current_exe().context("could not find this ovmem's own binary")?;
    let bytes = std::fs::read(&exe).with_context(|| format!("could not read `{}`", exe.display()))?;
    let dest = env.runtime_bin();
    fsx::write_atomic(&dest, &bytes, Some(0o700))?;
    Ok(Restaged::Done { path: dest, from })
}

/// Start-up's part: restage an older runtime and say so on stderr (or why it could not be).
pub fn on_start(env: &Env) {
    let p = crate::output::Printer::new();
    match restage_if_older(env) {
        Ok(Restaged::No) => {}
        Ok(Restaged::Done { path, from }) => eprintln!(
            "{} the hooks' runtime `{}` from ovmem {from} to {}",
            p.green("updated"),
            crate::cmd::tilde(env, &path),
            cli_version()
        ),
        Err(e) => p.warn(&format!(
            "could not update the hooks' runtime `{}`: {e:#}",
            crate::cmd::tilde(env, &env.runtime_bin())
        )),
    }
}
