//! Command lines for the shells harnesses use on Windows (PowerShell, cmd.exe), next to the
//! POSIX quoter in [`crate::shell`]. Nothing here runs on Windows in ovmem's tests: the forms are
//! rendered and parsed, so that a Windows machine reading the same config (a synced `~/.codex`)
//! gets a command its shell parses.
//!
//! A Windows-only field written by ovmem on Unix (Codex `commandWindows`, Windsurf `powershell`)
//! cannot name the other machine's runtime, so it points at ovmem's default location there,
//! `%USERPROFILE%\.ovmem\bin\ovmem.exe` ([`ps_call_windows`]); forms for a Windows host (a
//! Cline `.ps1` file, Claude Code's `shell: "powershell"`) name the runtime itself.

use std::path::Path;

/// ovmem's runtime on a Windows machine, relative to `%USERPROFILE%`.
pub const DEFAULT_RELATIVE: &str = r".ovmem\bin\ovmem.exe";

/// `C:\…`, `C:/…` or `\\server\share\…`.
pub fn is_windows_path(p: &str) -> bool {
    let b = p.as_bytes();
    (b.len() >= 3 && b[0].is_ascii_alphabetic() && b[1] == b':' && (b[2] == b'\\' || b[2] == b'/'))
        || p.starts_with(r"\\")
}

/// A PowerShell single-quoted string: verbatim inside, every `'` (and every typographic single
/// quote, which PowerShell also treats as a quote) doubled.
pub fn ps_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('\'');
    for c in s.chars() {
        if matches!(c, '\'' | '\u{2018}' | '\u{2019}' | '\u{201A}' | '\u{201B}') {
            out.push(c);
        }
        out.push(c);
    }
    out.push('\'');
    out
}

/// The PowerShell call of the runtime, `& '<path>'` (the call operator is required: a line that
/// starts with a quoted string is an expression, and arguments after it a parse error).
pub fn ps_call(bin: &Path) -> String {
    format!("& {}", ps_quote(&bin.to_string_lossy()))
}

/// The PowerShell call of ovmem's runtime on a Windows machine, for a Windows-only field of a
/// config written on any OS: the runtime itself when it is a Windows path, else ovmem's default
/// location there, `& (Join-Path $env:USERPROFILE '.ovmem\bin\ovmem.exe')`.
pub fn ps_call_windows(bin: &Path) -> String {
    let p = bin.to_string_lossy();
    if is_windows_path(&p) {
        ps_call(bin)
    } else {
        format!("& (Join-Path $env:USERPROFILE {})", ps_quote(DEFAULT_RELATIVE))
    }
}

/// The runtime path for a harness that hands the command to `cmd.exe /C`: unquoted, which is
/// all cmd survives under Rust's and Antigravity's argument quoting, so only a path of
/// `[A-Za-z0-9:\._/-]` is accepted.
pub fn cmd_path(bin: &Path) -> Result<String, String> {
    let p = bin.to_string_lossy();
    if p.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, ':' | '\\' | '.' | '_' | '-' | '/')) {
        Ok(p.into_owned())
    } else {
        Err(format!(
            "the runtime path `{p}` cannot be written for cmd.exe (only letters, digits and `:\\._-/` survive its \
             quoting); set OVMEM_HOME to a path without spaces or special characters"
        ))
    }
}

/// The runtime of a PowerShell hook command `& '<path>' hook <harness> <event>`, when `cmd` is
/// exactly that form (as [`ps_call`] writes it for a Windows path).
pub fn ps_hook_runtime(cmd: &str) -> Option<(String, Vec<String>)> {
    let rest = cmd.strip_prefix("& '")?;
    let mut path = String::new();
    let mut chars = rest.char_indices().peekable();
    let mut end = None;
    while let Some((i, c)) = chars.next() {
        let quote = matches!(c, '\'' | '\u{2018}' | '\u{2019}' | '\u{201A}' | '\u{201B}');
        if quote {
            if chars.peek().is_some_and(|(_, n)| *n == c) {
                chars.next();
                path.push(c);
                continue;
            }
            end = Some(i + c.len_utf8());
            break;
        }
        path.push(c);
    }
    let tail = &rest[end?..];
    let words: Vec<String> = tail.strip_prefix(' ')?.split(' ').map(String::from).collect();
    Some((path, words))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn powershell_quotes_double_every_single_quote() {
        assert_eq!(ps_quote(r"C:\Users\Ann O'Neil\x"), r"'C:\Users\Ann O''Neil\x'");
        assert_eq!(ps_quote("a\u{2019}b"), "'a\u{2019}\u{2019}b'");
        assert_eq!(ps_quote("$env:X `n \"q\""), "'$env:X `n \"q\"'");
        let bin = Path::new(r"C:\Users\Ann O'Neil\.ovmem\bin\ovmem.exe");
        let cmd = format!("{} hook codex Stop", ps_call(bin));
        assert_eq!(cmd, r"& 'C:\Users\Ann O''Neil\.ovmem\bin\ovmem.exe' hook codex Stop");
        let (p, w) = ps_hook_runtime(&cmd).unwrap();
        assert_eq!(p, bin.to_string_lossy());
        assert_eq!(w, ["hook", "codex", "Stop"]);
    }

    #[test]
    fn a_unix_runtime_points_windows_fields_at_the_default_windows_location() {
        let cmd = ps_call_windows(Path::new("/home/ann/.ovmem/bin/ovmem"));
        assert_eq!(cmd, r"& (Join-Path $env:USERPROFILE '.ovmem\bin\ovmem.exe')");
        let bin = Path::new(r"C:\Users\ann\.ovmem\bin\ovmem.exe");
        assert_eq!(ps_call_windows(bin), ps_call(bin));
        assert_eq!(ps_call(Path::new("/h/.ovmem/bin/ovmem")), "& '/h/.ovmem/bin/ovmem'");
    }

    #[test]
    fn cmd_paths_are_bare_or_refused() {
        assert_eq!(
            cmd_path(Path::new(r"C:\Users\ann\.ovmem\bin\ovmem.exe")).unwrap(),
            r"C:\Users\ann\.ovmem\bin\ovmem.exe"
        );
        for bad in
            [r"C:\Users\Ann O'Neil\.ovmem\bin\ovmem.exe", r"C:\a&b\ovmem.exe", r"C:\a%PATH%\ovmem.exe", r"C:\(x)\o.exe"]
        {
            assert!(cmd_path(Path::new(bad)).is_err(), "{bad}");
        }
    }

    #[test]
    fn only_the_exact_powershell_form_parses() {
        assert!(ps_hook_runtime("'C:\\x.exe' hook codex Stop").is_none());
        assert!(ps_hook_runtime("& 'C:\\x.exe'hook codex Stop").is_none());
        assert!(ps_hook_runtime("& 'C:\\x.exe").is_none());
    }
}
