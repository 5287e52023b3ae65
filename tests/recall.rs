//! What recall must get right, through the built binary as a harness runs it (`ovmem hook
//! claude-code UserPromptSubmit`) against throwaway homes: the whole bank is ranked (an old exact
//! match beats a new vague one, an identifier finds its one memory among thousands), `k` memories
//! arrive within the harness's context limit, a later decision ranks before the one it reverses
//! (which is marked), and a short follow-up turn is found and shown with its session's topic.
//! By meaning (the local embedding model): a paraphrased question finds its memory, a revision
//! said in other words ranks above what it replaced, an exact identifier still comes first, and a
//! question that relates two events shows both.
#![cfg(unix)]

mod common;

use std::path::PathBuf;

use serde_json::{json, Value};

const DAY: i64 = 86_400;
const NOW: i64 = 1_795_000_000;

struct Lab {
    _tmp: tempfile::TempDir,
    home: PathBuf,
    proj: PathBuf,
}

impl Lab {
    fn new() -> Self {
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path().join("home");
        let proj = tmp.path().join("proj");
        std::fs::create_dir_all(proj.join(".git")).unwrap();
        std::fs::create_dir_all(&home).unwrap();
        Self { _tmp: tmp, home, proj }
    }

    fn run(&self, args: &[&str], stdin: &[u8], env: &[(&str, &str)]) -> (String, i32) {
        let r = common::run_in(&self.home, &self.proj, args, stdin, env);
        (r.out, r.code)
    }

    /// Imports memories (prompt, reply, age in days) into the project's bank.
    fn import(&self, memories: &[(String, String, i64)]) {
        let path = self.home.join("import.jsonl");
        let lines: String = memories
            .iter()
            .enumerate()
            .map(|(i, (p, r, age))| {
                json!({"prompt": p, "reply": r, "harness": "codex", "session": format!("s{i}"), "created_at": NOW - age * DAY})
                    .to_string()
                    + "\n"
            })
            .collect();
        std::fs::write(&path, lines).unwrap();
        let (_, code) =
            self.run(&["memory", "import", path.to_str().unwrap(), "--project", self.proj.to_str().unwrap()], b"", &[]);
        assert_eq!(code, 0);
        // An import writes words only; the vectors come from `ovmem sync` (or, a few at a time,
        // from later hooks), as a user who imports a history runs it.
        let (_, code) = self.run(&["sync", "--timeout", "600"], b"", &[]);
        assert_eq!(code, 0);
    }

    /// The context Claude Code's prompt hook injects for `prompt` (empty when nothing), each
    /// question in a session of its own (a session is not given the same memory twice).
    fn ask(&self, prompt: &str, k: usize) -> String {
        static ASKED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let session = format!("ask-{}", ASKED.fetch_add(1, std::sync::atomic::Ordering::Relaxed));
        let stdin =
            json!({"session_id": session, "cwd": self.proj, "hook_event_name": "UserPromptSubmit", "prompt": prompt});
        let (out, code) = self.run(
            &["hook", "claude-code", "UserPromptSubmit"],
            stdin.to_string().as_bytes(),
            &[("OVMEM_RECALL_LIMIT", &k.to_string())],
        );
        assert_eq!(code, 0);
        let v: Value = serde_json::from_str(out.trim()).unwrap();
        v.pointer("/hookSpecificOutput/additionalContext").and_then(Value::as_str).unwrap_or_default().to_string()
    }

    fn turn(&self, session: &str, prompt: &str, reply: &str) {
        let ups =
            json!({"session_id": session, "cwd": self.proj, "hook_event_name": "UserPromptSubmit", "prompt": prompt});
        assert_eq!(self.run(&["hook", "claude-code", "UserPromptSubmit"], ups.to_string().as_bytes(), &[]).1, 0);
        let stop = json!({"session_id": session, "cwd": self.proj, "hook_event_name": "Stop", "last_assistant_message": reply});
        assert_eq!(self.run(&["hook", "claude-code", "Stop"], stop.to_string().as_bytes(), &[]).1, 0);
    }
}

fn items(ctx: &str) -> Vec<&str> {
    ctx.split("\n- [").skip(1).collect()
}

/// Decisions about many services, each in the same words: only the identifier tells them apart.
fn decisions(n: usize) -> Vec<(String, String, i64)> {
    (0..n)
        .map(|i| {
            (
                format!(
                    "Decision for service s{i}: the retry policy uses {} retries with exponential backoff",
                    i % 7 + 2
                ),
                format!("Noted. Service s{i} retries {} times before it pages the on-call.", i % 7 + 2),
                (n - i) as i64 % 400,
            )
        })
        .collect()
}

