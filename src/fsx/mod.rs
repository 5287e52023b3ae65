//! The only code that touches the agents' files. Paths are resolved component by component so a
//! project can be confined to its own tree; only regular files are read, with a size cap; temp
//! files get random names opened `O_EXCL`; every change to a shared file goes through a journaled
//! transaction ([`journal::Tx`]) held under the one installer lock of an `OVMEM_HOME`.

pub mod blob;
pub mod journal;
pub mod reads;

pub use blob::{Blob, Text};

use std::fs::{self, File, OpenOptions};
use std::io::{ErrorKind, Read, Write};
use std::path::{Component, Path, PathBuf};

use anyhow::{bail, Context, Result};
use sha2::{Digest, Sha256};

use crate::sys;

/// The largest file ovmem reads. Claude Code keeps its users' prompt history in `~/.claude.json`,
/// which reaches 65 to 100 MB and more (users report 101 MB): ovmem must still install into it.
/// What a parse of a file this size may cost is bounded by the editors' value counts
/// (`edit::json::MAX_VALUES`, `edit::toml::MAX_VALUES`).
pub const MAX_READ: u64 = 256 << 20;

/// Marks ovmem's temp files: `.<name>.ovmem-tmp.<pid>.<random>`.
pub const TEMP_MARK: &str = ".ovmem-tmp.";

pub fn sha256_hex(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

pub fn sibling(path: &Path, suffix: &str) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(suffix);
    PathBuf::from(s)
}

/// A path that leads out of the tree it must stay in (a project's symlink to `~/.bash_profile`).
#[derive(Debug, thiserror::Error)]
#[error(
    "`{path}` leads to `{target}`, outside the project `{root}` (a symlink); ovmem never follows links out of a \
     project. Remove the link (or install at user scope)"
)]
pub struct Escape {
    pub path: PathBuf,
    pub target: PathBuf,
    pub root: PathBuf,
}

/// A file ovmem will not read for what it is, not for a failure of the disk: a directory, a FIFO or
/// a device where a config file should be, a file past [`MAX_READ`], a symlink loop. Nothing in it
/// can be edited safely, so a command that would edit it refuses (exit 2) and leaves it as it is;
/// an I/O error reading a regular file stays a failure (exit 1).
#[derive(Debug, thiserror::Error)]
pub enum Unfit {
    #[error(
        "`{path}` is {what}, not a regular file; ovmem reads and edits only regular files, so it left it untouched. \
         Move it aside (or replace it with the config file) and run ovmem again"
    )]
    NotRegular { path: PathBuf, what: &'static str },
    #[error(
        "`{path}` is larger than {limit} ({size} bytes); ovmem does not read files this large, so it left it \
         untouched. Shrink it (or move it aside) and run ovmem again"
    )]
    TooLarge { path: PathBuf, limit: String, size: u64 },
    #[error(
        "`{path}` is a symlink loop (more than 40 links deep), so ovmem left it untouched. Point the link at a \
         file (or remove it) and run ovmem again"
    )]
    SymlinkLoop { path: PathBuf },
}

impl Unfit {
    /// The file named.
    pub fn path(&self) -> &Path {
        match self {
            Unfit::NotRegular { path, .. } | Unfit::TooLarge { path, .. } | Unfit::SymlinkLoop { path } => path,
        }
    }

    /// Why, in a few words ("it is a directory").
    pub fn reason(&self) -> String {
        match self {
            Unfit::NotRegular { what, .. } => format!("it is {what}, not a regular file"),
            Unfit::TooLarge { limit, .. } => format!("it is larger than {limit}"),
            Unfit::SymlinkLoop { .. } => "it is a symlink loop".into(),
        }
    }
}

fn not_regular(path: &Path, meta: Option<&fs::Metadata>) -> anyhow::Error {
    let what = meta.map(sys::file_kind).unwrap_or("something else");
    Unfit::NotRegular { path: path.to_path_buf(), what }.into()
}

fn too_large(path: &Path, max: u64, size: u64) -> anyhow::Error {
    Unfit::TooLarge { path: path.to_path_buf(), limit: size_text(max), size }.into()
}

