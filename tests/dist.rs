//! The packages `dist/build.sh` makes, installed the way users install them (npm, pip, install.sh
//! from a release server on 127.0.0.1) into throwaway prefixes, with no Rust toolchain on PATH,
//! then run: `ovmem --version` and `ovmem install --harness claude-code --yes` in a throwaway
//! HOME. The artifacts are built once per run from the test binary (`OVMEM_DIST_BINARY`);
//! `.ci/run` runs the full `bash dist/build.sh` (release build and `cargo package`) as well.
//! Without npm or python3 a test skips; under CI (`CI=true`, `OVMEM_DIST_REQUIRED=1`) it fails.
#![cfg(target_os = "linux")]

mod common;

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;

use common::{stderr, OVMEM};

const VERSION: &str = env!("CARGO_PKG_VERSION");
const ROOT: &str = env!("CARGO_MANIFEST_DIR");
const TARGET: &str = "x86_64-unknown-linux-gnu";

fn required() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true" || v == "1") || std::env::var_os("OVMEM_DIST_REQUIRED").is_some()
}

/// PATH without any directory that holds cargo or rustc: what a user without Rust has.
fn path_without_rust() -> String {
    let path = std::env::var("PATH").unwrap_or_default();
    let kept: Vec<&str> = path
        .split(':')
        .filter(|d| !d.is_empty() && !Path::new(d).join("cargo").exists() && !Path::new(d).join("rustc").exists())
        .collect();
    kept.join(":")
}

fn on_path(tool: &str, path: &str) -> bool {
    path.split(':').any(|d| Path::new(d).join(tool).is_file())
}

/// Whether `tools` are all there; a missing one skips the test, or fails it under CI.
fn have(tools: &[&str]) -> bool {
    let path = path_without_rust();
    let missing: Vec<&&str> = tools.iter().filter(|t| !on_path(t, &path)).collect();
    if missing.is_empty() {
        return true;
    }
    assert!(!required(), "{missing:?} not on PATH (without Rust): {path}");
    eprintln!("skipped: {missing:?} not on PATH");
    false
}

/// The artifacts, built once for every test of this run.
fn artifacts() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        // Under target/, replaced by the next run (build.sh removes the old artifacts).
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("dist");
        let out = Command::new("bash")
            .arg(Path::new(ROOT).join("dist/build.sh"))
            .env("OVMEM_DIST_BINARY", OVMEM)
            .env("OVMEM_DIST_OUT", &dir)
            .env("OVMEM_DIST_SKIP_CRATE", "1")
            .output()
            .unwrap();
        assert!(out.status.success(), "dist/build.sh failed:\n{}", stderr(&out));
        dir
    })
}

fn artifact(name: &str) -> PathBuf {
    let p = artifacts().join(name);
    assert!(
        p.is_file(),
        "dist/build.sh made no {name}: {:?}",
        std::fs::read_dir(artifacts()).unwrap().collect::<Vec<_>>()
    );
    p
}

/// A command with only what a user without Rust has: a throwaway HOME, PATH without cargo.
fn user_cmd(program: &Path, home: &Path, extra_path: &Path) -> Command {
    let mut c = Command::new(program);
    c.env_clear()
        .env("HOME", home)
        .env("PATH", format!("{}:{}", extra_path.display(), path_without_rust()))
        .env("NO_COLOR", "1")
        .env("TMPDIR", std::env::temp_dir())
        .current_dir(home)
        .stdin(Stdio::null());
    c
}

fn ok(mut c: Command, what: &str) -> Output {
    let out = c.output().unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(
        out.status.success(),
        "{what} exited {:?}:\n{}\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        stderr(&out)
    );
    out
}

/// `ovmem --version`, then `ovmem install --harness claude-code --yes` in a fresh HOME, through
/// the installed command `bin`; the hooks then run a staged copy of the same version.
fn works(bin: &Path) {
    let home = tempfile::tempdir().unwrap();
    let dir = bin.parent().unwrap();
    let mut c = user_cmd(bin, home.path(), dir);
    c.arg("--version");
    let out = ok(c, "ovmem --version");
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), format!("ovmem {VERSION}"));
    let mut c = user_cmd(bin, home.path(), dir);
    c.args(["install", "--harness", "claude-code", "--yes"]);
    ok(c, "ovmem install --harness claude-code --yes");
    let settings = std::fs::read_to_string(home.path().join(".claude/settings.json")).unwrap();
    let runtime = home.path().join(".ovmem/bin/ovmem");
    assert!(settings.contains(&format!("{} hook claude-code", runtime.display())), "{settings}");
    let mut c = user_cmd(&runtime, home.path(), dir);
    c.arg("--version");
    let out = ok(c, "the staged runtime --version");
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), format!("ovmem {VERSION}"));
}

