//! A small private cache, `$OVMEM_HOME/cache/status.json`, for answers that are slow to get (a
//! harness binary's `--version`, what Codex says about trust) and stay true until a file they
//! depend on changes. Keys are built from those files' identity ([`file_key`]: path, size,
//! modification time, inode), so an upgraded binary or an edited config is asked again. Written
//! atomically, 0600; losing it only costs time. `ovmem uninstall` removes it with the rest.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::env::Env;

pub fn path(env: &Env) -> PathBuf {
    env.ovmem_home().join("cache").join("status.json")
}

#[derive(Default, Serialize, Deserialize)]
pub struct Cache {
    /// key -> value (`None`: asked, and there was no answer).
    #[serde(default)]
    entries: BTreeMap<String, Option<String>>,
    #[serde(skip)]
    used: BTreeMap<String, Option<String>>,
    #[serde(skip)]
    changed: bool,
}

/// A file's identity: its canonical path, size, modification time (ns) and inode; `None` when it
/// does not exist.
pub fn file_key(p: &Path) -> Option<String> {
    let real = std::fs::canonicalize(p).ok()?;
    let m = std::fs::metadata(&real).ok()?;
    let mtime = m.modified().ok()?.duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    let ino = crate::sys::file_id(&m).map(|(_, ino)| ino).unwrap_or_default();
    Some(format!("{}|{}|{}.{}|{ino}", real.display(), m.len(), mtime.as_secs(), mtime.subsec_nanos()))
}

/// One key for several parts (file keys, arguments), short enough to read in the file.
pub fn key(kind: &str, parts: &[&str]) -> String {
    let mut h = Sha256::new();
    for p in parts {
        h.update(p.as_bytes());
        h.update([0]);
    }
    let hex: String = h.finalize().iter().take(12).map(|b| format!("{b:02x}")).collect();
    format!("{kind}:{hex}")
}

impl Cache {
    /// The cache as last saved (empty when there is none, or it does not parse).
    pub fn load(env: &Env) -> Self {
        std::fs::read(path(env)).ok().and_then(|b| serde_json::from_slice(&b).ok()).unwrap_or_default()
    }

    pub fn get(&mut self, key: &str) -> Option<Option<String>> {
        let v = self.entries.get(key).cloned()?;
        self.used.insert(key.to_string(), v.clone());
        Some(v)
    }

    pub fn put(&mut self, key: String, value: Option<String>) {
        if self.entries.get(&key) != Some(&value) {
            self.changed = true;
        }
        self.used.insert(key, value);
    }

    /// Saves exactly the entries this run used (so the file never grows past what one `status`
    /// asks), when something changed. Never fails the caller.
    pub fn save(self, env: &Env) {
        if !self.changed && self.used.len() == self.entries.len() {
            return;
        }
        let file = path(env);
        let Some(dir) = file.parent() else { return };
        if crate::fsx::create_dirs(dir, Some(0o700)).is_err() {
            return;
        }
        let out = Cache { entries: self.used, ..Default::default() };
        if let Ok(bytes) = serde_json::to_vec_pretty(&out) {
            let _ = crate::fsx::write_atomic(&file, &bytes, Some(0o600));
        }
    }
}
