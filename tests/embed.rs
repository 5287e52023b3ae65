//! The local semantic signal: the Rust tokenizer gives the model's own token ids (the fixture is
//! written by `tools/embed/tokens.py` from the model's `tokenizer.json`), and recall by meaning
//! works through the real prompt hook on a throwaway home: a paraphrased question finds its
//! memory, a revision said in other words ranks above what it replaced, and a memory found by its
//! words alone is still found.

mod common;

use std::path::PathBuf;

use serde_json::{json, Value};

#[test]
fn the_tokenizer_gives_the_models_token_ids() {
    let model = ovmem::embed::Model::get();
    let fixture = include_str!("fixtures/embed/tokens.jsonl");
    let mut checked = 0;
    for line in fixture.lines() {
        let v: Value = serde_json::from_str(line).unwrap();
        let text = v["text"].as_str().unwrap();
        let want: Vec<u32> = v["ids"].as_array().unwrap().iter().map(|x| x.as_u64().unwrap() as u32).collect();
        let got = model.tokenize(text);
        assert_eq!(got, want, "{text:?}: {:?}", got.iter().map(|&i| model.token(i)).collect::<Vec<_>>());
        checked += 1;
    }
    assert!(checked > 300, "the fixture has {checked} texts");
}

#[test]
fn every_token_of_the_vocabulary_is_found_again() {
    let model = ovmem::embed::Model::get();
    assert_eq!(model.len(), 30522);
    for id in 0..model.len() as u32 {
        assert_eq!(model.id(model.token(id)), Some(id), "{:?}", model.token(id));
    }
}

#[test]
fn meaning_is_closer_than_chance() {
    let m = ovmem::embed::Model::get();
    let cos = |a: &str, b: &str| {
        let (x, y) = (m.embed(a).unwrap(), m.embed(b).unwrap());
        x.iter().zip(&y).map(|(p, q)| p * q).sum::<f32>()
    };
    let near = cos("How do I reset my password?", "I forgot my login credentials");
    let far = cos("How do I reset my password?", "The weather in Paris is sunny");
    assert!(near > far + 0.1, "near {near}, far {far}");
    assert!(m.embed("").is_none() && m.embed("   ").is_none());
}

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

    fn run(&self, args: &[&str], stdin: &[u8]) -> String {
        let r = common::run_in(&self.home, &self.proj, args, stdin, &[]);
        assert_eq!(r.code, 0, "{args:?}");
        r.out
    }

    /// Imports memories (prompt, reply, age in days), one session each.
    fn import(&self, memories: &[(&str, &str, i64)]) {
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
        self.run(&["memory", "import", path.to_str().unwrap(), "--project", self.proj.to_str().unwrap()], b"");
    }

    /// The context Claude Code's prompt hook injects for `prompt`.
    fn ask(&self, prompt: &str) -> String {
        let stdin =
            json!({"session_id": "ask", "cwd": self.proj, "hook_event_name": "UserPromptSubmit", "prompt": prompt});
        let out = self.run(&["hook", "claude-code", "UserPromptSubmit"], stdin.to_string().as_bytes());
        let v: Value = serde_json::from_str(out.trim()).unwrap();
        v.pointer("/hookSpecificOutput/additionalContext").and_then(Value::as_str).unwrap_or_default().to_string()
    }

    fn teach(&self, session: &str, prompt: &str, reply: &str) {
        let ups =
            json!({"session_id": session, "cwd": self.proj, "hook_event_name": "UserPromptSubmit", "prompt": prompt});
        self.run(&["hook", "claude-code", "UserPromptSubmit"], ups.to_string().as_bytes());
        let stop = json!({"session_id": session, "cwd": self.proj, "hook_event_name": "Stop", "last_assistant_message": reply});
        self.run(&["hook", "claude-code", "Stop"], stop.to_string().as_bytes());
    }
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
    lab.teach("teach", "How do we deploy?", "Deploys go through Jenkins on ci.internal:8080, job deploy-prod.");
    for (i, (p, r)) in DISTRACTORS.iter().enumerate() {
        lab.teach(&format!("d{i}"), p, r);
    }
    for q in ["Where does continuous integration push things to production?", "Which build server ships our code?"] {
        let ctx = lab.ask(q);
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
    lab.import(&all);
    let mut found = 0;
    for (q, _, answer) in cases {
        let ctx = lab.ask(q);
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
    lab.import(&[
        ("How should idempotency keys be stored?", "Store idempotency keys in Redis with a 24 hour expiry.", 60),
        (
            "Let's revisit duplicate request protection",
            "We switched: request dedupe tokens now live in Postgres instead, kept for 72 hours.",
            5,
        ),
        ("Rename the billing module", "Renamed billing to invoicing across the crate.", 20),
        ("Why is the login page slow?", "The avatar images were huge; they are resized now.", 15),
    ]);
    let ctx = lab.ask("Where do we keep idempotency keys?");
    let (new, old) = (ctx.find("Postgres"), ctx.find("Redis"));
    assert!(new.is_some() && old.is_some(), "{ctx}");
    assert!(new < old, "the revision comes first: {ctx}");
}

#[test]
fn a_memory_matched_by_its_words_is_still_first() {
    let lab = Lab::new();
    let mut all: Vec<(&str, &str, i64)> = DISTRACTORS.iter().map(|(p, r)| (*p, *r, 3)).collect();
    all.push(("What is error E4471?", "E4471 means the tenant quota is exhausted; raise it in quotas.toml.", 400));
    lab.import(&all);
    let ctx = lab.ask("what does E4471 mean");
    assert!(ctx.contains("quotas.toml"), "{ctx}");
}
