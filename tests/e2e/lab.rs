//! The lab the real-harness tests run in (shared by the e2e test files): a pinned CLI from
//! `$OVMEM_E2E_DIR` (default `~/.cache/ovmem-e2e`, filled by tests/e2e/install-clis.sh), a throwaway
//! home and project, a clean environment, a loopback-only network namespace (`unshare -n`) with the
//! stub model (tests/e2e/stub_model.py) on 127.0.0.1, stdin closed and a timeout. Every process a
//! run leaves behind with the lab's home in its environment is killed by pid.

#![allow(dead_code)]

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicU16, Ordering};

pub const OVMEM: &str = env!("CARGO_BIN_EXE_ovmem");
pub const FACT: &str = "Remember this project fact: the deploy codename is BLUEHERON-7.";
pub const QUESTION: &str = "What is the deploy codename for this project?";
/// A memory URI a file tool must not open (the guard's case).
pub const URI: &str = "viking://user/memories/profile.md";

pub fn required() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true" || v == "1")
        || std::env::var("OVMEM_E2E_REQUIRED").is_ok_and(|v| v == "1")
}

pub fn e2e_dir() -> PathBuf {
    std::env::var_os("OVMEM_E2E_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(std::env::var("HOME").unwrap()).join(".cache/ovmem-e2e"))
}

/// The path of a pinned CLI's file, or a skip (locally) / a failure (CI) with the reason.
pub fn cli(name: &str, rel: &str) -> Option<PathBuf> {
    let bin = e2e_dir().join(name).join(rel);
    let root = unsafe { libc::geteuid() } == 0;
    let why = if !bin.exists() {
        Some(format!(
            "{} is not installed (run `bash tests/e2e/install-clis.sh`, which installs the pinned CLIs)",
            bin.display()
        ))
    } else if !root {
        Some("these tests need root for `unshare -n`".to_string())
    } else {
        None
    };
    match why {
        None => Some(bin),
        Some(w) if required() => panic!("e2e prerequisite missing under CI: {w}"),
        Some(w) => {
            // Straight to the stderr handle: the test harness captures `eprintln!` of passing tests.
            use std::io::Write;
            let _ = writeln!(std::io::stderr(), "SKIPPED (not a pass): {w}");
            None
        }
    }
}

pub fn which(name: &str) -> PathBuf {
    std::env::split_paths(&std::env::var_os("PATH").unwrap())
        .map(|d| d.join(name))
        .find(|p| p.is_file())
        .unwrap_or_else(|| panic!("`{name}` is not on PATH"))
}

/// Ports of this test binary's stubs (another test file starts at another base).
static PORT: AtomicU16 = AtomicU16::new(18381);

pub struct Lab {
    _tmp: tempfile::TempDir,
    pub home: PathBuf,
    pub proj: PathBuf,
    pub reqlog: PathBuf,
    pub port: u16,
    pub path: String,
    pub extra_env: Vec<(String, String)>,
    /// Seconds a harness run may take.
    pub timeout: u32,
}

impl Lab {
    /// A lab whose PATH is `bin_dirs`, then node's directory, /usr/bin and /bin.
    pub fn new(bin_dirs: &[&Path]) -> Self {
        let tmp = tempfile::Builder::new().prefix("ovmem-e2e").tempdir_in(std::env::temp_dir()).unwrap();
        let home = tmp.path().join("home");
        let proj = tmp.path().join("proj");
        std::fs::create_dir_all(&home).unwrap();
        std::fs::create_dir_all(proj.join(".git")).unwrap();
        let mut dirs: Vec<PathBuf> = bin_dirs.iter().map(|p| p.to_path_buf()).collect();
        dirs.push(which("node").parent().unwrap().to_path_buf());
        dirs.push("/usr/bin".into());
        dirs.push("/bin".into());
        let path = std::env::join_paths(dirs).unwrap().into_string().unwrap();
        Lab {
            reqlog: tmp.path().join("requests.jsonl"),
            home,
            proj,
            _tmp: tmp,
            port: PORT.fetch_add(1, Ordering::SeqCst),
            path,
            extra_env: Vec::new(),
            timeout: 90,
        }
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    pub fn base_env(&self) -> Vec<(String, String)> {
        let mut e = vec![
            ("PATH".to_string(), self.path.clone()),
            ("HOME".to_string(), self.home.to_string_lossy().into_owned()),
            ("OVMEM_LOG".to_string(), "debug".to_string()),
            ("LANG".to_string(), "C.UTF-8".to_string()),
        ];
        e.extend(self.extra_env.iter().cloned());
        e
    }

    /// `ovmem <args>` in the lab's home, in a loopback-only namespace; it must succeed.
    pub fn ovmem(&self, args: &[&str]) -> Output {
        let out = Command::new("unshare")
            .args(["-n", OVMEM])
            .args(args)
            .env_clear()
            .envs(self.base_env())
            .current_dir(&self.proj)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert!(out.status.success(), "ovmem {args:?} failed:\n{}", String::from_utf8_lossy(&out.stderr));
        out
    }

    /// Runs `cmd` with the stub model beside it, inside a fresh network namespace.
    pub fn run(&self, cmd: &[&str], env: &[(&str, &str)]) -> Output {
        const SCRIPT: &str = r#"
ip link set lo up
"$PY" "$STUB" "$PORT" "$REQLOG" & SP=$!
for i in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/$PORT) 2>/dev/null && break; sleep 0.05; done
timeout "$LIMIT" "$@" </dev/null; rc=$?
sleep 0.5
kill $SP 2>/dev/null; wait $SP 2>/dev/null
exit $rc"#;
        let stub = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/e2e/stub_model.py");
        let mut c = Command::new("unshare");
        c.args(["-n", "bash", "-c", SCRIPT, "bash"])
            .args(cmd)
            .env_clear()
            .envs(self.base_env())
            .env("PY", which("python3"))
            .env("STUB", stub)
            .env("PORT", self.port.to_string())
            .env("REQLOG", &self.reqlog)
            .env("LIMIT", self.timeout.to_string())
            .current_dir(&self.proj)
            .stdin(Stdio::null());
        for (k, v) in env {
            c.env(k, v);
        }
        let out = c.output().unwrap();
        self.reap();
        out
    }

    /// Kills anything still running with this lab's home (detached hooks, daemons).
    pub fn reap(&self) {
        let needle = format!("HOME={}", self.home.display());
        for entry in std::fs::read_dir("/proc").unwrap().flatten() {
            let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else { continue };
            if pid == std::process::id() as i32 {
                continue;
            }
            if let Ok(env) = std::fs::read(entry.path().join("environ")) {
                if env.split(|b| *b == 0).any(|kv| kv == needle.as_bytes()) {
                    let _ = Command::new("kill").arg("-9").arg(pid.to_string()).status();
                }
            }
        }
    }

    /// The model requests the stub answered (POSTs).
    pub fn requests(&self) -> Vec<serde_json::Value> {
        std::fs::read_to_string(&self.reqlog)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .filter(|v: &serde_json::Value| v["method"] == "POST")
            .collect()
    }

    pub fn clear_requests(&self) {
        let _ = std::fs::remove_file(&self.reqlog);
    }

    /// (harness, event, message) of every line in the hook log.
    pub fn fired(&self) -> Vec<(String, String, String)> {
        let log = self.home.join(".ovmem/logs/hook.log");
        std::fs::read_to_string(log)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .map(|v| {
                (
                    v["harness"].as_str().unwrap_or("").into(),
                    v["event"].as_str().unwrap_or("").into(),
                    v["msg"].as_str().unwrap_or("").into(),
                )
            })
            .collect()
    }

    pub fn clear_fired(&self) {
        let _ = std::fs::remove_file(self.home.join(".ovmem/logs/hook.log"));
    }

    pub fn memories(&self) -> String {
        let out =
            Command::new(OVMEM).args(["memory", "list", "--all"]).env_clear().envs(self.base_env()).output().unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Stores a fact in the project's bank by hand (for runs that only check recall).
    pub fn teach(&self, fact: &str) {
        let out = Command::new(OVMEM)
            .args(["memory", "add", fact])
            .env_clear()
            .envs(self.base_env())
            .current_dir(&self.proj)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }

    /// Every file under the home and the project, with its bytes.
    pub fn snapshot(&self) -> HashMap<PathBuf, Vec<u8>> {
        let mut m = HashMap::new();
        for root in [&self.home, &self.proj] {
            walk(root, &mut m);
        }
        m
    }

    /// Copies a directory tree (a dependency seed) to `dest`.
    pub fn copy_tree(&self, from: &Path, dest: &Path) {
        std::fs::create_dir_all(dest).unwrap();
        let out = Command::new("cp").arg("-a").arg(format!("{}/.", from.display())).arg(dest).output().unwrap();
        assert!(out.status.success(), "cp: {}", String::from_utf8_lossy(&out.stderr));
    }
}

fn walk(dir: &Path, out: &mut HashMap<PathBuf, Vec<u8>>) {
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            walk(&p, out);
        } else if let Ok(b) = std::fs::read(&p) {
            out.insert(p, b);
        }
    }
}

