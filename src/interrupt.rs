//! Ctrl-C, SIGTERM and SIGHUP during a change: the first one only raises a flag, which the
//! transaction checks between steps and answers by rolling back; a second one ends the process at
//! once (the journal then rolls back at the next run).

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

struct Flags {
    raised: Arc<AtomicBool>,
    signal: Arc<AtomicUsize>,
}

static FLAGS: OnceLock<Flags> = OnceLock::new();

/// The signals a change answers by rolling back (Windows has no SIGHUP).
#[cfg(unix)]
const SIGNALS: [i32; 3] = [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM, signal_hook::consts::SIGHUP];
#[cfg(not(unix))]
const SIGNALS: [i32; 2] = [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM];

/// The process was asked to stop; what was under way was rolled back.
#[derive(Debug, thiserror::Error)]
#[error("interrupted by {name}; every file was put back as it was")]
pub struct Interrupted {
    pub signal: i32,
    pub name: &'static str,
}

impl Interrupted {
    /// The conventional exit code: 128 + the signal number.
    pub fn exit_code(&self) -> i32 {
        128 + self.signal
    }
}

/// Starts catching the signals (idempotent).
pub fn arm() {
    FLAGS.get_or_init(|| {
        let raised = Arc::new(AtomicBool::new(false));
        let signal = Arc::new(AtomicUsize::new(0));
        for sig in SIGNALS {
            // The second signal (the flag is already up) terminates; the first raises the flag.
            let _ = signal_hook::flag::register_conditional_shutdown(sig, 128 + sig, Arc::clone(&raised));
            let _ = signal_hook::flag::register_usize(sig, Arc::clone(&signal), sig as usize);
            let _ = signal_hook::flag::register(sig, Arc::clone(&raised));
        }
        Flags { raised, signal }
    });
}

/// `Err(Interrupted)` once a signal came in.
pub fn check() -> Result<(), Interrupted> {
    let Some(f) = FLAGS.get() else { return Ok(()) };
    if !f.raised.load(Ordering::SeqCst) {
        return Ok(());
    }
    let signal = f.signal.load(Ordering::SeqCst) as i32;
    let name = match signal {
        signal_hook::consts::SIGINT => "SIGINT (Ctrl-C)",
        signal_hook::consts::SIGTERM => "SIGTERM",
        #[cfg(unix)]
        signal_hook::consts::SIGHUP => "SIGHUP",
        _ => "a signal",
    };
    Err(Interrupted { signal, name })
}

/// While alive, a write into the pipe of a child that already exited is an `EPIPE` error in
/// this thread, not a SIGPIPE that ends ovmem (the CLI restores SIGPIPE's default action so that
/// `ovmem status | head` ends quietly). Dropping it discards the signals it held back.
/// Without SIGPIPE (Windows) a write into a closed pipe is an error already: nothing to hold.
pub struct PipeGuard {
    #[cfg(unix)]
    old: libc::sigset_t,
}

impl PipeGuard {
    #[cfg(not(unix))]
    pub fn new() -> Self {
        Self {}
    }

    #[cfg(unix)]
    pub fn new() -> Self {
        // SAFETY: the sets are initialised by sigemptyset before use; pthread_sigmask only
        // changes this thread's mask.
        unsafe {
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            libc::sigaddset(&mut set, libc::SIGPIPE);
            let mut old: libc::sigset_t = std::mem::zeroed();
            libc::pthread_sigmask(libc::SIG_BLOCK, &set, &mut old);
            Self { old }
        }
    }
}

impl Default for PipeGuard {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(unix)]
impl Drop for PipeGuard {
    fn drop(&mut self) {
        // SAFETY: as in `new`; sigwait only runs while a SIGPIPE is pending, so it never blocks
        // (sigpending + sigwait, since macOS has no sigtimedwait).
        unsafe {
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            libc::sigaddset(&mut set, libc::SIGPIPE);
            if libc::sigismember(&self.old, libc::SIGPIPE) == 0 {
                loop {
                    let mut pending: libc::sigset_t = std::mem::zeroed();
                    libc::sigemptyset(&mut pending);
                    if libc::sigpending(&mut pending) != 0 || libc::sigismember(&pending, libc::SIGPIPE) != 1 {
                        break;
                    }
                    let mut sig: libc::c_int = 0;
                    libc::sigwait(&set, &mut sig);
                }
            }
            libc::pthread_sigmask(libc::SIG_SETMASK, &self.old, std::ptr::null_mut());
        }
    }
}
