//! The Hindsight and OpenViking clients against the real servers: hindsight-api-slim 1.1.0 (its
//! embedded PostgreSQL, in the scale-out form: two API nodes and a worker on one database, API-key
//! auth on) and openviking 0.5.2 (dev mode and api_key mode), installed by
//! `tests/servers/install.sh` into `$OVMEM_SERVERS_DIR` (default `~/.cache/ovmem-servers`) and run
//! on 127.0.0.1 against ovmem's stub model by `tests/servers/servers.py`, once per test binary.
//! They are stopped by pid when the binary exits (an exit handler), and by a watchdog if it dies.
//!
//! Without the installed servers each test prints `SKIPPED (not a pass): <why>`; with
//! `OVMEM_SERVERS_REQUIRED=1` (CI) a missing server fails instead. The dead-server and silent-server
//! tests need no server and always run.
#![cfg(unix)]

mod common;

use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use ovmem::backend::hindsight::{self, Hindsight};
use ovmem::backend::openviking::{self, OpenViking};
use ovmem::backend::{configure, team_bank, Choice, Remote, RemoteError, Secret, Turn};
use serde_json::Value;

use common::RefusingPort;

const OVMEM: &str = env!("CARGO_BIN_EXE_ovmem");
const HS_KEY: &str = "ovmem-test-hindsight-key-5e1f";
const OV_ROOT: &str = "ovmem-test-openviking-root-77ac";

fn required() -> bool {
    std::env::var("OVMEM_SERVERS_REQUIRED").is_ok_and(|v| v == "1")
}

/// Straight to the stderr handle: the test harness captures `eprintln!` of passing tests.
fn note(msg: &str) {
    let _ = writeln!(std::io::stderr(), "{msg}");
}

fn servers_dir() -> PathBuf {
    std::env::var_os("OVMEM_SERVERS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(std::env::var("HOME").unwrap()).join(".cache/ovmem-servers"))
}

fn helper() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/servers/servers.py")
}

struct Lab {
    state: Value,
}

impl Lab {
    fn at(&self, path: &[&str]) -> String {
        let mut v = &self.state;
        for p in path {
            v = &v[*p];
        }
        v.as_str().unwrap_or_else(|| panic!("no {path:?} in the servers' state: {}", self.state)).to_string()
    }
    fn hs_a(&self) -> String {
        self.at(&["hindsight", "url"])
    }
    fn hs_b(&self) -> String {
        self.at(&["hindsight", "url_b"])
    }
    fn ov_dev(&self) -> String {
        self.at(&["openviking", "dev", "url"])
    }
    fn ov_keyed(&self) -> String {
        self.at(&["openviking", "api_key", "url"])
    }
    fn ov_user_key(&self, user: &str) -> String {
        self.at(&["openviking", "api_key", "users", user])
    }
}

static STATE_DIR: OnceLock<PathBuf> = OnceLock::new();
static LAB: OnceLock<Result<Lab, String>> = OnceLock::new();

extern "C" fn stop_servers() {
    if let Some(dir) = STATE_DIR.get() {
        let _ = Command::new("python3")
            .arg(helper())
            .args(["stop", "--state"])
            .arg(dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .status();
        let _ = std::fs::remove_dir_all(dir);
    }
}

fn start() -> Result<Lab, String> {
    for name in ["hindsight", "openviking"] {
        let dir = servers_dir().join(name);
        if !dir.join("installed.txt").exists() {
            return Err(format!(
                "{name} is not installed in {} (run `bash tests/servers/install.sh`, which installs the pinned servers)",
                dir.display()
            ));
        }
    }
    let dir = std::env::temp_dir().join(format!("ovmem-servers-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    STATE_DIR.set(dir.clone()).expect("started once");
    // SAFETY: registers a plain extern "C" function to run at process exit.
    unsafe { libc::atexit(stop_servers) };
    let t = Instant::now();
    let status = Command::new("python3")
        .arg(helper())
        .args(["start", "--state"])
        .arg(&dir)
        .args(["--hindsight", "scaleout", "--workers", "1", "--hindsight-key", HS_KEY])
        .args(["--openviking", "dev,api_key", "--openviking-root-key", OV_ROOT, "--openviking-users", "alice,bob"])
        .args(["--owner-pid", &std::process::id().to_string()])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .status()
        .map_err(|e| format!("could not run python3 {}: {e}", helper().display()))?;
    if !status.success() {
        return Err(format!("the servers did not start (logs in {})", dir.join("logs").display()));
    }
    let state = std::fs::read_to_string(dir.join("state.json")).map_err(|e| e.to_string())?;
    note(&format!("servers: started in {:.1} s", t.elapsed().as_secs_f64()));
    Ok(Lab { state: serde_json::from_str(&state).map_err(|e| e.to_string())? })
}

fn lab() -> Option<&'static Lab> {
    match LAB.get_or_init(start) {
        Ok(lab) => Some(lab),
        Err(why) if required() => panic!("real-server prerequisite missing with OVMEM_SERVERS_REQUIRED=1: {why}"),
        Err(why) => {
            note(&format!("SKIPPED (not a pass): {why}"));
            None
        }
    }
}

fn unique(prefix: &str) -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    static N: AtomicU32 = AtomicU32::new(0);
    format!("{prefix}-{}-{}", std::process::id(), N.fetch_add(1, Ordering::SeqCst))
}

fn hs(url: &str, token: Option<&str>, state_dir: Option<&Path>) -> Hindsight {
    Hindsight::new(hindsight::Options {
        url: url.into(),
        token: token.map(Secret::new),
        max_tokens: 1024,
        state_dir: state_dir.map(Path::to_path_buf),
    })
    .unwrap()
}

fn ov(url: &str, key: Option<&str>, user: Option<&str>) -> OpenViking {
    OpenViking::new(openviking::Options {
        url: url.into(),
        api_key: key.map(Secret::new),
        account: None,
        user: user.map(String::from),
    })
    .unwrap()
}

struct T {
    doc: String,
    bank: String,
    session: String,
    harness: String,
    project: String,
    user: String,
    assistant: String,
    status: &'static str,
    replay: bool,
}

impl T {
    fn new(bank: &str, harness: &str, user: &str, assistant: &str) -> Self {
        T {
            doc: unique("turn"),
            bank: bank.into(),
            session: unique("sess"),
            harness: harness.into(),
            project: "github.com/acme/widgets".into(),
            user: user.into(),
            assistant: assistant.into(),
            status: "completed",
            replay: false,
        }
    }
    fn turn(&self) -> Turn<'_> {
        Turn {
            doc_id: &self.doc,
            bank: &self.bank,
            session: &self.session,
            harness: &self.harness,
            project: &self.project,
            user: &self.user,
            assistant: &self.assistant,
            at: 1_796_000_000,
            status: self.status,
            replay: self.replay,
        }
    }
}

const SECOND: Duration = Duration::from_secs(1);

