//! `ovmem hook <harness> <event>`: what every installed hook runs. It reads the harness's stdin,
//! recalls or captures memory, and prints that harness's exact output. It never breaks the
//! agent: any fault (bad stdin, a panic, a locked or corrupt database, a full disk, a missed
//! deadline) becomes the harness's no-op with exit 0 and a line in `$OVMEM_HOME/logs/hook.log`;
//! a prompt or turn that could not be stored in time is spooled and stored at the next session
//! start (or by the next stop of the same session), exactly once.

pub mod capture;
pub mod encode;
pub mod guard;
pub mod logfile;
pub mod remote;
pub mod render;
pub mod spool;
pub mod tags;
pub mod wire;

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use crate::config::{BankMode, Config};
use crate::env::Env;
use crate::harness::{self, Adapter, Canonical};
use crate::store::{self, Memory, Store};
use encode::Outcome;
use render::Item;
use spool::Spooled;
use wire::Event;

/// Time a session start or a stop may spend embedding memories stored without a vector.
const BACKFILL_BUDGET: Duration = Duration::from_millis(40);
/// How long a prompt hook's writes (the prompt buffered, the injection recorded) wait for
/// another process's write lock. Reading is never blocked (WAL), so a prompt behind a long
/// write spools its prompt and recalls anyway, instead of waiting out its deadline with
/// nothing to show.
const PROMPT_WRITE_WAIT: Duration = Duration::from_millis(200);

/// Largest stdin accepted; larger payloads are drained and answered with a no-op.
pub const STDIN_CAP: usize = 8 << 20;
/// How much of a payload past [`STDIN_CAP`] is read and thrown away before the hook gives up: more
/// than any harness sends (a harness still writing when the hook leaves gets a broken pipe, and
/// a Node harness without a handler for it throws), yet an endless stdin is left in well under a
/// second.
const STDIN_DRAIN: usize = 512 << 20;

/// What a hook has taken on but not yet stored: if the deadline passes first, or the harness ends
/// the hook, the watchdog spools it before answering, so nothing is lost.
type Pending = Arc<Mutex<Option<Taken>>>;

/// A pending item and its copy written ahead to the spool, which is what is left of it when the
/// process dies where nothing can be caught (SIGKILL, the OOM killer): the next replay stores it.
struct Taken {
    item: Spooled,
    ahead: Option<spool::Ahead>,
}

