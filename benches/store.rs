//! The store's share of the prompt hook: recall over 10,000 memories in one bank (beside
//! 10,000 in other banks), and capturing a turn.

use criterion::{criterion_group, criterion_main, Criterion};
use ovmem::store::{now, NewMemory, Store};

const TOPICS: &[&str] = &[
    "the staging database listens on port",
    "deploys go out through the blue-green pipeline on",
    "the flaky test in the payments module is",
    "our API rate limit for partners is",
    "the frontend build uses vite with the",
    "migrations must be reviewed by",
    "the cache TTL for user sessions is",
    "error budgets are tracked in dashboard",
];

fn filled() -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("memory.db"), std::time::Duration::from_secs(5)).unwrap();
    let t = now();
    for bank in ["project:/work/acme", "project:/work/other"] {
        for i in 0..10_000 {
            let prompt = format!("note {i}: {} {}", TOPICS[i % TOPICS.len()], i * 7);
            let reply = format!("Noted, {i}.");
            store
                .add(&NewMemory {
                    bank,
                    prompt: &prompt,
                    reply: &reply,
                    harness: Some("claude-code"),
                    session: Some("s"),
                    created_at: t - i as i64 * 60,
                    ..Default::default()
                })
                .unwrap();
        }
    }
    (dir, store)
}

fn bench(c: &mut Criterion) {
    let (_dir, store) = filled();
    c.bench_function("recall 10k memories", |b| {
        b.iter(|| store.recall("project:/work/acme", "Which port does the staging database listen on?", 5).unwrap())
    });
    c.bench_function("recent 5 of 10k", |b| b.iter(|| store.recent("project:/work/acme", 5).unwrap()));
    let mut n = 0u64;
    c.bench_function("capture a turn", |b| {
        b.iter(|| {
            n += 1;
            let prompt = format!("bench turn {n}");
            store
                .add(&NewMemory {
                    bank: "project:/work/acme",
                    prompt: &prompt,
                    reply: "ok",
                    created_at: now(),
                    ..Default::default()
                })
                .unwrap()
        })
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
