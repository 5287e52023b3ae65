//! Each harness file read once per command. Planning reads a file in several places (the receipt
//! rebuilt from markers, the editor, the backups beside it), and Claude Code's `~/.claude.json`
//! passes 100 MB: within a [`Scope`] (one `install`, `uninstall` or `repair` run) a resolved path
//! is read from disk once and its bytes shared as a [`Blob`]. A path the journal writes is
//! forgotten at once. The journal's own re-reads (right before each rename, after it, while it
//! verifies) never come from here: they exist to see what another program wrote meanwhile.

use std::cell::RefCell;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

use anyhow::Result;

use super::blob::Blob;

thread_local! {
    /// The scope's reads on this thread (planning is single-threaded); `None` outside a scope.
    static CACHE: RefCell<Option<HashMap<PathBuf, Option<Blob>>>> = const { RefCell::new(None) };
}

/// Reads through the cache until dropped. A scope opened inside another one is part of it (a
/// command that plans twice with nothing between, `uninstall --yes`, reads once); the outermost
/// one empties the cache when it ends.
#[must_use = "the cache lives as long as the scope"]
pub struct Scope {
    outermost: bool,
}

pub fn scope() -> Scope {
    let outermost = CACHE.with(|c| {
        let mut c = c.borrow_mut();
        let outermost = c.is_none();
        c.get_or_insert_with(HashMap::new);
        outermost
    });
    Scope { outermost }
}

impl Drop for Scope {
    fn drop(&mut self) {
        if self.outermost {
            CACHE.with(|c| *c.borrow_mut() = None);
        }
    }
}

/// [`super::read_opt`] of `real` (a resolved path), from disk only the first time in a scope.
/// Errors are not kept: the next read tries the disk again.
pub fn read(real: &Path) -> Result<Option<Blob>> {
    if let Some(hit) = CACHE.with(|c| c.borrow().as_ref().and_then(|m| m.get(real).cloned())) {
        return Ok(hit);
    }
    let mut bytes = super::read_opt(real)?.map(Blob::from);
    CACHE.with(|c| {
        if let Some(m) = c.borrow_mut().as_mut() {
            // A file's `.ovmem.bak` and `.bak` hold the same bytes until it changes again: one
            // buffer for both.
            if let Some(same) = bytes.as_ref().and_then(|b| m.values().flatten().find(|x| *x == b)) {
                bytes = Some(same.clone());
            }
            m.insert(real.to_path_buf(), bytes.clone());
        }
    });
    Ok(bytes)
}

/// Forgets what was read at `path`: ovmem is about to write it (or another program did).
pub fn forget(path: &Path) {
    CACHE.with(|c| {
        if let Some(m) = c.borrow_mut().as_mut() {
            m.remove(path);
        }
    });
}

/// Forgets everything read so far (a rolled-back transaction put files back).
pub fn forget_all() {
    CACHE.with(|c| {
        if let Some(m) = c.borrow_mut().as_mut() {
            m.clear();
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scope_reads_each_path_once_and_forgets_a_written_one() {
        let t = tempfile::tempdir().unwrap();
        let a = t.path().join("a.json");
        std::fs::write(&a, "one").unwrap();
        let reads = || super::super::counted_reads(&a);
        let before = reads();
        {
            let _s = scope();
            assert_eq!(read(&a).unwrap().unwrap().as_bytes(), b"one");
            std::fs::write(&a, "two").unwrap();
            assert_eq!(read(&a).unwrap().unwrap().as_bytes(), b"one", "served from the scope");
            assert_eq!(reads(), before + 1);
            forget(&a);
            assert_eq!(read(&a).unwrap().unwrap().as_bytes(), b"two");
            {
                let _inner = scope();
                std::fs::write(&a, "three").unwrap();
                assert_eq!(read(&a).unwrap().unwrap().as_bytes(), b"two", "an inner scope shares the outer one");
            }
            assert_eq!(read(&a).unwrap().unwrap().as_bytes(), b"two", "the outer scope lives on");
        }
        assert_eq!(read(&a).unwrap().unwrap().as_bytes(), b"three", "no scope: straight from disk");
        assert_eq!(reads(), before + 3);
    }
}
