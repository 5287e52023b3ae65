//! `$OVMEM_HOME` (default `~/.ovmem`) holds what ovmem knows about the user's work: the store and
//! its WAL, logs, spool, receipts, locks, backups and the staged runtime. Only its owner may read
//! it: ovmem's directories in it are 0700, its files 0600 (0700 if executable), and the directory
//! itself 0700 unless it also holds files that are not ovmem's (an `OVMEM_HOME` pointed at an
//! existing folder): those are the user's, and no mode of theirs is changed.
//! [`prepare`] makes it so without walking the tree on every hook: the top directory's entries are
//! checked (one `readdir`, a `stat` each of ovmem's), ovmem's whole tree is repaired when the top
//! directory or the store is readable by others (as an older ovmem left it), and one of its
//! sub-directories is walked only when it changed since the last check (another process, such as
//! the installer, added to it). Only a home that is plainly ovmem's is repaired ([`plainly_own`]:
//! the default `~/.ovmem`, or a directory ovmem created or found empty, which it marks with
//! [`STAMP`]): `bin`, `state` and `cache` are ovmem's names in `~/.ovmem` and the user's in
//! `~/.local`, so in any other directory no mode is changed, and the hook says so once. An
//! `OVMEM_HOME` that is the home directory or above it, or a system directory (`/usr`, `/etc`,
//! `/tmp` itself, `/usr/local/bin`, …), is not used at all ([`Refused`]).

use std::fs;
use std::io::{self, ErrorKind};
use std::path::{Path, PathBuf};

use crate::env::Env;
use crate::sys;

/// Group and other permission bits: none may be set on anything in `$OVMEM_HOME`.
const OTHERS: u32 = 0o077;

/// Files ovmem creates from here on are private to the user (0600 files, 0700 directories),
/// whoever creates them: ovmem itself or SQLite (the database, `-wal`, `-shm`). For processes
/// that only write inside `$OVMEM_HOME` (hooks, `ovmem mcp`, `ovmem memory`).
pub fn private_umask() {
    sys::private_umask();
}

/// An `OVMEM_HOME` ovmem must not use: hooks answer their no-op and write nothing at all there
/// (not even a log line: the log would be there too); every other command exits 2 with this.
#[derive(Debug, thiserror::Error)]
pub enum Refused {
    /// The user's home directory or a directory above it (`/`): ovmem would put its store, logs
    /// and runtime among the user's own files, and its private modes on them.
    #[error(
        "OVMEM_HOME is `{}`, your home directory or a directory above it; ovmem keeps its memories, logs and \
         runtime in a directory of its own and writes nothing there. Unset OVMEM_HOME (ovmem then uses ~/.ovmem) \
         or point it at a directory of its own",
        .0.display()
    )]
    Home(PathBuf),
    /// A system directory ([`is_system_dir`]): a hook (often run as root in a container) would
    /// create `memory.db` and `logs/` among the system's files, and make ovmem's names there
    /// private: `/usr/bin`, `/var/cache` or `/var/spool` at 0700 breaks the machine for everyone.
    #[error(
        "OVMEM_HOME is `{}`, a system directory (`/`, one of the system's directories directly under it, \
         or one directly under those: /usr, /usr/local, /var, /etc, /dev, /run, /home, …); ovmem would put its memories, \
         logs and runtime among the system's files, and writes nothing there. Unset OVMEM_HOME (ovmem then \
         uses ~/.ovmem) or point it at a directory of its own, one level deeper (`/tmp/ovmem`, `/opt/ovmem`, \
         `~/.ovmem-work`)",
        .0.display()
    )]
    System(PathBuf),
}

/// Whether `$OVMEM_HOME` may be used at all (see [`Refused`]).
pub fn check(env: &Env) -> Result<(), Refused> {
    let home = env.ovmem_home();
    if resolved(&env.home).starts_with(resolved(&home)) {
        return Err(Refused::Home(home));
    }
    // The default `~/.ovmem` is a directory of ovmem's own by its name, wherever HOME is (a
    // container run as a user without an entry has HOME=/, and `/.ovmem` then).
    if env.var("OVMEM_HOME").is_some() && is_system_dir(&home, &env.home) {
        return Err(Refused::System(home));
    }
    Ok(())
}

