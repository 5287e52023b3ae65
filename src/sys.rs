//! Every platform-specific call ovmem makes, each with a portable fallback, so one source builds
//! for Linux, macOS and Windows. Unix gets modes, owners, inode identities, process groups and
//! signals; Linux also anonymous temp files (`O_TMPFILE`) and `renameat2`. Elsewhere the fallbacks
//! run, and on Linux `OVMEM_TEST_PORTABLE=1` (a test-only switch, read once) forces them, so the
//! test suite exercises the code other platforms run.

use std::fs::{self, DirBuilder, File, Metadata, OpenOptions};
use std::io;
use std::path::Path;
use std::process::{Child, Command, ExitStatus};

/// Whether the portable fallbacks are forced (`OVMEM_TEST_PORTABLE=1`; tests only).
#[cfg_attr(not(unix), allow(dead_code))]
pub fn portable() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| std::env::var_os("OVMEM_TEST_PORTABLE").is_some_and(|v| v == "1"))
}

/// Whether this build runs the Unix calls (not forced to the fallbacks).
#[cfg(unix)]
fn native() -> bool {
    !portable()
}

// ---------------------------------------------------------------------------------------------
// Files

/// Whether files have Unix permission bits and owners here (the privacy checks need them).
pub fn has_modes() -> bool {
    #[cfg(unix)]
    if native() {
        return true;
    }
    false
}

/// Permission bits (`0o7777`); without Unix modes: `0o755` for a directory, `0o444` for a
/// read-only file, else `0o644`.
pub fn mode(m: &Metadata) -> u32 {
    #[cfg(unix)]
    if native() {
        use std::os::unix::fs::PermissionsExt;
        return m.permissions().mode() & 0o7777;
    }
    if m.is_dir() {
        0o755
    } else if m.permissions().readonly() {
        0o444
    } else {
        0o644
    }
}

/// Without Unix modes a file is read-only when no one may write it, else writable.
fn portable_permissions(current: fs::Permissions, mode: u32) -> fs::Permissions {
    let mut p = current;
    p.set_readonly(mode & 0o222 == 0);
    p
}

/// Sets `path`'s permission bits (without Unix modes: only whether it is read-only).
pub fn set_mode(path: &Path, mode: u32) -> io::Result<()> {
    #[cfg(unix)]
    if native() {
        use std::os::unix::fs::PermissionsExt;
        return fs::set_permissions(path, fs::Permissions::from_mode(mode));
    }
    fs::set_permissions(path, portable_permissions(fs::metadata(path)?.permissions(), mode))
}

/// Sets an open file's permission bits (without Unix modes: only whether it is read-only).
pub fn set_file_mode(f: &File, mode: u32) -> io::Result<()> {
    #[cfg(unix)]
    if native() {
        use std::os::unix::fs::PermissionsExt;
        return f.set_permissions(fs::Permissions::from_mode(mode));
    }
    f.set_permissions(portable_permissions(f.metadata()?.permissions(), mode))
}

/// The owner (uid, gid), where files have one.
pub fn owner(m: &Metadata) -> Option<(u32, u32)> {
    #[cfg(unix)]
    if native() {
        use std::os::unix::fs::MetadataExt;
        return Some((m.uid(), m.gid()));
    }
    let _ = m;
    None
}

/// Gives `f` that owner (when root edits another user's file); a no-op without owners.
pub fn chown(f: &File, uid: u32, gid: u32) {
    #[cfg(unix)]
    if native() {
        let _ = std::os::unix::fs::fchown(f, Some(uid), Some(gid));
    }
    let _ = (f, uid, gid);
}

/// Gives the directory at `path`, which this process has just created, that owner and group.
/// Never through a symlink: the directory is opened `O_NOFOLLOW` and changed through the open
/// descriptor, and only while it is still this process's own (anything swapped in at that name
/// meanwhile is left as it is). A no-op without owners.
pub fn chown_new_dir(path: &Path, uid: u32, gid: u32) {
    #[cfg(unix)]
    if native() {
        use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
        let opened = OpenOptions::new().read(true).custom_flags(libc::O_DIRECTORY | libc::O_NOFOLLOW).open(path);
        if let Ok(d) = opened {
            if d.metadata().is_ok_and(|m| m.is_dir() && Some(m.uid()) == euid()) {
                let _ = std::os::unix::fs::fchown(&d, Some(uid), Some(gid));
            }
        }
    }
    let _ = (path, uid, gid);
}