/// Where `path` really leads, with every symlink on the way followed: a write there lands on the
/// final target and the links stay links.
pub fn resolve(path: &Path) -> Result<PathBuf> {
    resolve_in(path, None)
}

/// [`resolve`], component by component (`..` applied to real directories). With `root`, the
/// result must lie inside `root` (itself already canonical), else [`Escape`].
pub fn resolve_in(path: &Path, root: Option<&Path>) -> Result<PathBuf> {
    let mut done = PathBuf::from("/");
    let mut todo: Vec<PathBuf> = Vec::new();
    let start = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir().context("could not read the current directory")?.join(path)
    };
    // Components still to walk, last first.
    let push_all = |todo: &mut Vec<PathBuf>, p: &Path| {
        let parts: Vec<PathBuf> = p
            .components()
            .filter_map(|c| match c {
                Component::Normal(n) => Some(PathBuf::from(n)),
                Component::ParentDir => Some(PathBuf::from("..")),
                _ => None,
            })
            .collect();
        todo.extend(parts.into_iter().rev());
    };
    push_all(&mut todo, &start);
    let mut hops = 0;
    while let Some(c) = todo.pop() {
        if c.as_os_str() == ".." {
            done.pop();
            continue;
        }
        let cand = done.join(&c);
        match fs::symlink_metadata(&cand) {
            Ok(m) if m.file_type().is_symlink() => {
                hops += 1;
                if hops > 40 {
                    return Err(Unfit::SymlinkLoop { path: path.to_path_buf() }.into());
                }
                let target =
                    fs::read_link(&cand).with_context(|| format!("could not read the symlink `{}`", cand.display()))?;
                if target.is_absolute() {
                    done = PathBuf::from("/");
                }
                push_all(&mut todo, &target);
            }
            _ => done = cand,
        }
    }
    if let Some(root) = root {
        if !done.starts_with(root) {
            return Err(Escape { path: path.to_path_buf(), target: done, root: root.to_path_buf() }.into());
        }
    }
    Ok(done)
}

/// Reads a regular file, following symlinks; `None` when it does not exist. Anything else (a
/// FIFO, a device, a directory), anything over [`MAX_READ`] and a symlink loop is [`Unfit`],
/// never a hang.
pub fn read_opt(path: &Path) -> Result<Option<Vec<u8>>> {
    read_capped(path, MAX_READ)
}

/// [`read_opt`] with a smaller cap, for files that are small by nature (git's `HEAD`, a `.git`
/// file): a project can point them anywhere, and a hook must not read megabytes to learn a name.
pub fn read_capped(path: &Path, max: u64) -> Result<Option<Vec<u8>>> {
    let meta = match fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
        Err(e) if sys::symlink_loop(&e) => return Err(Unfit::SymlinkLoop { path: path.to_path_buf() }.into()),
        Err(e) => return Err(e).with_context(|| format!("could not read `{}`", path.display())),
    };
    if !meta.is_file() {
        return Err(not_regular(path, Some(&meta)));
    }
    if meta.len() > max {
        return Err(too_large(path, max, meta.len()));
    }
    // Checked again on the open file: the path could have been swapped since the stat.
    let f = match sys::open_regular(path) {
        Ok(f) => f,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
        Err(e) if e.kind() == ErrorKind::InvalidInput => {
            return Err(not_regular(path, fs::metadata(path).ok().as_ref()))
        }
        Err(e) if sys::symlink_loop(&e) => return Err(Unfit::SymlinkLoop { path: path.to_path_buf() }.into()),
        Err(e) => return Err(e).with_context(|| format!("could not read `{}`", path.display())),
    };
    count_read(path);
    let mut out = Vec::with_capacity(meta.len() as usize);
    f.take(max + 1).read_to_end(&mut out).with_context(|| format!("could not read `{}`", path.display()))?;
    if out.len() as u64 > max {
        return Err(too_large(path, max, out.len() as u64));
    }
    Ok(Some(out))
}