/// The system's own directories directly under `/` (Linux's hierarchy and macOS's): none may be
/// an `OVMEM_HOME`. Another directory there (`/data`, `/ovmem`) is most likely a volume mounted
/// for the purpose, in a container, and may be.
const SYSTEM_ROOTS: &[&str] = &[
    "usr",
    "var",
    "etc",
    "dev",
    "proc",
    "sys",
    "run",
    "boot",
    "bin",
    "sbin",
    "lib",
    "lib32",
    "lib64",
    "libx32",
    "home",
    "tmp",
    "opt",
    "srv",
    "mnt",
    "media",
    "root",
    "snap",
    "nix",
    "lost+found",
    "Users",
    "private",
    "System",
    "Library",
    "Applications",
    "Volumes",
    "cores",
];

/// The top directories whose every sub-directory is the system's (or a user's home): no
/// `OVMEM_HOME` may be one of those either. `/tmp`, `/opt`, `/srv`, `/mnt`, `/media` and others
/// are not here: `/tmp/ovmem-test` or `/opt/ovmem` is a directory made for ovmem.
const SYSTEM_TOPS: &[&str] = &[
    "usr", "var", "etc", "dev", "proc", "sys", "run", "boot", "bin", "sbin", "lib", "lib32", "lib64", "libx32", "home",
    "Users", "private",
];

/// A directory of the system's own, which no `OVMEM_HOME` may be: `/` and the system's
/// directories directly under it ([`SYSTEM_ROOTS`]: `/usr`, `/etc`, `/tmp`, `/var`, `/opt`,
/// `/root`, `/proc`, …),
/// every directory directly under one of [`SYSTEM_TOPS`] (`/usr/local`, `/usr/bin`, `/var/lib`,
/// `/var/tmp`, `/etc/ssh`, `/dev/shm`, `/home/ann`; macOS's `/private` holds its `/tmp`, `/var`
/// and `/etc`), and every directory directly under `/usr/local` (`/usr/local/bin`). Deeper ones
/// are fine (`/tmp/ovmem-test`, `/var/tmp/x`, `/usr/local/share/ovmem`), and so is anything
/// inside the home directory (unless that is `/`). Judged on the path as written and as
/// resolved, so neither a symlink to `/usr` nor macOS's `/tmp` -> `/private/tmp` gets by.
pub fn is_system_dir(path: &Path, home: &Path) -> bool {
    let real = resolved(path);
    let home = resolved(home);
    if home.parent().is_some() && real.starts_with(&home) {
        return false;
    }
    [lexical(path), real].iter().any(|p| {
        let names: Vec<String> = p
            .components()
            .filter_map(|c| match c {
                std::path::Component::Normal(n) => Some(n.to_string_lossy().into_owned()),
                _ => None,
            })
            .collect();
        let top = |n: &str| SYSTEM_TOPS.contains(&n);
        match names.iter().map(String::as_str).collect::<Vec<_>>().as_slice() {
            [] => true,
            [first] => SYSTEM_ROOTS.contains(first),
            [first, _] => top(first),
            [first, second, _] => (*first, *second) == ("usr", "local") || *first == "private" && top(second),
            _ => false,
        }
    })
}

/// Whether `e` (from [`prepare`]) is a refused `OVMEM_HOME`.
pub fn is_refused(e: &io::Error) -> bool {
    e.get_ref().is_some_and(|i| i.is::<Refused>())
}

/// `p` with its symlinks resolved, or, where it does not exist, with `.` and `..` taken lexically
/// (so `~/new/..` is seen as `~` before anything is created).
fn resolved(p: &Path) -> PathBuf {
    if let Ok(c) = fs::canonicalize(p) {
        return c;
    }
    let out = lexical(p);
    fs::canonicalize(&out).unwrap_or(out)
}

