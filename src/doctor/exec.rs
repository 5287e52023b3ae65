//! Runs one hook the way a harness does: a command line through `sh -c`, or a hook file itself,
//! with the payload on stdin, under the harness's timeout. The child gets a process group of its
//! own, so a hook that outlives its timeout is stopped with everything it started (by that
//! group's id, never by name).

use std::io::{Read, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// At most this much of a hook's stdout and stderr is kept (the rest is read and dropped).
const KEEP: usize = 1 << 20;

/// What to run.
pub enum Program<'a> {
    /// A command line, through `sh -c`.
    Shell(&'a str),
    /// An executable file, run directly.
    File(&'a Path),
    /// A program and its arguments, without a shell (a harness's argv form).
    Argv(&'a [String]),
}

pub struct Run<'a> {
    pub program: Program<'a>,
    pub stdin: &'a [u8],
    pub cwd: &'a Path,
    /// Variables set on top of the inherited environment.
    pub env: &'a [(String, String)],
    pub timeout: Duration,
}

#[derive(Debug, Default)]
pub struct Ran {
    /// `None` when it was stopped (timed out) or died by a signal.
    pub code: Option<i32>,
    pub signal: Option<i32>,
    pub timed_out: bool,
    pub elapsed: Duration,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    /// It could not be started at all (the reason).
    pub spawn_error: Option<String>,
}

fn drain(mut r: impl Read + Send + 'static) -> std::thread::JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut kept = Vec::new();
        let mut buf = [0u8; 8192];
        loop {
            match r.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    let room = KEEP.saturating_sub(kept.len());
                    kept.extend_from_slice(&buf[..n.min(room)]);
                }
            }
        }
        kept
    })
}

/// Runs `r`; never panics, never waits past the timeout (plus a moment to collect the output).
pub fn run(r: &Run) -> Ran {
    let mut cmd = match r.program {
        Program::Shell(line) => crate::sys::shell(line),
        Program::File(p) => Command::new(p),
        Program::Argv(argv) => {
            let mut c = Command::new(argv.first().map(String::as_str).unwrap_or(""));
            c.args(argv.iter().skip(1));
            c
        }
    };
    cmd.current_dir(r.cwd)
        .envs(r.env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    crate::sys::own_group(&mut cmd);
    let started = Instant::now();
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            let what = match r.program {
                Program::Shell(_) => crate::sys::SHELL.to_string(),
                Program::File(p) => p.display().to_string(),
                Program::Argv(argv) => argv.first().cloned().unwrap_or_default(),
            };
            return Ran {
                spawn_error: Some(format!("could not start `{what}`: {e}")),
                code: e.raw_os_error().map(|_| if e.kind() == std::io::ErrorKind::NotFound { 127 } else { 126 }),
                elapsed: started.elapsed(),
                ..Ran::default()
            };
        }
    };
    let mut stdin = child.stdin.take();
    let input = r.stdin.to_vec();
    // A hook that never reads its stdin must not block the writer: a thread of its own.
    let writer = std::thread::spawn(move || {
        let _pipe = crate::interrupt::PipeGuard::new();
        if let Some(s) = stdin.as_mut() {
            let _ = s.write_all(&input);
        }
        drop(stdin);
    });
    let out = drain(child.stdout.take().expect("piped"));
    let err = drain(child.stderr.take().expect("piped"));
    let mut ran = Ran::default();
    loop {
        match child.try_wait() {
            Ok(Some(status)) => {
                ran.code = status.code();
                ran.signal = crate::sys::signal_of(&status);
                break;
            }
            Ok(None) if started.elapsed() >= r.timeout => {
                ran.timed_out = true;
                crate::sys::kill_tree(&mut child);
                let _ = child.wait();
                break;
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(2)),
            Err(_) => {
                crate::sys::kill_tree(&mut child);
                let _ = child.wait();
                break;
            }
        }
    }
    ran.elapsed = started.elapsed();
    // Whatever the hook left running in its group goes with it, so the pipes close.
    crate::sys::kill_tree(&mut child);
    let _ = writer.join();
    ran.stdout = out.join().unwrap_or_default();
    ran.stderr = err.join().unwrap_or_default();
    ran
}

/// The last lines of a hook's stderr, for a report.
pub fn excerpt(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let tail = lines[lines.len().saturating_sub(3)..].join(" / ");
    if tail.chars().count() > 300 {
        tail.chars().take(300).collect::<String>() + "…"
    } else {
        tail
    }
}