/// Runs a hook and returns the process exit code: 0, or 2 for a tool-guard deny of a harness whose
/// adapter says `deny_style = "exit2-stderr"`.
pub fn main(args: &[String]) -> i32 {
    let started = Instant::now();
    crate::home::private_umask();
    let harness_id = args.first().map(String::as_str).unwrap_or("");
    let native = args.get(1).map(String::as_str).unwrap_or("");
    let mut env = Env::from_process().ok();
    match env.as_ref().map(crate::home::prepare) {
        // An OVMEM_HOME that is the home directory or above it is not used at all: the hook runs
        // as without an environment (stdin read, its no-op answered) and writes nothing there,
        // not even this line; every CLI command names the variable instead.
        Some(Err(e)) if crate::home::is_refused(&e) => env = None,
        Some(Err(e)) => {
            log(env.as_ref(), harness_id, native, "error", &format!("could not prepare OVMEM_HOME: {e}"), started)
        }
        // Not plainly ovmem's (`~/.local` given by mistake): no mode changed there, said once.
        Some(Ok(crate::home::Prepared { note: Some(note), .. })) => {
            log(env.as_ref(), harness_id, native, "warn", &note, started)
        }
        _ => {}
    }
    let adapter = match harness::adapter_for(harness_id) {
        Some(Ok(a)) => a,
        _ => {
            // Unknown harness: `{}` is the most widely accepted no-op.
            log(env.as_ref(), harness_id, native, "error", &format!("unknown harness `{harness_id}`"), started);
            print_and_flush("{}");
            return 0;
        }
    };
    // A prompt's question is encoded first thing once it is read: the model is readied meanwhile.
    if adapter.events.get(native) == Some(&Canonical::Prompt) {
        crate::store::warm_model();
    }
    // A setting the hook cannot use costs only that setting (see `Config::load_lenient`): the
    // user's redact_patterns, backend and deadlines still apply.
    let (cfg, problems) = env.as_ref().map(Config::load_lenient).unwrap_or_default();
    for problem in problems {
        log(env.as_ref(), harness_id, native, "error", &problem.log_message(), started);
    }
    for problem in crate::redact::configure(&cfg.redact_patterns) {
        log(env.as_ref(), harness_id, native, "error", &problem, started);
    }
    let guard_event = adapter.events.get(native) == Some(&Canonical::PreTool);
    let configured = Duration::from_millis(if guard_event { cfg.guard_deadline_ms } else { cfg.deadline_ms });
    let deadline = within_timeout(configured, harness_id, native);

    // The work runs on this thread; a watchdog thread only waits for the deadline, or for the
    // harness to end the hook (SIGTERM when the user cancels or quits, SIGHUP, SIGINT). Whichever
    // answers first answers (the `answered` flag): the watchdog spools what the hook took on,
    // prints the no-op and ends the process, so a turn is never lost to a kill it can catch.
    let pending: Pending = Arc::new(Mutex::new(None));
    let answered = Arc::new(AtomicBool::new(false));
    {
        let (pending, answered) = (pending.clone(), answered.clone());
        let env = env.clone();
        let (harness, native, noop) = (harness_id.to_string(), native.to_string(), encode::noop(&adapter, native));
        let stop = stop_signals();
        std::thread::spawn(move || {
            let signal = wait_for(stop, deadline);
            if answered.swap(true, Ordering::SeqCst) {
                return;
            }
            let spooled = take_pending(&pending).map(|Taken { item, ahead }| {
                // Let go first: its file is replaced by the spooled item (one file, not two).
                let held = ahead.is_some();
                drop(ahead);
                let written = match env.as_ref() {
                    Some(env) => spool::write(env, &item).map(|_| item.kind),
                    None => Err(anyhow::anyhow!("HOME is not set")),
                };
                (written, held)
            });
            let what = match spooled {
                Some((Ok(kind), _)) => format!("; the {kind} was spooled and will be stored later"),
                Some((Err(e), true)) => {
                    format!("; spooling it failed ({e:#}), its copy written ahead waits in the spool")
                }
                Some((Err(e), false)) => format!("; spooling it failed too: {e:#}"),
                None => String::new(),
            };
            let msg = match signal {
                Some(name) => format!("ended by {name}; answered with a no-op{what}"),
                None => format!("deadline of {} ms passed; answered with a no-op{what}", deadline.as_millis()),
            };
            // The answer first: the log is best effort, after it.
            print_and_flush(&noop);
            log(env.as_ref(), &harness, &native, "error", &msg, started);
            std::process::exit(0);
        });
    }
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        run(env.as_ref(), &cfg, &adapter, native, deadline, &pending)
    }))
    .unwrap_or_else(|p| {
        let msg = p.downcast_ref::<&str>().map(|s| s.to_string()).or_else(|| p.downcast_ref::<String>().cloned());
        Err(anyhow::anyhow!("panic: {}", msg.unwrap_or_default()))
    });
    if answered.swap(true, Ordering::SeqCst) {
        // The watchdog answered already and is ending the process.
        loop {
            std::thread::park();
        }
    }
    let (reply, logged) = match result {
        Ok((outcome, note, effective)) => (encode::reply(&effective, native, &outcome), note.map(|n| ("info", n))),
        Err(e) => (
            encode::Reply { stdout: encode::noop(&adapter, native), ..Default::default() },
            Some(("error", format!("{e:#}"))),
        ),
    };
    if !reply.stderr.is_empty() {
        let mut err = std::io::stderr().lock();
        // A deny reason may quote what the model asked for (a path): no control sequence of it
        // reaches the harness's terminal.
        let _ = writeln!(err, "{}", crate::termsafe::clean(&reply.stderr));
        let _ = err.flush();
    }
    print_and_flush(&reply.stdout);
    // The answer first: the log is best effort, after it.
    if let Some((level, msg)) = logged {
        log(env.as_ref(), harness_id, native, level, &msg, started);
    }
    reply.code
}

/// The deadline, kept below the timeout ovmem's own entry gives the harness for this event
/// (Codex ends a `SessionEnd` hook at 3 s; the configured 4 s would be past it): four fifths of
/// it, so the no-op is out before the harness stops waiting.
fn within_timeout(configured: Duration, harness_id: &str, native: &str) -> Duration {
    let Some(h) = harness::find(harness_id) else { return configured };
    let timeout = h.manifest.hooks.iter().filter(|x| x.event == native).filter_map(|x| x.timeout).min();
    timeout.map_or(configured, |t| configured.min(h.manifest.timeout_unit.duration(t.into()) * 4 / 5))
}

/// What a signal that ends a hook leaves: a byte on a socket (to wake the watchdog) and which
/// signal it was.
#[cfg(unix)]
struct Stop {
    wake: std::os::unix::net::UnixStream,
    which: Arc<std::sync::atomic::AtomicUsize>,
}

