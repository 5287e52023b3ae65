//! A short-lived child process with a deadline: started in its own process group (a wrapper
//! script's children go with it), its output read on a thread (a full pipe never stalls it), and
//! the whole group killed when time is up. For the few programs ovmem asks a question of
//! (`<harness> --version`, `git rev-list`), never for hooks.

use std::io::Read;
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use crate::sys::OwnGroup;

/// How `cmd` exited and what it printed on stdout (at most `max` bytes), when it exited within
/// `budget`; `None` when it could not start or ran out of time (it is killed then).
pub fn output_within(cmd: &mut Command, budget: Duration, max: u64) -> Option<(ExitStatus, String)> {
    let mut child = cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::null()).own_group().spawn().ok()?;
    let mut out = child.stdout.take()?;
    let reader = std::thread::spawn(move || {
        let mut s = Vec::new();
        let _ = (&mut out).take(max).read_to_end(&mut s);
        String::from_utf8_lossy(&s).into_owned()
    });
    let start = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return reader.join().ok().map(|out| (status, out)),
            Ok(None) if start.elapsed() < budget => std::thread::sleep(Duration::from_millis(2)),
            _ => {
                crate::sys::kill_tree(&mut child);
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_failure_and_a_deadline() {
        let run = |script: &str, budget: Duration, max: u64| {
            output_within(Command::new("/bin/sh").args(["-c", script]), budget, max).map(|(s, o)| (s.code(), o))
        };
        let secs = Duration::from_secs(5);
        assert_eq!(run("echo one; echo two", secs, 64), Some((Some(0), "one\ntwo\n".into())));
        assert_eq!(run("echo half; exit 3", secs, 64), Some((Some(3), "half\n".into())));
        let started = Instant::now();
        assert_eq!(run("sleep 5 & sleep 5", Duration::from_millis(200), 64), None);
        assert!(started.elapsed() < Duration::from_secs(2), "{:?}", started.elapsed());
        assert_eq!(run("yes | head -c 100000", secs, 10).map(|(_, o)| o.len()), Some(10));
    }
}
