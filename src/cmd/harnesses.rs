//! `ovmem harnesses`: the harnesses ovmem supports, straight from the registry, so every list a
//! user sees (help, errors, install.sh's hint, the README table) is the same list.

use anyhow::Result;
use clap::Args;

use crate::harness;
use crate::output;

#[derive(Args)]
pub struct HarnessesArgs {
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
}

#[derive(Clone, Copy, clap::ValueEnum)]
pub enum Format {
    /// One line per harness: id, name, aliases, tested version
    Text,
    /// The ids, comma-separated (for `--harness`)
    Ids,
    Json,
    /// The README's table of harness names
    Markdown,
}

pub fn run(args: HarnessesArgs) -> Result<i32> {
    let all = harness::all();
    match args.format {
        Format::Ids => {
            println!("{}", all.iter().map(|h| h.id()).collect::<Vec<_>>().join(","));
        }
        Format::Json => {
            let v: Vec<serde_json::Value> = all
                .iter()
                .map(|h| {
                    serde_json::json!({
                        "id": h.id(),
                        "name": h.manifest.name,
                        "aliases": h.manifest.aliases,
                        "binaries": h.manifest.binaries,
                        "tested": h.manifest.tested,
                    })
                })
                .collect();
            output::json(&v);
        }
        Format::Markdown => print!("{}", markdown()),
        Format::Text => {
            let width = all.iter().map(|h| h.id().len()).max().unwrap_or(0);
            let name_width = all.iter().map(|h| h.manifest.name.len()).max().unwrap_or(0);
            for h in all {
                let mut line = format!("{:<width$}  {:<name_width$}", h.id(), h.manifest.name);
                if !h.manifest.aliases.is_empty() {
                    line.push_str(&format!("  also: {}", h.manifest.aliases.join(", ")));
                }
                if let Some(t) = &h.manifest.tested {
                    line.push_str(&format!("  (tested with {t})"));
                }
                println!("{}", line.trim_end());
            }
        }
    }
    Ok(0)
}

/// The README's table of names `--harness` takes, generated from the registry (a test compares
/// README.md with it).
pub fn markdown() -> String {
    let mut out = String::from("| `--harness` | harness | also accepted | tested version |\n|---|---|---|---|\n");
    for h in harness::all() {
        let aliases: Vec<String> = h.manifest.aliases.iter().map(|a| format!("`{a}`")).collect();
        out.push_str(&format!(
            "| `{}` | {} | {} | {} |\n",
            h.id(),
            h.manifest.name,
            if aliases.is_empty() { "".to_string() } else { aliases.join(", ") },
            h.manifest.tested.as_deref().unwrap_or("not run here")
        ));
    }
    out.push_str("| `all` | every harness detected on this machine | | |\n");
    out
}
