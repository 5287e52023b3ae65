//! The install pipeline, one path for install, uninstall and repair:
//!
//! 1. desired state from the manifests ([`Target::desired`]);
//! 2. a pure plan: per file, an [`editor::Editor`] computes the new bytes from the current ones
//!    (that is exactly what `--dry-run` shows as a diff), plus backups and the runtime copy;
//! 3. one journaled apply ([`crate::fsx::journal::Tx`]): the files, then trust (Codex, TRAE CLI),
//!    then the receipts, committed together or rolled back together.
//!
//! Editors live beside the formats they edit: [`json_hooks`], [`script_dir`], [`mcp`] (JSON) and
//! [`mcp_toml`] (TOML), and the TOML trust records in [`trust`]. A new kind of install is one more editor.

pub mod apply;
pub mod editor;
pub mod extra;
pub mod found;
pub mod json_hooks;
pub mod marker;
pub mod mcp;
pub mod mcp_toml;
pub mod plan;
pub mod plugin_file;
pub mod repair;
pub mod script_dir;
pub mod toml_hooks;
pub mod trust;

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::Serialize;
use serde_json::Value;

use crate::env::Env;
use crate::harness::{self, Harness, HookSpec, Placeholders, Scope};
use crate::receipt;

pub use apply::{run, HarnessResult, Outcome, TrustReport};

/// Why ovmem will not change a harness's files; always exit 2, always says what to do.
#[derive(Debug, thiserror::Error)]
pub enum Refused {
    #[error(
        "`{path}` does not parse ({detail}); it was left untouched. Fix it (or move it aside) and run ovmem again"
    )]
    Unparseable { path: PathBuf, detail: String },
    #[error(
        "`{path}` is read-only (mode {mode:03o}), so ovmem left it alone. Make it writable (`chmod u+w`), or pass \
         --force to edit it anyway (its mode is kept)"
    )]
    ReadOnly { path: PathBuf, mode: u32 },
    #[error(
        "`{path}` is marked immutable or append-only (`chattr +i`/`+a`), so not even root can change it and ovmem \
         left it untouched. If ovmem should edit it, remove the mark (`chattr -i -a {path}`) and run ovmem again"
    )]
    Immutable { path: PathBuf },
    #[error(
        "`{path}` has ovmem hooks that run `{runtime}`, the runtime of another ovmem home (`{home}`), so ovmem left \
         them alone. Remove them from that home with `OVMEM_HOME={home} ovmem uninstall --harness {harness} --yes`, \
         or pass --force to take them over"
    )]
    Foreign { path: PathBuf, runtime: PathBuf, home: PathBuf, harness: String },
    #[error(
        "`{path}` has `{key}` set to `{have}`, and ovmem's hooks run only with `{want}`; ovmem left the file \
         untouched. Set it to `{want}` yourself (that also turns on the other hooks there), or pass --force to let \
         ovmem set it (uninstall puts `{have}` back)"
    )]
    Setting { path: PathBuf, key: String, have: String, want: String },
    #[error(
        "{harness} runs a hook command without a shell, split on spaces, so it cannot carry the runtime path `{path}`; \
         set OVMEM_HOME to a path of letters, digits and `/._-` only (for example `~/.ovmem`) and install again"
    )]
    UnquotablePath { harness: String, path: PathBuf },
    #[error(
        "the runtime path `{0}` contains a line break or a control character, which a hook command cannot carry; set \
         OVMEM_HOME to a path without one"
    )]
    BadRuntimePath(PathBuf),
    #[error(
        "`{path}` is this project's file and your user-scope file both (the project is your home directory, or the \
         harness's config directory is set into the project, e.g. CLAUDE_CONFIG_DIR), so ovmem left it alone: two receipts would own the same entries. Install at user scope (without --scope project), or \
         for a project of its own"
    )]
    ProjectIsUser { path: PathBuf },
    #[error(
        "`{path}` is a project's file too (the user-scope file is inside a project, e.g. through CLAUDE_CONFIG_DIR), \
         and `{receipt}` records ovmem's entries there, so ovmem left it alone: two receipts would own the same \
         entries. Keep the project-scope install (`ovmem status --project <dir>`), or remove it first with \
         `ovmem uninstall --scope project --project <dir> --yes` and install at user scope again"
    )]
    UserIsProject { path: PathBuf, receipt: PathBuf },
    #[error("`{path}`: {detail}; it was left untouched")]
    Shape { path: PathBuf, detail: String },
    /// The harness has no hooks location at the scope asked for (TRAE CLI at project scope).
    #[error("{0}")]
    NoScope(String),
}

/// One harness at one scope: where its files are and what should be in them.
pub struct Target<'a> {
    pub env: &'a Env,
    pub harness: &'static Harness,
    pub scope: Scope,
    /// The project root (canonical) for project scope.
    pub project: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, Default)]