/// Polls `f` every 100 ms until it gives a value or `cap` passes; returns it and the time taken.
fn poll<V>(cap: Duration, mut f: impl FnMut() -> Option<V>) -> Option<(V, Duration)> {
    let t = Instant::now();
    loop {
        if let Some(v) = f() {
            return Some((v, t.elapsed()));
        }
        if t.elapsed() > cap {
            return None;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A raw GET, for checks the client has no method for.
fn get_json(url: &str, headers: &[(&str, &str)]) -> Value {
    let mut req = ureq::get(url);
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let mut resp = req.call().unwrap_or_else(|e| panic!("GET {url}: {e}"));
    serde_json::from_str(&resp.body_mut().read_to_string().unwrap()).unwrap()
}

fn hs_get(base: &str, path: &str) -> Value {
    get_json(&format!("{base}{path}"), &[("Authorization", &format!("Bearer {HS_KEY}"))])
}

// ------------------------------------------------------------------------------------------------
// Hindsight

#[test]
fn hindsight_health_names_version_and_database() {
    let Some(lab) = lab() else { return };
    let (line, took) = timed(|| hs(&lab.hs_a(), Some(HS_KEY), None).health(5 * SECOND).unwrap());
    assert_eq!(line, "Hindsight 1.1.0: healthy, database connected");
    note(&format!("hindsight: health in {} ms", took.as_millis()));
}

fn timed<V>(f: impl FnOnce() -> V) -> (V, Duration) {
    let t = Instant::now();
    let v = f();
    (v, t.elapsed())
}

#[test]
fn hindsight_retained_through_node_a_is_recalled_through_node_b() {
    let Some(lab) = lab() else { return };
    let state = tempfile::tempdir().unwrap();
    let a = hs(&lab.hs_a(), Some(HS_KEY), Some(state.path()));
    let b = hs(&lab.hs_b(), Some(HS_KEY), None);
    // The team bank two clones of one repository share, as the hooks derive it.
    let bank = team_bank(&format!("github.com/acme/{}", unique("widgets")));
    let mut t = T::new(&bank, "claude-code", "Remember: the deploy codename is BLUEHERON-7.", "Noted, BLUEHERON-7.");
    t.status = "cancelled";
    let (op, took) = timed(|| a.retain_turn(&t.turn(), 5 * SECOND).unwrap());
    note(&format!("hindsight: first retain (bank created, missions set) in {} ms", took.as_millis()));
    let (hits, readable) = poll(20 * SECOND, || {
        let hits = b.recall(&bank, "other-session", "What is the deploy codename?", 5, 5 * SECOND).unwrap();
        hits.iter().any(|h| h.text.contains("BLUEHERON-7")).then_some(hits)
    })
    .expect("the fact retained through node A is recalled through node B within 20 s");
    note(&format!("hindsight: async retain on node A readable on node B after {} ms", readable.as_millis()));
    let hit = hits.iter().find(|h| h.text.contains("BLUEHERON-7")).unwrap();
    assert_eq!(hit.kind.as_deref(), Some("world"));
    assert_eq!(hit.at, Some(1_796_000_000), "mentioned_at is the turn's time");
    assert!(hit.score.is_some() && !hit.id.is_empty());
    // What the server stored with the turn: context, tags, metadata, document id.
    let (status, _) = poll(20 * SECOND, || {
        let s = b.operation(&bank, &op, 5 * SECOND).unwrap().status;
        (s != "pending" && s != "processing").then_some(s)
    })
    .expect("the retain operation ends");
    assert_eq!(status, "completed", "node B sees the operation node A accepted and the worker ran");
    let listed = hs_get(&lab.hs_b(), &format!("/v1/default/banks/{bank}/documents"));
    let doc = &listed["items"][0];
    assert_eq!(doc["id"], t.doc.as_str());
    assert_eq!(doc["retain_params"]["context"], "claude-code");
    let tags: Vec<&str> = doc["tags"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    for want in ["ovmem", "harness:claude-code", "status:cancelled", "project:github.com/acme/widgets"] {
        assert!(tags.contains(&want), "{want} in {tags:?}");
    }
    assert!(tags.iter().any(|t2| t2.starts_with("session:sess-")), "{tags:?}");
    let meta = &doc["document_metadata"];
    assert_eq!((meta["status"].as_str(), meta["harness"].as_str()), (Some("cancelled"), Some("claude-code")));
    assert_eq!(meta["project"], "github.com/acme/widgets");
    // read() gives the memory's text for the MCP tools.
    assert!(b.read(&bank, &hit.id, 5 * SECOND).unwrap().contains("BLUEHERON-7"));
    // Latency of a recall on a warm bank.
    let (_, took) = timed(|| b.recall(&bank, "s", "deploy codename", 5, 5 * SECOND).unwrap());
    note(&format!("hindsight: recall in {} ms", took.as_millis()));
    assert!(took < Duration::from_millis(1500), "recall fits the default hook budget: {took:?}");
}

#[test]
fn hindsight_replaying_a_turn_never_duplicates_it() {
    let Some(lab) = lab() else { return };
    let c = hs(&lab.hs_a(), Some(HS_KEY), None);
    let bank = unique("replay");
    let mut t = T::new(&bank, "codex", "Our CI cache key includes the Cargo.lock hash (PELICAN-3).", "Understood.");
    let op1 = c.retain_turn(&t.turn(), 5 * SECOND).unwrap();
    let done = |op: &str| {
        poll(20 * SECOND, || {
            let s = c.operation(&bank, op, 5 * SECOND).unwrap().status;
            (s == "completed" || s == "failed").then_some(s)
        })
        .expect("the retain finishes")
        .0
    };
    assert_eq!(done(&op1), "completed");
    let units = |_: ()| -> Vec<String> {
        let listed = hs_get(&lab.hs_a(), &format!("/v1/default/banks/{bank}/memories/list?limit=100"));
        let mut ids: Vec<String> = listed["items"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["document_id"] == t.doc.as_str())
            .map(|m| m["id"].as_str().unwrap().to_string())
            .collect();
        ids.sort();
        ids
    };
    let before = units(());
    assert!(!before.is_empty());
    // The outbox sends it again (twice, as after two timeouts), flagged as a replay or not.
    t.replay = true;
    let op2 = c.retain_turn(&t.turn(), 5 * SECOND).unwrap();
    t.replay = false;
    let op3 = c.retain_turn(&t.turn(), 5 * SECOND).unwrap();
    assert_eq!((op2.as_str(), op3.as_str()), (op1.as_str(), op1.as_str()), "the same turn is the same operation");
    assert_eq!(done(&op1), "completed");
    std::thread::sleep(Duration::from_millis(1500)); // a worker would have picked up any new work by now
    assert_eq!(units(()), before, "a replayed turn leaves the bank's memories exactly as they were");
    let docs = hs_get(&lab.hs_a(), &format!("/v1/default/banks/{bank}/documents"));
    assert_eq!(docs["total"], 1);
}

#[test]
fn hindsight_bank_missions_are_set_once_and_a_teams_own_are_kept() {
    let Some(lab) = lab() else { return };
    let state = tempfile::tempdir().unwrap();
    let c = hs(&lab.hs_a(), Some(HS_KEY), Some(state.path()));
    let fresh = unique("fresh");
    c.ensure_bank(&fresh, "github.com/acme/fresh", 5 * SECOND).unwrap();
    let cfg = hs_get(&lab.hs_a(), &format!("/v1/default/banks/{fresh}/config"));
    assert_eq!(cfg["overrides"]["retain_mission"], hindsight::RETAIN_MISSION);
    assert_eq!(cfg["overrides"]["reflect_mission"], hindsight::REFLECT_MISSION);
    let banks = hs_get(&lab.hs_a(), "/v1/default/banks?limit=1000");
    let listed = banks["banks"].as_array().unwrap().iter().find(|b| b["bank_id"] == fresh.as_str()).expect("listed");
    assert_eq!(listed["name"], "github.com/acme/fresh", "the bank is named after the project");

    // A bank whose team already wrote a retain mission keeps it; only the missing one is added.
    let team = unique("team");
    let resp = ureq::patch(&format!("{}/v1/default/banks/{team}/config", lab.hs_a()))
        .header("Authorization", &format!("Bearer {HS_KEY}"))
        .header("Content-Type", "application/json")
        .send(r#"{"updates":{"retain_mission":"Our own mission."}}"#)
        .unwrap();
    assert_eq!(resp.status(), 200);
    c.ensure_bank(&team, "team", 5 * SECOND).unwrap();
    let cfg = hs_get(&lab.hs_a(), &format!("/v1/default/banks/{team}/config"));
    assert_eq!(cfg["overrides"]["retain_mission"], "Our own mission.");
    assert_eq!(cfg["overrides"]["reflect_mission"], hindsight::REFLECT_MISSION);

    // Once ensured, a bank is remembered on disk: another client with the same state directory
    // does not ask the server again (here: a server that is not even there).
    let offline = Hindsight::new(hindsight::Options {
        url: lab.hs_a(),
        token: Some(Secret::new(HS_KEY)),
        max_tokens: 100,
        state_dir: Some(state.path().to_path_buf()),
    })
    .unwrap();
    offline.ensure_bank(&fresh, "x", Duration::ZERO).expect("no request needed");
    assert!(
        offline.ensure_bank(&unique("never-seen"), "x", Duration::ZERO).is_err(),
        "an unknown bank needs the server"
    );
}

#[test]
fn hindsight_auth_missing_wrong_and_right_token() {
    let Some(lab) = lab() else { return };
    let bank = unique("auth");
    let t = T::new(&bank, "cline", "x", "y");
    let none = hs(&lab.hs_a(), None, None);
    let err = none.recall(&bank, "s", "anything", 3, 5 * SECOND).unwrap_err();
    assert!(err.is_auth(), "{err}");
    let msg = err.to_string();
    assert!(
        msg.contains("HTTP 401") && msg.contains("no token is configured") && msg.contains("HINDSIGHT_API_TOKEN"),
        "{msg}"
    );
    assert!(none.retain(&t.turn(), 5 * SECOND).unwrap_err().is_auth());

    let wrong = hs(&lab.hs_a(), Some("not-the-key"), None);
    let msg = wrong.recall(&bank, "s", "anything", 3, 5 * SECOND).unwrap_err().to_string();
    assert!(
        msg.contains("HTTP 401: Authentication failed: Invalid API key") && msg.contains("the token was refused"),
        "{msg}"
    );
    assert!(!msg.contains("not-the-key"), "the token never appears in an error: {msg}");

    let right = hs(&lab.hs_a(), Some(HS_KEY), None);
    assert_eq!(
        right.recall(&bank, "s", "anything", 3, 5 * SECOND).unwrap(),
        vec![],
        "a bank not created yet has nothing"
    );
    // /health stays open without a token, as load balancers need.
    assert!(none.health(5 * SECOND).unwrap().starts_with("Hindsight"));
}

// ------------------------------------------------------------------------------------------------
// OpenViking (commits take OpenViking's 10 s batching window, so one test does all the commits and
// waits for them together)

/// The messages pending in a dev-mode session, read straight from the server.
fn messages_in(base: &str, sid: &str, user: &str) -> usize {
    let v = get_json(
        &format!("{base}/api/v1/sessions/{sid}/context?token_budget=100000000"),
        &[("X-OpenViking-User", user)],
    );
    v["result"]["messages"].as_array().map(Vec::len).unwrap_or(0)
}

#[test]
fn openviking_sessions_commit_recall_replay_and_identity() {
    let Some(lab) = lab() else { return };
    let dev_user = unique("ovdev");
    let dev = ov(&lab.ov_dev(), None, Some(&dev_user));
    let alice_key = lab.ov_user_key("alice");
    let alice = ov(&lab.ov_keyed(), Some(&alice_key), None);
    let bob = ov(&lab.ov_keyed(), Some(&lab.ov_user_key("bob")), None);

    assert_eq!(dev.health(5 * SECOND).unwrap(), format!("OpenViking 0.5.2: healthy, auth mode dev, user {dev_user}"));
    assert_eq!(alice.health(5 * SECOND).unwrap(), "OpenViking 0.5.2: healthy, auth mode api_key, user alice");

    // Dev mode: a turn, replayed before the commit (already pending: not added again).
    let mut fact = T::new("", "trae-cli", "The release train is named KINGFISHER-77.", "Noted: KINGFISHER-77.");
    let sid = OpenViking::session_id(&fact.harness, &fact.session);
    let (_, took) = timed(|| dev.retain(&fact.turn(), 5 * SECOND).unwrap());
    note(&format!("openviking: add turn in {} ms", took.as_millis()));
    assert_eq!(messages_in(&lab.ov_dev(), &sid, &dev_user), 2);
    fact.replay = true;
    assert!(dev.has_turn(&sid, &fact.doc, 5 * SECOND).unwrap());
    dev.retain(&fact.turn(), 5 * SECOND).unwrap();
    assert_eq!(messages_in(&lab.ov_dev(), &sid, &dev_user), 2, "a replayed pending turn is not added again");

    // The server itself does not deduplicate: the same turn not flagged as a replay is added twice.
    let canary = T::new("", "cline", "Canary turn for the duplicate check.", "ok");
    let canary_sid = OpenViking::session_id(&canary.harness, &canary.session);
    dev.retain(&canary.turn(), 5 * SECOND).unwrap();
    dev.retain(&canary.turn(), 5 * SECOND).unwrap();
    assert_eq!(
        messages_in(&lab.ov_dev(), &canary_sid, &dev_user),
        4,
        "if OpenViking ever deduplicates turn ids, Turn::replay's session check can go"
    );

    // api_key mode: alice's turn.
    let secret = T::new("", "codex", "Alice's staging database lives on host HERONDB-12.", "ok");
    alice.retain(&secret.turn(), 5 * SECOND).unwrap();

    // Commit all three sessions (as Stop does) and wait for the extractions together.
    let t0 = Instant::now();
    let commits = [
        (&dev, dev.commit(&sid, 5 * SECOND).unwrap()),
        (&alice, alice.commit(&OpenViking::session_id(&secret.harness, &secret.session), 5 * SECOND).unwrap()),
    ];
    dev.end_session("", &canary.harness, &canary.session, 5 * SECOND).unwrap();
    for (client, commit) in &commits {
        assert_eq!(commit.status, "accepted");
        let task = commit.task_id.as_deref().expect("an accepted commit has a task");
        let (t, _) = poll(60 * SECOND, || {
            let t = client.task(task, 5 * SECOND).unwrap();
            t.done().then_some(t)
        })
        .expect("the commit's extraction finishes within 60 s");
        assert_eq!((t.status.as_str(), t.error.as_deref()), ("completed", None), "{t:?}");
        assert!(t.memories >= 1, "{t:?}");
    }
    note(&format!("openviking: commits extracted after {} ms", t0.elapsed().as_millis()));
    // Committing again with nothing pending is skipped by the server (SessionEnd after Stop).
    assert_eq!(dev.commit(&sid, 5 * SECOND).unwrap(), openviking::Commit { status: "skipped".into(), task_id: None });

    // Recall: the fact, from the user's memories only (no directory overviews), readable by URI.
    // The extracted memory is indexed a moment after its task completes.
    let (hits, lag) = poll(20 * SECOND, || {
        let hits = dev.recall("", "another-session", "what is the release train named", 5, 5 * SECOND).unwrap();
        hits.iter().any(|h| h.text.contains("KINGFISHER-77")).then_some(hits)
    })
    .expect("the committed fact is recalled within 20 s of its task completing");
    let (_, took) =
        timed(|| dev.recall("", "another-session", "what is the release train named", 5, 5 * SECOND).unwrap());
    note(&format!(
        "openviking: searchable {} ms after the task completed; recall in {} ms",
        lag.as_millis(),
        took.as_millis()
    ));
    let hit = hits.iter().find(|h| h.text.contains("KINGFISHER-77")).unwrap();
    assert!(hit.id.starts_with(&format!("viking://user/{dev_user}/memories/")), "{}", hit.id);
    assert_eq!(hit.kind.as_deref(), Some("preferences"));
    assert!(hits.iter().all(|h| !h.id.ends_with(".overview.md") && !h.id.ends_with(".abstract.md")), "{hits:?}");
    assert!(dev.read("", &hit.id, 5 * SECOND).unwrap().contains("KINGFISHER-77"));

    // A replay after the commit finds the turn in the session's archive and sends nothing.
    assert!(dev.has_turn(&sid, &fact.doc, 5 * SECOND).unwrap());
    dev.retain(&fact.turn(), 5 * SECOND).unwrap();
    assert_eq!(messages_in(&lab.ov_dev(), &sid, &dev_user), 0, "nothing pending after the replay");
    assert_eq!(dev.commit(&sid, 5 * SECOND).unwrap().status, "skipped");
    let mut fresh = T::new("", "trae-cli", "never sent", "");
    fresh.session = fact.session.clone();
    assert!(!dev.has_turn(&sid, &fresh.doc, 5 * SECOND).unwrap());
    assert!(!dev.has_turn(&unique("ovmem-no-such-session"), &fresh.doc, 5 * SECOND).unwrap());

    // api_key mode: the key decides the user; bob sees none of alice's memories.
    poll(20 * SECOND, || {
        let found = alice.recall("", "s", "where is the staging database", 5, 5 * SECOND).unwrap();
        found.iter().any(|h| h.text.contains("HERONDB-12") && h.id.starts_with("viking://user/alice/")).then_some(())
    })
    .expect("alice recalls her own memory");
    let other = bob.recall("", "s", "where is the staging database", 5, 5 * SECOND).unwrap();
    assert!(other.iter().all(|h| !h.text.contains("HERONDB-12")), "{other:?}");
    // In dev mode the caller is root: the scoped search still keeps users apart.
    let stranger = ov(&lab.ov_dev(), None, Some(&unique("stranger")));
    let seen = stranger.recall("", "s", "what is the release train named", 5, 5 * SECOND).unwrap();
    assert!(seen.iter().all(|h| !h.text.contains("KINGFISHER-77")), "{seen:?}");

    // Auth errors say what to do, never the key.
    let e = ov(&lab.ov_keyed(), None, None).recall("", "s", "q", 3, 5 * SECOND).unwrap_err();
    assert!(e.is_auth() && e.to_string().contains("no API key is configured"), "{e}");
    let e = ov(&lab.ov_keyed(), Some("wrong-key-123"), None).recall("", "s", "q", 3, 5 * SECOND).unwrap_err();
    let msg = e.to_string();
    assert!(
        e.is_auth() && msg.contains("Invalid API key") && msg.contains("refused") && !msg.contains("wrong-key-123"),
        "{msg}"
    );
    let e = ov(&lab.ov_keyed(), Some(OV_ROOT), None).recall("", "s", "q", 3, 5 * SECOND).unwrap_err();
    assert!(e.is_auth() && e.to_string().contains("use a user key"), "{e}");
}

// ------------------------------------------------------------------------------------------------
// Failure behaviour (no server needed)

fn clients(url: &str) -> Vec<Box<dyn Remote>> {
    vec![Box::new(hs(url, Some("t"), None)), Box::new(ov(url, Some("k"), Some("u")))]
}

type Call<'a> = Box<dyn Fn() -> Result<(), RemoteError> + 'a>;

/// Every call of both clients fails within `budget` (plus `slack`), with `expect` deciding the error.
fn all_calls_fail_within(url: &str, budget: Duration, slack: Duration, expect: fn(&RemoteError) -> bool) -> usize {
    let mut count = 0;
    for c in clients(url) {
        let t = T::new("b", "claude-code", "u", "a");
        let mut replay = T::new("b", "claude-code", "u", "a");
        replay.replay = true;
        let calls: Vec<(&str, Call)> = vec![
            ("health", Box::new(|| c.health(budget).map(drop))),
            ("retain", Box::new(|| c.retain(&t.turn(), budget))),
            ("retain replay", Box::new(|| c.retain(&replay.turn(), budget))),
            ("recall", Box::new(|| c.recall("b", "s", "query", 5, budget).map(drop))),
            ("end_session", Box::new(|| c.end_session("b", "claude-code", "s", budget))),
            ("read", Box::new(|| c.read("b", "viking://user/u/memories/x.md", budget).map(drop))),
        ];
        for (name, call) in calls {
            let t0 = Instant::now();
            let result = call();
            let took = t0.elapsed();
            let err = match result {
                Err(e) => e,
                Ok(()) if c.kind() == "hindsight" && name == "end_session" => continue, // no request at all
                Ok(()) => panic!("{} {name} against {url} succeeded", c.kind()),
            };
            assert!(expect(&err), "{} {name}: unexpected error {err}", c.kind());
            assert!(err.is_retryable(), "{} {name}: {err} should leave the turn queued", c.kind());
            assert!(took <= budget + slack, "{} {name} took {took:?} with a budget of {budget:?}", c.kind());
            count += 1;
        }
    }
    count
}

#[test]
fn a_dead_server_fails_at_once() {
    let port = RefusingPort::new();
    let url = port.url();
    let budget = Duration::from_millis(1500);
    let t = Instant::now();
    let n = all_calls_fail_within(
        &url,
        budget,
        Duration::ZERO,
        |e| matches!(e, RemoteError::Unreachable { reason, .. } if reason.contains("connection refused")),
    );
    note(&format!("failure: {n} calls to a closed port failed in {} ms in all", t.elapsed().as_millis()));
    assert!(t.elapsed() < Duration::from_millis(500), "refused connections cost nothing like the budget");
}

#[test]
fn a_server_that_accepts_but_never_answers_fails_within_the_budget() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let (heads_tx, heads) = std::sync::mpsc::channel::<String>();
    // Accepts every connection and reads forever, answering nothing; passes on what it read.
    std::thread::spawn(move || {
        for conn in listener.incoming().flatten() {
            let tx = heads_tx.clone();
            std::thread::spawn(move || {
                let mut conn = conn;
                let mut buf = [0u8; 4096];
                while let Ok(n) = conn.read(&mut buf) {
                    if n == 0 {
                        break;
                    }
                    let _ = tx.send(String::from_utf8_lossy(&buf[..n]).into_owned());
                }
            });
        }
    });
    let budget = Duration::from_millis(400);
    let t = Instant::now();
    let n =
        all_calls_fail_within(&url, budget, Duration::from_millis(600), |e| matches!(e, RemoteError::Timeout { .. }));
    note(&format!(
        "failure: {n} calls to a silent server timed out at {} ms each ({} ms in all)",
        budget.as_millis(),
        t.elapsed().as_millis()
    ));
    let msg = hs(&url, None, None).health(budget).unwrap_err().to_string();
    assert_eq!(msg, format!("Hindsight at {url} did not answer within 400 ms"));
    // What the clients sent: ovmem's User-Agent on every request, and each server's credential.
    let seen: Vec<String> = heads.try_iter().collect();
    let requests: Vec<&String> = seen.iter().filter(|h| h.contains(" HTTP/1.1\r\n")).collect();
    assert!(requests.len() >= 11, "{} requests seen", requests.len());
    let agent = format!("user-agent: ovmem/{}\r\n", env!("CARGO_PKG_VERSION"));
    assert!(requests.iter().all(|h| h.to_lowercase().contains(&agent)), "{requests:#?}");
    let lower: Vec<String> = requests.iter().map(|h| h.to_lowercase()).collect();
    assert!(lower.iter().any(|h| h.contains("authorization: bearer t\r\n")), "Hindsight sends its token as Bearer");
    assert!(lower.iter().any(|h| h.contains("x-api-key: k\r\n") && h.contains("x-openviking-user: u\r\n")));
}

// ------------------------------------------------------------------------------------------------
// `ovmem backend show|test` against a real server, credentials on disk

#[test]
fn backend_commands_report_without_leaking_the_token() {
    let Some(lab) = lab() else { return };
    let home = tempfile::tempdir().unwrap();
    let env =
        ovmem::env::Env::from_vars([("HOME".to_string(), home.path().to_string_lossy().into_owned())].into()).unwrap();
    let done =
        configure(&env, &Choice::Hindsight { url: lab.hs_a(), token: Some(Secret::new(HS_KEY)), bank: None }).unwrap();
    let cred = done.credentials.unwrap();
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(std::fs::metadata(&cred).unwrap().permissions().mode() & 0o777, 0o600);
    assert_eq!(std::fs::metadata(home.path().join(".ovmem")).unwrap().permissions().mode() & 0o777, 0o700);

    let run = |args: &[&str], extra: &[(&str, &str)]| {
        let out = Command::new(OVMEM)
            .args(args)
            .env_clear()
            .env("HOME", home.path())
            .env("PATH", "/usr/bin:/bin")
            .envs(extra.iter().copied())
            .current_dir(home.path())
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert!(!text.contains(HS_KEY), "the token leaked into `ovmem {}`:\n{text}", args.join(" "));
        (out.status.code(), String::from_utf8_lossy(&out.stdout).into_owned(), text)
    };
    let (code, _, text) = run(&["backend", "show"], &[]);
    assert_eq!(code, Some(0), "{text}");
    assert!(text.contains("hindsight") && text.contains(&lab.hs_a()) && text.contains("present"), "{text}");
    assert!(text.contains("~/.ovmem/credentials.toml"), "{text}");

    let (code, stdout, text) = run(&["backend", "test", "--json"], &[]);
    assert_eq!(code, Some(0), "{text}");
    let report: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(report["ok"], true, "{report}");
    assert_eq!(report["health"]["detail"], "Hindsight 1.1.0: healthy, database connected");
    let ms = report["recall"]["ms"].as_u64().unwrap();
    assert!(ms < 1500, "{report}");
    note(&format!("ovmem backend test: health {} ms, recall {ms} ms", report["health"]["ms"]));

    // A wrong token from the environment wins over the file, fails, and is not printed either.
    let (code, _, text) = run(&["backend", "test"], &[("HINDSIGHT_API_TOKEN", "wrong-token-4242")]);
    assert_eq!(code, Some(1), "{text}");
    assert!(text.contains("the token was refused") && !text.contains("wrong-token-4242"), "{text}");
    let (code, _, text) = run(&["backend", "show", "--json"], &[("HINDSIGHT_API_TOKEN", "wrong-token-4242")]);
    assert_eq!(code, Some(0));
    assert!(text.contains("\"from\": \"$HINDSIGHT_API_TOKEN\"") && !text.contains("wrong-token-4242"), "{text}");

    // The server down: exit 1 within the budget, and the note that hooks fall back.
    let (code, _, text) = run(&["backend", "test"], &[("HINDSIGHT_API_URL", "http://127.0.0.1:9")]);
    assert_eq!(code, Some(1));
    assert!(text.contains("connection refused") && text.contains("local store"), "{text}");
}

// ------------------------------------------------------------------------------------------------
// The hooks with a memory server: as users run them (the real hook processes, fresh homes)

/// A developer's machine: a home with ovmem's backend configured, and a clone of a repository.
struct Dev {
    home: tempfile::TempDir,
    repo: PathBuf,
}

impl Dev {
    /// `remote` is the clone's `origin` (any of the forms git accepts); `at` the checkout path.
    fn new(remote: &str, at: &str, choice: Choice) -> Self {
        let home = tempfile::tempdir().unwrap();
        let repo = home.path().join(at);
        std::fs::create_dir_all(repo.join(".git")).unwrap();
        std::fs::write(repo.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
        std::fs::write(
            repo.join(".git/config"),
            format!("[core]\n\tbare = false\n[remote \"origin\"]\n\turl = {remote}\n"),
        )
        .unwrap();
        configure(&Self::env_of(home.path()), &choice).unwrap();
        Dev { home, repo }
    }

    fn env_of(home: &Path) -> ovmem::env::Env {
        ovmem::env::Env::from_vars([("HOME".to_string(), home.to_string_lossy().into_owned())].into()).unwrap()
    }

    fn ovmem_home(&self) -> PathBuf {
        self.home.path().join(".ovmem")
    }

    /// Runs one hook as the harness would; returns (stdout, exit code, time taken).
    fn hook(&self, harness: &str, event: &str, stdin: &Value) -> (String, i32, Duration) {
        let t = Instant::now();
        let out = self.spawn_hook(harness, event, stdin).wait_with_output().unwrap();
        (String::from_utf8_lossy(&out.stdout).trim().to_string(), out.status.code().unwrap_or(-1), t.elapsed())
    }

    /// Starts one hook as the harness would, its stdin written and closed.
    fn spawn_hook(&self, harness: &str, event: &str, stdin: &Value) -> std::process::Child {
        let mut child = Command::new(OVMEM)
            .args(["hook", harness, event])
            .env_clear()
            .env("HOME", self.home.path())
            .env("PATH", "/usr/bin:/bin")
            .current_dir(&self.repo)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(stdin.to_string().as_bytes()).unwrap();
        child
    }

    /// A turn through Claude Code's hooks: the prompt, then the stop with the reply.
    fn claude_turn(&self, session: &str, prompt: &str, reply: &str) {
        let ups = serde_json::json!({"session_id": session, "cwd": self.repo, "hook_event_name": "UserPromptSubmit", "prompt": prompt});
        assert_eq!(self.hook("claude-code", "UserPromptSubmit", &ups).1, 0);
        let stop = serde_json::json!({"session_id": session, "cwd": self.repo, "hook_event_name": "Stop", "last_assistant_message": reply});
        assert_eq!(self.hook("claude-code", "Stop", &stop).1, 0);
    }

    /// The context a harness's prompt hook injects for `question` (empty when none).
    fn ask(&self, harness: &str, question: &str) -> String {
        let (event, stdin, pointer) = match harness {
            "codex" => (
                "UserPromptSubmit",
                serde_json::json!({"session_id": "q", "cwd": self.repo, "hook_event_name": "UserPromptSubmit", "prompt": question, "model": "m", "permission_mode": "default", "transcript_path": null, "turn_id": "t"}),
                "/hookSpecificOutput/additionalContext",
            ),
            "gemini-cli" => (
                "BeforeAgent",
                serde_json::json!({"session_id": "q", "cwd": self.repo, "hook_event_name": "BeforeAgent", "prompt": question}),
                "/hookSpecificOutput/additionalContext",
            ),
            _ => (
                "UserPromptSubmit",
                serde_json::json!({"session_id": "q", "cwd": self.repo, "hook_event_name": "UserPromptSubmit", "prompt": question}),
                "/hookSpecificOutput/additionalContext",
            ),
        };
        let (out, code, _) = self.hook(harness, event, &stdin);
        assert_eq!(code, 0);
        let v: Value = serde_json::from_str(&out).unwrap_or(Value::Null);
        v.pointer(pointer).and_then(Value::as_str).unwrap_or_default().to_string()
    }

    fn stats(&self) -> Value {
        let out = Command::new(OVMEM)
            .args(["memory", "stats", "--json"])
            .env_clear()
            .env("HOME", self.home.path())
            .env("PATH", "/usr/bin:/bin")
            .output()
            .unwrap();
        serde_json::from_slice(&out.stdout).unwrap_or(Value::Null)
    }

    fn sync(&self) -> (i32, String) {
        let out = Command::new(OVMEM)
            .args(["sync"])
            .env_clear()
            .env("HOME", self.home.path())
            .env("PATH", "/usr/bin:/bin")
            .current_dir(&self.repo)
            .output()
            .unwrap();
        (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stderr).into_owned())
    }

    /// Every byte ovmem wrote under its home, except the credentials file itself.
    fn written_except_credentials(&self) -> Vec<(PathBuf, Vec<u8>)> {
        fn walk(d: &Path, out: &mut Vec<(PathBuf, Vec<u8>)>) {
            for e in std::fs::read_dir(d).into_iter().flatten().flatten() {
                let p = e.path();
                if p.is_dir() {
                    walk(&p, out);
                } else if p.file_name().is_some_and(|n| n != "credentials.toml") {
                    out.push((p.clone(), std::fs::read(&p).unwrap_or_default()));
                }
            }
        }
        let mut out = Vec::new();
        walk(&self.ovmem_home(), &mut out);
        out
    }
}

fn hindsight_choice(url: String) -> Choice {
    Choice::Hindsight { url, token: Some(Secret::new(HS_KEY)), bank: None }
}

#[test]
fn hindsight_a_team_of_two_shares_memory_through_the_server() {
    let Some(lab) = lab() else { return };
    let repo = unique("shop");
    // Ann works on node A in ~/src/<repo>, over ssh; Ben, a fresh machine, on node B in another
    // directory, over https. One repository, so one team bank.
    let ann =
        Dev::new(&format!("git@github.com:acme/{repo}.git"), &format!("src/{repo}"), hindsight_choice(lab.hs_a()));
    let ben = Dev::new(&format!("https://github.com/Acme/{repo}"), "work/clone", hindsight_choice(lab.hs_b()));
    ann.claude_turn(
        "ann-1",
        "Remember: the shop release train leaves every Wednesday at 15:00 UTC (codename KESTREL-9)",
        "Noted: Wednesday 15:00 UTC, KESTREL-9.",
    );
    assert_eq!(ann.stats()["queued"], 0, "the turn was sent at once: {}", ann.stats());
    // Ben has never captured anything: what he gets can only come from the server.
    let (ctx, took) = poll(30 * SECOND, || {
        let c = ben.ask("codex", "When does the release train leave each week?");
        c.contains("KESTREL-9").then_some(c)
    })
    .expect("Ann's turn, captured in Claude Code, reaches Ben's Codex through Hindsight");
    note(&format!("hooks: captured on node A, recalled from a fresh home on node B after {} ms", took.as_millis()));
    assert!(ctx.starts_with("<ovmem-memory>") && ctx.contains("hindsight"), "{ctx}");
    assert_eq!(ben.stats()["memories"], 0, "nothing of it is in Ben's local store");
    // The token is in credentials.toml only: not in the store, the logs or anything else.
    for dev in [&ann, &ben] {
        for (path, bytes) in dev.written_except_credentials() {
            assert!(!String::from_utf8_lossy(&bytes).contains(HS_KEY), "the token is in {}", path.display());
        }
    }
}

#[test]
fn openviking_a_fact_captured_in_one_harness_is_recalled_in_another_from_a_fresh_home() {
    let Some(lab) = lab() else { return };
    let user = unique("dev");
    let choice = || Choice::Openviking { url: lab.ov_dev(), api_key: None, user: Some(user.clone()), account: None };
    let first = Dev::new("git@github.com:acme/mobile.git", "src/mobile", choice());
    let fresh = Dev::new("git@github.com:acme/mobile.git", "elsewhere/mobile", choice());
    first.claude_turn(
        "s-1",
        "I always ship the mobile app builds through the HERONGATE-4 signing lane on Thursdays",
        "Got it: HERONGATE-4 signing lane, Thursdays.",
    );
    // The Stop hook added the turn to the OpenViking session and committed it; extraction takes
    // about ten seconds on the server.
    let (ctx, took) = poll(60 * SECOND, || {
        let c = fresh.ask("gemini-cli", "Which signing lane do the mobile builds go through?");
        c.contains("HERONGATE-4").then_some(c)
    })
    .expect("the turn captured in Claude Code is recalled in Gemini CLI from a fresh home, through OpenViking");
    note(&format!("hooks: OpenViking recall from a fresh home after {} ms", took.as_millis()));
    assert!(ctx.contains("viking://"), "the memory's URI is shown for the MCP tools: {ctx}");
}

#[test]
fn with_the_server_down_every_hook_answers_in_time_and_the_turn_arrives_once_it_is_back() {
    let Some(lab) = lab() else { return };
    // A server that accepts connections and never answers: the worst case for a hook.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let silent = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for conn in listener.incoming().flatten() {
            std::thread::spawn(move || {
                let mut conn = conn;
                let mut buf = [0u8; 4096];
                while matches!(conn.read(&mut buf), Ok(n) if n > 0) {}
            });
        }
    });
    let repo = unique("ledger");
    let dev = Dev::new(&format!("git@github.com:acme/{repo}.git"), "src/ledger", hindsight_choice(silent.clone()));
    // Every event of every harness: exit 0, valid output, within 2.5 s.
    for h in ovmem::harness::all() {
        let adapter = h.adapter().unwrap();
        for event in adapter.events.keys() {
            let stdin = ovmem::cmd::demo::payload(
                &adapter,
                "down-1",
                &dev.repo,
                Some("What does the ledger nightly job reconcile against?"),
                Some("It reconciles against the bank statement feed."),
                &dev.repo,
            );
            let (out, code, took) = dev.hook(h.id(), event, &stdin);
            assert_eq!(code, 0, "{} {event}", h.id());
            let plain = adapter.encoder == ovmem::harness::Encoder::Plain;
            assert!(
                out.is_empty() || plain || serde_json::from_str::<Value>(&out).is_ok(),
                "{} {event}: {out}",
                h.id()
            );
            assert!(took < Duration::from_millis(2500), "{} {event} took {took:?} with the server down", h.id());
        }
    }
    // The turn a stop captured is in the local store and waits in the outbox.
    dev.claude_turn(
        "down-2",
        "The ledger nightly job reconciles against the OSPREY-12 statement feed",
        "Noted, OSPREY-12.",
    );
    let queued = dev.stats()["queued"].as_i64().unwrap();
    assert!(queued >= 1, "{}", dev.stats());
    assert!(dev.ask("claude-code", "Which statement feed does the ledger nightly job use?").contains("OSPREY-12"));
    // The server is back (the real one, under the same bank): the next session start sends it.
    configure(&Dev::env_of(dev.home.path()), &hindsight_choice(lab.hs_a())).unwrap();
    let start = serde_json::json!({"session_id": "back", "cwd": dev.repo, "hook_event_name": "SessionStart", "source": "startup"});
    assert_eq!(dev.hook("claude-code", "SessionStart", &start).1, 0);
    assert_eq!(dev.stats()["queued"], 0, "the outbox is sent: {}", dev.stats());
    let bank = team_bank(&format!("github.com/acme/{repo}"));
    let units_with = |token: &str| -> usize {
        let listed = hs_get(&lab.hs_a(), &format!("/v1/default/banks/{bank}/memories/list?limit=200"));
        listed["items"]
            .as_array()
            .map_or(0, |a| a.iter().filter(|m| m["text"].as_str().is_some_and(|t| t.contains(token))).count())
    };
    let (n, _) =
        poll(20 * SECOND, || Some(units_with("OSPREY-12")).filter(|n| *n > 0)).expect("the queued turn arrives");
    // Sending again (a crash after the send, before the outbox was cleared, looks like this) adds
    // nothing: the document id is the turn's.
    let db = dev.ovmem_home().join("memory.db");
    let c = rusqlite::Connection::open(&db).unwrap();
    c.execute(
        "INSERT INTO outbox (memory_id, bank, project, status, attempts, created_at)
         SELECT id, ?1, 'github.com/acme/x', 'completed', 1, 0 FROM memories WHERE prompt LIKE '%OSPREY-12%'",
        [&bank],
    )
    .unwrap();
    drop(c);
    assert_eq!(dev.sync().0, 0);
    std::thread::sleep(3 * SECOND);
    assert_eq!(units_with("OSPREY-12"), n, "the turn is on the server exactly once");
}

// ------------------------------------------------------------------------------------------------
// Migration keeps memory: a hindsight-cline user runs `ovmem migrate` and still recalls

#[test]
fn a_hindsight_cline_user_migrates_and_still_recalls_their_old_memories() {
    let Some(lab) = lab() else { return };
    let home = tempfile::tempdir().unwrap();
    // hindsight-cline as its installer leaves it: four hook files, lib/ and settings.json in the
    // global Cline hooks folder, pointing at the team's server with a token, bank `cline`.
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/legacy-home/Documents/Cline/Hooks");
    let hooks = home.path().join("Documents/Cline/Hooks");
    std::fs::create_dir_all(hooks.join("lib")).unwrap();
    for name in ["TaskStart", "UserPromptSubmit", "TaskComplete", "TaskCancel", "lib/hooks_impl.py"] {
        std::fs::copy(fixture.join(name), hooks.join(name)).unwrap();
    }
    let settings = serde_json::json!({
        "version": "0.2.0", "hindsightApiUrl": lab.hs_a(), "hindsightApiToken": HS_KEY, "bankId": "cline",
        "bankMission": "You are a Cline AI coding assistant.", "autoRecall": true, "recallBudget": "mid",
        "recallMaxTokens": 1024, "retainContext": "cline", "apiPort": 9077, "bankIdPrefix": "",
        "dynamicBankId": false, "agentName": "cline", "debug": false
    });
    std::fs::write(hooks.join("settings.json"), serde_json::to_string_pretty(&settings).unwrap()).unwrap();
    // The user's old memories, in that bank on the server.
    let marker = unique("MERGANSER");
    let old = hs(&lab.hs_a(), Some(HS_KEY), None);
    let fact = format!("Remember: the billing service's staging database listens on port 6543 (codename {marker}).");
    old.retain_turn(&T::new("cline", "cline", &fact, "Noted: port 6543.").turn(), 5 * SECOND).unwrap();
    poll(30 * SECOND, || {
        let hits = old.recall("cline", "s", "staging database port of the billing service", 5, 5 * SECOND).unwrap();
        hits.iter().any(|h| h.text.contains(&marker)).then_some(())
    })
    .expect("the old memory is on the server before migrating");
    // A project of theirs (its own git remote: ovmem's team bank would be another bank).
    let repo = home.path().join("src/billing");
    std::fs::create_dir_all(repo.join(".git")).unwrap();
    std::fs::write(repo.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
    std::fs::write(repo.join(".git/config"), "[remote \"origin\"]\n\turl = git@github.com:acme/billing.git\n").unwrap();
    let ovmem = |args: &[&str]| {
        let out = Command::new(OVMEM)
            .args(args)
            .env_clear()
            .env("HOME", home.path())
            .env("PATH", "/usr/bin:/bin")
            .env("NO_COLOR", "1")
            .current_dir(&repo)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert!(!text.contains(HS_KEY), "the token leaked into `ovmem {}`:\n{text}", args.join(" "));
        (out.status.code(), text)
    };

    let (code, text) = ovmem(&["migrate", "--harness", "cline", "--yes"]);
    assert_eq!(code, Some(0), "{text}");
    assert!(
        text.contains(&format!("backend carried over from hindsight-cline (`~/Documents/Cline/Hooks/settings.json`): Hindsight at {}, bank `cline`, with a token", lab.hs_a())),
        "{text}"
    );
    assert!(text.contains("reachable: Hindsight 1.1.0"), "{text}");
    let (_, status) = ovmem(&["status"]);
    assert!(
        status.contains(&format!("backend: hindsight at {}, bank `cline`, token set: reachable", lab.hs_a())),
        "{status}"
    );

    // Nothing of it is in this machine's store: what the hooks recall can only come from the server.
    let (_, listed) = ovmem(&["memory", "list", "--all", "--json"]);
    assert!(!listed.contains(&marker), "{listed}");
    // Cline runs the UserPromptSubmit hook that is there now: ovmem's, recalling from the server.
    let script = hooks.join("UserPromptSubmit");
    assert!(std::fs::read_to_string(&script).unwrap().contains("ovmem"), "ovmem's hook replaced Hindsight's");
    let prompt = serde_json::json!({
        "clineVersion": "3.89.2", "hookName": "UserPromptSubmit", "timestamp": "1795994789", "taskId": "task-after-migrate",
        "workspaceRoots": [repo], "userId": "u", "model": {"provider": "openai", "slug": "gpt"},
        "userPromptSubmit": {"prompt": "Which port does the billing staging database listen on?", "attachments": []}
    });
    let run_hook = |path: &Path, args: &[&str], stdin: &Value| {
        let t = Instant::now();
        let mut child = Command::new(path)
            .args(args)
            .env_clear()
            .env("HOME", home.path())
            .env("PATH", "/usr/bin:/bin")
            .current_dir(&repo)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(stdin.to_string().as_bytes()).unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success());
        (serde_json::from_slice::<Value>(&out.stdout).unwrap_or(Value::Null), t.elapsed())
    };
    let (out, took) = run_hook(&script, &[], &prompt);
    let ctx = out["contextModification"].as_str().unwrap_or_default();
    assert!(ctx.contains(&marker) && ctx.contains("6543"), "the old memory is recalled through Cline's hook: {out}");
    note(&format!("migrate: Cline's prompt hook recalled the pre-migration memory in {} ms", took.as_millis()));
    // Claude Code in the same project reaches the same memory.
    let claude = serde_json::json!({"session_id": "c1", "cwd": repo, "hook_event_name": "UserPromptSubmit",
        "prompt": "What is the staging database port for billing?"});
    let (out, _) = run_hook(Path::new(OVMEM), &["hook", "claude-code", "UserPromptSubmit"], &claude);
    let ctx = out.pointer("/hookSpecificOutput/additionalContext").and_then(Value::as_str).unwrap_or_default();
    assert!(ctx.contains(&marker), "{out}");

    // What Cline captures after the migration lands in the same bank, next to the old memories.
    let new_marker = unique("GOLDENEYE");
    let done = serde_json::json!({
        "clineVersion": "3.89.2", "hookName": "TaskComplete", "taskId": "task-after-migrate", "workspaceRoots": [repo],
        "taskComplete": {"result": format!("Done: the billing cron now runs at 02:00 UTC (ticket {new_marker}).")},
    });
    let first = serde_json::json!({
        "clineVersion": "3.89.2", "hookName": "UserPromptSubmit", "taskId": "task-after-migrate", "workspaceRoots": [repo],
        "userPromptSubmit": {"prompt": format!("Move the billing cron to 02:00 UTC, ticket {new_marker}"), "attachments": []}
    });
    run_hook(&script, &[], &first);
    run_hook(&hooks.join("TaskComplete"), &[], &done);
    poll(30 * SECOND, || {
        let hits = old.recall("cline", "s", "when does the billing cron run", 5, 5 * SECOND).unwrap();
        hits.iter().any(|h| h.text.contains(&new_marker)).then_some(())
    })
    .expect("a turn captured after migrating reaches the old bank");
    let (_, status) = ovmem(&["status", "--json"]);
    let v: Value = serde_json::from_str(status.trim_start_matches(|c| c != '{')).unwrap();
    assert_eq!(v["queue"]["outbox"], 0, "nothing is left waiting: {}", v["queue"]);
}

// ------------------------------------------------------------------------------------------------
// Delivery: every captured turn reaches the team exactly once, through outages, killed sends,
// concurrent flushers and a memory the server refuses.

/// What the fault-injecting proxy does with a request.
#[derive(Clone)]
enum Fault {
    /// Forward it and answer with the server's answer.
    Pass,
    /// Forward a request whose path contains this, then never answer (the server has it; the
    /// client cannot know).
    HoldAfter(&'static str),
    /// Answer HTTP 500 to a request whose body contains this, without forwarding it.
    FailWhen(String),
}

/// A proxy in front of a real server on 127.0.0.1 that can lose answers or refuse one payload.
struct Proxy {
    url: String,
    fault: std::sync::Arc<std::sync::Mutex<Fault>>,
    /// Requests forwarded and then held (their path).
    held: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

impl Proxy {
    fn new(upstream: &str) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let fault = std::sync::Arc::new(std::sync::Mutex::new(Fault::Pass));
        let held = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let (f, h, upstream) = (fault.clone(), held.clone(), upstream.to_string());
        std::thread::spawn(move || {
            for conn in listener.incoming().flatten() {
                let (f, h, upstream) = (f.clone(), h.clone(), upstream.clone());
                std::thread::spawn(move || Self::serve(conn, &upstream, &f, &h));
            }
        });
        Proxy { url, fault, held }
    }

    fn set(&self, fault: Fault) {
        *self.fault.lock().unwrap() = fault;
    }

    fn serve(
        mut conn: std::net::TcpStream,
        upstream: &str,
        fault: &std::sync::Mutex<Fault>,
        held: &std::sync::Mutex<Vec<String>>,
    ) {
        let mut buf = Vec::new();
        let mut chunk = [0u8; 8192];
        let head_end = loop {
            if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break i + 4;
            }
            match conn.read(&mut chunk) {
                Ok(n) if n > 0 => buf.extend_from_slice(&chunk[..n]),
                _ => return,
            }
        };
        let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
        let mut lines = head.split("\r\n");
        let mut first = lines.next().unwrap_or_default().split(' ');
        let (method, path) = (first.next().unwrap_or("GET").to_string(), first.next().unwrap_or("/").to_string());
        let headers: Vec<(String, String)> = lines
            .filter_map(|l| l.split_once(':'))
            .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
            .collect();
        let len: usize =
            headers.iter().find(|(k, _)| k == "content-length").and_then(|(_, v)| v.parse().ok()).unwrap_or(0);
        while buf.len() < head_end + len {
            match conn.read(&mut chunk) {
                Ok(n) if n > 0 => buf.extend_from_slice(&chunk[..n]),
                _ => return,
            }
        }
        let body = buf[head_end..head_end + len].to_vec();
        let answer = |conn: &mut std::net::TcpStream, status: u16, body: &str| {
            let _ = write!(
                conn,
                "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        };
        let fault = fault.lock().unwrap().clone();
        if let Fault::FailWhen(marker) = &fault {
            if String::from_utf8_lossy(&body).contains(marker.as_str()) {
                return answer(&mut conn, 500, r#"{"detail":"poisoned payload (injected by the test proxy)"}"#);
            }
        }
        let agent: ureq::Agent = ureq::Agent::config_builder().http_status_as_error(false).build().into();
        let mut req = ureq::http::Request::builder().method(method.as_str()).uri(format!("{upstream}{path}"));
        for (k, v) in &headers {
            if matches!(k.as_str(), "content-type" | "authorization" | "x-api-key") || k.starts_with("x-openviking") {
                req = req.header(k.as_str(), v.as_str());
            }
        }
        let Ok(mut resp) = agent.run(req.body(body).unwrap()) else { return answer(&mut conn, 502, "{}") };
        let status = resp.status().as_u16();
        let text = resp.body_mut().read_to_string().unwrap_or_default();
        if let Fault::HoldAfter(part) = fault {
            if path.contains(part) {
                held.lock().unwrap().push(path);
                std::thread::sleep(Duration::from_secs(600));
                return;
            }
        }
        answer(&mut conn, status, &text);
    }
}

fn openviking_choice(url: String, user: &str) -> Choice {
    Choice::Openviking { url, api_key: None, user: Some(user.to_string()), account: None }
}

/// How many times the turn `turn_id` is on an OpenViking dev-mode session (its user messages,
/// pending and archived, by message id: a committed message shows in both for a while), and how
/// often the session was committed.
fn ov_copies(base: &str, user: &str, sid: &str, turn_id: &str) -> (usize, u64) {
    let h = [("X-OpenViking-User", user)];
    let mut ids = std::collections::HashSet::new();
    let mut take = |m: &Value| {
        if m["turn_id"].as_str() == Some(turn_id) && m["role"].as_str() == Some("user") {
            ids.insert(m["id"].as_str().unwrap_or_default().to_string());
        }
    };
    let pending = get_json(&format!("{base}/api/v1/sessions/{sid}/context?token_budget=100000000"), &h);
    pending["result"]["messages"].as_array().into_iter().flatten().for_each(&mut take);
    let meta = get_json(&format!("{base}/api/v1/sessions/{sid}?auto_create=false"), &h);
    let commits = meta["result"]["commit_count"].as_u64().unwrap_or(0);
    if let Some(uri) = meta["result"]["uri"].as_str().filter(|_| commits > 0) {
        let history = format!("{uri}/history");
        let enc = |s: &str| s.replace(':', "%3A").replace('/', "%2F");
        let listing = get_json(&format!("{base}/api/v1/fs/ls?uri={}&output=original", enc(&history)), &h);
        for e in listing["result"].as_array().into_iter().flatten() {
            let Some(name) = e["name"].as_str().filter(|n| n.starts_with("archive_")) else { continue };
            let file = format!("{history}/{name}/messages.jsonl");
            let text = get_json(&format!("{base}/api/v1/content/read?uri={}", enc(&file)), &h);
            for line in text["result"].as_str().unwrap_or_default().lines() {
                if let Ok(m) = serde_json::from_str::<Value>(line) {
                    take(&m);
                }
            }
        }
    }
    (ids.len(), commits)
}

/// The turn ids of a home's memories whose prompt contains `marker`.
fn turn_ids(dev: &Dev, marker: &str) -> Vec<(String, String)> {
    let c = rusqlite::Connection::open(dev.ovmem_home().join("memory.db")).unwrap();
    let mut stmt = c.prepare("SELECT turn_id, session FROM memories WHERE prompt LIKE ?1 ORDER BY id").unwrap();
    let rows = stmt.query_map([format!("%{marker}%")], |r| Ok((r.get(0)?, r.get(1)?))).unwrap();
    rows.map(Result::unwrap).collect()
}

fn ovmem_in(dev: &Dev, args: &[&str]) -> Command {
    let mut c = Command::new(OVMEM);
    c.args(args)
        .env_clear()
        .env("HOME", dev.home.path())
        .env("PATH", "/usr/bin:/bin")
        .env("NO_COLOR", "1")
        .current_dir(&dev.repo)
        .stdin(Stdio::null());
    c
}

#[test]
fn openviking_turns_captured_in_an_outage_reach_a_teammate_once_through_concurrent_flushers() {
    let Some(lab) = lab() else { return };
    let user = unique("team");
    let repo = unique("atlas");
    // The server is down while four turns of two sessions are captured.
    let dev = Dev::new(
        &format!("git@github.com:acme/{repo}.git"),
        "src/atlas",
        openviking_choice("http://127.0.0.1:9".into(), &user),
    );
    let marker = unique("PELICAN");
    for (session, i) in [("out-1", 1), ("out-2", 2), ("out-1", 3), ("out-2", 4)] {
        dev.claude_turn(
            session,
            &format!("Remember: the atlas service's job number {i} runs on the {marker}-{i} queue"),
            &format!("Noted: job {i} on {marker}-{i}."),
        );
    }
    assert_eq!(dev.stats()["queued"], 4, "{}", dev.stats());
    // The server is back; two `ovmem sync` and two session starts flush at the same moment.
    configure(&Dev::env_of(dev.home.path()), &openviking_choice(lab.ov_dev(), &user)).unwrap();
    let start = serde_json::json!({"session_id": "back", "cwd": dev.repo, "hook_event_name": "SessionStart", "source": "startup"});
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| ovmem_in(&dev, &["sync"]).output().unwrap());
            s.spawn(|| dev.hook("claude-code", "SessionStart", &start));
        }
    });
    assert_eq!(dev.stats()["queued"], 0, "{}", dev.stats());
    let turns = turn_ids(&dev, &marker);
    assert_eq!(turns.len(), 4);
    for (turn, session) in &turns {
        let sid = OpenViking::session_id("claude-code", session);
        let (n, commits) = ov_copies(&lab.ov_dev(), &user, &sid, turn);
        assert_eq!(n, 1, "turn {turn} of {sid} is on the server exactly once");
        assert!(commits >= 1, "session {sid} was committed after its replayed turns, so extraction runs");
    }
    // A teammate's fresh home (same server user, another checkout) recalls a turn of the outage,
    // with its real date.
    let mate =
        Dev::new(&format!("https://github.com/acme/{repo}"), "work/atlas", openviking_choice(lab.ov_dev(), &user));
    let (ctx, took) = poll(60 * SECOND, || {
        let c = mate.ask("claude-code", "Which queue does atlas job number 3 run on?");
        c.contains(&format!("{marker}-3")).then_some(c)
    })
    .expect("a turn captured while OpenViking was down is recalled by a teammate once it is back");
    note(&format!("delivery: outage turn recalled by a teammate {} ms after the flush", took.as_millis()));
    assert!(!ctx.contains("1970-01-01"), "recalled items carry their real dates: {ctx}");
    assert!(ctx.contains(&ovmem::runtime::format_date(ovmem::store::now())), "dated today (extracted today): {ctx}");
}