/// Catches the signals that end a hook (none where they cannot be caught).
#[cfg(unix)]
fn stop_signals() -> Option<Stop> {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    let (read, write) = std::os::unix::net::UnixStream::pair().ok()?;
    let which = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    for signal in [SIGTERM, SIGHUP, SIGINT] {
        signal_hook::flag::register_usize(signal, which.clone(), signal as usize).ok()?;
        signal_hook::low_level::pipe::register(signal, write.try_clone().ok()?).ok()?;
    }
    Some(Stop { wake: read, which })
}

#[cfg(not(unix))]
fn stop_signals() -> Option<()> {
    None
}

/// Waits out the deadline, or until a signal asks the hook to end: which one, if one did.
#[cfg(unix)]
fn wait_for(stop: Option<Stop>, deadline: Duration) -> Option<&'static str> {
    let Some(mut stop) = stop else {
        std::thread::sleep(deadline);
        return None;
    };
    let ends = Instant::now() + deadline;
    let mut byte = [0u8; 1];
    loop {
        let left = ends.saturating_duration_since(Instant::now());
        if left.is_zero() || stop.wake.set_read_timeout(Some(left)).is_err() {
            return None;
        }
        match stop.wake.read(&mut byte) {
            Ok(1) => {
                return Some(match stop.which.load(Ordering::SeqCst) as i32 {
                    signal_hook::consts::SIGTERM => "SIGTERM",
                    signal_hook::consts::SIGHUP => "SIGHUP",
                    _ => "SIGINT",
                })
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            // The deadline (a timeout), or a socket that failed: the rest of the time asleep.
            _ => {
                std::thread::sleep(ends.saturating_duration_since(Instant::now()));
                return None;
            }
        }
    }
}

#[cfg(not(unix))]
fn wait_for(_: Option<()>, deadline: Duration) -> Option<&'static str> {
    std::thread::sleep(deadline);
    None
}

fn take_pending(p: &Pending) -> Option<Taken> {
    p.lock().unwrap_or_else(|e| e.into_inner()).take()
}

/// Writes `s` and a newline (nothing at all for an empty answer: a plain-text harness's no-op).
fn print_and_flush(s: &str) {
    if s.is_empty() {
        return;
    }
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(s.as_bytes());
    let _ = out.write_all(b"\n");
    let _ = out.flush();
}

fn read_stdin() -> Result<Vec<u8>> {
    let mut buf = Vec::new();
    let stdin = std::io::stdin();
    let mut lock = stdin.lock();
    lock.by_ref().take(STDIN_CAP as u64 + 1).read_to_end(&mut buf).context("could not read stdin")?;
    if buf.len() > STDIN_CAP {
        // Drain the rest so the harness never sees a broken pipe, then give up on this payload;
        // within reason: an endless stdin (`/dev/zero`) is left after [`STDIN_DRAIN`] more, not
        // read with a core until the deadline.
        let mut chunk = vec![0u8; 1 << 20];
        let mut left = STDIN_DRAIN;
        while left > 0 {
            match lock.read(&mut chunk[..left.min(1 << 20)]) {
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Ok(0) | Err(_) => break,
                Ok(n) => left -= n,
            }
        }
        anyhow::bail!("stdin is larger than {} MiB; ignored", STDIN_CAP >> 20);
    }
    Ok(buf)
}

type RunResult = Result<(Outcome, Option<String>)>;

/// The outcome, a note for the log, and the adapter as this stdin's variant behaves.
type Answer = Result<(Outcome, Option<String>, Adapter)>;

/// Whether ovmem's hooks for harness `id` are installed in this `OVMEM_HOME` (any scope).
fn installed(env: &Env, id: &str) -> bool {
    let prefix = format!("{id}.");
    crate::receipt::paths(&env.ovmem_home())
        .iter()
        .any(|p| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with(&prefix)))
}

fn run(env: Option<&Env>, cfg: &Config, adapter: &Adapter, native: &str, deadline: Duration, p: &Pending) -> Answer {
    let bytes = read_stdin()?;
    let mut event = wire::parse(adapter, native, &bytes)?;
    let adapter: &Adapter = &adapter.for_variant(event.variant);
    let env = env.context("HOME is not set")?;
    // Another harness running this one's hooks (Devin running `~/.claude` hooks) while its own
    // ovmem hooks are installed: those handle the turn.
    if let Some(s) = adapter.skip_when.iter().find(|s| env.var(&s.env).is_some() && installed(env, &s.installed)) {
        let note =
            format!("{} is set: {} runs ovmem's own hooks, so this one answered with its no-op", s.env, s.installed);
        return Ok((Outcome::default(), Some(note), adapter.clone()));
    }
    if event.ignored {
        return Ok((Outcome::default(), Some("ignored (the adapter's ignore_when)".into()), adapter.clone()));
    }
    if event.cwd.is_none() {
        event.cwd = adapter.cwd_env.iter().filter_map(|v| env.var(v)).map(PathBuf::from).find(|p| p.is_absolute());
        if event.cwd.is_some() && event.session == "unknown" {
            event.session = wire::sanitise_session(&format!(
                "cwd-{}",
                &crate::fsx::sha256_hex(event.cwd.as_deref().unwrap_or(Path::new("/")).to_string_lossy().as_bytes())
                    [..16]
            ));
        }
    }
    let (outcome, note) = answer(env, cfg, adapter, &event, deadline, p)?;
    Ok((outcome, note, adapter.clone()))
}