pub struct Options {
    pub dry_run: bool,
    pub force: bool,
    /// Leave Codex / TRAE CLI trust to the user.
    pub no_trust: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verb {
    Install,
    Uninstall,
    /// Rebuild a lost or damaged receipt from markers and backups.
    Repair,
}

impl Verb {
    pub fn as_str(self) -> &'static str {
        match self {
            Verb::Install => "install",
            Verb::Uninstall => "uninstall",
            Verb::Repair => "repair",
        }
    }
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum Action {
    Added,
    Updated,
    Unchanged,
    Removed,
    /// The user changed ovmem's entry since install; left alone (use --force).
    UserEdited,
    /// A file or entry of someone else's sits where ovmem's would go; left alone.
    Conflict,
}

#[derive(Debug, Clone, Serialize)]
pub struct EntryNote {
    pub event: String,
    pub action: Action,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

impl EntryNote {
    pub fn new(event: &str, action: Action) -> Self {
        Self { event: event.to_string(), action, detail: None }
    }

    pub fn with(event: &str, action: Action, detail: impl Into<String>) -> Self {
        Self { event: event.to_string(), action, detail: Some(detail.into()) }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct FileReport {
    pub path: PathBuf,
    /// created, modified, deleted or unchanged
    pub change: &'static str,
    pub entries: Vec<EntryNote>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub diff: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub backups: Vec<PathBuf>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub harness: String,
    pub scope: Scope,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub project: Option<PathBuf>,
    pub files: Vec<FileReport>,
    pub warnings: Vec<String>,
}

impl Report {
    pub fn changed(&self) -> bool {
        self.files.iter().any(|f| f.change != "unchanged")
    }
}

/// One hook entry as ovmem would write it.
#[derive(Debug, Clone)]
pub struct Desired {
    pub event: String,
    /// The rendered template text (a JSON value or a whole script).
    pub text: String,
    /// The exact command line inside it.
    pub command: String,
}

impl Desired {
    pub fn value(&self) -> Result<Value> {
        serde_json::from_str(&self.text).context("a template did not render to JSON")
    }
}

impl Target<'_> {
    pub fn receipt_path(&self) -> PathBuf {
        receipt::path(&self.env.ovmem_home(), self.harness.id(), self.scope, self.project.as_deref())
    }

    /// The tree every path of this target must stay in: the project, at project scope.
    pub fn root(&self) -> Option<&Path> {
        match self.scope {
            Scope::Project => self.project.as_deref(),
            Scope::User => None,
        }
    }

    pub fn placeholders<'b>(&'b self, bin: &'b Path, home: &'b Path, hook: &'b HookSpec) -> Placeholders<'b> {
        Placeholders {
            bin,
            harness: self.harness.id(),
            event: &hook.event,
            timeout: hook.timeout.unwrap_or(30),
            matcher: hook.matcher.as_deref().unwrap_or(""),
            ovmem_home: home,
        }
    }

    /// The JSON file (json-hooks) or the directory (script-dir) for this scope; for hooks inside
    /// per-agent files (`files_glob`), the directory of those files.
    pub fn location(&self) -> Result<PathBuf> {
        let spec = self.harness.scope(self.scope)?;
        if let Some(glob) = &spec.files_glob {
            let (dir, _) = glob.rsplit_once('/').context("files_glob names no directory")?;
            return self.env.expand(dir, self.project.as_deref());
        }
        let pattern = spec.file.as_ref().or(spec.dir.as_ref()).context("manifest names no file or dir")?;
        self.env.expand(pattern, self.project.as_deref())
    }

    /// The files the hooks go in: the one `file`, or every regular file `files_glob` matches
    /// now (in name order; none when its directory does not exist).
    pub fn hook_files(&self) -> Result<Vec<PathBuf>> {
        let spec = self.harness.scope(self.scope)?;
        let Some(glob) = &spec.files_glob else { return Ok(vec![self.location()?]) };
        let dir = self.location()?;
        let name = glob.rsplit_once('/').map(|(_, n)| n).unwrap_or(glob);
        let (prefix, suffix) = name.split_once('*').unwrap_or((name, ""));
        // The directory is listed where it really is, never through a link out of the project.
        let real = crate::fsx::resolve_in(&dir, self.root())?;
        let mut out: Vec<PathBuf> = match std::fs::read_dir(&real) {
            Ok(rd) => rd
                .flatten()
                .map(|e| dir.join(e.file_name()))
                .filter(|p| {
                    let n = p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
                    n.len() >= prefix.len() + suffix.len()
                        && n.starts_with(prefix)
                        && n.ends_with(suffix)
                        && !n.starts_with('.')
                        && std::fs::metadata(real.join(&n)).is_ok_and(|m| m.is_file())
                })
                .collect(),
            Err(_) => Vec::new(),
        };
        out.sort();
        Ok(out)
    }

    /// Dotted path of the events object in this scope's file (`""`: its top level).
    pub fn events_key(&self) -> Result<String> {
        let spec = self.harness.scope(self.scope)?;
        let m = &self.harness.manifest;
        Ok(spec.events_key.clone().or_else(|| m.events_key.clone()).unwrap_or_else(|| "hooks".into()))
    }

    /// The second directory a script-dir harness reads, and why it is second.
    pub fn fallback(&self) -> Result<Option<(PathBuf, String)>> {
        let spec = self.harness.scope(self.scope)?;
        match &spec.fallback_dir {
            Some(d) => {
                Ok(Some((self.env.expand(d, self.project.as_deref())?, spec.fallback_note.clone().unwrap_or_default())))
            }
            None => Ok(None),
        }
    }

    /// The file the `ovmem` MCP server is registered in, where the manifest and scope name one.
    pub fn mcp_file(&self) -> Result<Option<PathBuf>> {
        let m = &self.harness.manifest;
        if m.mcp_template.is_none() || m.mcp_key.is_none() {
            return Ok(None);
        }
        let spec = self.harness.scope(self.scope)?;
        let file = if cfg!(target_os = "macos") {
            spec.mcp_file_macos.as_ref().or(spec.mcp_file.as_ref())
        } else {
            spec.mcp_file.as_ref()
        };
        match file {
            Some(f) => Ok(Some(self.env.expand(f, self.project.as_deref())?)),
            None => Ok(None),
        }
    }

    /// Desired hook entries, in manifest order.
    pub fn desired(&self) -> Result<Vec<Desired>> {
        let bin = self.env.runtime_bin();
        let home = self.env.ovmem_home();
        let m = &self.harness.manifest;
        m.hooks
            .iter()
            .map(|hook| {
                let name = m.template_for(hook, self.env.windows_host());
                Ok(Desired {
                    event: hook.event.clone(),
                    text: harness::render(name, &self.placeholders(&bin, &home, hook))?,
                    command: marker::command(&bin, self.harness.id(), &hook.event),
                })
            })
            .collect()
    }

    /// The `ovmem` MCP server entry as ovmem would write it.
    pub fn desired_mcp(&self) -> Result<Option<Value>> {
        let Some(template) = &self.harness.manifest.mcp_template else { return Ok(None) };
        let bin = self.env.runtime_bin();
        let home = self.env.ovmem_home();
        let hook = HookSpec { event: "mcp".into(), matcher: None, timeout: None };
        Ok(Some(serde_json::from_str(&harness::render(template, &self.placeholders(&bin, &home, &hook))?)?))
    }
}

/// Whether ovmem may replace or remove one of its own entries whose current hash is `current`:
/// when forced, when no receipt records it, or when it is still what the receipt recorded.
/// Anything else is an entry the user edited since install.
pub fn still_ours(force: bool, recorded: Option<&str>, current: &str) -> bool {
    force || recorded.is_none_or(|r| r == current)
}

/// Uninstall of a whole file ovmem wrote (a Cline hook script, a plugin module) that runs the
/// runtime of `owner`: another ovmem home's file stays unless forced, one edited since install
/// stays (`left`, with why), anything else goes (`gone`). `current`: the hash of `text`.
pub fn uninstall_owned_file(
    path: &Path,
    text: &str,
    owner: marker::Owner,
    force: bool,
    (recorded, current): (Option<&str>, &str),
    left: impl FnOnce(String) -> editor::Edit,
    gone: impl FnOnce() -> editor::Edit,
) -> editor::Edit {
    match owner {
        marker::Owner::Other { home, .. } if !force => editor::Edit {
            after: Some(text.to_string()),
            warnings: vec![format!(
                "`{}` belongs to another ovmem home (`{}`) and was left in place (--force removes it)",
                path.display(),
                home.display()
            )],
            ..editor::Edit::default()
        },
        marker::Owner::Us if !still_ours(force, recorded, current) => {
            left(format!("`{}` changed since install; left in place (--force removes it)", path.display()))
        }
        _ => gone(),
    }
}

/// The runtime path must be one a hook command can carry.
pub fn check_runtime_path(env: &Env) -> Result<(), Refused> {
    let bin = env.runtime_bin();
    if bin.to_string_lossy().chars().any(char::is_control) {
        return Err(Refused::BadRuntimePath(bin));
    }
    Ok(())
}

/// A harness that runs its command without a shell takes only a path that needs no quoting.
pub fn check_unquoted(t: &Target) -> Result<(), Refused> {
    let bin = t.env.runtime_bin();
    let p = bin.to_string_lossy();
    if t.harness.manifest.unquoted_command && harness::shell_quote(&p) != p {
        return Err(Refused::UnquotablePath { harness: t.harness.manifest.name.clone(), path: bin });
    }
    Ok(())
}