#[test]
fn openviking_a_send_killed_mid_flight_is_retried_without_a_duplicate() {
    let Some(lab) = lab() else { return };
    let user = unique("kill");
    let proxy = Proxy::new(&lab.ov_dev());
    let dev = Dev::new("git@github.com:acme/kite.git", "src/kite", openviking_choice(proxy.url.clone(), &user));
    let marker = unique("OSPREY");
    let ups = serde_json::json!({"session_id": "k-1", "cwd": dev.repo, "hook_event_name": "UserPromptSubmit",
        "prompt": format!("The kite deploy key rotates through the {marker} vault")});
    assert_eq!(dev.hook("claude-code", "UserPromptSubmit", &ups).1, 0);
    // The server receives the turn, its answer never comes back, and the Stop hook is killed while
    // it waits (the harness giving up, a closed terminal).
    proxy.set(Fault::HoldAfter("/messages"));
    let stop = serde_json::json!({"session_id": "k-1", "cwd": dev.repo, "hook_event_name": "Stop",
        "last_assistant_message": format!("Noted: {marker} vault.")});
    let mut child = dev.spawn_hook("claude-code", "Stop", &stop);
    poll(10 * SECOND, || (!proxy.held.lock().unwrap().is_empty()).then_some(())).expect("the turn reached the server");
    // SAFETY: killing the child we spawned.
    unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
    assert_eq!(child.wait().unwrap().code(), None, "killed mid-send");
    let turns = turn_ids(&dev, &marker);
    let (turn, session) = &turns[0];
    let sid = OpenViking::session_id("claude-code", session);
    assert_eq!(ov_copies(&lab.ov_dev(), &user, &sid, turn).0, 1, "the server has it once already");
    assert_eq!(dev.stats()["queued"], 1, "the local store does not know it arrived: {}", dev.stats());
    // The next flush retries it as a retry: found on the server, not sent again, and committed.
    proxy.set(Fault::Pass);
    let (code, text) = dev.sync();
    assert_eq!(code, 0, "{text}");
    let (n, commits) = ov_copies(&lab.ov_dev(), &user, &sid, turn);
    assert_eq!((n, commits >= 1), (1, true), "once on the server, and the session committed");
    assert_eq!(dev.stats()["queued"], 0);
}