fn answer(env: &Env, cfg: &Config, adapter: &Adapter, event: &Event, deadline: Duration, p: &Pending) -> RunResult {
    let ctx = Ctx {
        env,
        cfg,
        adapter,
        event,
        busy: deadline.mul_f32(0.8),
        pending: p,
        ends: Instant::now() + deadline,
        link: std::cell::OnceCell::new(),
        remote_until: std::cell::OnceCell::new(),
        bank: std::cell::OnceCell::new(),
        notes: std::cell::RefCell::new(Vec::new()),
    };
    let (outcome, note) = ctx.act()?;
    let mut notes = ctx.notes.take();
    notes.extend(note);
    let note = (!notes.is_empty()).then(|| notes.join("; "));
    if env.var("OVMEM_LOG") == Some("debug") {
        let injects = adapter.inject_events.contains(&event.native);
        let what = match (&outcome.deny, &outcome.context) {
            (Some(_), _) => "deny",
            (None, Some(_)) if injects => "inject",
            _ => "no-op",
        };
        let detail = format!(
            "fired: {what}; stdin keys [{}]{}",
            event.keys.join(","),
            note.map(|n| format!("; {n}")).unwrap_or_default()
        );
        return Ok((outcome, Some(detail)));
    }
    Ok((outcome, note))
}

struct Ctx<'a> {
    env: &'a Env,
    cfg: &'a Config,
    adapter: &'a Adapter,
    event: &'a Event,
    busy: Duration,
    pending: &'a Pending,
    /// When the hook must have answered.
    ends: Instant,
    /// The remote backend, looked up once, when an event needs it.
    link: std::cell::OnceCell<Option<remote::Link>>,
    /// Until when remote calls may run (set by the first one).
    remote_until: std::cell::OnceCell<Instant>,
    /// The project's bank, worked out once.
    bank: std::cell::OnceCell<crate::project::Bank>,
    /// What happened on the side (a server away, a queue sent), for the log.
    notes: std::cell::RefCell<Vec<String>>,
}