/// Whether `path` holds exactly `expect` (`None`: the file does not exist), read from disk and
/// compared as it is read, a chunk at a time. The journal re-reads a file right before replacing
/// it and after, to see another program's write; this is that re-read without a copy of the
/// file each time (Claude Code's `~/.claude.json` passes 100 MB). A file that is not a regular
/// one is an error, as for [`read_opt`].
pub fn holds(path: &Path, expect: Option<&[u8]>) -> Result<bool> {
    let mut f = match sys::open_regular(path) {
        Ok(f) => f,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(expect.is_none()),
        Err(e) if e.kind() == ErrorKind::InvalidInput => {
            return Err(not_regular(path, fs::metadata(path).ok().as_ref()))
        }
        Err(e) => return Err(e).with_context(|| format!("could not read `{}`", path.display())),
    };
    count_read(path);
    let Some(expect) = expect else { return Ok(false) };
    let len = f.metadata().with_context(|| format!("could not read `{}`", path.display()))?.len();
    if len != expect.len() as u64 {
        return Ok(false);
    }
    let mut buf = vec![0u8; (1 << 20).min(expect.len() + 1)];
    let mut at = 0;
    loop {
        let n = match f.read(&mut buf) {
            Ok(n) => n,
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(e) => return Err(e).with_context(|| format!("could not read `{}`", path.display())),
        };
        if n == 0 {
            return Ok(at == expect.len());
        }
        if expect.get(at..at + n) != Some(&buf[..n]) {
            return Ok(false);
        }
        at += n;
    }
}

// Test builds count every read of a file's contents, per path and thread: the guard that a run
// reads a large file only as often as it must (`reads`, `holds`).
#[cfg(test)]
thread_local! {
    static READS: std::cell::RefCell<std::collections::HashMap<PathBuf, usize>> = Default::default();
}

fn count_read(path: &Path) {
    #[cfg(test)]
    READS.with(|r| *r.borrow_mut().entry(path.to_path_buf()).or_default() += 1);
    #[cfg(not(test))]
    let _ = path;
}

/// How often this thread read `path` (test builds).
#[cfg(test)]
pub(crate) fn counted_reads(path: &Path) -> usize {
    READS.with(|r| r.borrow().get(path).copied().unwrap_or(0))
}

fn size_text(n: u64) -> String {
    if n >= 1 << 20 && n.is_multiple_of(1 << 20) {
        format!("{} MiB", n >> 20)
    } else {
        format!("{n} bytes")
    }
}

/// [`read_opt`] of what `path` leads to, confined to `root` when given.
pub fn read_in(path: &Path, root: Option<&Path>) -> Result<Option<Vec<u8>>> {
    read_opt(&resolve_in(path, root)?)
}

/// Mode and owner of a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Meta {
    pub mode: u32,
    pub uid: u32,
    pub gid: u32,
}

pub fn meta(path: &Path) -> Option<Meta> {
    fs::metadata(path).ok().map(|m| {
        let (uid, gid) = sys::owner(&m).unwrap_or_default();
        Meta { mode: sys::mode(&m), uid, gid }
    })
}

/// The owner and group a file or directory ovmem creates at `path` is given: when this process is
/// root and the nearest existing directory above `path` is another user's (`sudo ovmem install`
/// with that user's `HOME`, root installing into a developer's project), that directory's, so the
/// user's harness can still write its config and the user's hooks ovmem's home. `None` (the
/// writer's, as for any new file) when this process is not root, where files have no owners, and
/// under a directory of root's.
pub fn heir(path: &Path) -> Option<(u32, u32)> {
    if sys::euid() != Some(0) {
        return None;
    }
    let mut dir = path.parent();
    while let Some(d) = dir {
        let here = if d.as_os_str().is_empty() { Path::new(".") } else { d };
        match fs::metadata(here) {
            Ok(m) if m.is_dir() => return sys::owner(&m).filter(|&(uid, _)| uid != 0),
            Ok(_) => return None,
            Err(e) if e.kind() == ErrorKind::NotFound && !d.as_os_str().is_empty() => dir = d.parent(),
            Err(_) => return None,
        }
    }
    None
}