/// `p` with `.` and `..` taken lexically, symlinks left as they are.
fn lexical(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// The names ovmem creates at the top of `$OVMEM_HOME`. Only these, and what is inside its own
/// directories, are ever made private: an `OVMEM_HOME` pointed at a directory that holds other
/// files (`~/.local/share`, a shared folder) keeps their modes.
const OWN: &[&str] = &[
    "memory.db",
    "memory.db-wal",
    "memory.db-shm",
    "memory.db-journal",
    "config.toml",
    "credentials.toml",
    "logs",
    "spool",
    "bin",
    "receipts",
    "journal",
    "locks",
    "cache",
    "state",
    "backups",
    "ui",
    STAMP,
];

/// Whether a top-level name of `$OVMEM_HOME` is ovmem's: one of [`OWN`], or one of its temp files
/// (`.<name>.ovmem-tmp.<pid>.<random>`).
fn is_own(name: &std::ffi::OsStr) -> bool {
    name.to_str().is_some_and(|n| OWN.contains(&n) || (n.starts_with('.') && n.contains(crate::fsx::TEMP_MARK)))
}

/// ovmem's own entries at the top of `home` (symlinks left out: never followed), and whether
/// anything else is there.
fn own_entries(home: &Path) -> (Vec<(PathBuf, fs::Metadata)>, bool) {
    let mut own = Vec::new();
    let mut foreign = false;
    let Ok(rd) = fs::read_dir(home) else { return (own, foreign) };
    for entry in rd.flatten() {
        if !is_own(&entry.file_name()) {
            foreign = true;
            continue;
        }
        let path = entry.path();
        match fs::symlink_metadata(&path) {
            Ok(m) if !m.file_type().is_symlink() => own.push((path, m)),
            _ => {}
        }
    }
    (own, foreign)
}

/// Whether the directory `home` itself is ovmem's to make private: the default `~/.ovmem`, or one
/// that holds nothing but ovmem's files (`foreign`: it holds others).
fn whole(env: &Env, home: &Path, foreign: bool) -> bool {
    !foreign || home == env.home.join(".ovmem")
}

/// What [`STAMP`] holds once ovmem has taken the directory as its own (an older ovmem's stamp is
/// empty, and was written into any `OVMEM_HOME`, `~/.local` too).
const STAMP_MARK: &[u8] = b"ovmem: this directory is ovmem's home; ovmem keeps its own files in it private\n";

/// What [`STAMP`] says of `home`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stamp {
    Absent,
    /// Written by an older ovmem, which wrote it into any `OVMEM_HOME` it was given.
    Empty,
    /// [`STAMP_MARK`]: ovmem created this directory, or found it empty, or took it over from an
    /// older ovmem's home holding nothing but ovmem's names.
    Marked,
}

fn stamp(home: &Path) -> Stamp {
    let path = home.join(STAMP);
    match fs::symlink_metadata(&path) {
        Ok(m) if m.is_file() && m.len() == 0 => Stamp::Empty,
        Ok(m) if m.is_file() && m.len() == STAMP_MARK.len() as u64 => match fs::read(&path) {
            Ok(b) if b == STAMP_MARK => Stamp::Marked,
            _ => Stamp::Absent,
        },
        _ => Stamp::Absent,
    }
}

/// Whether `$OVMEM_HOME` is plainly ovmem's, so that ovmem's names in it (`bin`, `state`,
/// `cache`, …) and what is inside them may be made private: the default `~/.ovmem`; a directory
/// ovmem created, or found empty, or took over (its [`STAMP`] holds [`STAMP_MARK`]); or one
/// holding an older ovmem's empty stamp and nothing but ovmem's names (`foreign`: something
/// else is there). Not `~/.local`, given as `OVMEM_HOME` by mistake: its `bin` and `state` are
/// the user's, whatever ovmem wrote into it since.
fn plainly_own(env: &Env, home: &Path, foreign: bool) -> bool {
    home == env.home.join(".ovmem")
        || match stamp(home) {
            Stamp::Marked => true,
            Stamp::Empty => !foreign,
            Stamp::Absent => fs::read_dir(home).is_ok_and(|mut rd| rd.next().is_none()),
        }
}

/// Whether `$OVMEM_HOME` is open to others (made under umask 000, or by a dotfiles script) and
/// plainly ovmem's ([`plainly_own`]: the default `~/.ovmem`, an empty directory, one ovmem
/// marked as its own). [`prepare`] makes it private. (Names such as `bin` and `state` are
/// ovmem's in `~/.ovmem` and the user's in `~/.local`.)
pub fn open_to_others(env: &Env) -> bool {
    let home = env.ovmem_home();
    sys::has_modes()
        && fs::metadata(&home).is_ok_and(|m| m.is_dir() && sys::mode(&m) & OTHERS != 0)
        && plainly_own(env, &home, own_entries(&home).1)
}

/// What [`prepare`] did.
#[derive(Debug)]
pub struct Prepared {
    /// `$OVMEM_HOME`.
    pub path: PathBuf,
    /// Said once per home (a hook logs it, a command prints it): the home is not plainly ovmem's,
    /// so no mode in it was changed.
    pub note: Option<String>,
}

/// Where it is remembered that [`Prepared::note`] was said (in ovmem's `logs`, beside the log
/// that says it).
const NOTED: &str = ".modes-left-alone";

