//! The only code that writes the agents' files. Writes are atomic (temp file in the same
//! directory, fsync, rename), go through symlinks to their targets, keep mode and owner, back
//! up what they replace, and run under a per-file advisory lock. A [`Transaction`] groups the
//! files of one install so that a failure part-way puts back everything it had written.

use std::fs::{self, File, OpenOptions};
use std::io::{ErrorKind, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use sha2::{Digest, Sha256};

pub fn sha256_hex(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// The path a write to `path` must really go to: the final target when `path` is a symlink
/// (so the link stays a link), else `path` itself.
pub fn resolve(path: &Path) -> Result<PathBuf> {
    let mut p = path.to_path_buf();
    for _ in 0..40 {
        match fs::symlink_metadata(&p) {
            Ok(m) if m.file_type().is_symlink() => {
                let target =
                    fs::read_link(&p).with_context(|| format!("could not read the symlink `{}`", p.display()))?;
                p = if target.is_absolute() { target } else { p.parent().unwrap_or(Path::new("/")).join(target) };
            }
            _ => return Ok(p),
        }
    }
    bail!("too many levels of symlinks at `{}`", path.display())
}

/// Reads a file; `None` when it does not exist.
pub fn read_opt(path: &Path) -> Result<Option<Vec<u8>>> {
    match fs::read(path) {
        Ok(b) => Ok(Some(b)),
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e).with_context(|| format!("could not read `{}`", path.display())),
    }
}

/// Atomically replaces `path` (already resolved) with `bytes`, keeping the old file's mode and
/// owner, or using `mode` for a new file.
pub fn write_atomic(path: &Path, bytes: &[u8], mode: Option<u32>) -> Result<()> {
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let old = fs::metadata(path).ok();
    let mode = old.as_ref().map(|m| m.permissions().mode() & 0o7777).or(mode).unwrap_or(0o644);
    let tmp = dir.join(format!(".{name}.ovmem-tmp.{}", std::process::id()));
    let result = (|| -> Result<()> {
        let mut f = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(mode)
            .open(&tmp)
            .with_context(|| format!("could not create a temporary file in `{}`", dir.display()))?;
        f.write_all(bytes).with_context(|| format!("could not write `{}`", tmp.display()))?;
        f.set_permissions(fs::Permissions::from_mode(mode))?;
        if let Some(m) = &old {
            // Keep the owner when root edits someone else's file; harmless when unchanged.
            let _ = std::os::unix::fs::fchown(&f, Some(m.uid()), Some(m.gid()));
        }
        f.sync_all().with_context(|| format!("could not flush `{}` to disk", tmp.display()))?;
        fault_point("before-rename")?;
        fs::rename(&tmp, path).with_context(|| format!("could not replace `{}`", path.display()))?;
        if let Ok(d) = File::open(dir) {
            let _ = d.sync_all();
        }
        Ok(())
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

/// Test-only fault injection: `OVMEM_FAULT=<point>:<n>` fails (or with `abort:` crashes) the
/// n-th time `point` is reached. It lets the integration tests prove the transaction guarantees.
fn fault_point(point: &str) -> Result<()> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static HITS: AtomicUsize = AtomicUsize::new(0);
    let Ok(spec) = std::env::var("OVMEM_FAULT") else { return Ok(()) };
    let (abort, spec) = match spec.strip_prefix("abort:") {
        Some(rest) => (true, rest.to_string()),
        None => (false, spec),
    };
    let Some((p, n)) = spec.split_once(':') else { return Ok(()) };
    if p != point {
        return Ok(());
    }
    let hit = HITS.fetch_add(1, Ordering::SeqCst) + 1;
    if n.parse::<usize>().ok() == Some(hit) {
        if abort {
            std::process::abort();
        }
        bail!("injected fault at {point} #{hit}");
    }
    Ok(())
}

/// An exclusive advisory lock for one target file, held in `$OVMEM_HOME/locks` so that no lock
/// file is ever left next to the user's config.
pub struct FileLock {
    _file: File,
}

impl FileLock {
    pub fn acquire(ovmem_home: &Path, target: &Path) -> Result<Self> {
        let dir = ovmem_home.join("locks");
        fs::create_dir_all(&dir).with_context(|| format!("could not create `{}`", dir.display()))?;
        let key = sha256_hex(target.to_string_lossy().as_bytes());
        let path = dir.join(format!("{}.lock", &key[..16]));
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .with_context(|| format!("could not open the lock file `{}`", path.display()))?;
        file.lock().with_context(|| format!("could not lock `{}`", target.display()))?;
        Ok(Self { _file: file })
    }
}

/// What happened to one file in a transaction, so that it can be put back.
struct Undo {
    path: PathBuf,
    before: Option<(Vec<u8>, u32)>,
}

/// Files written as one unit. Dropping an uncommitted transaction restores every file it wrote.
#[derive(Default)]
pub struct Transaction {
    undo: Vec<Undo>,
    created_dirs: Vec<PathBuf>,
    committed: bool,
}

impl Transaction {
    pub fn new() -> Self {
        Self::default()
    }

    /// Creates `dir` and its missing parents, remembering each one it made (for rollback and
    /// receipts). Returns the directories created, outermost first.
    pub fn create_dirs(&mut self, dir: &Path) -> Result<Vec<PathBuf>> {
        let mut missing = Vec::new();
        let mut d = dir.to_path_buf();
        while !d.exists() {
            missing.push(d.clone());
            if !d.pop() {
                break;
            }
        }
        missing.reverse();
        for m in &missing {
            fs::create_dir(m)
                .or_else(|e| if m.is_dir() { Ok(()) } else { Err(e) })
                .with_context(|| format!("could not create the directory `{}`", m.display()))?;
            self.created_dirs.push(m.clone());
        }
        Ok(missing)
    }

    /// Writes `bytes` to `path` (resolved through symlinks), first saving backups of an existing
    /// file: `<file>.ovmem.bak` once, before ovmem first changes it, and `<file>.bak` before every
    /// change (unless that name holds a file that ovmem did not write: `ours_bak` is the hash of
    /// the last `.bak` ovmem wrote).
    pub fn write(
        &mut self,
        path: &Path,
        bytes: &[u8],
        mode: Option<u32>,
        ours_bak: Option<&str>,
    ) -> Result<WriteReport> {
        let real = resolve(path)?;
        let before = match read_opt(&real)? {
            Some(b) => Some((b, fs::metadata(&real)?.permissions().mode() & 0o7777)),
            None => None,
        };
        let mut report = WriteReport::default();
        if let Some((old, old_mode)) = &before {
            let pristine = sibling(&real, ".ovmem.bak");
            if !pristine.exists() {
                self.undo.push(Undo { path: pristine.clone(), before: None });
                write_atomic(&pristine, old, Some(*old_mode))?;
                report.pristine_backup = Some(pristine.clone());
            }
            let bak = sibling(&real, ".bak");
            // A `.bak` is ovmem's when its hash is the one ovmem recorded, or when it is the same
            // bytes as the pristine copy (which keeps them either way).
            let bak_is_ours = match read_opt(&bak)? {
                None => true,
                Some(existing) => {
                    ours_bak.is_some_and(|h| h == sha256_hex(&existing))
                        || read_opt(&pristine)?.is_some_and(|p| p == existing)
                }
            };
            if bak_is_ours {
                let prev = read_opt(&bak)?.map(|b| (b, *old_mode));
                self.undo.push(Undo { path: bak.clone(), before: prev });
                write_atomic(&bak, old, Some(*old_mode))?;
                report.backup = Some(bak);
                report.backup_hash = Some(sha256_hex(old));
            } else {
                report.warnings.push(format!(
                    "`{}` exists and was not written by ovmem, so it was left alone (the pristine copy is `{}`)",
                    bak.display(),
                    sibling(&real, ".ovmem.bak").display()
                ));
            }
        }
        self.undo.push(Undo { path: real.clone(), before });
        fault_point("between-files").inspect_err(|_| {
            self.undo.pop();
        })?;
        write_atomic(&real, bytes, mode)?;
        Ok(report)
    }

    /// Writes one of ovmem's own files (a receipt): atomic and undoable, without backups.
    pub fn write_plain(&mut self, path: &Path, bytes: &[u8]) -> Result<()> {
        let real = resolve(path)?;
        let before = match read_opt(&real)? {
            Some(b) => Some((b, fs::metadata(&real)?.permissions().mode() & 0o7777)),
            None => None,
        };
        self.undo.push(Undo { path: real.clone(), before });
        write_atomic(&real, bytes, Some(0o644))
    }

    /// Deletes `path` (a file ovmem created), remembering its bytes for rollback.
    pub fn remove(&mut self, path: &Path) -> Result<()> {
        let real = resolve(path)?;
        if let Some(b) = read_opt(&real)? {
            let mode = fs::metadata(&real)?.permissions().mode() & 0o7777;
            self.undo.push(Undo { path: real.clone(), before: Some((b, mode)) });
            fs::remove_file(&real).with_context(|| format!("could not remove `{}`", real.display()))?;
        }
        Ok(())
    }

    pub fn commit(mut self) {
        self.committed = true;
    }
}

impl Drop for Transaction {
    fn drop(&mut self) {
        if self.committed {
            return;
        }
        for u in self.undo.iter().rev() {
            let _ = match &u.before {
                Some((bytes, mode)) => write_atomic(&u.path, bytes, Some(*mode)),
                None => fs::remove_file(&u.path).map_err(Into::into),
            };
        }
        for d in self.created_dirs.iter().rev() {
            let _ = fs::remove_dir(d);
        }
    }
}

#[derive(Debug, Default)]
pub struct WriteReport {
    pub pristine_backup: Option<PathBuf>,
    pub backup: Option<PathBuf>,
    pub backup_hash: Option<String>,
    pub warnings: Vec<String>,
}

pub fn sibling(path: &Path, suffix: &str) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(suffix);
    PathBuf::from(s)
}

/// Removes each directory in `dirs` (innermost first) that is empty.
pub fn remove_empty_dirs(dirs: &[PathBuf]) -> Vec<PathBuf> {
    let mut removed = Vec::new();
    for d in dirs.iter().rev() {
        if fs::read_dir(d).map(|mut it| it.next().is_none()).unwrap_or(false) && fs::remove_dir(d).is_ok() {
            removed.push(d.clone());
        }
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_through_symlinks_and_keeps_mode() {
        let t = tempfile::tempdir().unwrap();
        let target = t.path().join("real.json");
        fs::write(&target, "{}").unwrap();
        fs::set_permissions(&target, fs::Permissions::from_mode(0o600)).unwrap();
        let link = t.path().join("link.json");
        std::os::unix::fs::symlink("real.json", &link).unwrap();
        let mut tx = Transaction::new();
        tx.write(&link, b"{\"a\":1}", None, None).unwrap();
        tx.commit();
        assert!(fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
        assert_eq!(fs::read_to_string(&target).unwrap(), "{\"a\":1}");
        assert_eq!(fs::metadata(&target).unwrap().permissions().mode() & 0o777, 0o600);
        assert_eq!(fs::read_to_string(t.path().join("real.json.ovmem.bak")).unwrap(), "{}");
    }

    #[test]
    fn dropped_transaction_rolls_back() {
        let t = tempfile::tempdir().unwrap();
        let a = t.path().join("a");
        fs::write(&a, "old").unwrap();
        let b = t.path().join("sub/b");
        {
            let mut tx = Transaction::new();
            tx.write(&a, b"new", None, None).unwrap();
            tx.create_dirs(b.parent().unwrap()).unwrap();
            tx.write(&b, b"new", None, None).unwrap();
        }
        assert_eq!(fs::read_to_string(&a).unwrap(), "old");
        assert!(!b.exists() && !t.path().join("sub").exists());
    }

    #[test]
    fn foreign_bak_is_never_overwritten() {
        let t = tempfile::tempdir().unwrap();
        let a = t.path().join("a");
        fs::write(&a, "v1").unwrap();
        fs::write(t.path().join("a.bak"), "user's own").unwrap();
        let mut tx = Transaction::new();
        let r = tx.write(&a, b"v2", None, None).unwrap();
        tx.commit();
        assert_eq!(fs::read_to_string(t.path().join("a.bak")).unwrap(), "user's own");
        assert_eq!(r.warnings.len(), 1);
    }
}