/// Gives `f`, a file this process has just created at `path`, its [`heir`]'s owner (through the
/// open file: nothing is followed). A no-op unless root creates it in another user's directory.
pub fn adopt(f: &File, path: &Path) {
    if let Some((uid, gid)) = heir(path) {
        sys::chown(f, uid, gid);
    }
}

/// Gives `dir`, a directory this process has just created, its [`heir`]'s owner (never through a
/// symlink: [`sys::chown_new_dir`]).
pub fn adopt_dir(dir: &Path) {
    if let Some((uid, gid)) = heir(dir) {
        sys::chown_new_dir(dir, uid, gid);
    }
}

/// `fs::create_dir_all` that gives each directory it creates its [`heir`]'s owner, created with
/// `mode` when given (the umask applies, as to `DirBuilder`). Returns the directories it created,
/// outermost first; one that appeared meanwhile is not among them, nor changed.
pub fn create_dirs(dir: &Path, mode: Option<u32>) -> std::io::Result<Vec<PathBuf>> {
    let mut made = Vec::new();
    for d in missing_dirs(dir) {
        let mut b = fs::DirBuilder::new();
        if let Some(m) = mode {
            sys::dir_mode(&mut b, m);
        }
        match b.create(&d) {
            Ok(()) => {
                adopt_dir(&d);
                made.push(d);
            }
            Err(e) if e.kind() == ErrorKind::AlreadyExists => {}
            Err(e) => return Err(e),
        }
    }
    // What is there is a directory (a symlink to one counts), else the usual error.
    fs::create_dir_all(dir)?;
    Ok(made)
}

/// A new temp file beside `target` (random name, `O_EXCL`, so an existing file or symlink at that
/// name is never followed), holding `bytes` with `mode` and the owner of `like` when given, else
/// its directory's [`heir`]'s (the file is a new one). Not yet flushed: see [`sync_files`].
pub fn temp_beside(target: &Path, bytes: &[u8], mode: u32, like: Option<Meta>) -> Result<tempfile::NamedTempFile> {
    let dir = target.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let name = target.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let mut tmp = tempfile::Builder::new()
        .prefix(&format!(".{name}{TEMP_MARK}{}.", std::process::id()))
        .rand_bytes(8)
        .tempfile_in(dir)
        .with_context(|| format!("could not create a temporary file in `{}`", dir.display()))?;
    tmp.write_all(bytes).with_context(|| format!("could not write in `{}`", dir.display()))?;
    sys::set_file_mode(tmp.as_file(), mode)?;
    match like {
        // Keep the owner when root edits someone else's file; harmless when unchanged.
        Some(m) => sys::chown(tmp.as_file(), m.uid, m.gid),
        None => adopt(tmp.as_file(), target),
    }
    Ok(tmp)
}

/// Flushes files to disk in parallel: the filesystem groups concurrent flushes into one commit,
/// so twenty files cost about as much as two.
pub fn sync_files(files: &[&File]) -> Result<()> {
    if files.len() <= 1 {
        for f in files {
            f.sync_all().context("could not flush a file to disk")?;
        }
        return Ok(());
    }
    let results: Vec<std::io::Result<()>> = std::thread::scope(|s| {
        let handles: Vec<_> = files.iter().map(|f| s.spawn(move || f.sync_all())).collect();
        handles.into_iter().map(|h| h.join().unwrap_or_else(|_| Err(std::io::Error::other("panic")))).collect()
    });
    for r in results {
        r.context("could not flush a file to disk")?;
    }
    Ok(())
}

/// Flushes directory entries (renames, creations) of each directory.
pub fn sync_dirs(dirs: &[PathBuf]) -> Result<()> {
    let mut ds = dirs.to_vec();
    ds.sort();
    ds.dedup();
    let files: Vec<File> = ds.iter().filter_map(|d| File::open(d).ok()).collect();
    let refs: Vec<&File> = files.iter().collect();
    sync_files(&refs)
}