impl Ctx<'_> {
    fn note(&self, n: impl Into<String>) {
        self.notes.borrow_mut().push(n.into());
    }

    /// Takes `item` on: pending (the watchdog spools it) and written ahead to the spool (a
    /// SIGKILL leaves it there), in place of what was pending. Pending first, so the watchdog
    /// spools it even while its copy is being written; the copy is written outside the mutex, so a
    /// slow disk never holds the watchdog from answering. A copy that cannot be written costs only
    /// itself (the earlier copy, if any, stays held).
    fn take_on(&self, item: &Spooled) {
        let lock = || self.pending.lock().unwrap_or_else(|e| e.into_inner());
        let earlier = lock().replace(Taken { item: item.clone(), ahead: None }).and_then(|t| t.ahead);
        let ahead = spool::Ahead::write(self.env, item)
            .map_err(|e| self.note(format!("could not write the {} ahead to the spool: {e:#}", item.kind)))
            .ok();
        // Taken by the watchdog meanwhile: it spools the item, and the copies are let go.
        if let Some(taken) = lock().as_mut() {
            taken.ahead = ahead.or(earlier);
        }
    }

    /// What was pending is in the store (or had been stored already): its copy written ahead goes.
    fn done(&self) {
        if let Some(ahead) = take_pending(self.pending).and_then(|t| t.ahead) {
            ahead.stored();
        }
    }

    fn link(&self) -> Option<&remote::Link> {
        self.link
            .get_or_init(|| match remote::link(self.env, self.cfg) {
                None => None,
                Some(Ok(l)) => Some(l),
                Some(Err(e)) => {
                    self.note(format!("the remote backend is not usable: {e:#}; using the local store"));
                    None
                }
            })
            .as_ref()
    }

    /// What a remote call may take: the hook's remote calls share one budget (`want`, from the
    /// first call on), and never run into the time the hook needs to answer.
    fn budget(&self, want: Duration) -> Duration {
        let now = Instant::now();
        let until = *self.remote_until.get_or_init(|| now + want);
        until
            .saturating_duration_since(now)
            .min(self.ends.saturating_duration_since(now).saturating_sub(Duration::from_millis(300)))
    }

    /// The server's bank and the project's identity for this hook.
    fn target(&self, link: &remote::Link) -> (String, String) {
        remote::target(&link.settings, self.cfg.bank, &self.bank(), &self.cwd(), &self.env.ovmem_home())
    }

    /// Sends what waits in the outbox, within the send budget.
    fn flush(&self, store: &Store) {
        if let Some(link) = self.link() {
            let budget = self.budget(link.settings.send_budget);
            let f = remote::flush(store, link, &self.env.ovmem_home(), budget, remote::Wait::Never);
            if f.busy {
                self.note("another process is sending the queue");
            }
            if f.sent > 0 {
                self.note(format!("sent {} memory(ies) to {}", f.sent, link.remote.kind()));
            }
            if f.parked > 0 {
                self.note(format!("parked {} memory(ies) the server keeps refusing", f.parked));
            }
            if let Some(e) = f.error {
                self.note(format!("{e}; kept queued"));
            }
        }
    }

    /// Tells the server the session (or turn) ended: OpenViking commits it.
    fn end_session(&self) {
        if let Some(link) = self.link() {
            let (bank, _) = self.target(link);
            let budget = self.budget(link.settings.send_budget);
            if let Err(e) = link.remote.end_session(&bank, &self.event.harness, &self.event.session, budget) {
                self.note(format!("could not end the session on {}: {e}", link.remote.kind()));
            }
        }
    }
    fn db_path(&self) -> PathBuf {
        self.env.ovmem_home().join("memory.db")
    }

    /// The store, with the project's older banks carried over into its bank (a lookup by name
    /// when there are none, which is every time but the first).
    fn open(&self) -> Result<Store> {
        let path = self.db_path();
        let store = Store::open(&path, self.busy)?.for_exiting_process(&path);
        let bank = self.project_bank();
        match store.carry_over(&bank.key, &bank.carried) {
            Ok(0) => {}
            Ok(n) => self.note(format!("carried {n} memory(ies) over into the bank `{}`", bank.key)),
            Err(e) => self.note(format!("could not carry older banks over into `{}`: {e:#}", bank.key)),
        }
        Ok(store)
    }

    fn project_bank(&self) -> &crate::project::Bank {
        self.bank.get_or_init(|| {
            bank_for(self.cfg.bank, &self.cwd(), &self.event.harness, &self.event.session, &self.env.ovmem_home())
        })
    }

    fn cwd(&self) -> PathBuf {
        self.event.cwd.clone().or_else(|| std::env::current_dir().ok()).unwrap_or_else(|| PathBuf::from("/"))
    }

    fn bank(&self) -> String {
        self.project_bank().key.clone()
    }

    /// When the event happened: the harness's own time, unless it cannot be right (a day or more
    /// ahead of this clock: such a memory would be shown first at every session start, forever).
    fn at(&self) -> i64 {
        self.event.at.filter(|&at| store::implausible_date(at).is_none()).unwrap_or_else(store::now)
    }

    fn act(&self) -> RunResult {
        match self.event.kind {
            Canonical::SessionStart => self.session_start(),
            Canonical::Prompt => self.prompt(),
            Canonical::Stop => self.stop(),
            Canonical::PreTool => self.pre_tool(),
            Canonical::SessionEnd => self.session_end(),
            Canonical::PostTool => self.post_tool(),
            Canonical::Compact => self.compact(),
        }
    }

    /// The context is about to be summarised: what it was given will be gone from it.
    fn compact(&self) -> RunResult {
        if !self.known_session() {
            return Ok((Outcome::default(), None));
        }
        self.reset(&self.open()?, "compact");
        Ok((Outcome::default(), Some("the context is being compacted: memories may be injected again".into())))
    }

    fn session_end(&self) -> RunResult {
        if self.link().is_some() {
            if let Ok(store) = self.open() {
                self.flush(&store);
            }
            self.end_session();
        }
        Ok((Outcome::default(), None))
    }

    fn recent_block(&self, store: &Store) -> Result<Option<String>> {
        let seen = self.in_context(store);
        let memories: Vec<Memory> =
            store.recent(&self.bank(), self.cfg.recall_limit)?.into_iter().filter(|m| !seen.contains(&m.id)).collect();
        let items: Vec<Item> = memories.iter().map(Item::plain).collect();
        Ok(self.inject(store, &items))
    }

    /// Whether this session is one the harness named (not one made up for a payload without an
    /// id, which every session in the directory would share).
    fn known_session(&self) -> bool {
        self.event.session_named
    }

    /// The local memories already injected into this session since its context was last
    /// compacted or cleared: still in the agent's context, so not injected again.
    fn in_context(&self, store: &Store) -> rustc_hash::FxHashSet<i64> {
        if !self.known_session() {
            return Default::default();
        }
        store.injected_since_reset(&self.event.session, &self.bank()).unwrap_or_else(|e| {
            self.note(format!("could not read what this session was given already: {e:#}"));
            Default::default()
        })
    }

    /// The block for `items`, recorded as injected into this session (the ids of what it shows,
    /// in order) when this event's context reaches the agent (one of the adapter's inject
    /// events; elsewhere the harness ignores it). A failure to record is noted, never the hook's
    /// failure.
    fn inject(&self, store: &Store, items: &[Item]) -> Option<String> {
        let (block, shown) = render::render_shown(items, self.adapter.context_limit)?;
        if !self.adapter.inject_events.contains(&self.event.native) {
            return Some(block);
        }
        let mut ids: Vec<i64> = Vec::new();
        for item in &items[..shown] {
            for id in std::iter::once(item.memory.id).chain(item.with.iter().map(|m| m.id)) {
                if id > 0 && !ids.contains(&id) {
                    ids.push(id);
                }
            }
        }
        let chars = block.chars().count();
        self.record(store, canonical_name(self.event.kind).to_string(), ids, chars, "the injection");
        Some(block)
    }

    /// Records what this event gave the session (or, with no ids, a reset of its context); a
    /// failure (`what` could not be recorded) is noted, never the hook's failure.
    fn record(&self, store: &Store, event: String, memory_ids: Vec<i64>, chars: usize, what: &str) {
        let record = store::Injection {
            at: store::now(),
            harness: Some(self.event.harness.clone()),
            session: self.known_session().then(|| self.event.session.clone()),
            bank: self.bank(),
            event,
            memory_ids,
            chars,
        };
        if let Err(e) = store.record_injection(&record) {
            self.note(format!("could not record {what}: {e:#}"));
        }
    }

    fn session_start(&self) -> RunResult {
        let store = self.open()?;
        let replayed = spool::replay(self.env, &store, None);
        let _ = store.prune(7 * 86_400);
        let _ = store.backfill(BACKFILL_BUDGET);
        self.flush(&store);
        let mut notes: Vec<String> =
            (replayed > 0).then(|| format!("stored {replayed} spooled item(s)")).into_iter().collect();
        // A session's context starts anew (a start, a compaction, a clear) unless it is resumed:
        // it holds none of what was injected before.
        let source = self.event.source.as_deref().unwrap_or("start");
        if source != "resume" && self.known_session() {
            self.reset(&store, source);
            if matches!(source, "compact" | "clear") {
                notes.push(format!("the context was {source}ed: memories may be injected again"));
            }
        }
        let note = (!notes.is_empty()).then(|| notes.join("; "));
        Ok((Outcome { context: self.recent_block(&store)?, deny: None }, note))
    }

    /// Marks that this session's context was compacted or cleared (`why`); only called for a
    /// session the harness named.
    fn reset(&self, store: &Store, why: &str) {
        self.record(store, format!("{}{why}", store::injections::RESET), Vec::new(), 0, "the context reset");
    }

    fn prompt(&self) -> RunResult {
        let Some(prompt) = self.event.prompt.as_deref() else { return Ok((Outcome::default(), None)) };
        // The question's vector is started on the prompt as it would be kept were nothing in it
        // secret, before scrubbing it (the patterns its words call on compile first): it is
        // keyed by its exact text, so it is used only when the scrubbed prompt is that same text,
        // and otherwise the scrubbed prompt's own is computed. It stays in this process.
        let (unscrubbed, clean) = {
            let stripped = capture::strip_injected(prompt);
            let unscrubbed = capture::clip_unscrubbed(&stripped, self.cfg.max_memory_chars);
            if unscrubbed.chars().count() >= self.cfg.min_prompt_chars {
                crate::store::prefetch_question(&unscrubbed);
            }
            (unscrubbed, capture::scrub_and_clip(&stripped, self.cfg.max_memory_chars))
        };
        if clean != unscrubbed && clean.chars().count() >= self.cfg.min_prompt_chars {
            crate::store::prefetch_question(&clean);
        }
        let bank = self.bank();
        // Taken on before the store is opened: an open can outlast the deadline (a checkpoint on
        // a slow disk, a migration), and then the watchdog spools the prompt instead of losing it.
        let item = (!clean.is_empty())
            .then(|| Spooled::prompt(&bank, &self.event.harness, &self.event.session, &clean, self.at()));
        if let Some(item) = &item {
            self.take_on(item);
        }
        // Opened (and if need be created) within the full budget; its writes then wait briefly.
        let store = self.open().map(|s| s.with_write_wait(PROMPT_WRITE_WAIT.min(self.busy)));
        if let Some(item) = item {
            let buffered = store.as_ref().map_err(|e| anyhow::anyhow!("{e:#}")).and_then(|s| {
                s.buffer_prompt_item(&item.id, &self.event.session, &bank, &self.event.harness, &clean, item.taken_ms())
            });
            let taken = take_pending(self.pending);
            if let Err(e) = buffered {
                // Let go first: the spooled item replaces its copy written ahead.
                drop(taken);
                spool::write(self.env, &item)?;
                // Only the write failed: a store that can be read still answers the question.
                if store.is_err() {
                    return Err(e.context("could not buffer the prompt; spooled it"));
                }
                self.note(format!("could not buffer the prompt ({e:#}); spooled it"));
            } else if let Some(ahead) = taken.and_then(|t| t.ahead) {
                ahead.stored();
            }
        }
        if clean.chars().count() < self.cfg.min_prompt_chars {
            return Ok((Outcome::default(), None));
        }
        let k = self.cfg.recall_limit;
        let store = store?;
        let seen = self.in_context(&store);
        // What this session was given already is left out, as an item and inside other items.
        let mut hits: Vec<store::Hit> =
            store.recall(&bank, &clean, k)?.into_iter().filter(|h| !seen.contains(&h.memory.id)).collect();
        for h in &mut hits {
            h.with.retain(|m| !seen.contains(&m.id));
        }
        let from_server = self.link().and_then(|link| {
            let (rbank, _) = self.target(link);
            let budget = self.budget(link.settings.recall_budget);
            match remote::recall(link, &rbank, &self.event.session, &clean, k, budget) {
                Ok(ms) => Some(ms),
                Err(e) => {
                    self.note(format!("{e:#}; recalled from the local store"));
                    None
                }
            }
        });
        let (server, hits) = match from_server {
            Some(ms) => remote::merge(ms, hits, k),
            None => (Vec::new(), hits),
        };
        let terms: Vec<String> = crate::store::rank::Query::parse(&clean).terms.into_iter().map(|t| t.text).collect();
        let items: Vec<Item> = server
            .iter()
            .map(|m| Item { memory: m, terms: &terms, superseded_by: None, with: &[] })
            .chain(hits.iter().map(Item::from))
            .collect();
        Ok((Outcome { context: self.inject(&store, &items), deny: None }, None))
    }

    fn stop(&self) -> RunResult {
        let bank = self.bank();
        let ev = self.event;
        let mut item = Spooled::turn(
            &bank,
            &ev.harness,
            &ev.session,
            ev.prompt.as_deref(),
            ev.reply.as_deref(),
            self.at(),
            self.cfg.max_memory_chars,
        );
        item.transcript = ev.transcript.clone().filter(|_| ev.reply.is_none());
        if ev.reply.is_none() && item.transcript.is_none() {
            if let Some(crate::harness::TranscriptLocator::KimiWire) = self.adapter.transcript_locator {
                let home = match self.env.var("KIMI_CODE_HOME") {
                    Some(h) => PathBuf::from(h),
                    None => self.env.home.join(".kimi-code"),
                };
                item.transcript = capture::kimi_wire(&home, ev.native_session.as_deref().unwrap_or(&ev.session));
                item.transcript_format = item.transcript.as_ref().map(|_| crate::harness::TranscriptLocator::KimiWire);
            }
        }
        item.status = self.event.status.clone();
        if let Some(link) = self.link() {
            item.remote = Some(self.target(link));
        }
        // The turn is where the transcript ends now; a later turn of the session must never be
        // read in its place.
        item.transcript_len = item.transcript.as_deref().and_then(capture::transcript_len);
        // From here on the turn is ours: written ahead to the spool, and if the deadline passes
        // (or the harness ends the hook) the watchdog spools it.
        self.take_on(&item);
        if let (true, Some(reply)) = (self.adapter.stop_once_per_reply, ev.reply.as_deref()) {
            let flag = format!("reply:{}", &crate::fsx::sha256_hex(reply.as_bytes())[..16]);
            // A store that cannot say (locked, read-only, damaged) does not cost the turn: it is
            // stored or spooled below like any other. Asked once the turn is pending: an open
            // that outlasts the deadline spools it.
            if let Ok(false) = self.open().and_then(|s| s.set_flag_once(&ev.session, &flag)) {
                self.done();
                return Ok((Outcome::default(), Some("this reply was captured already in this session".into())));
            }
        }
        // Its text, read now (a spooled copy then holds the text itself).
        if item.reply.is_none() && item.transcript.is_some() {
            item.resolve_transcript(self.cfg.max_memory_chars);
            if item.reply.is_some() {
                self.take_on(&item);
            }
        }
        let stored = (|| -> Result<(String, Store)> {
            let store = self.open()?;
            // Its own copy written ahead is locked by this hook: the replay leaves it.
            spool::replay(self.env, &store, Some(&ev.session));
            Ok((spool::store_turn(&store, &item, self.cfg.max_memory_chars)?, store))
        })();
        match stored {
            Ok((note, store)) => {
                self.done();
                // An older store's memories get their vectors and revision links a few at a
                // time, after the turn is safe, so no stop waits long for them.
                let _ = store.backfill(BACKFILL_BUDGET);
                // Stored locally: now the server, within what is left of the budget.
                // The flush ends (OpenViking: commits) the session of every turn it delivers.
                if self.link().is_some() {
                    self.flush(&store);
                }
                Ok((Outcome::default(), Some(note)))
            }
            Err(e) => {
                // Nothing is lost: the turn waits in the spool for the next session start (its
                // copy written ahead let go first, then replaced).
                drop(take_pending(self.pending));
                spool::write(self.env, &item)?;
                Err(e.context("could not store the turn; spooled it"))
            }
        }
    }

    /// After a tool ran: memory once per session, where the harness reads context only here.
    fn post_tool(&self) -> RunResult {
        if !self.adapter.inject_once_on_tool || !self.adapter.inject_events.iter().any(|e| e == &self.event.native) {
            return Ok((Outcome::default(), None));
        }
        let store = self.open()?;
        if store.set_flag_once(&self.event.session, "injected")? {
            return Ok((Outcome { context: self.recent_block(&store)?, deny: None }, None));
        }
        Ok((Outcome::default(), None))
    }

    fn pre_tool(&self) -> RunResult {
        if let Some(tool) = &self.event.tool {
            if let Some(reason) =
                guard::check(tool, self.event.tool_input.as_ref(), &self.cfg.uri_schemes, &self.adapter.guard_tools)
            {
                return Ok((Outcome { context: None, deny: Some(reason) }, Some(format!("denied {tool}"))));
            }
        }
        if self.adapter.inject_once_on_tool && self.adapter.inject_events.iter().any(|e| e == &self.event.native) {
            let store = self.open()?;
            if store.set_flag_once(&self.event.session, "injected")? {
                return Ok((Outcome { context: self.recent_block(&store)?, deny: None }, None));
            }
        }
        Ok((Outcome::default(), None))
    }
}