#[test]
fn hindsight_one_refused_memory_is_parked_and_the_others_arrive() {
    let Some(lab) = lab() else { return };
    let proxy = Proxy::new(&lab.hs_a());
    let repo = unique("harbor");
    let dev = Dev::new(&format!("git@github.com:acme/{repo}.git"), "src/harbor", hindsight_choice(proxy.url.clone()));
    let poison = unique("POISON");
    proxy.set(Fault::FailWhen(poison.clone()));
    let marker = unique("TERN");
    for i in 1..=4 {
        let extra = if i == 2 { format!(" ({poison})") } else { String::new() };
        dev.claude_turn(
            &format!("h-{i}"),
            &format!("Remember: harbor batch {i} ships through dock {marker}-{i}{extra}"),
            &format!("Noted: dock {marker}-{i}."),
        );
    }
    let (code, text) = dev.sync();
    assert_eq!(code, 1, "a parked memory is not a clean sync: {text}");
    assert!(text.contains("parked") && text.contains("poisoned payload"), "{text}");
    let stats = dev.stats();
    assert_eq!((stats["queued"].as_i64(), stats["parked"].as_i64()), (Some(0), Some(1)), "{stats}");
    // Every other turn arrives.
    let bank = team_bank(&format!("github.com/acme/{repo}"));
    for i in [1, 3, 4] {
        let token = format!("{marker}-{i}");
        poll(30 * SECOND, || {
            let listed = hs_get(&lab.hs_a(), &format!("/v1/default/banks/{bank}/memories/list?limit=200"));
            listed["items"]
                .as_array()?
                .iter()
                .any(|m| m["text"].as_str().is_some_and(|t| t.contains(&token)))
                .then_some(())
        })
        .unwrap_or_else(|| panic!("turn {i} arrives although turn 2 is refused"));
    }
    // status and check say what is parked and why.
    let out = ovmem_in(&dev, &["status"]).output().unwrap();
    let status = String::from_utf8_lossy(&out.stdout);
    assert!(status.contains("1 memory parked") && status.contains("poisoned payload"), "{status}");
    let out = ovmem_in(&dev, &["check"]).output().unwrap();
    let check = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(check.contains("parked") && check.contains("--retry-parked"), "{check}");
    // Once the server takes it, `--retry-parked` sends it.
    proxy.set(Fault::Pass);
    let out = ovmem_in(&dev, &["sync", "--retry-parked"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(dev.stats()["parked"], 0);
}