/// Atomically replaces `path` with `bytes` (temp file, flush, rename, flush of the directory),
/// keeping the old file's mode and owner, or `mode` (and the [`heir`]'s owner) for a new file. For
/// ovmem's own files; shared
/// configs go through [`journal::Tx`].
pub fn write_atomic(path: &Path, bytes: &[u8], mode: Option<u32>) -> Result<()> {
    let old = meta(path);
    replace(path, bytes, old.map(|m| m.mode).or(mode).unwrap_or(0o644), old)
}

/// [`write_atomic`] giving the file exactly `mode`, whatever the old one's (credentials are 0600
/// even where a hand-made file was wider); the owner is kept, or for a new file its [`heir`]'s.
pub fn write_atomic_with_mode(path: &Path, bytes: &[u8], mode: u32) -> Result<()> {
    replace(path, bytes, mode, meta(path))
}

/// Replaces `path` with `bytes` through a temp file beside it ([`temp_beside`]) given `mode` and
/// `old`'s owner, flushed, renamed over it, and the directory flushed.
fn replace(path: &Path, bytes: &[u8], mode: u32, old: Option<Meta>) -> Result<()> {
    let tmp = temp_beside(path, bytes, mode, old)?;
    tmp.as_file().sync_all().with_context(|| format!("could not flush `{}` to disk", path.display()))?;
    tmp.persist(path).map_err(|e| e.error).with_context(|| format!("could not replace `{}`", path.display()))?;
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

/// Whether process `pid` is alive.
pub fn pid_alive(pid: u32) -> bool {
    sys::pid_alive(pid)
}

/// The pid in an ovmem temp file name, if `name` is one.
fn temp_pid(name: &str) -> Option<u32> {
    let rest = &name[name.find(TEMP_MARK)? + TEMP_MARK.len()..];
    rest.split('.').next()?.parse().ok()
}

/// Removes ovmem's temp files in `dir` whose process is gone (or is this very process, at start-up).
/// Only regular files are removed; nothing is followed. Returns how many went.
pub fn sweep_temps(dir: &Path) -> usize {
    let Ok(rd) = fs::read_dir(dir) else { return 0 };
    let me = std::process::id();
    let mut n = 0;
    for e in rd.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(pid) = temp_pid(&name) else { continue };
        if !name.starts_with('.') || (pid != me && pid_alive(pid)) {
            continue;
        }
        if e.file_type().is_ok_and(|t| t.is_file()) && fs::remove_file(e.path()).is_ok() {
            n += 1;
        }
    }
    n
}

/// Removes `entry` when it is one of ovmem's temp files, a regular file older than `age` whose
/// process is gone: what a replay in a hook can sweep as it reads its directory (the commands
/// sweep every dead process's temp files at start-up, [`sweep_temps`]). Whether it went.
pub fn remove_stale_temp(entry: &fs::DirEntry, age: std::time::Duration) -> bool {
    let name = entry.file_name();
    let Some(name) = name.to_str() else { return false };
    let Some(pid) = temp_pid(name) else { return false };
    if !name.starts_with('.') || (pid != std::process::id() && pid_alive(pid)) {
        return false;
    }
    let old =
        entry.metadata().is_ok_and(|m| m.is_file() && m.modified().is_ok_and(|t| t.elapsed().is_ok_and(|e| e > age)));
    old && fs::remove_file(entry.path()).is_ok()
}

/// Removes each directory in `dirs` that is empty, in the order given (innermost first).
pub fn remove_empty_dirs(dirs: &[PathBuf]) -> Vec<PathBuf> {
    let mut removed = Vec::new();
    for d in dirs {
        let is_dir = fs::symlink_metadata(d).is_ok_and(|m| m.is_dir());
        if is_dir && fs::read_dir(d).map(|mut it| it.next().is_none()).unwrap_or(false) && fs::remove_dir(d).is_ok() {
            removed.push(d.clone());
        }
    }
    removed
}

