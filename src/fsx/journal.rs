//! Journaled transactions. Before the first byte of a file changes, the intent is on disk and
//! flushed: every file with the sha256 of its bytes before and after, where a copy of the before
//! bytes is kept, and the directories about to be created (`$OVMEM_HOME/journal/journal.json`).
//! Then each file is replaced atomically, and verified: the rename *exchanges* the new file with
//! the old one, so ovmem sees exactly what it replaced; if another program wrote in between, the
//! edit is redone on that program's bytes. A transaction is committed by marking the journal; one
//! that never got there (an error, a signal, a kill) is rolled back: in-process when it can be,
//! else by [`recover`] at the start of the next ovmem command. Flushes are issued in parallel so
//! the filesystem can group them.

use std::fs::{self, File};
use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use super::{fault_point, holds, meta, read_opt, reads, sha256_hex, sync_dirs, sync_files, temp_beside, Blob, Meta};
use crate::interrupt;
use crate::sys;

/// What kind of file a change is about; it decides how a rollback treats it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    /// A file shared with a harness: rolled back only while it still holds ovmem's bytes.
    Shared,
    /// A backup beside a shared file (`.ovmem.bak`, `.bak`).
    Backup,
    /// One of ovmem's own files (receipts, the runtime): always restored.
    Own,
}

/// The mode a written file gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// The existing file's mode and owner; `new` for a file that does not exist yet (owned by
    /// its directory's [`super::heir`], when root creates it in another user's directory).
    Keep { new: u32 },
    /// Exactly this mode (the owner is kept; a new file's is as with `Keep`).
    Set(u32),
    /// The mode and owner of another file, whether this one exists yet or not: a backup is
    /// its file's copy, so root's install into another user's file leaves that user's `.bak`
    /// (where the owner cannot be given, as a user who is not root, the writer's).
    Like(Meta),
}

/// Recomputes a file's new bytes from what another program left there. `over_ours`: ovmem's
/// bytes for this file have been in place during this transaction (if only for the instant
/// before a rename put another program's write back), so that program may have read them and
/// `current` may hold a copy of ovmem's edit: what ovmem created then is still ovmem's.
pub trait Redo {
    fn redo(&mut self, current: Option<&Blob>, over_ours: bool) -> Result<Option<Blob>>;
}

/// One file to change: its real path (symlinks already resolved), the bytes the change was
/// computed from, and the bytes it should hold (`None`: the file goes). Shared, not copied: the
/// plan, the backups and the journal hold the same bytes of a file.
pub struct Change<'a> {
    pub path: PathBuf,
    pub before: Option<Blob>,
    pub after: Option<Blob>,
    pub mode: Mode,
    pub kind: Kind,
    pub redo: Option<&'a mut dyn Redo>,
}

impl Change<'_> {
    fn is_noop(&self) -> bool {
        let mode_ok = match self.mode {
            Mode::Set(m) => self.after.is_none() || meta(&self.path).is_none_or(|x| x.mode == m),
            Mode::Keep { .. } | Mode::Like(_) => true,
        };
        self.before == self.after && mode_ok
    }
}

/// Steps that finish a committed transaction; each can run twice without harm.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Post {
    /// Files to delete (the unused runtime, the lock file).
    pub remove_files: Vec<PathBuf>,
    /// Directories to delete when empty, in this order (innermost first).
    pub remove_empty_dirs: Vec<PathBuf>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
