//! Redaction's share of every hook: scrubbing a 4 KB turn, cold (the first call in a process,
//! which compiles the rules the text needs, as every hook process does) and warm, with and
//! without secrets in it.

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

fn bench(c: &mut Criterion) {
    let plain = turn(false);
    let secrets = turn(true);
    let t = std::time::Instant::now();
    std::hint::black_box(redact::scrub(&secrets));
    eprintln!("cold first scrub of a 4 KB turn with secrets: {:?}", t.elapsed());
    c.bench_function("scrub 4 KB turn, no secrets", |b| b.iter(|| redact::scrub(std::hint::black_box(&plain)).len()));
    c.bench_function("scrub 4 KB turn, with secrets", |b| {
        b.iter(|| redact::scrub(std::hint::black_box(&secrets)).len())
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