/// The directories that creating `dir` would make, outermost first.
pub fn missing_dirs(dir: &Path) -> Vec<PathBuf> {
    let mut missing = Vec::new();
    let mut d = dir.to_path_buf();
    while fs::symlink_metadata(&d).is_err() {
        missing.push(d.clone());
        if !d.pop() {
            break;
        }
    }
    missing.reverse();
    missing
}

/// The one lock per `OVMEM_HOME` that every command changing files holds for its whole run, so
/// receipts and journals are never acted on by two processes at once.
pub struct InstallLock {
    _file: File,
}

impl InstallLock {
    fn path(ovmem_home: &Path) -> PathBuf {
        ovmem_home.join("locks").join("ovmem.lock")
    }

    /// Waits for the lock, creating it.
    pub fn acquire(ovmem_home: &Path) -> Result<Self> {
        let path = Self::path(ovmem_home);
        let dir = path.parent().expect("locks dir");
        loop {
            let made = create_dirs(dir, None).with_context(|| format!("could not create `{}`", dir.display()))?;
            for d in &made {
                let _ = sys::set_mode(d, 0o700);
            }
            // A home this lock made is plainly ovmem's: its hooks keep it private.
            if made.iter().any(|d| d == ovmem_home) {
                crate::home::mark(ovmem_home);
            }
            let file = create_or_open(&path, 0o600)
                .with_context(|| format!("could not open the lock file `{}`", path.display()))?;
            file.lock().with_context(|| format!("could not lock `{}`", path.display()))?;
            // An uninstall that took the last thing away removes the lock file: a lock on the
            // removed file would be no lock at all.
            if Self::still_there(&file, &path) {
                return Ok(Self { _file: file });
            }
        }
    }

    /// The lock if nobody holds it, `None` if somebody does (or ovmem never ran here).
    pub fn try_acquire(ovmem_home: &Path) -> Option<Self> {
        let path = Self::path(ovmem_home);
        let file = OpenOptions::new().write(true).open(&path).ok()?;
        file.try_lock().ok()?;
        Self::still_there(&file, &path).then_some(Self { _file: file })
    }

    fn still_there(file: &File, path: &Path) -> bool {
        match (file.metadata(), fs::metadata(path)) {
            // Without file identities (not Unix) an open lock file cannot be removed under it.
            (Ok(a), Ok(b)) => sys::file_id(&a) == sys::file_id(&b),
            _ => false,
        }
    }
}

/// Creates `path` for writing with `mode` and its directory's [`heir`]'s owner; fails
/// (`AlreadyExists`) when something is there, a symlink included, which is never followed.
pub fn create_new(path: &Path, mode: u32) -> std::io::Result<File> {
    let f = sys::create_mode(OpenOptions::new().write(true).create_new(true), mode).open(path)?;
    adopt(&f, path);
    Ok(f)
}

/// Opens `path` for writing, creating it with `mode` (and its directory's [`heir`]'s owner) when
/// it is not there; an existing file is opened as it is, owner and bytes untouched.
pub fn create_or_open(path: &Path, mode: u32) -> std::io::Result<File> {
    match create_new(path, mode) {
        Ok(f) => return Ok(f),
        Err(e) if e.kind() == ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e),
    }
    // There already (or a link is: followed, as ever).
    sys::create_mode(OpenOptions::new().create(true).truncate(false).write(true), mode).open(path)
}

/// Moves `from` to `to` without following symlinks (a link moves as a link), creating `to`'s
/// parents; across filesystems a tree is copied (links as links, modes kept) and then removed.
pub fn move_no_follow(from: &Path, to: &Path) -> Result<()> {
    create_dirs(to.parent().expect("destination has a parent"), None)
        .with_context(|| format!("could not create `{}`", to.display()))?;
    match fs::rename(from, to) {
        Ok(()) => Ok(()),
        Err(e) if sys::cross_device(&e) => {
            copy_no_follow(from, to).with_context(|| format!("could not copy `{}`", from.display()))?;
            remove_no_follow(from).with_context(|| format!("could not remove `{}`", from.display()))
        }
        Err(e) => Err(e).with_context(|| format!("could not move `{}` to `{}`", from.display(), to.display())),
    }
}

