//! `$OVMEM_HOME/logs/hook.log`: one JSON object per line, written by many hook processes at
//! once. Each line is built whole (message scrubbed of secrets and cut to fit) and written with
//! one `write` on an `O_APPEND` descriptor, so lines never interleave. Past a size the file is
//! rotated by rename under an advisory lock (`hook.log` -> `.1` -> `.2` -> `.3`), re-checked
//! under the lock, so concurrent rotations never overwrite or lose a generation's lines.

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::Path;
use std::time::Duration;

use serde_json::json;

/// Longest line, newline included: below `PIPE_BUF` (4096), the size POSIX promises atomic
/// appends for, so no filesystem splits one.
pub const MAX_LINE: usize = 4000;
/// `hook.log` is rotated once it is larger than this.
pub const ROTATE_AT: u64 = 1 << 20;
/// Rotated generations kept (`hook.log.1` is the newest).
pub const KEEP: usize = 3;

/// One log line (JSON, newline-terminated, at most [`MAX_LINE`] bytes) with `msg` scrubbed.
pub fn line(level: &str, harness: &str, event: &str, elapsed: Duration, msg: &str) -> Vec<u8> {
    let msg = crate::redact::scrub(msg);
    let clip = |s: &str, n: usize| -> String {
        if s.len() <= n {
            return s.to_string();
        }
        format!("{}…", crate::cut::clip(s, n))
    };
    let (harness, event) = (clip(harness, 64), clip(event, 64));
    let mut budget = MAX_LINE;
    loop {
        let v = json!({
            "ts": crate::store::now(), "level": level, "harness": harness, "event": event,
            "ms": (elapsed.as_secs_f64() * 1000.0 * 1000.0).round() / 1000.0, "msg": clip(&msg, budget),
        });
        let mut out = v.to_string().into_bytes();
        out.push(b'\n');
        // JSON escapes can grow a message up to six times; shrink until the line fits.
        if out.len() <= MAX_LINE || budget == 0 {
            return out;
        }
        budget /= 2;
    }
}

/// Appends `line` to `dir/hook.log`, rotating first when the file is past `rotate_at` bytes.
/// Best effort: logging never fails the hook.
pub fn append(dir: &Path, line: &[u8], rotate_at: u64) {
    if crate::fsx::create_dirs(dir, None).is_err() {
        return;
    }
    let path = dir.join("hook.log");
    if fs::metadata(&path).is_ok_and(|m| m.len() > rotate_at) {
        rotate(dir, rotate_at);
    }
    let mut options = OpenOptions::new();
    options.create(true).append(true);
    // Without blocking, and only into a regular file: a FIFO or a device at `hook.log` must not
    // hold the hook (opening a FIFO with no reader for writing fails at once).
    crate::sys::nonblocking(&mut options);
    let new = fs::symlink_metadata(&path).is_err();
    if let Ok(mut f) = crate::sys::create_mode(&mut options, 0o600).open(&path) {
        if f.metadata().is_ok_and(|m| m.is_file()) {
            // Root logging in another user's home leaves them a log they can append to.
            if new {
                crate::fsx::adopt(&f, &path);
            }
            // One write call: the line lands whole or (disk full) not at all.
            let _ = f.write(line);
        }
    }
}

/// Shifts the generations under `hook.log.lock`, if `hook.log` is still too large once the lock
/// is held (another process may have rotated it meanwhile).
fn rotate(dir: &Path, rotate_at: u64) {
    let Ok(lock) = crate::fsx::create_or_open(&dir.join("hook.log.lock"), 0o600) else {
        return;
    };
    if !flock(&lock) {
        return;
    }
    let path = dir.join("hook.log");
    if fs::metadata(&path).is_ok_and(|m| m.len() > rotate_at) {
        let gen = |n: usize| dir.join(format!("hook.log.{n}"));
        let _ = fs::remove_file(gen(KEEP));
        for n in (1..KEEP).rev() {
            let _ = fs::rename(gen(n), gen(n + 1));
        }
        let _ = fs::rename(&path, gen(1));
    }
    // The lock goes with the descriptor.
}