/// Creates `$OVMEM_HOME` (0700) or, when it or its store is readable by others, makes ovmem's
/// own files in it private, if it is plainly ovmem's ([`plainly_own`]); in any other directory
/// nothing changes mode (files ovmem creates are private from their first byte all the same:
/// [`private_umask`]). An `OVMEM_HOME` that is the home directory or above it is refused before
/// anything is written ([`is_refused`]).
pub fn prepare(env: &Env) -> io::Result<Prepared> {
    check(env).map_err(|r| io::Error::new(ErrorKind::PermissionDenied, r))?;
    let home = env.ovmem_home();
    if !sys::has_modes() {
        // Without Unix modes the user's profile directory is private already (Windows ACLs).
        crate::fsx::create_dirs(&home, None)?;
        return Ok(Prepared { path: home, note: None });
    }
    match fs::metadata(&home) {
        Ok(m) if m.is_dir() => {
            let (own, foreign) = own_entries(&home);
            if !plainly_own(env, &home, foreign) {
                let note = note_once(&home);
                return Ok(Prepared { path: home, note });
            }
            // An older ovmem's stamp in a home taken as ovmem's: marked, its time kept (it says
            // when the tree was last checked).
            if stamp(&home) == Stamp::Empty {
                let path = home.join(STAMP);
                let at =
                    fs::metadata(&path).and_then(|m| m.modified()).unwrap_or_else(|_| std::time::SystemTime::now());
                touch(&path, at);
            }
            // The directory itself is ovmem's when it is the default `~/.ovmem` or holds nothing
            // but ovmem's files; one shared with other files keeps its mode (ovmem's files in it
            // are private each).
            let top = whole(env, &home, foreign);
            let store_loose = fs::symlink_metadata(home.join("memory.db")).is_ok_and(|s| sys::mode(&s) & OTHERS != 0);
            if (top && sys::mode(&m) & OTHERS != 0) || store_loose {
                let stamp = std::time::SystemTime::now();
                repair_entries(&home, &own, top)?;
                touch(&home.join(STAMP), stamp);
            } else {
                tidy(&home, &own);
            }
        }
        Ok(_) => {
            return Err(io::Error::new(
                ErrorKind::AlreadyExists,
                format!("`{}` is not a directory; set OVMEM_HOME to a directory ovmem can use", home.display()),
            ))
        }
        Err(e) if e.kind() == ErrorKind::NotFound => {
            // Root preparing another user's home (`sudo ovmem install`): theirs, as what is in it.
            if let Some(parent) = home.parent() {
                crate::fsx::create_dirs(parent, None)?;
            }
            match sys::dir_mode(&mut fs::DirBuilder::new(), 0o700).create(&home) {
                Ok(()) => {
                    crate::fsx::adopt_dir(&home);
                    mark(&home)
                }
                Err(e) if e.kind() == ErrorKind::AlreadyExists => {}
                Err(e) => return Err(e),
            }
            sys::set_mode(&home, 0o700)?;
        }
        Err(e) => return Err(e),
    }
    Ok(Prepared { path: home, note: None })
}

/// Removes `home` when nothing is left in it but its [`STAMP`] (an install that failed or was
/// refused, an uninstall of the last harness): the stamp goes with it. A home that keeps anything
/// else (memories, a config) keeps its mark as ovmem's (see [`prepare`]).
pub fn remove_if_bare(home: &Path) {
    let stamp = home.join(STAMP);
    let bare = fs::read_dir(home).is_ok_and(|rd| rd.flatten().all(|e| e.path() == stamp));
    if bare {
        let _ = fs::remove_file(&stamp);
    }
    crate::fsx::remove_empty_dirs(&[home.to_path_buf()]);
}

/// Marks `home`, a directory ovmem has just created (the installer's lock, the doctor's
/// throwaway home, [`prepare`]), as ovmem's own: see [`plainly_own`].
pub fn mark(home: &Path) {
    if stamp(home) != Stamp::Marked {
        touch(&home.join(STAMP), std::time::SystemTime::now());
    }
}

/// The note that `home` is not plainly ovmem's, the first time only.
fn note_once(home: &Path) -> Option<String> {
    let logs = home.join("logs");
    let noted = logs.join(NOTED);
    if fs::symlink_metadata(&noted).is_ok() {
        return None;
    }
    let _ = crate::fsx::create_dirs(&logs, None);
    crate::fsx::create_new(&noted, 0o600).ok()?;
    Some(format!(
        "OVMEM_HOME `{}` is not plainly ovmem's home (not ~/.ovmem, not a directory ovmem created or found empty), so \
         ovmem changes no mode in it: names such as `bin`, `state` and `cache` there may be yours (as in ~/.local). \
         The files ovmem creates there are private all the same. Point OVMEM_HOME at a directory of ovmem's own, or \
         unset it (~/.ovmem). Said once",
        home.display()
    ))
}

