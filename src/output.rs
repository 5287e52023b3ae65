//! Human output on stderr (data and `--json` go to stdout): colour only on a terminal and never
//! under `NO_COLOR`, backticks around paths so messages read the same without colour.

use std::io::IsTerminal;

pub struct Printer {
    colour: bool,
}

impl Default for Printer {
    fn default() -> Self {
        Self::new()
    }
}

impl Printer {
    pub fn new() -> Self {
        let no_colour = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        Self { colour: !no_colour && std::io::stderr().is_terminal() }
    }

    fn paint(&self, code: &str, s: &str) -> String {
        if self.colour {
            format!("\x1b[{code}m{s}\x1b[0m")
        } else {
            s.to_string()
        }
    }

    pub fn green(&self, s: &str) -> String {
        self.paint("32", s)
    }

    pub fn yellow(&self, s: &str) -> String {
        self.paint("33", s)
    }

    pub fn red(&self, s: &str) -> String {
        self.paint("31", s)
    }

    pub fn bold(&self, s: &str) -> String {
        self.paint("1", s)
    }

    pub fn dim(&self, s: &str) -> String {
        self.paint("2", s)
    }

    /// A warning; what it quotes from a project or a server cannot drive the terminal.
    pub fn warn(&self, msg: &str) {
        eprintln!("{} {}", self.yellow("warning:"), crate::termsafe::clean(msg));
    }
}

/// Prints a value as pretty JSON on stdout.
pub fn json<T: serde::Serialize>(v: &T) {
    println!("{}", serde_json::to_string_pretty(v).expect("reports serialise"));
}

/// `1 memory`, `3 memories`.
pub fn count(n: impl Into<i64>, one: &str, many: &str) -> String {
    let n = n.into();
    format!("{n} {}", if n == 1 { one } else { many })
}
