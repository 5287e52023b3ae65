//! `ovmem ui`: the local web viewer's command line (the viewer itself is `src/ui/`).

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Result;
use clap::Args;

use crate::env::Env;

#[derive(Args)]
pub struct UiArgs {
    /// The port on 127.0.0.1 (0: any free one)
    #[arg(long, default_value_t = 0)]
    pub port: u16,
    /// Print the URL only; do not open a browser
    #[arg(long)]
    pub no_open: bool,
    /// The project listed first, as "this project" (default: the current directory's)
    #[arg(long, value_name = "DIR")]
    pub project: Option<PathBuf>,
    /// Stop after this long without a request (a visible page asks every second): minutes, or 90s, 2h
    #[arg(long, value_name = "TIME", default_value = "30", value_parser = idle_time)]
    pub idle: Duration,
}

/// `30` (minutes), `90s`, `5m`, `2h`.
fn idle_time(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let (n, unit) = match s.find(|c: char| !c.is_ascii_digit()) {
        Some(i) => s.split_at(i),
        None => (s, "m"),
    };
    let n: u64 = n.parse().map_err(|_| format!("`{s}` is not a time: give minutes (30) or 90s, 5m, 2h"))?;
    let secs = match unit {
        "s" => n,
        "m" => n * 60,
        "h" => n * 3600,
        _ => return Err(format!("`{s}`: the unit must be s, m or h")),
    };
    if secs == 0 {
        return Err("the idle time must be above zero".into());
    }
    Ok(Duration::from_secs(secs))
}

pub fn run(args: UiArgs, env: &Env) -> Result<i32> {
    super::memory::prepare(env)?;
    let bank = super::memory::BankArgs { project: args.project, bank: None };
    let default_bank = super::memory::bank(env, &bank).ok();
    let opts = crate::ui::Options { port: args.port, open: !args.no_open, default_bank, idle: args.idle };
    crate::ui::serve(opts, env)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idle_times() {
        assert_eq!(idle_time("30"), Ok(Duration::from_secs(1800)));
        assert_eq!(idle_time("90s"), Ok(Duration::from_secs(90)));
        assert_eq!(idle_time("2h"), Ok(Duration::from_secs(7200)));
        assert!(idle_time("0").is_err());
        assert!(idle_time("5d").is_err());
        assert!(idle_time("soon").is_err());
    }
}