#[test]
fn versions_agree_in_every_artifact_name_and_manifest() {
    if !have(&["npm", "python3", "tar"]) {
        return;
    }
    for name in [
        format!("ovmem-{VERSION}.tgz"),
        format!("ovmem-linux-x64-{VERSION}.tgz"),
        format!("ovmem-{VERSION}-{TARGET}.tar.gz"),
        format!("ovmem-{VERSION}-{TARGET}.tar.gz.sha256"),
    ] {
        artifact(&name);
    }
    let wheels: Vec<String> = std::fs::read_dir(artifacts())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".whl"))
        .collect();
    // The binary links glibc only, so the wheel is a manylinux one, for the glibc it needs.
    assert!(
        wheels.len() == 1
            && wheels[0].starts_with(&format!("ovmem-{VERSION}-py3-none-manylinux_2_"))
            && wheels[0].ends_with("_x86_64.whl"),
        "{wheels:?}"
    );
    // The launcher names its platform packages at the same version, as optional dependencies.
    let out = Command::new("tar")
        .arg("-xzOf")
        .arg(artifact(&format!("ovmem-{VERSION}.tgz")))
        .arg("package/package.json")
        .output()
        .unwrap();
    let pkg: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(pkg["version"], VERSION);
    assert_eq!(pkg["optionalDependencies"]["@ovmem/linux-x64"], VERSION);
    assert!(pkg.get("scripts").is_none(), "no install scripts: {pkg}");
    let sum = std::fs::read_to_string(artifact(&format!("ovmem-{VERSION}-{TARGET}.tar.gz.sha256"))).unwrap();
    assert!(sum.ends_with(&format!("  ovmem-{VERSION}-{TARGET}.tar.gz\n")), "{sum}");
}

/// Both npm packages installed together, offline, into a throwaway global prefix.
fn npm_install() -> tempfile::TempDir {
    let prefix = tempfile::tempdir().unwrap();
    let cache = tempfile::tempdir().unwrap();
    let mut c = user_cmd(Path::new("npm"), prefix.path(), Path::new("/nonexistent"));
    c.args(["install", "-g", "--offline", "--no-audit", "--no-fund", "--cache"])
        .arg(cache.path())
        .arg("--prefix")
        .arg(prefix.path())
        .arg(artifact(&format!("ovmem-{VERSION}.tgz")))
        .arg(artifact(&format!("ovmem-linux-x64-{VERSION}.tgz")));
    ok(c, "npm install -g --offline");
    prefix
}

#[test]
fn npm_installs_the_launcher_and_platform_package_offline_and_they_work() {
    if !have(&["npm", "node"]) {
        return;
    }
    let prefix = npm_install();
    let bin = prefix.path().join("bin/ovmem");
    works(&bin);
    // The launcher passes arguments, stdout and the exit code through: a usage error is 2.
    let home = tempfile::tempdir().unwrap();
    let out =
        user_cmd(&bin, home.path(), bin.parent().unwrap()).args(["install", "--harness", "nope"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).starts_with("error: unknown harness `nope`"), "{}", stderr(&out));
}

#[test]
fn the_npm_launcher_passes_a_signal_on_and_dies_of_it() {
    if !have(&["npm", "node"]) {
        return;
    }
    let prefix = npm_install();
    // `ovmem mcp` waits on stdin: SIGTERM to the launcher must reach it, and the launcher then
    // ends by the same signal.
    let home = tempfile::tempdir().unwrap();
    let bin = prefix.path().join("bin/ovmem");
    let mut child = user_cmd(&bin, home.path(), bin.parent().unwrap())
        .arg("mcp")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    writeln!(stdin, r#"{{"jsonrpc":"2.0","id":1,"method":"initialize","params":{{}}}}"#).unwrap();
    let mut reader = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    reader.read_line(&mut line).unwrap();
    assert!(line.contains("\"id\":1"), "the binary answered through the launcher: {line}");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut rest = Vec::new();
        let _ = std::io::Read::read_to_end(&mut reader, &mut rest);
        let _ = tx.send(());
    });
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let status = child.wait().unwrap();
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(status.signal(), Some(libc::SIGTERM), "{status:?}");
    // The binary is gone too (its stdin is still open here, so only the signal could end it):
    // the last holder of the pipe closed it.
    assert!(rx.recv_timeout(std::time::Duration::from_secs(10)).is_ok(), "the binary outlived the launcher");
    drop(stdin);
}

