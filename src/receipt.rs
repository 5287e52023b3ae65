//! Receipts: what ovmem added, where, with a hash of each inserted value, so that uninstall
//! removes exactly that and can tell an entry the user edited since (reported, not removed).

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
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
    /// The harness config as it was before ovmem's first trust write (see `trust::snapshot`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trust_snapshot: Option<PathBuf>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
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
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Entry {
    pub event: String,
    /// Where the entry sits: `hooks.SessionStart` in JSON, the file name for scripts.
    pub key_path: String,
    pub sha256: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct TrustRecord {
    pub config: PathBuf,
    pub key: String,
    pub hash: String,
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

pub fn load(path: &Path) -> Result<Option<Receipt>> {
    match fsx::read_opt(path)? {
        None => Ok(None),
        Some(bytes) => serde_json::from_slice(&bytes).map(Some).with_context(|| {
            format!("the receipt `{}` is damaged; move it aside and run the command again", path.display())
        }),
    }
}

/// Every receipt under `$OVMEM_HOME/receipts`.
pub fn load_all(ovmem_home: &Path) -> Result<Vec<(PathBuf, Receipt)>> {
    let mut out = Vec::new();
    let Ok(rd) = std::fs::read_dir(dir(ovmem_home)) else { return Ok(out) };
    let mut paths: Vec<PathBuf> =
        rd.flatten().map(|e| e.path()).filter(|p| p.extension().is_some_and(|e| e == "json")).collect();
    paths.sort();
    for p in paths {
        if let Some(r) = load(&p)? {
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
