//! Terminal prompts (a multi-select, a yes/no question, a hidden line for secrets) that always
//! give the terminal back as they found it: Esc and q cancel, Ctrl-C answers like SIGINT would
//! (exit 130), and SIGTERM or SIGHUP while a prompt is up restore the terminal before ending the
//! process. Keys are read one at a time in raw mode (`console`), so Ctrl-C arrives as a key and
//! nothing is left half-drawn, with the cursor hidden or echo off.

use std::io::{self, IsTerminal, Read};
use std::sync::OnceLock;

use anyhow::Result;
use console::{Key, Term};

/// Ctrl-C at a prompt: exit 130, as for SIGINT, with nothing changed.
#[derive(Debug, thiserror::Error)]
#[error("cancelled with Ctrl-C; nothing was changed")]
pub struct CtrlC;

fn ctrl_c() -> anyhow::Error {
    CtrlC.into()
}

/// The terminal's settings from before the first prompt, for the signal handler. (Elsewhere than
/// Unix the console crate restores the console itself, and the guard only shows the cursor.)
#[cfg(unix)]
static SAVED: OnceLock<Option<libc::termios>> = OnceLock::new();

/// SIGTERM, SIGHUP or SIGINT while a prompt is up: the terminal back as it was, the cursor shown,
/// and the exit a signal means (128 + n). Only async-signal-safe calls.
#[cfg(unix)]
extern "C" fn restore_and_exit(sig: libc::c_int) {
    if let Some(Some(t)) = SAVED.get() {
        // SAFETY: puts back settings read from the same descriptor before the handler was set.
        unsafe { libc::tcsetattr(libc::STDIN_FILENO, libc::TCSANOW, t) };
    }
    let show = b"\x1b[?25h\n";
    // SAFETY: write and _exit are async-signal-safe.
    unsafe {
        libc::write(libc::STDERR_FILENO, show.as_ptr().cast(), show.len());
        libc::_exit(128 + sig);
    }
}

/// While a prompt is up: the terminal's settings as they were, put back (with the cursor shown)
/// when the prompt ends in any way, including a signal. The handlers it replaces are put back
/// when it is dropped, so Ctrl-C means what it meant before once the prompt is answered.
struct Guard {
    term: Term,
    #[cfg(unix)]
    previous: Vec<(libc::c_int, libc::sigaction)>,
}

impl Guard {
    #[cfg(not(unix))]
    fn new(term: &Term) -> Self {
        Self { term: term.clone() }
    }

    #[cfg(unix)]
    fn new(term: &Term) -> Self {
        SAVED.get_or_init(|| {
            let mut t = std::mem::MaybeUninit::<libc::termios>::uninit();
            // SAFETY: tcgetattr fills the termios it is given; it is only read when that succeeded.
            (unsafe { libc::tcgetattr(libc::STDIN_FILENO, t.as_mut_ptr()) } == 0).then(|| unsafe { t.assume_init() })
        });
        let mut previous = Vec::new();
        for sig in [libc::SIGTERM, libc::SIGHUP, libc::SIGINT] {
            // SAFETY: a zeroed sigaction is valid; the handler is an extern "C" fn of the right shape,
            // and the one replaced is kept to be put back.
            unsafe {
                let mut action: libc::sigaction = std::mem::zeroed();
                action.sa_sigaction = restore_and_exit as *const () as libc::sighandler_t;
                libc::sigemptyset(&mut action.sa_mask);
                let mut old: libc::sigaction = std::mem::zeroed();
                if libc::sigaction(sig, &action, &mut old) == 0 {
                    previous.push((sig, old));
                }
            }
        }
        Self { term: term.clone(), previous }
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        #[cfg(unix)]
        {
            if let Some(Some(t)) = SAVED.get() {
                // SAFETY: puts back settings read from the same descriptor.
                unsafe { libc::tcsetattr(libc::STDIN_FILENO, libc::TCSANOW, t) };
            }
            for (sig, old) in self.previous.drain(..) {
                // SAFETY: reinstates the handler that was there before this guard.
                unsafe { libc::sigaction(sig, &old, std::ptr::null_mut()) };
            }
        }
        let _ = self.term.show_cursor();
    }
}

/// One row of a multi-select.
pub struct Item {
    /// What is chosen (a harness id).
    pub label: String,
    /// What the user should know about it (detected where, installed where).
    pub detail: String,
    /// Shown dimmed, and left out of "all".
    pub dim: bool,
}

