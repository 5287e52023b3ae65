//! Redaction's share of every hook: scrubbing a 4 KB turn, cold (the first call in a process,
//! which compiles the rules the text needs, as every hook process does; measured in a fresh
//! process each time) and warm, with and without secrets in it. `OVMEM_BENCH_LARGE=1` instead
//! times one scrub of 10 MB of each kind of text (turns, config, base64, YAML, shell lines).

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

/// 10 MB of one kind of text: the cost of redaction must stay linear in the text's length,
/// whatever it holds.
fn large(kind: &str, size: usize) -> String {
    let unit: String = match kind {
        "turns" => turn(true),
        "config" => "DB_PASSWORD=hunter2\nAPI_TOKEN=Xk9fR2mQ7vL3pW8nZ4tB6cY1\nretries: 3\nurl: postgres://app:p#ss@db:5432/app\n"
            .to_string(),
        "base64" => "TUlJRXZRSUJBREFOQmdrcWhraUc5dzBCQVFFRkFBU0NCS2N3Z2dTakFnRUFBb0lCQVFD".repeat(64),
        "base64-lines" => "ZGVwbG95IHJlYWRzIHNodXRkb3duIGRyYWluIHdvcmxkIHdvcmxkIHNjcmlwdCB3b3JsZCByZWFk\n".to_string(),
        "yaml" => "  password: |\n    c2VjcmV0\n  token: >-\n    abc\n  sha: sha512-Zm9vYmFy\n".to_string(),
        _ => "curl -H 'cookie: a=b; c=d' -b 'x=y' https://u:p@h/ && redis-cli -a pw && mysql -ppw\n".to_string(),
    };
    let mut t = unit.repeat(size / unit.len() + 1);
    t.truncate(size);
    while !t.is_char_boundary(t.len()) {
        t.pop();
    }
    t
}

fn bench(c: &mut Criterion) {
    if std::env::var_os("OVMEM_BENCH_LARGE").is_some() {
        let only = std::env::var("OVMEM_BENCH_LARGE").unwrap_or_default();
        for kind in ["turns", "config", "base64", "base64-lines", "yaml", "shell"] {
            if only != "1" && only != kind {
                continue;
            }
            // 1 MB, then 10 MB: linear when the second costs ten times the first.
            let time = |mb: usize| {
                let text = large(kind, mb << 20);
                let start = std::time::Instant::now();
                std::hint::black_box(redact::scrub(&text).len());
                start.elapsed()
            };
            if only == kind {
                for mb in [1, 2, 4, 8, 16] {
                    eprintln!("scrub of {mb} MB ({kind}): {:?}", time(mb));
                }
            }
            let (one, ten) = (time(1), time(10));
            eprintln!(
                "scrub of 10 MB ({kind}): {ten:?}, {:.1} MB/s; 1 MB: {one:?} (10 MB / 1 MB = {:.1})",
                10.0 / ten.as_secs_f64(),
                ten.as_secs_f64() / one.as_secs_f64()
            );
        }
        std::process::exit(0);
    }
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