fn copy_no_follow(src: &Path, dest: &Path) -> std::io::Result<()> {
    let m = fs::symlink_metadata(src)?;
    if m.file_type().is_symlink() {
        sys::symlink(&fs::read_link(src)?, dest)
    } else if m.is_dir() {
        fs::create_dir(dest)?;
        for e in fs::read_dir(src)? {
            let e = e?;
            copy_no_follow(&e.path(), &dest.join(e.file_name()))?;
        }
        fs::set_permissions(dest, m.permissions())
    } else if m.is_file() {
        fs::copy(src, dest).map(|_| ())
    } else {
        Err(std::io::Error::other(format!("`{}` is not a file, directory or symlink", src.display())))
    }
}

fn remove_no_follow(p: &Path) -> std::io::Result<()> {
    let m = fs::symlink_metadata(p)?;
    if m.is_dir() {
        fs::remove_dir_all(p)
    } else {
        fs::remove_file(p)
    }
}

/// Test-only fault injection: `OVMEM_FAULT=<point>:<n>` fails (or with `abort:` crashes) the
/// n-th time `point` is reached. It lets the integration tests prove the transaction guarantees.
pub(crate) fn fault_point(point: &str) -> Result<()> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static HITS: AtomicUsize = AtomicUsize::new(0);
    let Ok(spec) = std::env::var("OVMEM_FAULT") else { return Ok(()) };
    let (abort, spec) = match spec.strip_prefix("abort:") {
        Some(rest) => (true, rest.to_string()),
        None => (false, spec),
    };
    // `sleep:<point>:<n>` waits there (up to 5 s, less once a signal came in), so a test can
    // signal the process at that exact step.
    let (sleep, spec) = match spec.strip_prefix("sleep:") {
        Some(rest) => (true, rest.to_string()),
        None => (false, spec),
    };
    let Some((p, n)) = spec.split_once(':') else { return Ok(()) };
    if p != point {
        return Ok(());
    }
    let hit = HITS.fetch_add(1, Ordering::SeqCst) + 1;
    if n.parse::<usize>().ok() == Some(hit) {
        if sleep {
            for _ in 0..100 {
                if crate::interrupt::check().is_err() {
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
            return Ok(());
        }
        if abort {
            std::process::abort();
        }
        bail!("injected fault at {point} #{hit}");
    }
    Ok(())
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    fn resolve_follows_every_link_and_confines() {
        let t = tempfile::tempdir().unwrap();
        let root = fs::canonicalize(t.path()).unwrap();
        let proj = root.join("proj");
        fs::create_dir_all(proj.join("a")).unwrap();
        std::os::unix::fs::symlink("../../outside", proj.join("a/link")).unwrap();
        std::os::unix::fs::symlink("a", proj.join("dirlink")).unwrap();
        // A dangling link out of the project is an escape, even though its target does not exist.
        let e = resolve_in(&proj.join("a/link"), Some(&proj)).unwrap_err();
        assert!(e.downcast_ref::<Escape>().is_some(), "{e:#}");
        assert_eq!(resolve(&proj.join("a/link")).unwrap(), root.join("outside"));
        // Links that stay inside are fine, and intermediate directory links are followed.
        assert_eq!(resolve_in(&proj.join("dirlink/x.json"), Some(&proj)).unwrap(), proj.join("a/x.json"));
        std::os::unix::fs::symlink("/", proj.join("up")).unwrap();
        assert!(resolve_in(&proj.join("up/etc/passwd"), Some(&proj)).is_err());
    }

    #[test]
    fn only_regular_files_are_read() {
        assert!(read_opt(Path::new("/dev/zero")).is_err());
        assert!(read_opt(Path::new("/")).is_err());
        assert_eq!(read_opt(Path::new("/nonexistent/x")).unwrap(), None);
        let t = tempfile::tempdir().unwrap();
        let fifo = t.path().join("fifo");
        let c = std::ffi::CString::new(fifo.to_string_lossy().as_bytes()).unwrap();
        // SAFETY: a valid C string path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
        assert!(read_opt(&fifo).is_err(), "a FIFO must be refused, not block");
    }

    #[test]
    fn temps_of_dead_processes_are_swept() {
        let t = tempfile::tempdir().unwrap();
        let dead = t.path().join(format!(".a.json{TEMP_MARK}999999999.abc"));
        let live = t.path().join(format!(".a.json{TEMP_MARK}1.abc"));
        let mine = t.path().join("a.json.ovmem-tmp-not-ours");
        for p in [&dead, &live, &mine] {
            fs::write(p, "x").unwrap();
        }
        assert_eq!(sweep_temps(t.path()), 1);
        assert!(!dead.exists() && live.exists() && mine.exists());
    }

    /// Root creating in another user's directory gives what it creates that user's owner, never
    /// through a link and never to what was there already; under root's own directory, nothing.
    #[test]
    fn root_s_new_files_and_directories_take_the_owner_of_the_directory_they_are_made_in() {
        use std::os::unix::fs::MetadataExt;
        if sys::euid() != Some(0) {
            return;
        }
        let t = tempfile::tempdir().unwrap();
        let owner = |p: &Path| fs::symlink_metadata(p).map(|m| (m.uid(), m.gid())).unwrap();
        assert_eq!(heir(&t.path().join("a/b/c")), None, "a directory of root's passes nothing on");
        let theirs = t.path().join("theirs");
        fs::create_dir(&theirs).unwrap();
        std::os::unix::fs::chown(&theirs, Some(12345), Some(12346)).unwrap();
        assert_eq!(heir(&theirs.join("x/y/z")), Some((12345, 12346)));
        // The nearest directory that exists decides; it keeps its owner, the new ones take it.
        fs::create_dir(theirs.join("old")).unwrap();
        std::os::unix::fs::chown(theirs.join("old"), Some(12347), Some(12348)).unwrap();
        let made = create_dirs(&theirs.join("old/new/deeper"), Some(0o700)).unwrap();
        assert_eq!(made, vec![theirs.join("old/new"), theirs.join("old/new/deeper")]);
        assert_eq!(owner(&theirs), (12345, 12346));
        assert_eq!(owner(&theirs.join("old")), (12347, 12348));
        assert_eq!(owner(&theirs.join("old/new")), (12347, 12348));
        assert_eq!(owner(&theirs.join("old/new/deeper")), (12347, 12348));
        // Under a directory of root's, nothing changes owner.
        fs::create_dir(theirs.join("root-s")).unwrap();
        create_dirs(&theirs.join("root-s/sub"), None).unwrap();
        assert_eq!(owner(&theirs.join("root-s/sub")), (0, 0));
        // A symlink at the name is never followed.
        let root_s = t.path().join("root-s");
        fs::create_dir(&root_s).unwrap();
        std::os::unix::fs::symlink(&root_s, theirs.join("link")).unwrap();
        adopt_dir(&theirs.join("link"));
        assert_eq!(owner(&root_s), (0, 0));
        // A new file through its open descriptor.
        let tmp = temp_beside(&theirs.join("f.json"), b"{}", 0o600, None).unwrap();
        assert_eq!(owner(tmp.path()), (12345, 12346));
        let tmp = temp_beside(&root_s.join("f.json"), b"{}", 0o600, None).unwrap();
        assert_eq!(owner(tmp.path()), (0, 0));
    }

    #[test]
    fn moves_never_follow_links() {
        let t = tempfile::tempdir().unwrap();
        let victim = t.path().join("victim");
        fs::create_dir_all(&victim).unwrap();
        fs::write(victim.join("id_rsa"), "secret").unwrap();
        let link = t.path().join("lib");
        std::os::unix::fs::symlink(&victim, &link).unwrap();
        copy_no_follow(&link, &t.path().join("copy")).unwrap();
        assert!(fs::symlink_metadata(t.path().join("copy")).unwrap().file_type().is_symlink());
        move_no_follow(&link, &t.path().join("b/lib")).unwrap();
        assert_eq!(fs::read_to_string(victim.join("id_rsa")).unwrap(), "secret");
    }
}