/// The effective user, where files have owners.
pub fn euid() -> Option<u32> {
    #[cfg(unix)]
    if native() {
        // SAFETY: geteuid has no preconditions and cannot fail.
        return Some(unsafe { libc::geteuid() });
    }
    None
}

/// (device, inode): what makes two paths the same file; `None` where it is not known.
pub fn file_id(m: &Metadata) -> Option<(u64, u64)> {
    #[cfg(unix)]
    if native() {
        use std::os::unix::fs::MetadataExt;
        return Some((m.dev(), m.ino()));
    }
    let _ = m;
    None
}

/// `opts` creates its file with `mode` (a no-op without Unix modes).
pub fn create_mode(opts: &mut OpenOptions, mode: u32) -> &mut OpenOptions {
    #[cfg(unix)]
    if native() {
        use std::os::unix::fs::OpenOptionsExt;
        return opts.mode(mode);
    }
    let _ = mode;
    opts
}

/// `b` creates its directories with `mode` (a no-op without Unix modes).
pub fn dir_mode(b: &mut DirBuilder, mode: u32) -> &mut DirBuilder {
    #[cfg(unix)]
    if native() {
        use std::os::unix::fs::DirBuilderExt;
        return b.mode(mode);
    }
    let _ = mode;
    b
}

/// `options` set to open without blocking on a FIFO and without making a terminal the
/// controlling one (Unix); unchanged elsewhere.
pub fn nonblocking(options: &mut OpenOptions) -> &mut OpenOptions {
    #[cfg(unix)]
    if native() {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY);
    }
    options
}

/// Opens `path` for reading without blocking (see [`nonblocking`]).
pub fn open_read_nonblocking(path: &Path) -> io::Result<File> {
    nonblocking(OpenOptions::new().read(true)).open(path)
}

/// Opens `path` for reading only if it is a regular file, checked on the open file (a FIFO, a
/// device or a directory is refused, never waited on): `InvalidInput` otherwise.
pub fn open_regular(path: &Path) -> io::Result<File> {
    let f = open_read_nonblocking(path)?;
    if !f.metadata()?.is_file() {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "not a regular file"));
    }
    Ok(f)
}

/// Raises this process's soft limit on open files to its hard limit (at most 65,536): a server
/// that holds a socket per client (`ovmem ui`) then outlasts far more idle connections.
pub fn raise_open_files_limit() {
    #[cfg(unix)]
    if native() {
        // SAFETY: getrlimit/setrlimit read and write only the struct passed.
        unsafe {
            let mut r = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
            if libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) == 0 && r.rlim_cur < r.rlim_max {
                r.rlim_cur = r.rlim_max.min(65_536);
                libc::setrlimit(libc::RLIMIT_NOFILE, &r);
            }
        }
    }
}

/// New files private to their owner from here on (umask 077); a no-op without Unix modes.
pub fn private_umask() {
    #[cfg(unix)]
    if native() {
        // SAFETY: umask has no preconditions and cannot fail.
        unsafe {
            libc::umask(0o077);
        }
    }
}

/// A symlink at `link` to `target` (on Windows a file or directory link, as the target is).
pub fn symlink(target: &Path, link: &Path) -> io::Result<()> {
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink(target, link)
    }
    #[cfg(windows)]
    {
        let dir = link.parent().map(|p| p.join(target)).is_some_and(|p| p.is_dir());
        if dir {
            std::os::windows::fs::symlink_dir(target, link)
        } else {
            std::os::windows::fs::symlink_file(target, link)
        }
    }
    #[cfg(not(any(unix, windows)))]
    {
        let _ = (target, link);
        Err(io::Error::new(io::ErrorKind::Unsupported, "symlinks are not supported here"))
    }
}

/// What a file that is not a regular one is, in words ("a directory", "a FIFO (named pipe)").
pub fn file_kind(m: &Metadata) -> &'static str {
    let t = m.file_type();
    if t.is_dir() {
        return "a directory";
    }
    if t.is_symlink() {
        return "a symlink";
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if t.is_fifo() {
            return "a FIFO (named pipe)";
        }
        if t.is_socket() {
            return "a socket";
        }
        if t.is_char_device() || t.is_block_device() {
            return "a device";
        }
    }
    if t.is_file() {
        "a regular file"
    } else {
        "a special file"
    }
}