#[test]
fn an_identifier_finds_its_one_memory_among_thousands() {
    let lab = Lab::new();
    lab.import(&decisions(3000));
    let ctx = lab.ask("How many retries does service s1234 use?", 5);
    let first = items(&ctx).first().copied().unwrap_or_default();
    assert!(first.contains("service s1234:"), "{ctx}");
}

#[test]
fn an_old_exact_match_beats_a_new_vague_one() {
    let lab = Lab::new();
    let mut ms = vec![(
        "The staging Postgres database listens on port 5433, not the default".to_string(),
        "Right, staging Postgres is on 5433.".to_string(),
        700,
    )];
    for i in 0..50 {
        ms.push((format!("Staging deploy {i} went fine"), "The database migration ran too.".to_string(), 1));
    }
    lab.import(&ms);
    let ctx = lab.ask("Which port does the staging Postgres database listen on?", 3);
    assert!(items(&ctx)[0].contains("5433"), "{ctx}");
}

#[test]
fn a_limit_of_k_delivers_k_within_the_context_budget() {
    let lab = Lab::new();
    let long = "The ingest pipeline batches events and flushes them every few seconds. ".repeat(60);
    let ms: Vec<(String, String, i64)> = (0..40)
        .map(|i| (format!("Question {i} about the ingest pipeline batching"), format!("{long} Answer {i}."), i))
        .collect();
    lab.import(&ms);
    for k in [1, 5, 10] {
        let ctx = lab.ask("How does the ingest pipeline batch events?", k);
        assert_eq!(items(&ctx).len(), k, "{ctx}");
        assert!(ctx.chars().count() <= 9500, "k={k}: {} chars", ctx.chars().count());
        assert!(ctx.starts_with("<ovmem-memory>\n") && ctx.ends_with("</ovmem-memory>"));
    }
}

/// checkout-svc's session store, decided 60 days ago.
fn sessions_in_redis() -> (String, String, i64) {
    (
        "For checkout-svc we will keep user sessions in Redis with a 30 minute TTL".to_string(),
        "Agreed, Redis for checkout-svc sessions.".to_string(),
        60,
    )
}

/// Thirty notes on another subject, one a day.
fn billing_notes() -> impl Iterator<Item = (String, String, i64)> {
    (0..30).map(|i| (format!("Unrelated note {i} on the billing worker"), "ok".to_string(), i))
}

#[test]
fn a_later_decision_ranks_before_the_one_it_reverses() {
    let lab = Lab::new();
    let mut ms = vec![
        sessions_in_redis(),
        (
            "Actually, switch checkout-svc sessions to Memcached; Redis is too expensive at our volume".to_string(),
            "Done: checkout-svc now stores sessions in Memcached.".to_string(),
            5,
        ),
    ];
    ms.extend(billing_notes());
    lab.import(&ms);
    let ctx = lab.ask("Where does checkout-svc keep user sessions?", 5);
    let its = items(&ctx);
    assert!(its[0].contains("Memcached"), "{ctx}");
    let old = its.iter().find(|i| i.contains("30 minute TTL")).expect("the earlier decision is still shown");
    assert!(old.contains("superseded by the entry of"), "{ctx}");
}

#[test]
fn a_change_weighed_or_a_word_stressed_marks_nothing_superseded() {
    let lab = Lab::new();
    let mut ms = vec![
        sessions_in_redis(),
        // A change weighed in a question, and "actually" as stress: nothing is changed.
        (
            "Should checkout-svc keep its user sessions in Memcached instead?".to_string(),
            "It could, but Redis for checkout-svc sessions costs little at our volume; keep it.".to_string(),
            9,
        ),
        (
            "How do checkout-svc user sessions actually expire in Redis?".to_string(),
            "Each checkout-svc session is a Redis hash with a 30 minute TTL, refreshed on every request.".to_string(),
            3,
        ),
    ];
    ms.extend(billing_notes());
    lab.import(&ms);
    let ctx = lab.ask("Where does checkout-svc keep user sessions?", 5);
    let its = items(&ctx);
    let decision = its.iter().find(|i| i.contains("we will keep user sessions"));
    let decision = decision.unwrap_or_else(|| panic!("the decision is shown: {ctx}"));
    assert!(!decision.contains("superseded by"), "{ctx}");
    assert!(its.iter().all(|i| !i.contains("superseded by")), "{ctx}");
}