/// Asserts that every event in `events` ran ovmem's hook of `harness`, with every key in `keys` in its stdin.
pub fn assert_fired(lab: &Lab, harness: &str, events: &[&str], keys: &[&str]) {
    let fired = lab.fired();
    for ev in events {
        let line = fired.iter().find(|(h, e, m)| h == harness && e == ev && m.starts_with("fired"));
        let Some((_, _, msg)) = line else { panic!("{harness} {ev} did not fire; log: {fired:#?}") };
        for k in keys {
            assert!(msg.contains(k), "{harness} {ev} payload lacks `{k}`: {msg}");
        }
    }
}

/// Whether `harness`'s `event` hook answered with `what` (`inject`, `deny`, `no-op`).
pub fn answered(lab: &Lab, harness: &str, event: &str, what: &str) -> bool {
    lab.fired().iter().any(|(h, e, m)| h == harness && e == event && m.starts_with(&format!("fired: {what}")))
}

pub fn body_text(req: &serde_json::Value) -> String {
    req["body"].to_string()
}

/// The first request whose body contains every one of `needles`.
pub fn request_with<'a>(reqs: &'a [serde_json::Value], needles: &[&str]) -> Option<&'a serde_json::Value> {
    reqs.iter().find(|r| {
        let b = body_text(r);
        needles.iter().all(|n| b.contains(n))
    })
}

/// The names of the tools a chat-completions request offers.
pub fn chat_tools(req: &serde_json::Value) -> Vec<String> {
    req["body"]["tools"]
        .as_array()
        .map(|t| {
            t.iter().filter_map(|t| t["function"]["name"].as_str().or(t["name"].as_str()).map(String::from)).collect()
        })
        .unwrap_or_default()
}

pub fn text(o: &Output) -> String {
    format!("stdout:\n{}\nstderr:\n{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}