/// Touched after each check; a sub-directory changed after it is walked again. Holds
/// [`STAMP_MARK`]: the directory is ovmem's own ([`plainly_own`]).
const STAMP: &str = ".private-checked";

fn touch(path: &Path, at: std::time::SystemTime) {
    if let Ok(mut f) = crate::fsx::create_or_open(path, 0o600) {
        if f.metadata().is_ok_and(|m| m.len() == 0) {
            use std::io::Write;
            let _ = f.write_all(STAMP_MARK);
        }
        let _ = f.set_modified(at);
    }
}

/// The fast path: ovmem's top-level entries private, and a walk of each of its directories
/// changed since the last check.
fn tidy(home: &Path, own: &[(PathBuf, fs::Metadata)]) {
    let stamp_path = home.join(STAMP);
    let last = fs::metadata(&stamp_path).and_then(|m| m.modified()).ok();
    let now = std::time::SystemTime::now();
    let mut walked = false;
    let mut changed = 0;
    for (path, m) in own {
        if sys::mode(m) & OTHERS != 0 {
            let _ = sys::set_mode(path, sys::mode(m) & !OTHERS);
        }
        if m.is_dir() && last.is_none_or(|l| m.modified().is_ok_and(|t| t >= l)) {
            walk(path, 1, &mut changed);
            walked = true;
        }
    }
    if walked || last.is_none() {
        touch(&stamp_path, now);
    }
}

/// Removes the group and other bits from ovmem's own files and directories in `home` (and all
/// that is inside its directories), and from `home` itself when `top` (last, so an interrupted
/// repair is redone next time). Anything else in `home` keeps its mode; symlinks are not
/// followed. Returns how many entries were changed.
fn repair_entries(home: &Path, own: &[(PathBuf, fs::Metadata)], top: bool) -> io::Result<usize> {
    let mut changed = 0;
    for (path, m) in own {
        if sys::mode(m) & OTHERS != 0 && sys::set_mode(path, sys::mode(m) & !OTHERS).is_ok() {
            changed += 1;
        }
        if m.is_dir() {
            walk(path, 1, &mut changed);
        }
    }
    let m = fs::metadata(home)?;
    if top && sys::mode(&m) & OTHERS != 0 {
        sys::set_mode(home, sys::mode(&m) & !OTHERS)?;
        changed += 1;
    }
    Ok(changed)
}