#[test]
fn a_short_follow_up_is_found_with_its_session_topic() {
    let lab = Lab::new();
    lab.turn(
        "s1",
        "The nightly export job for the analytics warehouse fails with ERR_DISK_FULL",
        "The /var volume is full.",
    );
    lab.turn("s1", "then drop the old partitions", "Dropped partitions older than 90 days; 40 GB free.");
    for i in 0..20 {
        lab.turn(&format!("x{i}"), &format!("Refactor the parser module, step {i}"), "Done.");
    }
    let ctx = lab.ask("What did we do about the analytics warehouse export running out of disk?", 5);
    let hit = items(&ctx).into_iter().find(|i| i.contains("Dropped partitions")).unwrap_or_else(|| panic!("{ctx}"));
    assert!(hit.contains("nightly export job"), "the follow-up is shown with its topic: {hit}");
}

#[test]
fn import_keeps_dates_and_banks_and_is_batched() {
    let lab = Lab::new();
    lab.import(&decisions(2000));
    let (out, code) = lab.run(&["memory", "list", "--json", "--limit", "1"], b"", &[]);
    assert_eq!(code, 0);
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v[0]["created_at"], NOW, "the newest by its imported date");
    assert_eq!(v[0]["bank"], format!("project:{}", lab.proj.display()));
    let ctx = lab.ask("retry policy for service s77", 1);
    assert!(ctx.contains("2026-") || ctx.contains("2025-"), "dates come from the import: {ctx}");
}

#[test]
fn a_long_turn_is_stored_whole_and_found_by_its_last_words() {
    let lab = Lab::new();
    let filler = "The parser walks the token stream and builds the tree one node at a time. ".repeat(150);
    let reply = format!("{filler} Finally: the cache eviction threshold is 7300 entries (KITE-88).");
    assert!(reply.len() > 9000);
    lab.turn("long", "Walk me through the parser and the cache", &reply);
    for i in 0..20 {
        lab.turn(&format!("o{i}"), &format!("Unrelated question {i} about the deploy script"), "Answered.");
    }
    let ctx = lab.ask("What is the cache eviction threshold?", 5);
    let first = items(&ctx).first().copied().unwrap_or_default();
    assert!(first.contains("7300 entries (KITE-88)"), "the passage around the match is shown: {ctx}");
    assert!(ctx.chars().count() <= 9500);
    let (out, _) = lab.run(&["memory", "list", "--json", "--limit", "100"], b"", &[]);
    let v: Value = serde_json::from_str(&out).unwrap();
    let stored = v.as_array().unwrap().iter().find(|m| m["session"] == "long").unwrap();
    assert_eq!(stored["reply"].as_str().unwrap(), reply, "the whole reply is stored");
}

/// Everyday memories of a project, none of them the answer.
const DISTRACTORS: &[(&str, &str)] = &[
    ("Rename the billing module", "Renamed billing to invoicing across the crate and fixed the imports."),
    ("Why is the login page slow?", "The avatar images were 4 MB each; they are resized on upload now."),
    ("Add a dark mode toggle", "Added a toggle in settings that stores the choice in local storage."),
    ("Bump the linter version", "Updated eslint to 9 and fixed the 14 new warnings."),
    ("Write a changelog entry for 2.3", "Added the 2.3 entry listing the new export formats."),
    ("What licence does the project use?", "It is MIT licensed; the notice is in LICENSE."),
    ("Fix the typo in the README", "Fixed 'recieve' in the install section."),
    ("How are feature flags stored?", "They live in flags.yaml and are read at startup."),
];

#[test]
fn a_paraphrased_question_finds_its_memory_through_the_hook() {
    let lab = Lab::new();
    lab.turn("teach", "How do we deploy?", "Deploys go through Jenkins on ci.internal:8080, job deploy-prod.");
    for (i, (p, r)) in DISTRACTORS.iter().enumerate() {
        lab.turn(&format!("d{i}"), p, r);
    }
    for q in ["Where does continuous integration push things to production?", "Which build server ships our code?"] {
        let ctx = lab.ask(q, 5);
        assert!(ctx.contains("ci.internal:8080"), "{q}: {ctx}");
    }
}

