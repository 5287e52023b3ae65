//! ovmem: deterministic long-term memory for coding agents, wired in through their own hooks.
//! The hook path is dispatched before anything else is parsed: it runs on every prompt.

mod cli;
mod cmd;
mod config;
mod edit;
mod env;
mod fsx;
mod harness;
mod integrate;
mod output;
mod receipt;
mod runtime;
mod store;
mod trust;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("hook") {
        std::process::exit(runtime::main(&args[1..]));
    }
    std::process::exit(cli::run());
}