/// Whether an open or a stat failed on a symlink loop (`ELOOP`).
pub fn symlink_loop(e: &io::Error) -> bool {
    #[cfg(unix)]
    if e.raw_os_error() == Some(libc::ELOOP) {
        return true;
    }
    // ERROR_CANT_RESOLVE_FILENAME
    cfg!(windows) && e.raw_os_error() == Some(1921)
}

/// Whether `path` is marked immutable or append-only (`chattr +i`, `+a`): not even root may
/// replace or delete it. Linux only; `false` elsewhere and where the filesystem has no such flags.
pub fn immutable(path: &Path) -> bool {
    #[cfg(target_os = "linux")]
    if native() {
        use std::os::fd::AsRawFd;
        // linux/fs.h: FS_IMMUTABLE_FL, FS_APPEND_FL.
        const FLAGS: libc::c_long = 0x10 | 0x20;
        let Ok(f) = open_read_nonblocking(path) else { return false };
        let mut flags: libc::c_long = 0;
        // SAFETY: FS_IOC_GETFLAGS writes at most a long into `flags`, which outlives the call.
        let r = unsafe { libc::ioctl(f.as_raw_fd(), libc::FS_IOC_GETFLAGS, &mut flags) };
        return r == 0 && flags & FLAGS != 0;
    }
    let _ = path;
    false
}

/// Whether a rename failed because the two paths are on different filesystems.
pub fn cross_device(e: &io::Error) -> bool {
    if e.kind() == io::ErrorKind::CrossesDevices {
        return true;
    }
    #[cfg(unix)]
    if e.raw_os_error() == Some(libc::EXDEV) {
        return true;
    }
    // ERROR_NOT_SAME_DEVICE
    cfg!(windows) && e.raw_os_error() == Some(17)
}

// ---------------------------------------------------------------------------------------------
// Linux-only file operations: `None` / `Unsupported` elsewhere, and the caller falls back.

/// An anonymous file in `dir` (`O_TMPFILE`: invisible until [`link_anon`] names it).
pub fn anon_temp(dir: &Path, mode: u32) -> Option<File> {
    #[cfg(target_os = "linux")]
    if native() {
        use std::os::unix::fs::OpenOptionsExt;
        return OpenOptions::new().write(true).mode(mode).custom_flags(libc::O_TMPFILE).open(dir).ok();
    }
    let _ = (dir, mode);
    None
}

/// Names a file from [`anon_temp`] as `name` (which must not exist).
pub fn link_anon(f: &File, name: &Path) -> io::Result<()> {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        use std::os::unix::ffi::OsStrExt;
        let proc_path = std::ffi::CString::new(format!("/proc/self/fd/{}", f.as_raw_fd())).expect("no NUL");
        let c = std::ffi::CString::new(name.as_os_str().as_bytes()).map_err(io::Error::other)?;
        // SAFETY: both are valid C strings; linkat does not retain them.
        let r = unsafe {
            libc::linkat(libc::AT_FDCWD, proc_path.as_ptr(), libc::AT_FDCWD, c.as_ptr(), libc::AT_SYMLINK_FOLLOW)
        };
        if r == 0 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (f, name);
        Err(io::Error::new(io::ErrorKind::Unsupported, "anonymous files are Linux-only"))
    }
}

#[cfg(target_os = "linux")]
fn renameat2(from: &Path, to: &Path, flags: libc::c_uint) -> io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let a = std::ffi::CString::new(from.as_os_str().as_bytes()).map_err(io::Error::other)?;
    let b = std::ffi::CString::new(to.as_os_str().as_bytes()).map_err(io::Error::other)?;
    // SAFETY: valid C strings, AT_FDCWD.
    let r = unsafe { libc::renameat2(libc::AT_FDCWD, a.as_ptr(), libc::AT_FDCWD, b.as_ptr(), flags) };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

fn unsupported_here() -> io::Error {
    io::Error::new(io::ErrorKind::Unsupported, "renameat2 is Linux-only")
}

