//! Redaction's share of every hook: scrubbing a 4 KB turn, cold (the first call in a process,
//! which compiles the rules the text needs, as every hook process does; measured in a fresh
//! process each time) and warm, with and without secrets in it.

use criterion::{criterion_group, criterion_main, Criterion};
use ovmem::redact;

fn turn(with_secrets: bool) -> String {
    let mut t = String::new();
    while t.len() < 4096 {
        t.push_str("User: the deploy script reads config.yaml: retries: 3, timeout = 30s; see docs/deploy.md. ");
        t.push_str("Assistant: run `cargo test --all-targets`, then git push origin main (CI takes 9 minutes). ");
        if with_secrets {
            t.push_str(
                &["export GITHUB_TOKEN=gh", "p_R8sV2nXq7LmZ4tWc9YbK1dPe6HfJ3gAu0oSi password: hunter2 "].concat(),
            );
        }
    }
    t
}

/// The first scrub in this process, in microseconds.
fn cold(with_secrets: bool) -> u128 {
    let t = turn(with_secrets);
    let start = std::time::Instant::now();
    std::hint::black_box(redact::scrub(&t));
    start.elapsed().as_micros()
}

fn bench(c: &mut Criterion) {
    if let Ok(which) = std::env::var("OVMEM_BENCH_COLD") {
        println!("{}", cold(which == "secrets"));
        std::process::exit(0);
    }
    for which in ["plain", "secrets"] {
        let mut runs: Vec<u128> = (0..15)
            .filter_map(|_| {
                let out = std::process::Command::new(std::env::current_exe().ok()?)
                    .env("OVMEM_BENCH_COLD", which)
                    .output()
                    .ok()?;
                String::from_utf8_lossy(&out.stdout).trim().parse().ok()
            })
            .collect();
        runs.sort_unstable();
        if let Some(median) = runs.get(runs.len() / 2) {
            eprintln!("cold first scrub of a 4 KB turn ({which}), median of {}: {median} µs", runs.len());
        }
    }
    let plain = turn(false);
    let secrets = turn(true);
    c.bench_function("scrub 4 KB turn, no secrets", |b| b.iter(|| redact::scrub(std::hint::black_box(&plain)).len()));
    c.bench_function("scrub 4 KB turn, with secrets", |b| {
        b.iter(|| redact::scrub(std::hint::black_box(&secrets)).len())
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
