//! Receipts: what ovmem added, where, with a hash of each inserted value, so that uninstall
//! removes exactly that and can tell an entry the user edited since (reported, not removed).

use std::path::{Path, PathBuf};

use anyhow::Result;
use serde::{Deserialize, Serialize};

use crate::fsx;
use crate::harness::Scope;

pub const SCHEMA: u32 = 1;

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Receipt {
    pub schema: u32,
    pub ovmem_version: String,
    pub harness: String,
    pub scope: Scope,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project: Option<PathBuf>,
    pub runtime: PathBuf,
    pub files: Vec<FileRecord>,
    /// Trust records written into the harness's own config (Codex `hooks.state` keys).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub trust: Vec<TrustRecord>,
    /// The config the trust records are in, as it was before ovmem's first one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trust_config: Option<TrustConfig>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct FileRecord {
    pub path: PathBuf,
    /// `json` (entries inside a shared file) or `script` (a whole file ovmem owns).
    pub format: String,
    /// ovmem created the file: uninstall deletes it once nothing else is left in it.
    pub created: bool,
    /// Directories ovmem created for it, outermost first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub created_dirs: Vec<PathBuf>,
    /// Keys ovmem created in a JSON file (dotted paths, e.g. `hooks`, `hooks.Stop`, `version`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub created_keys: Vec<String>,
    pub entries: Vec<Entry>,
    /// Hash of the last `<file>.bak` ovmem wrote, so a user's own `.bak` is never replaced.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backup_hash: Option<String>,
    /// Containers that were empty when ovmem first inserted into them, with the text that was
    /// between their brackets (whitespace, comments), given back when they are empty again.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub empty: Vec<EmptyContainer>,
    /// Values ovmem replaced with `--force` (a `set_keys` key the user had set otherwise), with
    /// their text from before, given back by uninstall.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub replaced: Vec<Replaced>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Replaced {
    pub key_path: String,
    pub before: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct EmptyContainer {
    /// Dotted key path (`` for the top level, `hooks`, `hooks.Stop`).
    pub key_path: String,
    pub inner: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct Entry {
    pub event: String,
    /// Where the entry sits: `hooks.SessionStart` in JSON, the file name for scripts.
    pub key_path: String,
    /// Hash of the whole entry as ovmem wrote it (a hook group, a flat entry, a script).
    pub sha256: String,
    /// Hash of ovmem's own handler inside it (the object with the command), for groups that
    /// the user has since added handlers to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handler: Option<String>,
    /// The exact command lines ovmem wrote: the only ones it ever trusts.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub commands: Vec<String>,
    /// The exact text ovmem added, where an entry is spliced into a file as text (a TOML table):
    /// uninstall cuts out exactly these bytes while they are still there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct TrustRecord {
    pub config: PathBuf,
    pub key: String,
    pub hash: String,
}

/// The harness config holding trust records, as it was before ovmem's first trust write: the
/// exact text (given back when ovmem's records are all that changed), whether ovmem created it,
/// and its mode.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct TrustConfig {
    pub path: PathBuf,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<u32>,
}

pub fn dir(ovmem_home: &Path) -> PathBuf {
    ovmem_home.join("receipts")
}

/// `<harness>.user.json`, or `<harness>.project-<hash of the project path>.json`.
pub fn path(ovmem_home: &Path, harness: &str, scope: Scope, project: Option<&Path>) -> PathBuf {
    let name = match (scope, project) {
        (Scope::Project, Some(p)) => {
            format!("{harness}.project-{}.json", &fsx::sha256_hex(p.to_string_lossy().as_bytes())[..12])
        }
        _ => format!("{harness}.{}.json", scope.as_str()),
    };
    dir(ovmem_home).join(name)
}

/// A receipt that does not parse: ovmem will not act on guesses about what it installed.
#[derive(Debug, thiserror::Error)]
#[error(
    "the receipt `{path}` is damaged ({detail}); `ovmem repair --harness {harness}{project}` rebuilds it from \
     ovmem's entries and the `.ovmem.bak` backups, then run this command again"
)]
pub struct Damaged {
    pub path: PathBuf,
    pub detail: String,
    pub harness: String,
    pub project: String,
}

pub fn load(path: &Path) -> Result<Option<Receipt>> {
    match fsx::read_opt(path)? {
        None => Ok(None),
        Some(bytes) => serde_json::from_slice::<Receipt>(&bytes).map(Some).map_err(|e| {
            let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            let harness = name.split('.').next().unwrap_or_default().to_string();
            Damaged { path: path.to_path_buf(), detail: e.to_string(), harness, project: String::new() }.into()
        }),
    }
}

/// Every receipt file under `$OVMEM_HOME/receipts`, damaged ones included.
pub fn paths(ovmem_home: &Path) -> Vec<PathBuf> {
    let Ok(rd) = std::fs::read_dir(dir(ovmem_home)) else { return Vec::new() };
    let mut paths: Vec<PathBuf> = rd
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.extension().is_some_and(|e| e == "json")
                && !p.file_name().is_some_and(|n| n.to_string_lossy().starts_with('.'))
        })
        .collect();
    paths.sort();
    paths
}

/// Every receipt under `$OVMEM_HOME/receipts` that parses.
pub fn load_all(ovmem_home: &Path) -> Result<Vec<(PathBuf, Receipt)>> {
    let mut out = Vec::new();
    for p in paths(ovmem_home) {
        if let Ok(Some(r)) = load(&p) {
            out.push((p, r));
        }
    }
    Ok(out)
}

/// Canonical hash of a JSON value: its compact serialisation (key order kept, as written).
pub fn hash_value(v: &serde_json::Value) -> String {
    fsx::sha256_hex(serde_json::to_string(v).expect("json serialises").as_bytes())
}

impl Receipt {
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut s = serde_json::to_string_pretty(self).expect("receipts serialise");
        s.push('\n');
        s.into_bytes()
    }

    pub fn file(&self, path: &Path) -> Option<&FileRecord> {
        self.files.iter().find(|f| f.path == path)
    }
}