#[test]
fn pip_installs_the_wheel_without_an_index_and_it_works() {
    if !have(&["python3"]) {
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let venv = root.path().join("venv");
    let mut c = user_cmd(Path::new("python3"), root.path(), Path::new("/nonexistent"));
    c.args(["-m", "venv"]).arg(&venv);
    ok(c, "python3 -m venv");
    let wheel = std::fs::read_dir(artifacts())
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "whl"))
        .expect("a wheel");
    let mut c = user_cmd(&venv.join("bin/pip"), root.path(), Path::new("/nonexistent"));
    c.args(["install", "--quiet", "--no-index", "--no-deps", "--disable-pip-version-check"]).arg(&wheel);
    ok(c, "pip install --no-index");
    works(&venv.join("bin/ovmem"));
}

/// A static file server on 127.0.0.1 for `root`, until the process ends; its base URL.
fn serve(root: PathBuf) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut request = String::new();
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            if reader.read_line(&mut request).is_err() {
                continue;
            }
            loop {
                let mut header = String::new();
                if reader.read_line(&mut header).map_or(true, |n| n == 0) || header == "\r\n" {
                    break;
                }
            }
            let path = request.split(' ').nth(1).unwrap_or("/").trim_start_matches('/');
            let file = (!path.contains("..")).then(|| root.join(path)).filter(|p| p.is_file());
            let _ = match file.and_then(|f| std::fs::read(f).ok()) {
                Some(body) => stream
                    .write_all(
                        format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n", body.len())
                            .as_bytes(),
                    )
                    .and_then(|_| stream.write_all(&body)),
                None => stream.write_all(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"),
            };
        }
    });
    format!("http://127.0.0.1:{port}")
}

/// A release directory as the server lays it out: `v<version>/<archive>` and its `.sha256`.
fn release(tamper: bool) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let v = dir.path().join(format!("v{VERSION}"));
    std::fs::create_dir_all(&v).unwrap();
    let name = format!("ovmem-{VERSION}-{TARGET}.tar.gz");
    let mut archive = std::fs::read(artifact(&name)).unwrap();
    if tamper {
        let mid = archive.len() / 2;
        archive[mid] ^= 0x40;
    }
    std::fs::write(v.join(&name), archive).unwrap();
    std::fs::copy(artifact(&format!("{name}.sha256")), v.join(format!("{name}.sha256"))).unwrap();
    dir
}

fn install_sh(home: &Path, url: &str, dest: &Path) -> Output {
    let mut c = user_cmd(Path::new("sh"), home, Path::new("/nonexistent"));
    c.arg(Path::new(ROOT).join("install.sh")).env("OVMEM_DIST_URL", url).env("OVMEM_INSTALL_DIR", dest);
    c.output().unwrap()
}

#[test]
fn install_sh_installs_the_release_archive_with_its_checksum_checked() {
    if !have(&["sh", "tar", "curl"]) {
        return;
    }
    let rel = release(false);
    let url = serve(rel.path().to_path_buf());
    let home = tempfile::tempdir().unwrap();
    let dest = home.path().join("bin");
    let out = install_sh(home.path(), &url, &dest);
    let said = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{said}\n{}", stderr(&out));
    assert!(said.contains(&format!("(ovmem {VERSION}, release {TARGET}, sha256 ")), "{said}");
    works(&dest.join("ovmem"));
}

#[test]
fn install_sh_refuses_a_tampered_archive_and_installs_nothing() {
    if !have(&["sh", "tar", "curl"]) {
        return;
    }
    let rel = release(true);
    let url = serve(rel.path().to_path_buf());
    let home = tempfile::tempdir().unwrap();
    let dest = home.path().join("bin");
    let out = install_sh(home.path(), &url, &dest);
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stdout));
    let err = stderr(&out);
    assert!(err.contains("checksum mismatch") && err.contains("nothing was installed"), "{err}");
    assert!(!dest.exists() || std::fs::read_dir(&dest).unwrap().next().is_none(), "something was installed");
    assert!(!home.path().join(".ovmem").exists());
}

#[test]
fn install_sh_without_a_release_builds_from_source_and_says_cargo_is_needed() {
    if !have(&["sh", "curl"]) {
        return;
    }
    // A server with no release on it: the fallback is a source build, which needs cargo.
    let empty = tempfile::tempdir().unwrap();
    let url = serve(empty.path().to_path_buf());
    let home = tempfile::tempdir().unwrap();
    let dest = home.path().join("bin");
    let out = install_sh(home.path(), &url, &dest);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(err.contains("no release at") && err.contains("building from source"), "{err}");
    assert!(err.contains("`cargo` is required"), "{err}");
    assert!(!dest.join("ovmem").exists());
}