/// The advisory lock (flock on Unix, LockFileEx on Windows), if no other process holds it: one
/// that does is rotating the log already, or is stuck, and a hook never waits for either.
fn flock(f: &File) -> bool {
    f.try_lock().is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    proptest::proptest! {
        #[test]
        fn any_message_makes_one_bounded_json_line(
            harness in crate::anytext::text(40), event in crate::anytext::text(40), msg in crate::anytext::text(400),
        ) {
            let l = line("info", &harness, &event, Duration::from_millis(3), &msg.repeat(20));
            proptest::prop_assert!(l.len() <= MAX_LINE && l.ends_with(b"\n"));
            let v: Value = serde_json::from_slice(&l).expect("one JSON line");
            proptest::prop_assert!(v["harness"].as_str().is_some_and(|h| h.len() <= 64 + '…'.len_utf8()));
        }
    }

    fn lines(dir: &Path) -> Vec<Value> {
        let mut out = Vec::new();
        for name in ["hook.log", "hook.log.1", "hook.log.2", "hook.log.3"] {
            let text = fs::read_to_string(dir.join(name)).unwrap_or_default();
            for l in text.lines() {
                out.push(serde_json::from_str(l).unwrap_or_else(|e| panic!("{name}: {e}: {l:?}")));
            }
        }
        out
    }

    #[test]
    fn lines_are_json_scrubbed_and_bounded() {
        let secret = ["gh", "p_", "R8sV2nXq7LmZ4tWc9YbK1dPe6HfJ3gAu0oSi"].concat();
        let l = line("error", "codex", "Stop", Duration::from_millis(3), &format!("failed with token {secret}"));
        let v: Value = serde_json::from_slice(&l).unwrap();
        assert_eq!(v["msg"], "failed with token [REDACTED:github-token]");
        // A temp directory a hook ran in is where to look, not a secret.
        let msg = "could not prepare OVMEM_HOME: `/tmp/.tmpAbC123xyz/ovmem-home/logs/hook.log`: Permission denied";
        let v: Value = serde_json::from_slice(&line("error", "codex", "Stop", Duration::ZERO, msg)).unwrap();
        assert_eq!(v["msg"], msg);
        for huge in ["é".repeat(10_000), "\u{1}".repeat(10_000), "\"\\".repeat(5_000), "x".repeat(100_000)] {
            let l = line("error", &"h".repeat(500), "e", Duration::ZERO, &huge);
            assert!(l.len() <= MAX_LINE && l.ends_with(b"\n"), "{}", l.len());
            let v: Value = serde_json::from_slice(&l).unwrap();
            assert!(v["msg"].as_str().unwrap().ends_with('…'));
        }
    }

    #[test]
    fn concurrent_appends_with_rotation_lose_and_corrupt_nothing() {
        let t = tempfile::tempdir().unwrap();
        let dir = t.path().join("logs");
        let threads = 16;
        let per = 40;
        std::thread::scope(|s| {
            for i in 0..threads {
                let dir = dir.clone();
                s.spawn(move || {
                    for j in 0..per {
                        let msg = format!("thread {i} line {j} {}", "y".repeat(300 + (i * 37 + j * 11) % 900));
                        // Small enough to rotate twice or more, large enough that the kept
                        // generations hold all ~550 KB written here.
                        append(&dir, &line("info", "t", "e", Duration::ZERO, &msg), 200 << 10);
                    }
                });
            }
        });
        let all = lines(&dir);
        assert_eq!(all.len(), threads * per);
        let mut seen: Vec<String> =
            all.iter().map(|v| v["msg"].as_str().unwrap().split(" y").next().unwrap().into()).collect();
        seen.sort();
        seen.dedup();
        assert_eq!(seen.len(), threads * per, "every line exactly once");
        assert!(dir.join("hook.log.1").exists(), "rotation happened");
    }
}