/// Swaps `a` and `b` atomically (`RENAME_EXCHANGE`); [`unsupported`] where that does not exist.
pub fn rename_exchange(a: &Path, b: &Path) -> io::Result<()> {
    #[cfg(target_os = "linux")]
    if native() {
        return renameat2(a, b, libc::RENAME_EXCHANGE);
    }
    let _ = (a, b);
    Err(unsupported_here())
}

/// Renames `from` to `to` unless `to` exists (`RENAME_NOREPLACE`); [`unsupported`] where that
/// does not exist.
pub fn rename_noreplace(from: &Path, to: &Path) -> io::Result<()> {
    #[cfg(target_os = "linux")]
    if native() {
        return renameat2(from, to, libc::RENAME_NOREPLACE);
    }
    let _ = (from, to);
    Err(unsupported_here())
}

/// Whether an error says the call does not exist here (the caller then uses a plain rename).
pub fn unsupported(e: &io::Error) -> bool {
    if e.kind() == io::ErrorKind::Unsupported {
        return true;
    }
    #[cfg(unix)]
    if matches!(e.raw_os_error(), Some(libc::EINVAL) | Some(libc::ENOSYS) | Some(libc::ENOTSUP)) {
        return true;
    }
    false
}

// ---------------------------------------------------------------------------------------------
// Processes

/// Whether process `pid` is alive; where that cannot be asked, every other process counts as
/// alive (so nothing of a running ovmem is ever swept).
pub fn pid_alive(pid: u32) -> bool {
    #[cfg(unix)]
    if native() {
        let Ok(pid) = i32::try_from(pid) else { return false };
        // SAFETY: kill with signal 0 only checks for existence and permission.
        let r = unsafe { libc::kill(pid, 0) };
        return r == 0 || io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH);
    }
    pid != std::process::id()
}

/// The child gets a process group of its own, so [`kill_tree`] ends its children too (Unix).
pub fn own_group(c: &mut Command) -> &mut Command {
    #[cfg(unix)]
    if native() {
        use std::os::unix::process::CommandExt;
        return c.process_group(0);
    }
    c
}

/// [`own_group`] in a builder chain.
pub trait OwnGroup {
    fn own_group(&mut self) -> &mut Self;
}

impl OwnGroup for Command {
    fn own_group(&mut self) -> &mut Self {
        own_group(self)
    }
}

/// Ends `child` and, when it leads its own group ([`own_group`]), everything it started.
pub fn kill_tree(child: &mut Child) {
    #[cfg(unix)]
    if native() {
        if let Ok(pgid) = i32::try_from(child.id()) {
            // SAFETY: signalling a process group this process created.
            unsafe { libc::kill(-pgid, libc::SIGKILL) };
        }
        return;
    }
    let _ = child.kill();
}

/// The signal that ended a process, where processes end by signals.
pub fn signal_of(status: &ExitStatus) -> Option<i32> {
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        status.signal()
    }
    #[cfg(not(unix))]
    {
        let _ = status;
        None
    }
}

/// The shell a harness runs a hook command line with.
#[cfg(not(windows))]
pub const SHELL: &str = "/bin/sh";
#[cfg(windows)]
pub const SHELL: &str = "cmd.exe";

/// `line` run by [`SHELL`] (`sh -c`, or `cmd /C` on Windows).
pub fn shell(line: &str) -> Command {
    let mut c = Command::new(SHELL);
    c.arg(if cfg!(windows) { "/C" } else { "-c" }).arg(line);
    c
}

/// The exit code of a command a signal interrupted: 128 + the signal's number, as shells say it.
pub const SIGINT_EXIT: i32 = 128 + 2;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_portable_permissions_keep_only_read_only() {
        let t = tempfile::tempdir().unwrap();
        let f = t.path().join("f");
        fs::write(&f, "x").unwrap();
        let p = fs::metadata(&f).unwrap().permissions();
        assert!(portable_permissions(p.clone(), 0o444).readonly());
        assert!(!portable_permissions(p, 0o600).readonly());
    }

    #[test]
    fn cross_device_and_unsupported_errors_are_recognised() {
        assert!(cross_device(&io::Error::from(io::ErrorKind::CrossesDevices)));
        assert!(!cross_device(&io::Error::from(io::ErrorKind::NotFound)));
        assert!(unsupported(&unsupported_here()));
        assert!(!unsupported(&io::Error::from(io::ErrorKind::NotFound)));
    }
}
