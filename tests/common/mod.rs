//! A throwaway home for running the built binary as a user would (never the real `$HOME`).
#![allow(dead_code)]

pub mod claude;

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

pub const OVMEM: &str = env!("CARGO_BIN_EXE_ovmem");
pub const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures");

pub struct Home {
    pub tmp: tempfile::TempDir,
}

/// What a tree holds: path -> (bytes, mode) for files, `None` for directories, the target for
/// symlinks.
pub type Tree = BTreeMap<PathBuf, Entry>;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Entry {
    File(Vec<u8>, u32),
    Dir,
    Link(PathBuf),
}

impl Default for Home {
    fn default() -> Self {
        Self::new()
    }
}

impl Home {
    pub fn new() -> Self {
        Self { tmp: tempfile::tempdir().unwrap() }
    }

    pub fn path(&self) -> &Path {
        self.tmp.path()
    }

    pub fn put(&self, rel: &str, bytes: &[u8]) -> PathBuf {
        let p = self.path().join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, bytes).unwrap();
        p
    }

    pub fn cmd(&self, args: &[&str]) -> Command {
        command(self.path(), Path::new(OVMEM), args)
    }

    pub fn run(&self, args: &[&str]) -> Output {
        self.cmd(args).output().unwrap()
    }

    pub fn ok(&self, args: &[&str]) -> Output {
        let out = self.run(args);
        assert!(out.status.success(), "ovmem {args:?} exited {:?}:\n{}", out.status.code(), stderr(&out));
        out
    }

    pub fn tree(&self) -> Tree {
        tree(self.path())
    }

    pub fn fixture(harness: &str, name: &str) -> Vec<u8> {
        std::fs::read(Path::new(FIXTURES).join(harness).join(name)).unwrap()
    }
}

pub fn tree(root: &Path) -> Tree {
    fn walk(dir: &Path, out: &mut Tree) {
        let mut es: Vec<_> = std::fs::read_dir(dir).into_iter().flatten().flatten().collect();
        es.sort_by_key(|e| e.path());
        for e in es {
            let p = e.path();
            let meta = std::fs::symlink_metadata(&p).unwrap();
            if meta.file_type().is_symlink() {
                out.insert(p.clone(), Entry::Link(std::fs::read_link(&p).unwrap()));
            } else if meta.is_dir() {
                out.insert(p.clone(), Entry::Dir);
                walk(&p, out);
            } else if meta.is_file() {
                out.insert(p.clone(), Entry::File(std::fs::read(&p).unwrap(), meta.permissions().mode() & 0o7777));
            }
        }
    }
    let mut m = BTreeMap::new();
    walk(root, &mut m);
    m
}

/// Copies a directory tree (a fixture home) into `dst`.
pub fn copy_tree(src: &Path, dst: &Path) {
    std::fs::create_dir_all(dst).unwrap();
    for e in std::fs::read_dir(src).unwrap().flatten() {
        let to = dst.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_tree(&e.path(), &to);
        } else {
            std::fs::copy(e.path(), &to).unwrap();
        }
    }
}

/// Where two trees differ, for a readable failure.
pub fn tree_diff(a: &Tree, b: &Tree) -> Vec<String> {
    let mut out = Vec::new();
    for (p, e) in a {
        match b.get(p) {
            None => out.push(format!("gone: {}", p.display())),
            Some(x) if x != e => out.push(format!("changed: {}", p.display())),
            _ => {}
        }
    }
    for p in b.keys().filter(|p| !a.contains_key(*p)) {
        out.push(format!("new: {}", p.display()));
    }
    out
}

/// `program` (ovmem, or the runtime an install staged) with `args` in `home`, as a user runs it:
/// nothing of this process's environment but `HOME` and a plain `PATH`.
pub fn command(home: &Path, program: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(program);
    c.args(args)
        .env_clear()
        .env("HOME", home)
        .env("PATH", "/usr/bin:/bin")
        .env("NO_COLOR", "1")
        .current_dir(home)
        .stdin(Stdio::null());
    c
}

/// [`command`] run as another user (uid, gid), with `env` besides: that user's hooks and commands
/// running what root installed for them (the test runs as root).
pub fn run_as(home: &Path, (uid, gid): (u32, u32), program: &Path, args: &[&str], env: &[(&str, &Path)]) -> Output {
    use std::os::unix::process::CommandExt;
    let mut c = command(home, program, args);
    c.envs(env.iter().copied()).uid(uid).gid(gid);
    c.output().unwrap()
}

/// Whether the test runs as root, which tests of what root does for another user need (`None`,
/// said on stderr, when not).
pub fn as_root() -> Option<()> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("not root: skipped");
        return None;
    }
    Some(())
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A small deterministic generator for random moments (seed printed on failure).
pub struct Rng(pub u64);

impl Rng {
    pub fn from_time() -> Self {
        let seed = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64;
        Self(seed | 1)
    }

    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// What one run of the binary gave: stdout (trimmed), exit code, and how long it took.
pub struct Ran {
    pub out: String,
    pub code: i32,
    pub took: std::time::Duration,
}

/// Runs `ovmem ARGS` as a harness or a user would: a clean environment with `HOME` (plus `env`),
/// `cwd` as the working directory, `stdin` fed in full (from another thread, so a large payload
/// cannot deadlock against the child's output).
pub fn run_in(home: &Path, cwd: &Path, args: &[&str], stdin: &[u8], env: &[(&str, &str)]) -> Ran {
    use std::io::Write;
    let started = std::time::Instant::now();
    let mut child = Command::new(OVMEM)
        .args(args)
        .env_clear()
        .env("HOME", home)
        .env("PATH", "/usr/bin:/bin")
        .envs(env.iter().copied())
        .current_dir(cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    let bytes = stdin.to_vec();
    let writer = std::thread::spawn(move || {
        let _ = input.write_all(&bytes);
    });
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    Ran {
        out: String::from_utf8_lossy(&out.stdout).trim().to_string(),
        code: out.status.code().unwrap_or(-1),
        took: started.elapsed(),
    }
}

/// A loopback port bound by a socket that never listens: connections to it are refused, and no
/// other test's server can take it while it is held (a listener bound and closed again frees its
/// port, which a server started meanwhile may get: its connection then is reset, not refused).
pub struct RefusingPort(pub u16, std::os::fd::OwnedFd);

impl RefusingPort {
    pub fn new() -> RefusingPort {
        use std::os::fd::FromRawFd;
        // SAFETY: plain socket calls on a socket this function owns (then handed to `OwnedFd`,
        // which closes it); `addr` outlives them.
        unsafe {
            let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM, 0);
            assert!(fd >= 0, "socket: {}", std::io::Error::last_os_error());
            let fd = std::os::fd::OwnedFd::from_raw_fd(fd);
            let mut addr: libc::sockaddr_in = std::mem::zeroed();
            addr.sin_family = libc::AF_INET as libc::sa_family_t;
            addr.sin_addr.s_addr = u32::from(std::net::Ipv4Addr::LOCALHOST).to_be();
            let len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
            let raw = std::os::fd::AsRawFd::as_raw_fd(&fd);
            let bound = libc::bind(raw, (&raw const addr).cast(), len);
            assert_eq!(bound, 0, "bind: {}", std::io::Error::last_os_error());
            let mut got = len;
            assert_eq!(libc::getsockname(raw, (&raw mut addr).cast(), &mut got), 0);
            RefusingPort(u16::from_be(addr.sin_port), fd)
        }
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.0)
    }
}