#[test]
fn paraphrases_held_apart_are_recalled() {
    // Question, the memory that answers it (sharing at most one content word), written before
    // the ranking was run on them and never tuned on.
    let cases: &[(&str, &str, &str)] = &[
        (
            "Which database holds customer records?",
            "Where do we keep user accounts?",
            "Accounts are stored in Postgres 16, schema `crm`, on db-main.",
        ),
        (
            "How do I make the test suite run faster?",
            "The specs take forever locally",
            "Run them with --parallel 4 and the fixture cache enabled; it cuts the run to 90 seconds.",
        ),
        (
            "Who should review security-sensitive changes?",
            "Which people must approve auth code?",
            "Anything touching authentication needs a sign-off from Priya or Marcus.",
        ),
        (
            "What happens when the payment provider is down?",
            "Stripe outage behaviour",
            "Charges are queued in the retry table and replayed every ten minutes for a day.",
        ),
    ];
    let lab = Lab::new();
    let mut all: Vec<(&str, &str, i64)> = DISTRACTORS.iter().map(|(p, r)| (*p, *r, 30)).collect();
    all.extend(cases.iter().map(|(_, p, r)| (*p, *r, 10)));
    lab.import(&owned(&all));
    let mut found = 0;
    for (q, _, answer) in cases {
        let ctx = lab.ask(q, 5);
        let key = &answer[..24];
        if ctx.contains(key) {
            found += 1;
        } else {
            eprintln!("missed {q:?}: {ctx}");
        }
    }
    assert!(found >= 3, "{found} of {} paraphrased questions found their memory", cases.len());
}

#[test]
fn a_revision_in_other_words_ranks_above_what_it_replaced() {
    let lab = Lab::new();
    lab.import(&owned(&[
        ("How should idempotency keys be stored?", "Store idempotency keys in Redis with a 24 hour expiry.", 60),
        // As a revision is said: why (what went wrong with the old choice), then the new one,
        // none of it in the question's words.
        (
            "Let's revisit duplicate request protection: Redis evicted some entries under memory pressure last week",
            "We switched: request dedupe tokens now live in Postgres instead, kept for 72 hours, so a payment \
             retried within three days is still caught.",
            5,
        ),
        ("Rename the billing module", "Renamed billing to invoicing across the crate.", 20),
        ("Why is the login page slow?", "The avatar images were huge; they are resized now.", 15),
    ]));
    let ctx = lab.ask("Where do we keep idempotency keys?", 5);
    let shown = items(&ctx);
    let (new, old) = (
        shown.iter().position(|i| i.contains("Postgres")),
        shown.iter().position(|i| i.contains("keys in Redis with a 24 hour expiry")),
    );
    assert!(new.is_some() && old.is_some(), "{ctx}");
    assert!(new < old, "the revision comes first: {ctx}");
    assert!(shown[old.unwrap()].contains("superseded by the entry of"), "the replaced decision is marked: {ctx}");
}

#[test]
fn a_memory_matched_by_its_words_is_still_first() {
    let lab = Lab::new();
    let mut all: Vec<(&str, &str, i64)> = DISTRACTORS.iter().map(|(p, r)| (*p, *r, 3)).collect();
    all.push(("What is error E4471?", "E4471 means the tenant quota is exhausted; raise it in quotas.toml.", 400));
    lab.import(&owned(&all));
    let ctx = lab.ask("what does E4471 mean", 5);
    assert!(ctx.contains("quotas.toml"), "{ctx}");
}

/// A question that relates two events, through the hook: the sale of the car fills the slots by
/// the question's words, the new job is told in other words in a session of its own. Each event
/// is asked on its own as well (its vector computed ahead with the question's), so both are shown.
#[test]
fn a_question_relating_two_events_shows_both_through_the_hook() {
    let lab = Lab::new();
    for (i, p) in [
        "Put the old Fiesta up for sale online, asking 1,800 for it",
        "Someone came to look at the Fiesta and wanted it sold cheaper",
        "The Fiesta is sold! The buyer collected it on Saturday",
        "Paperwork now that the Fiesta is sold: the logbook and the insurance",
        "Should the Fiesta have been sold before the brakes were fixed?",
    ]
    .iter()
    .enumerate()
    {
        lab.turn(&format!("car{i}"), p, "Noted.");
    }
    lab.turn("job", "Night rota at the distribution centre began yesterday: eight hours scanning pallets", "Noted.");
    let ctx = lab.ask("Had the Fiesta been sold before my first shift at the warehouse?", 3);
    assert_eq!(items(&ctx).len(), 3, "{ctx}");
    assert!(ctx.contains("distribution centre"), "{ctx}");
    assert!(ctx.contains("Fiesta"), "{ctx}");
}

fn owned(ms: &[(&str, &str, i64)]) -> Vec<(String, String, i64)> {
    ms.iter().map(|(p, r, a)| (p.to_string(), r.to_string(), *a)).collect()
}