/// The name an injection is recorded under for an event kind.
fn canonical_name(kind: Canonical) -> &'static str {
    match kind {
        Canonical::SessionStart => "session_start",
        Canonical::Prompt => "prompt",
        Canonical::Stop => "stop",
        Canonical::PreTool => "pre_tool",
        Canonical::SessionEnd => "session_end",
        Canonical::PostTool => "post_tool",
        Canonical::Compact => "compact",
    }
}

/// The bank a hook reads and writes, by the configured mode (the rule is [`crate::project::bank`]).
pub fn bank_for(mode: BankMode, cwd: &Path, harness: &str, session: &str, home: &Path) -> crate::project::Bank {
    crate::project::bank(mode, cwd, harness, session, &crate::project::cache_dir(home))
}

pub use render::PREAMBLE;

/// `YYYY-MM-DD` (UTC) from Unix seconds.
pub use crate::dates::date as format_date;

/// Appends a JSON line (message scrubbed of secrets) to `$OVMEM_HOME/logs/hook.log`.
fn log(env: Option<&Env>, harness: &str, event: &str, level: &str, msg: &str, started: Instant) {
    let Some(env) = env else { return };
    let line = logfile::line(level, harness, event, started.elapsed(), msg);
    logfile::append(&env.ovmem_home().join("logs"), &line, logfile::ROTATE_AT);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Codex ends a `SessionEnd` hook at 3 s: the hook answers by 2.4 s, not the configured 4 s;
    /// an event whose entry allows more keeps the configured deadline.
    #[test]
    fn the_deadline_stays_below_the_entry_s_timeout() {
        let configured = Duration::from_millis(4000);
        assert_eq!(within_timeout(configured, "codex", "SessionEnd"), Duration::from_millis(2400));
        assert_eq!(within_timeout(configured, "claude-code", "UserPromptSubmit"), configured);
        assert_eq!(within_timeout(configured, "no-such-harness", "Stop"), configured);
    }
}