/// A multi-select: ↑/↓ (or k/j) move, space toggles, `a` toggles every row that is not dimmed,
/// enter accepts. Nothing is selected at the start. `Ok(None)` when cancelled (Esc, q).
pub fn multi_select(prompt: &str, items: &[Item]) -> Result<Option<Vec<usize>>> {
    let term = Term::stderr();
    let _guard = Guard::new(&term);
    let mut chosen = vec![false; items.len()];
    let mut at = 0usize;
    let mut top = 0usize;
    let mut hint: Option<&str> = None;
    let mut drawn = 0usize;
    term.hide_cursor()?;
    let label_width = items.iter().map(|i| i.label.chars().count()).max().unwrap_or(0);
    let answer = loop {
        let (rows, cols) = term.size();
        let window = (rows as usize).saturating_sub(4).clamp(3, items.len().max(3));
        if at < top {
            top = at;
        } else if at >= top + window {
            top = at + 1 - window;
        }
        let mut lines = vec![format!(
            "{} {}  {}",
            console::style("?").green().bold(),
            console::style(prompt).bold(),
            console::style("↑/↓ move · space select · a all detected · enter accept · esc/q cancel").dim()
        )];
        for (i, item) in items.iter().enumerate().skip(top).take(window) {
            let pointer = if i == at { console::style("❯").cyan().bold() } else { console::style(" ") };
            let mark = if chosen[i] { console::style("[x]").green() } else { console::style("[ ]") };
            let label = format!("{:<label_width$}", item.label);
            let label = if item.dim { console::style(label).dim() } else { console::style(label) };
            lines.push(format!("{pointer} {mark} {label}  {}", console::style(&item.detail).dim()));
        }
        if items.len() > window {
            lines.push(format!("  {}", console::style(format!("({} of {})", at + 1, items.len())).dim()));
        }
        if let Some(h) = hint {
            lines.push(format!("  {}", console::style(h).yellow()));
        }
        if drawn > 0 {
            term.clear_last_lines(drawn)?;
        }
        for l in &lines {
            term.write_line(&console::truncate_str(l, cols.saturating_sub(1) as usize, "…"))?;
        }
        drawn = lines.len();
        hint = None;
        match term.read_key_raw()? {
            Key::ArrowUp | Key::Char('k') | Key::BackTab => at = at.checked_sub(1).unwrap_or(items.len() - 1),
            Key::ArrowDown | Key::Char('j') | Key::Tab => at = (at + 1) % items.len(),
            Key::Home | Key::PageUp => at = 0,
            Key::End | Key::PageDown => at = items.len() - 1,
            Key::Char(' ') => chosen[at] = !chosen[at],
            Key::Char('a') => {
                let all_on = items.iter().zip(&chosen).filter(|(i, _)| !i.dim).all(|(_, c)| *c);
                for (c, i) in chosen.iter_mut().zip(items) {
                    if !i.dim {
                        *c = !all_on;
                    }
                }
            }
            Key::Enter if chosen.iter().any(|c| *c) => {
                break Some(chosen.iter().enumerate().filter(|(_, c)| **c).map(|(i, _)| i).collect::<Vec<_>>());
            }
            Key::Enter => hint = Some("nothing selected: space selects the row under ❯ (esc cancels)"),
            Key::Escape | Key::Char('q') => break None,
            Key::CtrlC => {
                term.clear_last_lines(drawn)?;
                return Err(ctrl_c());
            }
            _ => {}
        }
    };
    term.clear_last_lines(drawn)?;
    match &answer {
        Some(picked) => {
            let names: Vec<&str> = picked.iter().map(|i| items[*i].label.as_str()).collect();
            term.write_line(&format!(
                "{} {} {}",
                console::style("✔").green(),
                prompt,
                console::style(names.join(", ")).cyan()
            ))?;
        }
        None => {
            term.write_line(&format!("{} {} {}", console::style("✘").red(), prompt, console::style("cancelled").dim()))?
        }
    }
    Ok(answer)
}

/// A yes/no question; enter takes `default`, Esc and q answer no.
pub fn confirm(question: &str, default: bool) -> Result<bool> {
    let term = Term::stderr();
    let _guard = Guard::new(&term);
    let choices = if default { "[Y/n]" } else { "[y/N]" };
    term.write_str(&format!("{} {} {} ", console::style("?").green().bold(), question, console::style(choices).dim()))?;
    let answer = loop {
        match term.read_key_raw()? {
            Key::Char('y' | 'Y') => break true,
            Key::Char('n' | 'N' | 'q') | Key::Escape => break false,
            Key::Enter => break default,
            Key::CtrlC => {
                term.write_line("")?;
                return Err(ctrl_c());
            }
            _ => {}
        }
    };
    term.write_line(if answer { "yes" } else { "no" })?;
    Ok(answer)
}

/// A secret: typed without echo on a terminal, else all of stdin (a pipe, a file), trimmed.
/// Never echoed, never part of an error.
pub fn secret(what: &str) -> Result<String> {
    let value = if io::stdin().is_terminal() {
        let term = Term::stderr();
        let _guard = Guard::new(&term);
        term.write_str(&format!("{what}: "))?;
        term.read_secure_line()?
    } else {
        let mut s = String::new();
        io::stdin()
            .take(64 * 1024)
            .read_to_string(&mut s)
            .map_err(|_| anyhow::anyhow!("could not read the {what} from stdin (it must be UTF-8 text)"))?;
        s
    };
    Ok(value.trim().to_string())
}
