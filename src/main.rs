//! ovmem: deterministic long-term memory for coding agents, wired in through their own hooks.
//! The hook path is dispatched before anything else is parsed: it runs on every prompt.

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("hook") {
        std::process::exit(ovmem::runtime::main(&args[1..]));
    }
    std::process::exit(ovmem::cli::run());
}