enum State {
    Prepared,
    Committed,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Before {
    sha256: String,
    meta: Meta,
    /// The copy's file name in the journal directory.
    copy: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct JFile {
    path: PathBuf,
    kind: Kind,
    before: Option<Before>,
    /// Every content ovmem may have left there (sha256; `None`: the file deleted). More than one
    /// when the edit was redone on another program's bytes.
    afters: Vec<Option<String>>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Journal {
    version: u32,
    pid: u32,
    command: String,
    state: State,
    files: Vec<JFile>,
    /// Directories this transaction created, outermost first.
    dirs: Vec<PathBuf>,
    post: Post,
}

pub fn dir(ovmem_home: &Path) -> PathBuf {
    ovmem_home.join("journal")
}

/// An open transaction. Dropping it uncommitted rolls back everything it changed.
pub struct Tx {
    home: PathBuf,
    dir: PathBuf,
    j: Journal,
    started: bool,
    copies: usize,
    done: bool,
    /// Another program wrote one of the files during this transaction.
    contended: bool,
    /// Journal writes not flushed yet (see [`Tx::note_journal`]).
    unsynced: Vec<File>,
    /// Files ovmem replaced in this apply, checked once more for late writes.
    kept: Vec<Kept>,
    /// The files (journal indices) whose path has held ovmem's bytes during this transaction:
    /// from then on, what another program writes there may be a copy of them.
    exposed: Vec<usize>,
    pub warnings: Vec<String>,
}

/// A file ovmem replaced (now at a temp name), with the bytes it had then.
struct Kept {
    k: usize,
    tmp: tempfile::TempPath,
    bytes: Option<Blob>,
}

/// A staged new file: anonymous (`O_TMPFILE`, invisible until linked in) where the filesystem
/// allows it, else a named temp file.
enum Staged {
    Anon(File),
    Named(tempfile::NamedTempFile),
}

impl Staged {
    fn new(target: &Path, bytes: &[u8], mode: u32, like: Option<Meta>) -> Result<Self> {
        use std::io::Write;
        let dir = target.parent().unwrap_or(Path::new("/"));
        match sys::anon_temp(dir, mode) {
            Some(mut f) => {
                f.write_all(bytes).with_context(|| format!("could not write in `{}`", dir.display()))?;
                sys::set_file_mode(&f, mode)?;
                match like {
                    Some(m) => sys::chown(&f, m.uid, m.gid),
                    None => super::adopt(&f, target),
                }
                Ok(Self::Anon(f))
            }
            None => Ok(Self::Named(temp_beside(target, bytes, mode, like)?)),
        }
    }

    fn file(&self) -> &File {
        match self {
            Self::Anon(f) => f,
            Self::Named(t) => t.as_file(),
        }
    }

    /// Gives the staged file a (random, unused) name beside `target`.
    fn link(self, target: &Path) -> Result<tempfile::TempPath> {
        match self {
            Self::Named(t) => Ok(t.into_temp_path()),
            Self::Anon(f) => {
                for _ in 0..16 {
                    let name = temp_name(target);
                    match sys::link_anon(&f, &name) {
                        Ok(()) => return tempfile::TempPath::try_from_path(name).map_err(Into::into),
                        Err(e) if e.kind() == ErrorKind::AlreadyExists => continue,
                        Err(e) => {
                            return Err(e)
                                .with_context(|| format!("could not create a file beside `{}`", target.display()))
                        }
                    }
                }
                anyhow::bail!("could not find a free temporary name beside `{}`", target.display())
            }
        }
    }
}

fn temp_name(target: &Path) -> PathBuf {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_nanos());
    let name = target.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    target.with_file_name(format!(".{name}{}{}.{:016x}", super::TEMP_MARK, std::process::id(), h.finish()))
}

impl Tx {
    /// A new transaction. The caller holds the [`super::InstallLock`] and ran [`recover`].
    pub fn begin(ovmem_home: &Path, command: &str) -> Self {
        Self {
            home: ovmem_home.to_path_buf(),
            dir: dir(ovmem_home),
            j: Journal {
                version: 1,
                pid: std::process::id(),
                command: command.to_string(),
                state: State::Prepared,
                files: Vec::new(),
                dirs: Vec::new(),
                post: Post::default(),
            },
            started: false,
            copies: 0,
            done: false,
            contended: false,
            unsynced: Vec::new(),
            kept: Vec::new(),
            exposed: Vec::new(),
            warnings: Vec::new(),
        }
    }

    /// Adds finishing steps, run once the transaction is committed.
    pub fn post(&mut self, post: Post) {
        self.j.post.remove_files.extend(post.remove_files);
        self.j.post.remove_empty_dirs.extend(post.remove_empty_dirs);
    }

    fn start(&mut self) -> Result<()> {
        if self.started {
            return Ok(());
        }
        if fs::symlink_metadata(self.dir.join("journal.json")).is_ok() {
            anyhow::bail!(
                "an unfinished transaction is in `{}`; run `ovmem status` to finish it, then try again",
                self.dir.display()
            );
        }
        let made = super::create_dirs(&self.dir, None)
            .with_context(|| format!("could not create `{}`", self.dir.display()))?;
        for d in &made {
            let _ = sys::set_mode(d, 0o700);
        }
        // The journal directory must survive a crash, and so must the home it was created in.
        let mut parents: Vec<PathBuf> = made.iter().filter_map(|d| d.parent().map(Path::to_path_buf)).collect();
        parents.push(self.home.clone());
        sync_dirs(&parents)?;
        self.started = true;
        Ok(())
    }

    fn write_journal(&mut self, mut extra: Vec<File>) -> Result<()> {
        let path = self.dir.join("journal.json");
        let bytes = serde_json::to_vec_pretty(&self.j).expect("journals serialise");
        let tmp = temp_beside(&path, &bytes, 0o600, None)?;
        let tmp_file = tmp.as_file().try_clone()?;
        extra.append(&mut self.unsynced);
        extra.push(tmp_file);
        let refs: Vec<&File> = extra.iter().collect();
        sync_files(&refs)?;
        tmp.persist(&path).map_err(|e| e.error).with_context(|| format!("could not write `{}`", path.display()))?;
        sync_dirs(std::slice::from_ref(&self.dir))
    }

    /// A journal update while another program is writing the same file: in place at once (it
    /// survives the process being killed), flushed with the next durable write, so that ovmem's
    /// retries stay fast enough to catch up with the other writer.
    fn note_journal(&mut self, extra: Vec<File>) -> Result<()> {
        let path = self.dir.join("journal.json");
        let bytes = serde_json::to_vec_pretty(&self.j).expect("journals serialise");
        let tmp = temp_beside(&path, &bytes, 0o600, None)?;
        self.unsynced.extend(extra);
        self.unsynced.push(tmp.as_file().try_clone()?);
        tmp.persist(&path).map_err(|e| e.error).with_context(|| format!("could not write `{}`", path.display()))?;
        Ok(())
    }

    /// Keeps a copy of `bytes` in the journal; the file is returned unflushed.
    fn keep(&mut self, bytes: &Blob, path: &Path, kind: Kind) -> Result<(Before, File)> {
        let name = format!("before-{}", self.copies);
        self.copies += 1;
        let copy = self.dir.join(&name);
        // The mode a file gets when none is asked for (the umask applies).
        let f = super::create_new(&copy, 0o666).with_context(|| format!("could not write `{}`", copy.display()))?;
        std::io::Write::write_all(&mut &f, bytes).with_context(|| format!("could not write `{}`", copy.display()))?;
        let m = meta(path).unwrap_or(Meta { mode: 0o644, uid: 0, gid: 0 });
        let sha256 = if kind == Kind::Own { String::new() } else { bytes.sha256().to_string() };
        Ok((Before { sha256, meta: m, copy: name }, f))
    }

    /// Applies `changes` (all or nothing, with the rest of the transaction). Each change's
    /// `before` and `after` are updated when its edit had to be redone on another program's write.
    pub fn apply(&mut self, changes: &mut [Change]) -> Result<()> {
        let idx: Vec<usize> = (0..changes.len()).filter(|&i| !changes[i].is_noop()).collect();
        if idx.is_empty() {
            return Ok(());
        }
        self.start()?;
        let mut new_dirs: Vec<PathBuf> = Vec::new();
        for &i in &idx {
            if changes[i].after.is_some() {
                for d in super::missing_dirs(changes[i].path.parent().unwrap_or(Path::new("/"))) {
                    if !new_dirs.contains(&d) {
                        new_dirs.push(d);
                    }
                }
            }
        }
        let base = self.j.files.len();
        let mut copies = Vec::new();
        for &i in &idx {
            let c = &changes[i];
            let before = match &c.before {
                Some(b) => {
                    let (before, f) = self.keep(b, &c.path, c.kind)?;
                    copies.push(f);
                    Some(before)
                }
                None => None,
            };
            // ovmem's own files are restored whatever they hold: no hash needed (the runtime is large).
            let afters = if c.kind == Kind::Own { Vec::new() } else { vec![c.after.as_ref().map(sha)] };
            self.j.files.push(JFile { path: c.path.clone(), kind: c.kind, before, afters });
        }
        self.j.dirs.extend(new_dirs.iter().cloned());
        self.write_journal(copies)?;
        interrupt::check()?;
        for d in &new_dirs {
            match fs::create_dir(d) {
                Ok(()) => {
                    // Root's install into another user's home: that user's, as the file in it.
                    super::adopt_dir(d);
                    // Inside `$OVMEM_HOME` everything is private to its owner.
                    if d.starts_with(&self.home) {
                        let _ = sys::set_mode(d, 0o700);
                    }
                }
                Err(e) if e.kind() == ErrorKind::AlreadyExists => {}
                Err(e) => return Err(e).with_context(|| format!("could not create the directory `{}`", d.display())),
            }
        }
        // What was read of these paths in this run is stale from here on.
        for &i in &idx {
            reads::forget(&changes[i].path);
        }
        let mut staged: Vec<Option<Staged>> = Vec::new();
        for &i in &idx {
            let c = &changes[i];
            staged.push(match &c.after {
                Some(a) => Some(stage(c, a)?),
                None => None,
            });
        }
        let files: Vec<&File> = staged.iter().flatten().map(Staged::file).collect();
        sync_files(&files)?;
        for (k, &i) in idx.iter().enumerate() {
            if changes[i].kind != Kind::Own {
                fault_point("between-files")?;
            }
            interrupt::check()?;
            self.place(base + k, &mut changes[i], staged[k].take())?;
        }
        let mut dirs: Vec<PathBuf> =
            idx.iter().filter_map(|&i| changes[i].path.parent().map(Path::to_path_buf)).collect();
        dirs.extend(new_dirs.iter().filter_map(|d| d.parent().map(Path::to_path_buf)));
        sync_dirs(&dirs)?;
        self.verify(changes, &idx, base)?;
        if !self.unsynced.is_empty() {
            let files = std::mem::take(&mut self.unsynced);
            sync_files(&files.iter().collect::<Vec<_>>())?;
            sync_dirs(std::slice::from_ref(&self.dir))?;
        }
        // Files that were redone on another program's bytes are flushed again.
        let files: Vec<File> = idx.iter().filter_map(|&i| File::open(&changes[i].path).ok()).collect();
        if self.contended {
            sync_files(&files.iter().collect::<Vec<_>>())?;
        }
        Ok(())
    }

    /// Puts one change in place, redoing it while another program keeps writing the file. The
    /// file is read right before each rename, and the rename *exchanges* the two files, so ovmem
    /// sees exactly what it replaced: when another program got a write into that instant, its
    /// bytes go straight back in place and ovmem's edit is redone on them.
    fn place(&mut self, k: usize, c: &mut Change, mut staged: Option<Staged>) -> Result<()> {
        let shared = c.kind != Kind::Own && c.redo.is_some();
        let mut expect = c.before.clone();
        // A program that rewrites its file every few milliseconds can win many rounds on a busy
        // machine; ovmem keeps trying for a few seconds before it gives up.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        let mut round = 0u32;
        while round < 64 || std::time::Instant::now() < deadline {
            round += 1;
            if round > 8 {
                // Out of step with a writer that has a rhythm.
                std::thread::sleep(std::time::Duration::from_micros(u64::from(round % 7) * 150));
            }
            if c.kind != Kind::Own {
                fault_point("before-rename")?;
            }
            // Named now, so that nothing but a comparison lies between the read and the rename.
            let tmp = staged.take().map(|s| s.link(&c.path)).transpose()?;
            // Read from disk, whatever this run read before: it is how another program's write
            // since the plan is seen.
            if shared && !holds(&c.path, expect.as_deref())? {
                // Written since ovmem read it: redo on what is there, before replacing anything.
                drop(tmp);
                let now = read_opt(&c.path)?.map(Blob::from);
                if !self.redo(k, c, now.clone())? {
                    return Ok(());
                }
                expect = now;
                staged = c.after.as_ref().map(|a| stage(c, a)).transpose()?;
                continue;
            }
            let Some(tmp) = tmp else {
                // A deletion: move the file aside first, so ovmem sees what it removes.
                if fs::symlink_metadata(&c.path).is_err() {
                    return Ok(());
                }
                let aside = temp_name(&c.path);
                sys::rename_noreplace(&c.path, &aside)
                    .or_else(|e| if sys::unsupported(&e) { fs::rename(&c.path, &aside) } else { Err(e) })
                    .with_context(|| format!("could not remove `{}`", c.path.display()))?;
                if !shared || holds(&aside, expect.as_deref())? {
                    let _ = fs::remove_file(&aside);
                    return Ok(());
                }
                // Written in that instant: it goes back (unless a newer file is there already).
                if sys::rename_noreplace(&aside, &c.path).is_err() {
                    let _ = fs::remove_file(&aside);
                }
                continue;
            };
            if !shared {
                fs::rename(&tmp, &c.path).with_context(|| format!("could not write `{}`", c.path.display()))?;
                return Ok(());
            }
            // From the rename on, ovmem's bytes are where other programs read: even when they are
            // put back at once, a program may have read them in that instant and write them back
            // (an in-place writer does, with its own change), so a redo sees ovmem's edit again.
            if !self.exposed.contains(&k) {
                self.exposed.push(k);
            }
            if expect.is_none() {
                match sys::rename_noreplace(&tmp, &c.path) {
                    Ok(()) => return Ok(()),
                    // Created in that instant by someone else: theirs stays, ovmem redoes.
                    Err(e) if e.kind() == ErrorKind::AlreadyExists => {
                        staged = c.after.as_ref().map(|a| stage(c, a)).transpose()?;
                        continue;
                    }
                    Err(e) if sys::unsupported(&e) => {
                        fs::rename(&tmp, &c.path).with_context(|| format!("could not write `{}`", c.path.display()))?;
                        return Ok(());
                    }
                    Err(e) => return Err(e).with_context(|| format!("could not write `{}`", c.path.display())),
                }
            }
            moment("before-exchange", &c.path);
            match sys::rename_exchange(&tmp, &c.path) {
                Ok(()) => {}
                Err(e) if sys::unsupported(&e) => {
                    fs::rename(&tmp, &c.path).with_context(|| format!("could not replace `{}`", c.path.display()))?;
                    return Ok(());
                }
                Err(e) if e.kind() == ErrorKind::NotFound => {
                    // Removed in that instant: redo on its absence.
                    staged = c.after.as_ref().map(|a| stage(c, a)).transpose()?;
                    continue;
                }
                Err(e) => return Err(e).with_context(|| format!("could not replace `{}`", c.path.display())),
            }
            moment("exchanged", &c.path);
            if holds(&tmp, expect.as_deref())? {
                // The replaced file is kept a moment: a program that opened it before the rename
                // may still be writing into it (see `verify`).
                self.kept.push(Kept { k, tmp, bytes: expect });
                return Ok(());
            }
            // Another program wrote between ovmem's read and its rename: its bytes go back at once
            // (and if it wrote yet again in between, that newest write does).
            sys::rename_exchange(&tmp, &c.path)
                .with_context(|| format!("could not put `{}` back", c.path.display()))?;
            moment("put-back", &c.path);
            if !holds(&tmp, c.after.as_deref())? {
                let _ = sys::rename_exchange(&tmp, &c.path);
            }
            staged = c.after.as_ref().map(|a| stage(c, a)).transpose()?;
        }
        anyhow::bail!("`{}` kept changing while ovmem wrote it; nothing was changed, try again", c.path.display())
    }

    /// Redoes `c` on `current` (another program's bytes). `false` when nothing is left to write.
    fn redo(&mut self, k: usize, c: &mut Change, current: Option<Blob>) -> Result<bool> {
        self.contended(&c.path);
        let over_ours = self.exposed.contains(&k);
        let Some(r) = c.redo.as_mut() else { return Ok(false) };
        let after = r.redo(current.as_ref(), over_ours)?;
        let before = match &current {
            Some(b) => {
                let (before, f) = self.keep(b, &c.path, c.kind)?;
                self.j.files[k].before = Some(before);
                Some(f)
            }
            None => {
                self.j.files[k].before = None;
                None
            }
        };
        self.j.files[k].afters.push(after.as_ref().map(sha));
        self.note_journal(before.into_iter().collect())?;
        c.before = current;
        let same = c.before == after;
        c.after = after;
        Ok(!same)
    }

    /// After the renames: a shared file that no longer holds what ovmem wrote was written by
    /// another program since; ovmem's edit is redone on its bytes. While that happens, the files
    /// are checked again a little later, until they stay put.
    fn verify(&mut self, changes: &mut [Change], idx: &[usize], base: usize) -> Result<()> {
        // Checked soon (an in-place writer's late write lands within moments of its open) and
        // again a little later; replaced files are kept until the last check.
        const WAITS_MS: [u64; 8] = [2, 10, 30, 30, 30, 30, 30, 30];
        let mut held: Vec<Kept> = Vec::new();
        for wait in WAITS_MS {
            held.append(&mut self.kept);
            if !held.is_empty() || self.contended {
                std::thread::sleep(std::time::Duration::from_millis(wait));
            }
            let mut moved = false;
            // A write into a file ovmem had already replaced (a program that writes in place,
            // and had it open): those bytes go back in place, and the edit is redone on them.
            let kept = std::mem::take(&mut held);
            for kf in kept {
                if holds(&kf.tmp, kf.bytes.as_deref())? {
                    held.push(kf);
                    continue;
                }
                let late = read_opt(&kf.tmp)?.map(Blob::from);
                moved = true;
                let k = kf.k;
                let c = &mut changes[idx[k - base]];
                // Only when nothing newer was written at the path since: then that late write is
                // the newest state of the file. Else it was superseded, and the check below
                // redoes on what is there now.
                if !holds(&c.path, c.after.as_deref())? {
                    continue;
                }
                sys::rename_exchange(&kf.tmp, &c.path)
                    .with_context(|| format!("could not put `{}` back", c.path.display()))?;
                drop(kf);
                if self.redo(k, c, late)? {
                    let staged = c.after.as_ref().map(|a| stage(c, a)).transpose()?;
                    self.place(k, c, staged)?;
                }
            }
            for (k, &i) in idx.iter().enumerate() {
                let c = &mut changes[i];
                if c.kind != Kind::Shared || c.redo.is_none() {
                    continue;
                }
                if holds(&c.path, c.after.as_deref())? {
                    continue;
                }
                let now = read_opt(&c.path)?.map(Blob::from);
                moved = true;
                let expect = now.clone();
                let Some(r) = c.redo.as_mut() else { continue };
                let redone = r.redo(now.as_ref(), true)?;
                if redone == now {
                    // Their write already holds ovmem's edit.
                    c.after = redone;
                    continue;
                }
                // Redo on their bytes, exactly as if they had written before ovmem's rename.
                c.before = expect.clone();
                self.contended(&c.path);
                c.after = redone;
                let before = match &expect {
                    Some(b) => {
                        let (before, f) = self.keep(b, &c.path, c.kind)?;
                        self.j.files[base + k].before = Some(before);
                        Some(f)
                    }
                    None => None,
                };
                self.j.files[base + k].afters.push(c.after.as_ref().map(sha));
                self.note_journal(before.into_iter().collect())?;
                let staged = c.after.as_ref().map(|a| stage(c, a)).transpose()?;
                self.place(base + k, c, staged)?;
            }
            if !moved && self.kept.is_empty() && (held.is_empty() || wait >= 30) {
                return Ok(());
            }
        }
        self.kept.clear();
        Ok(())
    }

    fn contended(&mut self, path: &Path) {
        self.contended = true;
        let msg = format!(
            "`{}` was written by another program while ovmem changed it; that write was kept and ovmem's edit redone on it",
            path.display()
        );
        if !self.warnings.contains(&msg) {
            self.warnings.push(msg);
        }
    }

    /// Commits: marks the journal, runs the finishing steps, removes the journal.
    pub fn commit(mut self) -> Result<Vec<String>> {
        interrupt::check()?;
        if self.started {
            self.j.state = State::Committed;
            self.write_journal(Vec::new())?;
        }
        self.done = true;
        fault_point("committed")?;
        finish(&self.dir, &self.j.post, self.started);
        Ok(std::mem::take(&mut self.warnings))
    }
}

/// A moment of [`Tx::place`] at which a unit test can act as another program writing `path`
/// (see the test-only `moments`); nothing happens outside tests.
fn moment(name: &'static str, path: &Path) {
    #[cfg(test)]
    moments::AT.with(|at| {
        if let Some(f) = at.borrow_mut().as_mut() {
            f(name, path);
        }
    });
    #[cfg(not(test))]
    let _ = (name, path);
}

/// Test builds: what runs at each [`moment`] of this thread's transactions.
#[cfg(test)]
pub(crate) mod moments {
    use std::cell::RefCell;
    use std::path::Path;

    pub type Hook = Box<dyn FnMut(&'static str, &Path)>;

    thread_local! {
        pub static AT: RefCell<Option<Hook>> = RefCell::new(None);
    }

    /// Runs `f` at every moment until the returned guard is dropped.
    pub fn set(f: impl FnMut(&'static str, &Path) + 'static) -> Guard {
        AT.with(|at| *at.borrow_mut() = Some(Box::new(f)));
        Guard
    }

    pub struct Guard;

    impl Drop for Guard {
        fn drop(&mut self) {
            AT.with(|at| *at.borrow_mut() = None);
        }
    }
}

/// The hash the journal records of `b` (computed once per buffer).
fn sha(b: &Blob) -> String {
    b.sha256().to_string()
}

fn stage(c: &Change, after: &[u8]) -> Result<Staged> {
    let old = meta(&c.path);
    let (mode, owner) = match c.mode {
        Mode::Set(m) => (m, old),
        Mode::Keep { new } => (old.map(|m| m.mode).unwrap_or(new), old),
        Mode::Like(m) => (m.mode, Some(m)),
    };
    Staged::new(&c.path, after, mode, owner)
}

/// The finishing steps of a committed transaction, then the journal goes (and last, the
/// directories that only held the journal).
fn finish(dir: &Path, post: &Post, journal: bool) {
    for f in &post.remove_files {
        let _ = fs::remove_file(f);
    }
    super::remove_empty_dirs(&post.remove_empty_dirs);
    if journal {
        let _ = fs::remove_dir_all(dir);
        super::remove_empty_dirs(&post.remove_empty_dirs);
    }
}

impl Drop for Tx {
    fn drop(&mut self) {
        if self.done || !self.started {
            return;
        }
        let r = rollback(&self.dir, &self.j);
        for w in r.left {
            eprintln!("warning: {w}");
        }
        let _ = fs::remove_dir_all(&self.dir);
        super::remove_empty_dirs(std::slice::from_ref(&self.dir));
    }
}

#[derive(Debug, Default)]
struct Rollback {
    restored: usize,
    left: Vec<String>,
}

/// Puts every file of `j` back, last first: each one still holding ovmem's bytes (its own files
/// always) gets its before bytes, mode and owner back; created directories go when empty.
fn rollback(dir: &Path, j: &Journal) -> Rollback {
    let mut out = Rollback::default();
    for f in j.files.iter().rev() {
        if f.kind != Kind::Own {
            let current = match read_opt(&f.path) {
                Ok(c) => c,
                Err(e) => {
                    out.left.push(format!("{e:#}; it was left as it is"));
                    continue;
                }
            };
            let cur = current.as_deref().map(sha256_hex);
            if cur.as_deref() == f.before.as_ref().map(|b| b.sha256.as_str()) {
                continue;
            }
            if !f.afters.contains(&cur) {
                out.left.push(format!(
                    "`{}` was changed by another program after ovmem wrote it, so it was left as it is; \
                     `ovmem status` shows what is installed and `ovmem repair` rebuilds ovmem's records",
                    f.path.display()
                ));
                continue;
            }
        }
        match restore(dir, f) {
            Ok(()) => out.restored += 1,
            Err(e) => out.left.push(format!("could not put `{}` back: {e:#}", f.path.display())),
        }
    }
    // A dead process's staged temp files go first: one left in a directory the transaction made
    // would keep that directory, which then no receipt would record.
    let parents: Vec<PathBuf> = j.files.iter().filter_map(|f| f.path.parent().map(Path::to_path_buf)).collect();
    for p in &parents {
        super::sweep_temps(p);
    }
    let mut dirs = j.dirs.clone();
    dirs.reverse();
    super::remove_empty_dirs(&dirs);
    let _ = sync_dirs(&parents);
    out
}

/// Gives `f` its before bytes, mode and owner back (or removes it, when it did not exist).
fn restore(dir: &Path, f: &JFile) -> Result<()> {
    match &f.before {
        Some(b) => {
            let bytes = read_opt(&dir.join(&b.copy))
                .and_then(|b| b.ok_or_else(|| anyhow::anyhow!("it is not there")))
                .with_context(|| format!("the journal's copy of `{}` is missing", f.path.display()))?;
            let tmp = temp_beside(&f.path, &bytes, b.meta.mode, Some(b.meta))?;
            tmp.as_file().sync_all()?;
            tmp.persist(&f.path).map_err(|e| e.error)?;
            Ok(())
        }
        None => match fs::remove_file(&f.path) {
            Err(e) if e.kind() != ErrorKind::NotFound => Err(e.into()),
            _ => Ok(()),
        },
    }
}

/// What [`recover`] did with a transaction a dead process left.
#[derive(Debug)]
pub struct Recovered {
    pub command: String,
    pub pid: u32,
    pub outcome: Outcome,
    pub warnings: Vec<String>,
}

#[derive(Debug, PartialEq, Eq)]
pub enum Outcome {
    /// It had not changed anything yet.
    Discarded,
    /// It had started changing files: they were put back.
    RolledBack { restored: usize },
    /// It had committed: its finishing steps were done.
    RolledForward,
    /// Its journal could not be read (damaged, not a regular file, unreadable): nothing was
    /// rolled either way, and the journal directory was moved aside, whole, to `kept`.
    Kept { kept: PathBuf, error: String },
}

impl std::fmt::Display for Recovered {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let what = format!("an `ovmem {}` (pid {}) did not finish", self.command, self.pid);
        match self.outcome {
            Outcome::Discarded if self.pid == 0 => {
                write!(f, "an interrupted ovmem had not started changing files; its journal was discarded")
            }
            Outcome::Discarded => write!(f, "{what} before changing anything; its journal was discarded"),
            Outcome::RolledBack { restored } => {
                write!(f, "{what}; it was rolled back ({restored} file(s) put back as they were)")
            }
            Outcome::RolledForward => write!(f, "{what} after it had committed; it was completed (rolled forward)"),
            Outcome::Kept { ref kept, ref error } => write!(
                f,
                "an interrupted ovmem left a journal that could not be read ({error}); nothing was undone and it \
                 was kept at `{}` (its `before-*` files are the earlier copies of the files it was changing): \
                 check the harness files with `ovmem status`, restore from those copies if needed, then remove \
                 that directory",
                kept.display()
            ),
        }
    }
}

/// Finishes what a dead process left in the journal: a prepared transaction is rolled back, a
/// committed one is rolled forward. The caller holds the [`super::InstallLock`].
pub fn recover(ovmem_home: &Path) -> Result<Option<Recovered>> {
    let dir = dir(ovmem_home);
    if fs::symlink_metadata(&dir).is_err() {
        return Ok(None);
    }
    // The journal is written whole (a temp file renamed over it) before the first byte of a harness
    // file changes: no journal means nothing had changed; one that cannot be read is kept.
    let journal: Option<Journal> = match read_opt(&dir.join("journal.json"))
        .and_then(|b| b.map(|b| serde_json::from_slice(&b).context("it is not a valid journal")).transpose())
    {
        Ok(j) => j,
        Err(e) => {
            let stamp = crate::store::now();
            let kept = (0..)
                .map(|n| {
                    ovmem_home.join(if n == 0 {
                        format!("journal.unreadable-{stamp}")
                    } else {
                        format!("journal.unreadable-{stamp}-{n}")
                    })
                })
                .find(|p| fs::symlink_metadata(p).is_err())
                .expect("a free name");
            fs::rename(&dir, &kept)
                .with_context(|| format!("could not move the unreadable journal `{}` aside", dir.display()))?;
            let error = format!("{e:#}");
            return Ok(Some(Recovered {
                command: "?".into(),
                pid: 0,
                outcome: Outcome::Kept { kept, error },
                warnings: Vec::new(),
            }));
        }
    };
    let out = match journal {
        None => Recovered { command: "?".into(), pid: 0, outcome: Outcome::Discarded, warnings: Vec::new() },
        Some(j) if j.state == State::Committed => {
            finish(&dir, &j.post, true);
            Recovered { command: j.command, pid: j.pid, outcome: Outcome::RolledForward, warnings: Vec::new() }
        }
        Some(j) => {
            let r = rollback(&dir, &j);
            Recovered {
                command: j.command.clone(),
                pid: j.pid,
                outcome: Outcome::RolledBack { restored: r.restored },
                warnings: r.left,
            }
        }
    };
    fs::remove_dir_all(&dir)
        .or_else(|e| if e.kind() == ErrorKind::NotFound { Ok(()) } else { Err(e) })
        .with_context(|| format!("could not remove `{}`", dir.display()))?;
    Ok(Some(out))
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn change<'a>(path: &Path, before: Option<&str>, after: Option<&str>) -> Change<'a> {
        Change {
            path: path.to_path_buf(),
            before: before.map(|s| Blob::from(s.to_string())),
            after: after.map(|s| Blob::from(s.to_string())),
            mode: Mode::Keep { new: 0o644 },
            kind: Kind::Shared,
            redo: None,
        }
    }

    #[test]
    fn dropped_transaction_rolls_back_files_modes_and_dirs() {
        let t = tempfile::tempdir().unwrap();
        let home = t.path().join("home");
        let a = t.path().join("a");
        fs::write(&a, "old").unwrap();
        fs::set_permissions(&a, fs::Permissions::from_mode(0o640)).unwrap();
        let b = t.path().join("sub/dir/b");
        {
            let mut tx = Tx::begin(&home, "test");
            tx.apply(&mut [change(&a, Some("old"), Some("new")), change(&b, None, Some("new"))]).unwrap();
            assert_eq!(fs::read_to_string(&a).unwrap(), "new");
            assert_eq!(fs::metadata(&a).unwrap().permissions().mode() & 0o777, 0o640);
        }
        assert_eq!(fs::read_to_string(&a).unwrap(), "old");
        assert_eq!(fs::metadata(&a).unwrap().permissions().mode() & 0o777, 0o640);
        assert!(!t.path().join("sub").exists());
        assert!(!dir(&home).exists());
    }

    #[test]
    fn a_left_journal_is_rolled_back_or_forward() {
        let t = tempfile::tempdir().unwrap();
        let home = t.path().join("home");
        let a = t.path().join("a");
        fs::write(&a, "old").unwrap();
        let mut tx = Tx::begin(&home, "test");
        tx.apply(&mut [change(&a, Some("old"), Some("new"))]).unwrap();
        // As if the process had been killed here.
        std::mem::forget(tx);
        let r = recover(&home).unwrap().unwrap();
        assert_eq!(r.outcome, Outcome::RolledBack { restored: 1 });
        assert_eq!(fs::read_to_string(&a).unwrap(), "old");
        assert!(recover(&home).unwrap().is_none());

        let mut tx = Tx::begin(&home, "test");
        tx.apply(&mut [change(&a, Some("old"), Some("new"))]).unwrap();
        tx.j.state = State::Committed;
        tx.write_journal(Vec::new()).unwrap();
        std::mem::forget(tx);
        assert_eq!(recover(&home).unwrap().unwrap().outcome, Outcome::RolledForward);
        assert_eq!(fs::read_to_string(&a).unwrap(), "new");
    }

    #[test]
    fn a_directory_made_by_a_killed_transaction_goes_even_with_its_temp_file_in_it() {
        let t = tempfile::tempdir().unwrap();
        let home = t.path().join("home");
        let b = t.path().join("made/here/b");
        let mut tx = Tx::begin(&home, "test");
        tx.apply(&mut [change(&b, None, Some("new"))]).unwrap();
        // Killed while the next file was staged: its temp file is still beside `b`.
        let tmp = super::super::temp_beside(&b, b"next", 0o600, None).unwrap();
        let (_, left) = tmp.keep().unwrap();
        std::mem::forget(tx);
        assert!(left.exists());
        let r = recover(&home).unwrap().unwrap();
        assert_eq!(r.outcome, Outcome::RolledBack { restored: 1 });
        assert!(!t.path().join("made").exists(), "the directories the transaction made are left");
    }

    struct Append;
    impl Redo for Append {
        fn redo(&mut self, current: Option<&Blob>, _: bool) -> Result<Option<Blob>> {
            let mut v = current.map(|b| b.to_vec()).unwrap_or_default();
            v.extend_from_slice(b"+ovmem");
            Ok(Some(v.into()))
        }
    }

    #[test]
    fn a_write_between_read_and_rename_is_kept_and_the_edit_redone() {
        let t = tempfile::tempdir().unwrap();
        let home = t.path().join("home");
        let a = t.path().join("a");
        fs::write(&a, "theirs-v2").unwrap();
        let mut redo = Append;
        let mut c = change(&a, Some("theirs-v1"), Some("theirs-v1+ovmem"));
        c.redo = Some(&mut redo);
        let mut tx = Tx::begin(&home, "test");
        tx.apply(std::slice::from_mut(&mut c)).unwrap();
        assert_eq!(fs::read_to_string(&a).unwrap(), "theirs-v2+ovmem");
        // A rollback gives back their bytes, not the stale ones ovmem had read.
        drop(tx);
        assert_eq!(fs::read_to_string(&a).unwrap(), "theirs-v2");
    }

    #[test]
    fn an_unreadable_journal_is_kept_and_reported_never_deleted() {
        let t = tempfile::tempdir().unwrap();
        let home = t.path().join("home");
        for (i, bad) in ["damaged", "zero"].into_iter().enumerate() {
            let d = dir(&home);
            fs::create_dir_all(&d).unwrap();
            fs::write(d.join("before-0"), "the user's old bytes").unwrap();
            if bad == "zero" {
                std::os::unix::fs::symlink("/dev/zero", d.join("journal.json")).unwrap();
            } else {
                fs::write(d.join("journal.json"), "{\"state\": tru").unwrap();
            }
            let r = recover(&home).unwrap().unwrap();
            let Outcome::Kept { kept, .. } = &r.outcome else { panic!("{bad}: {r:?}") };
            assert_eq!(fs::read_to_string(kept.join("before-0")).unwrap(), "the user's old bytes", "{bad}");
            assert!(r.to_string().contains("could not be read") && r.to_string().contains(&kept.display().to_string()));
            assert!(!d.exists(), "moved aside, so the next command can run");
            let kept_dirs = fs::read_dir(&home)
                .unwrap()
                .filter(|e| e.as_ref().unwrap().file_name().to_string_lossy().starts_with("journal.unreadable-"));
            assert_eq!(kept_dirs.count(), i + 1, "{bad}: two in one second get their own names");
        }
    }
}