/// Everything under one of ovmem's own directories is ovmem's.
fn walk(dir: &Path, depth: usize, changed: &mut usize) {
    if depth > 16 {
        return;
    }
    let Ok(rd) = fs::read_dir(dir) else { return };
    for entry in rd.flatten() {
        let path = entry.path();
        let Ok(m) = fs::symlink_metadata(&path) else { continue };
        if m.file_type().is_symlink() {
            continue;
        }
        if sys::mode(&m) & OTHERS != 0 && sys::set_mode(&path, sys::mode(&m) & !OTHERS).is_ok() {
            *changed += 1;
        }
        if m.is_dir() {
            walk(&path, depth + 1, changed);
        }
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::collections::HashMap;
    use std::os::unix::fs::symlink;
    use std::os::unix::fs::MetadataExt;
    use std::os::unix::fs::PermissionsExt;

    fn mode(p: &Path) -> u32 {
        fs::symlink_metadata(p).unwrap().mode() & 0o7777
    }

    fn env(home: &Path) -> Env {
        Env::from_vars(HashMap::from([("HOME".to_string(), home.display().to_string())])).unwrap()
    }

    #[test]
    fn a_new_home_is_private() {
        let t = tempfile::tempdir().unwrap();
        let home = prepare(&env(&t.path().join("u"))).unwrap().path;
        assert_eq!(home, t.path().join("u/.ovmem"));
        assert_eq!(mode(&home), 0o700);
        assert_eq!(prepare(&env(&t.path().join("u"))).unwrap().path, home, "a second call is a no-op");
    }

    #[test]
    fn a_loose_home_is_repaired_once_without_touching_anything_outside() {
        let t = tempfile::tempdir().unwrap();
        let home = t.path().join(".ovmem");
        for d in ["logs", "spool", "bin", "receipts"] {
            fs::create_dir_all(home.join(d)).unwrap();
        }
        let outside = t.path().join("outside.txt");
        fs::write(&outside, "theirs").unwrap();
        fs::set_permissions(&outside, fs::Permissions::from_mode(0o644)).unwrap();
        symlink(&outside, home.join("link-out")).unwrap();
        let files = [
            ("memory.db", 0o644, 0o600),
            ("memory.db-wal", 0o644, 0o600),
            ("memory.db-shm", 0o664, 0o600),
            ("logs/hook.log", 0o644, 0o600),
            ("spool/1-2-abc.json", 0o666, 0o600),
            ("receipts/codex.json", 0o644, 0o600),
            ("bin/ovmem", 0o755, 0o700),
            ("config.toml", 0o600, 0o600),
        ];
        for (f, before, _) in files {
            fs::write(home.join(f), "x").unwrap();
            fs::set_permissions(home.join(f), fs::Permissions::from_mode(before)).unwrap();
        }
        for d in [&home, &home.join("logs"), &home.join("bin")] {
            fs::set_permissions(d, fs::Permissions::from_mode(0o755)).unwrap();
        }
        prepare(&env(t.path())).unwrap();
        for (f, _, after) in files {
            assert_eq!(mode(&home.join(f)), after, "{f}");
        }
        for d in ["", "logs", "spool", "bin", "receipts"] {
            assert_eq!(mode(&home.join(d)), 0o700, "{d}/");
        }
        assert_eq!(mode(&outside), 0o644, "a file outside OVMEM_HOME keeps its mode");
        // The top directory is private now: the next call does not walk.
        fs::set_permissions(home.join("logs/hook.log"), fs::Permissions::from_mode(0o644)).unwrap();
        prepare(&env(t.path())).unwrap();
        assert_eq!(mode(&home.join("logs/hook.log")), 0o644, "an unchanged directory is not walked");
        // A directory another process added to is walked at the next check.
        std::thread::sleep(std::time::Duration::from_millis(20));
        fs::write(home.join("receipts/new.json"), "{}").unwrap();
        fs::set_permissions(home.join("receipts/new.json"), fs::Permissions::from_mode(0o644)).unwrap();
        fs::write(home.join("new-top.txt"), "x").unwrap();
        fs::set_permissions(home.join("new-top.txt"), fs::Permissions::from_mode(0o644)).unwrap();
        prepare(&env(t.path())).unwrap();
        // A file that is not ovmem's keeps its mode, even in ~/.ovmem.
        assert_eq!((mode(&home.join("receipts/new.json")), mode(&home.join("new-top.txt"))), (0o600, 0o644));
        // A loose store alone triggers a repair too.
        fs::set_permissions(home.join("memory.db"), fs::Permissions::from_mode(0o644)).unwrap();
        prepare(&env(t.path())).unwrap();
        assert_eq!((mode(&home.join("memory.db")), mode(&home.join("logs/hook.log"))), (0o600, 0o600));
    }

    #[test]
    fn a_home_directory_named_as_ovmem_home_is_left_alone() {
        let t = tempfile::tempdir().unwrap();
        let mine = t.path().join("notes.txt");
        fs::write(&mine, "x").unwrap();
        fs::set_permissions(&mine, fs::Permissions::from_mode(0o644)).unwrap();
        fs::set_permissions(t.path(), fs::Permissions::from_mode(0o755)).unwrap();
        let vars = HashMap::from([
            ("HOME".to_string(), t.path().display().to_string()),
            ("OVMEM_HOME".to_string(), t.path().display().to_string()),
        ]);
        let e = prepare(&Env::from_vars(vars).unwrap()).unwrap_err();
        assert!(is_refused(&e) && e.to_string().contains("home directory"), "{e}");
        assert_eq!((mode(&mine), mode(t.path())), (0o644, 0o755));
        // Refused whatever its modes, by any spelling, and above it too: nothing is written.
        fs::set_permissions(t.path(), fs::Permissions::from_mode(0o700)).unwrap();
        let before: Vec<_> = fs::read_dir(t.path()).unwrap().flatten().map(|e| e.file_name()).collect();
        let spellings = [
            t.path().display().to_string(),
            format!("{}/new/..", t.path().display()),
            format!("{}/.", t.path().display()),
            t.path().parent().unwrap().display().to_string(),
            "/".to_string(),
        ];
        for ovmem_home in spellings {
            let vars = HashMap::from([
                ("HOME".to_string(), t.path().display().to_string()),
                ("OVMEM_HOME".to_string(), ovmem_home.clone()),
            ]);
            let e = prepare(&Env::from_vars(vars).unwrap()).unwrap_err();
            assert!(is_refused(&e), "{ovmem_home}: {e}");
        }
        let after: Vec<_> = fs::read_dir(t.path()).unwrap().flatten().map(|e| e.file_name()).collect();
        assert_eq!(before, after);
    }

    /// A system directory is never an `OVMEM_HOME`: `/` and the system's names directly under it, what is
    /// directly under the system's top directories and `/usr/local`; a directory one level deeper
    /// (a test's `/tmp/xyz`) and anything inside the home directory are fine.
    #[test]
    fn system_directories_are_refused_and_their_subdirectories_are_not() {
        let home = Path::new("/home/ann");
        for p in [
            "/",
            "/usr",
            "/etc",
            "/bin",
            "/var",
            "/tmp",
            "/proc",
            "/sys",
            "/dev",
            "/boot",
            "/lib",
            "/lib64",
            "/opt",
            "/srv",
            "/root",
            "/usr/local",
            "/usr/bin",
            "/usr/lib",
            "/usr/local/bin",
            "/usr/local/lib",
            "/var/lib",
            "/var/tmp",
            "/var/cache",
            "/etc/ovmem",
            "/dev/shm",
            "/run/user",
            "/home/bob",
            "/private/tmp",
            "/private/var/lib",
            "/tmp/../usr",
            "/tmp/./x/..",
        ] {
            assert!(is_system_dir(Path::new(p), home), "{p} is a system directory");
        }
        for p in [
            "/tmp/xyz",
            "/tmp/.tmpAbC123/ovmem-home",
            "/var/tmp/x",
            "/opt/ovmem",
            "/srv/ovmem",
            "/data/ovmem",
            "/data",
            "/ovmem",
            "/usr/local/share/ovmem",
            "/run/user/1000/ovmem",
            "/home/ann/.ovmem",
            "/home/ann/x",
        ] {
            assert!(!is_system_dir(Path::new(p), home), "{p} is not a system directory");
        }
        // Inside a home directory that is under /var (a service account's), it is the user's.
        assert!(!is_system_dir(Path::new("/var/ovmem"), Path::new("/var")));
        // A home of `/` makes nothing the user's.
        assert!(is_system_dir(Path::new("/usr"), Path::new("/")));
        // A symlink to a system directory is the directory.
        let t = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink("/usr", t.path().join("u")).unwrap();
        assert!(is_system_dir(&t.path().join("u"), home));
        // The variable is refused; the default `~/.ovmem` never is, even with HOME=/.
        let check_with = |vars: &[(&str, &str)]| {
            let vars = vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
            check(&Env::from_vars(vars).unwrap())
        };
        let e = check_with(&[("HOME", "/home/ann"), ("OVMEM_HOME", "/usr")]).unwrap_err();
        assert!(matches!(e, Refused::System(_)) && e.to_string().contains("OVMEM_HOME is `/usr`, a system directory"));
        check_with(&[("HOME", "/")]).unwrap();
        check_with(&[("HOME", "/home/ann"), ("OVMEM_HOME", "/tmp/xyz")]).unwrap();
    }

    fn with_home(t: &Path, ovmem_home: &Path) -> Env {
        Env::from_vars(HashMap::from([
            ("HOME".to_string(), t.display().to_string()),
            ("OVMEM_HOME".to_string(), ovmem_home.display().to_string()),
        ]))
        .unwrap()
    }

    /// An `OVMEM_HOME` ovmem marked as its own (it created it) that the user put other files in
    /// since: ovmem's own files are made private, the others and the directory itself keep their
    /// modes, at the first check and every later one.
    #[test]
    fn a_shared_directory_keeps_the_modes_of_what_is_not_ovmem_s() {
        let t = tempfile::tempdir().unwrap();
        let shared = t.path().join("share");
        let e = with_home(t.path(), &shared);
        assert!(prepare(&e).unwrap().note.is_none());
        for d in ["www", "logs"] {
            fs::create_dir_all(shared.join(d)).unwrap();
        }
        for (f, m) in [("www/index.html", 0o644), ("notes.txt", 0o664), ("memory.db", 0o644), ("logs/hook.log", 0o644)]
        {
            fs::write(shared.join(f), "x").unwrap();
            fs::set_permissions(shared.join(f), fs::Permissions::from_mode(m)).unwrap();
        }
        for d in ["", "www", "logs"] {
            fs::set_permissions(shared.join(d), fs::Permissions::from_mode(0o755)).unwrap();
        }
        for _ in 0..2 {
            assert!(prepare(&e).unwrap().note.is_none());
            let modes: Vec<u32> =
                ["", "www", "www/index.html", "notes.txt"].iter().map(|f| mode(&shared.join(f))).collect();
            assert_eq!(modes, [0o755, 0o755, 0o644, 0o664], "not ovmem's: untouched");
            let modes: Vec<u32> =
                ["memory.db", "logs", "logs/hook.log"].iter().map(|f| mode(&shared.join(f))).collect();
            assert_eq!(modes, [0o600, 0o700, 0o600], "ovmem's: private");
        }
        // Once it holds nothing but ovmem's files, the directory itself is made private too.
        fs::remove_dir_all(shared.join("www")).unwrap();
        fs::remove_file(shared.join("notes.txt")).unwrap();
        fs::set_permissions(shared.join("memory.db"), fs::Permissions::from_mode(0o644)).unwrap();
        prepare(&e).unwrap();
        assert_eq!(mode(&shared), 0o700);
    }

    /// An `OVMEM_HOME` that is not plainly ovmem's (`~/.local` given by mistake: `bin`, `state`
    /// and `cache` are the user's there) keeps every mode, its store's included, whatever ovmem
    /// wrote into it, and says so once; an older ovmem's empty stamp does not make it ovmem's
    /// while anything else is there. An empty directory is taken as ovmem's.
    #[test]
    fn a_directory_ovmem_did_not_make_keeps_every_mode() {
        let t = tempfile::tempdir().unwrap();
        let local = t.path().join(".local");
        for d in ["bin", "state", "cache"] {
            fs::create_dir_all(local.join(d)).unwrap();
        }
        fs::write(local.join("bin/tool"), "#!/bin/sh\n").unwrap();
        fs::write(local.join("memory.db"), "x").unwrap();
        let set = |f: &str, m: u32| fs::set_permissions(local.join(f), fs::Permissions::from_mode(m)).unwrap();
        for (f, m) in [("", 0o755), ("bin", 0o755), ("state", 0o755), ("cache", 0o775), ("bin/tool", 0o755)] {
            set(f, m);
        }
        set("memory.db", 0o644);
        let e = with_home(t.path(), &local);
        let modes = || -> Vec<u32> {
            ["", "bin", "state", "cache", "bin/tool", "memory.db"].iter().map(|f| mode(&local.join(f))).collect()
        };
        let before = modes();
        let first = prepare(&e).unwrap();
        assert!(first.note.as_deref().is_some_and(|n| n.contains("not plainly ovmem's")), "{first:?}");
        assert_eq!(modes(), before);
        assert!(prepare(&e).unwrap().note.is_none(), "said once");
        assert!(!local.join(STAMP).exists(), "not marked as ovmem's");
        // An older ovmem's (empty) stamp with the user's own `share` beside: still the user's.
        fs::write(local.join(STAMP), "").unwrap();
        fs::create_dir_all(local.join("share")).unwrap();
        prepare(&e).unwrap();
        assert_eq!(modes(), before);
        // With nothing but ovmem's names beside it, an older ovmem's stamp is ovmem's home.
        fs::remove_dir_all(local.join("share")).unwrap();
        prepare(&e).unwrap();
        assert_eq!(modes(), [0o700, 0o700, 0o700, 0o700, 0o700, 0o600]);
        assert_eq!(stamp(&local), Stamp::Marked);
        // An empty directory is ovmem's.
        let empty = t.path().join("empty");
        fs::create_dir_all(&empty).unwrap();
        fs::set_permissions(&empty, fs::Permissions::from_mode(0o755)).unwrap();
        assert!(open_to_others(&with_home(t.path(), &empty)));
        assert!(prepare(&with_home(t.path(), &empty)).unwrap().note.is_none());
        assert_eq!((mode(&empty), stamp(&empty)), (0o700, Stamp::Marked));
    }

    #[test]
    fn a_file_in_the_way_is_a_clear_error() {
        let t = tempfile::tempdir().unwrap();
        fs::write(t.path().join(".ovmem"), "").unwrap();
        let e = prepare(&env(t.path())).unwrap_err();
        assert!(e.to_string().contains("not a directory"), "{e}");
    }
}
