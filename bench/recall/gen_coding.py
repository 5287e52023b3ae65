"""A generated set of coding-agent histories with known answers: decisions, later reversals,
follow-up turns that only make sense with their session's topic, facts said in passing, across
five harnesses, with questions that paraphrase. Seeded and template-driven (many phrasings and
slot values per kind); written once, never tuned against any ranking."""

import random

from units import Haystack, Question, Turn

HARNESSES = ("claude-code", "codex", "cursor", "gemini-cli", "cline")
START = 1735689600  # 2025-01-01T00:00:00Z: histories start here, so every date is reproducible
DAY = 86400

SERVICES = ["billing-api", "ledger-worker", "auth-gateway", "search-indexer", "notify-service", "checkout-web",
            "inventory-sync", "report-builder", "media-resizer", "user-profile", "rate-limiter", "audit-log",
            "export-runner", "webhook-relay", "session-store", "pricing-engine", "geo-lookup", "email-sender",
            "metrics-agent", "catalog-api", "payout-scheduler", "fraud-scorer", "cart-service", "tenant-admin"]
PROJECTS = ["acme-shop", "orbit", "harbor", "lumen", "quarry", "tidewater", "kestrel", "marlin", "basalt", "juniper",
            "sable", "cobalt", "aurora", "fennel", "granite", "heron", "ivory", "jasper", "lagoon", "mesa"]
MODULES = ["handlers", "db", "config", "client", "queue", "routes", "models", "jobs", "auth", "cache", "metrics", "retry"]
FUNCS = ["parse_invoice", "apply_discount", "refresh_token", "build_query", "flush_batch", "resize_image", "score_event",
         "load_tenant", "render_report", "sign_payload", "reconcile_day", "expire_sessions", "lookup_region", "enqueue_job"]
DEPS = [("tokio", "1.38"), ("serde", "1.0.210"), ("sqlx", "0.8"), ("axum", "0.7"), ("reqwest", "0.12"), ("tracing", "0.1.40"),
        ("rustls", "0.23"), ("hyper", "1.4"), ("chrono", "0.4.38"), ("prost", "0.13"), ("tonic", "0.12"), ("redis", "0.26")]
LINTS = [("needless_collect", "the Vec is only iterated once", "iterate the adapter directly"),
         ("large_enum_variant", "one variant holds a 2 KiB buffer", "box the large variant"),
         ("redundant_clone", "the String is moved right after", "drop the clone"),
         ("too_many_arguments", "the constructor takes nine parameters", "group them into an Options struct"),
         ("manual_let_else", "the match only unwraps one arm", "use let-else")]
TEAMS = ["payments", "platform", "growth", "data", "identity", "infra"]

# Decisions: what is decided, the options, what it is for, and how a later question names it.
TOPICS = {
    "broker": dict(
        noun=["message broker", "queue", "event transport"], qnoun=["messaging layer", "broker", "pub/sub system"],
        obj=[("order events", "order notifications"), ("outbox messages", "outbox entries"),
             ("webhook deliveries", "outgoing webhooks")],
        options=["Kafka", "RabbitMQ", "NATS JetStream", "Amazon SQS", "Redis Streams"],
        reasons=["it keeps a replayable log for a week", "the ops team already runs it", "ordering per key is built in",
                 "it needs no extra cluster", "consumer lag is easy to watch"],
        problems=["dropping messages under replay load", "falling behind during the nightly batch",
                  "costing too much at our volume", "losing ordering across partitions"]),
    "datastore": dict(
        noun=["database", "primary datastore", "storage engine"], qnoun=["database", "system of record", "store"],
        obj=[("tenant records", "tenant data"), ("the audit trail", "audit history"), ("session data", "sessions")],
        options=["PostgreSQL 16", "MySQL 8", "CockroachDB", "DynamoDB", "SQLite in WAL mode"],
        reasons=["we need row-level security", "point-in-time recovery is cheap", "it scales writes horizontally",
                 "the team knows it best", "there is no server to run"],
        problems=["hot-partitioning on the tenant key", "replication lag above two seconds",
                  "the licence cost at the new tier", "lock contention during the monthly close"]),
    "http": dict(
        noun=["HTTP client", "HTTP library", "client crate"], qnoun=["library for outbound calls", "client library",
                                                                     "crate for calling upstreams"],
        obj=[("calls to the payment provider", "payment provider requests"), ("upstream fetches", "upstream requests"),
             ("partner API calls", "partner integrations")],
        options=["reqwest", "ureq", "hyper directly", "isahc"],
        reasons=["it supports connection pooling out of the box", "it has no async runtime to drag in",
                 "we need HTTP/2 with fine control", "it handles proxies and TLS settings cleanly"],
        problems=["pulling in two TLS stacks", "blocking the runtime on large bodies", "a memory leak on retries",
                  "slow cold starts in the lambda"]),
    "tests": dict(
        noun=["test runner", "test harness", "way to run tests"], qnoun=["tool that runs the test suite",
                                                                        "test tooling", "runner for CI tests"],
        obj=[("the integration suite", "integration tests"), ("unit tests", "the unit suite"),
             ("the contract tests", "contract checks")],
        options=["cargo nextest", "plain cargo test", "nextest with partitioned CI", "cargo-llvm-cov with nextest"],
        reasons=["it runs each test in its own process", "flaky tests get retried and reported",
                 "it shards across CI machines", "coverage comes for free"],
        problems=["hiding flaky failures behind retries", "breaking doctests", "making CI logs unreadable",
                  "doubling the CI minutes"]),
    "logs": dict(
        noun=["log format", "logging setup", "log output"], qnoun=["shape of the log lines", "logging style",
                                                                   "format we emit logs in"],
        obj=[("request logs", "per-request logging"), ("error reports", "errors"), ("job logs", "batch job output")],
        options=["JSON lines", "logfmt", "OpenTelemetry logs over OTLP", "plain text with a request id"],
        reasons=["Loki parses it without a pipeline", "it is readable in a terminal", "traces and logs correlate",
                 "the SIEM ingests it directly"],
        problems=["blowing up the Loki bill", "breaking the SIEM parser", "losing multi-line stack traces",
                  "being unreadable during incidents"]),
    "retries": dict(
        noun=["retry policy", "retry strategy", "backoff scheme"], qnoun=["way failed calls are retried",
                                                                          "retry behaviour", "backoff rules"],
        obj=[("webhook sends", "outgoing webhook attempts"), ("database writes", "writes to the DB"),
             ("calls to the tax service", "tax lookups")],
        options=["3 retries with exponential backoff capped at 2 s", "no retries, fail fast and alert",
                 "5 retries with full jitter", "retry once after 500 ms"],
        reasons=["the upstream recovers within a second or two", "duplicates are worse than failures",
                 "thundering herds took us down last time", "latency budgets are tight"],
        problems=["amplifying an outage at the upstream", "creating duplicate charges", "blowing the latency SLO",
                  "hiding a broken dependency for hours"]),
    "deploy": dict(
        noun=["deploy strategy", "rollout method", "release process"], qnoun=["way releases go out",
                                                                              "rollout approach", "shipping process"],
        obj=[("production releases", "prod rollouts"), ("the EU cluster", "European deployments"),
             ("hotfixes", "urgent fixes")],
        options=["blue-green with a manual switch", "canary at 5%, 25%, then 100%", "rolling updates two pods at a time",
                 "feature flags with trunk-based deploys"],
        reasons=["rollback is one switch", "we see errors before everyone does", "it needs no spare capacity",
                 "releases stop being events"],
        problems=["doubling the cluster cost", "canaries not getting enough traffic at night",
                  "mixed versions corrupting the cache", "flags piling up unremoved"]),
    "serialization": dict(
        noun=["wire format", "serialization format", "payload encoding"], qnoun=["encoding on the wire",
                                                                                 "message format", "payload format"],
        obj=[("internal RPCs", "service-to-service calls"), ("cached objects", "the cache payloads"),
             ("events on the bus", "published events")],
        options=["Protocol Buffers", "JSON", "MessagePack", "Avro with a schema registry"],
        reasons=["the schema is enforced at build time", "anyone can read it with curl", "it is compact and schemaless",
                 "schema evolution is checked centrally"],
        problems=["breaking older consumers on every field change", "payloads tripling in size",
                  "debugging being impossible without tooling", "the registry being a single point of failure"]),
    "image": dict(
        noun=["base image", "container base", "runtime image"], qnoun=["image we build containers from",
                                                                       "container foundation", "Docker base"],
        obj=[("the release images", "production containers"), ("CI builds", "the CI containers"),
             ("the worker containers", "worker images")],
        options=["distroless cc", "alpine 3.20", "debian bookworm-slim", "ubuntu 24.04 minimal"],
        reasons=["the attack surface is tiny", "it is the smallest we tested", "glibc avoids the musl DNS quirks",
                 "the security team already scans it"],
        problems=["musl's DNS resolver timing out", "having no shell for debugging", "CVE noise from unused packages",
                  "image pulls taking minutes"]),
    "flags": dict(
        noun=["feature flag system", "flag provider", "toggle service"], qnoun=["way we toggle features",
                                                                                "flagging tool", "feature-switch service"],
        obj=[("the new checkout", "the checkout rewrite"), ("beta features", "features in beta"),
             ("tenant rollouts", "per-tenant launches")],
        options=["Unleash self-hosted", "LaunchDarkly", "environment variables read at start", "a flags table in Postgres"],
        reasons=["targeting by tenant is built in", "nobody has to run it", "there is nothing to go down",
                 "flags live next to the data"],
        problems=["stale flags after a restart", "the per-seat price", "a full redeploy for every change",
                  "cache invalidation bugs"]),
}

DECISION = [
    ("For {svc}, which {noun} should we use for {obj}: {opt} or {alt}?",
     "{opt}. {Reason}. {alt} would work too, but we would be running it only for this. I'll wire {svc} to {opt} in {file}."),
    ("Let's standardise {svc} on {opt} for {obj}; {reason}.",
     "Agreed. I switched {file} to {opt} and deleted the {alt} stub we had been carrying."),
    ("I compared {opt} and {alt} for {svc}'s {obj}. {Reason}, so I lean to {opt}.",
     "Then {opt} it is for {svc}. The settings live in {file} and the ADR is docs/adr/{adr:04d}.md."),
    ("decision for the record: {svc} uses {opt} for {obj} from now on",
     "Recorded in docs/adr/{adr:04d}.md: {opt} for {obj}, because {reason}. {alt} stays out."),
    ("We need a {noun} for {obj} in {svc}. Options on the table are {opt} and {alt}, what do you think?",
     "Go with {opt}: {reason}. I've added it to {file} behind the existing interface so switching later stays cheap."),
]
DECISION_Q = [
    "Which {qnoun} did we settle on for {svc}'s {objq}?",
    "What did we end up choosing as the {qnoun} for {objq} in {svc}?",
    "Remind me what {svc} went with for {objq}?",
    "For {objq}, what does {svc} rely on?",
]
REVERSAL = [
    ("{old} keeps {problem} in {svc}. Let's move {obj} over to {new}.",
     "Done: {svc} now uses {new} for {obj}, and {old} is gone from {file}. {Reason}."),
    ("change of plan on {svc}: drop {old} and go with {new} for {obj}. It keeps {problem}.",
     "Migrated {svc} to {new}. I left a flag for a week in case we have to roll back to {old}."),
    ("We're reverting the {old} decision for {svc}'s {obj}; it keeps {problem}. {new} instead.",
     "Switched {file} to {new} and marked the {old} ADR as superseded."),
    ("{svc} can't stay on {old} for {obj}, it keeps {problem}. What about {new}?",
     "{new} fits: {reason}. I've replaced {old} in {file} and rerun the suite."),
]
REVERSAL_Q = [
    "What does {svc} use for {objq} now?",
    "After the back and forth, which {qnoun} is {svc} on for {objq}?",
    "What's the current {qnoun} behind {svc}'s {objq}?",
    "Is {svc} still on the original choice for {objq}, or what replaced it?",
]
UNDECIDED = [
    ("Should {svc} look at {opt} or {alt} for {obj} too?",
     "Not yet: {svc} has no need for a {noun} until the volume grows. Let's revisit next quarter."),
    ("someone suggested {opt} for {svc}'s {obj}, thoughts?",
     "It would work, but {svc} is fine as it is; I'd not change the {noun} without a reason."),
]

# Follow-up storylines: a session whose first prompt sets the topic, then short prompts whose
# turns only make sense with it. Each gives two questions, answered by the follow-up turns.
STORIES = [
    dict(
        kind="flaky-test",
        topic=("test {test} in {svc} fails on CI about one run in {n}; locally it's green. Can you dig in?",
               "It fails in teardown, after the assertions pass. My first guess is state shared between tests."),
        f1=(["rerun?", "rerun with the seed pinned?", "try it again?", "and if you run it 50 times?"],
            "Ran it {m} times with the seed pinned: {fails} failures, always at the same line. The cause is {cause}."),
        f2=(["then drop it", "ok, remove it then", "just get rid of it", "fine, drop that"],
            "Dropped {thing}; {fixed}."),
        slots=lambda r: dict(zip(("cause", "thing", "fixed"), r.choice([
            ("the shared Postgres fixture leaking rows between cases", "the shared fixture",
             "each case now gets its own schema and 200 runs were clean"),
            ("a global clock mock that is never reset", "the global clock mock",
             "time is injected per case now and the suite is stable"),
            ("two cases binding the same temporary port", "the hard-coded port",
             "every case asks the OS for a free port now"),
            ("a temp directory reused across parallel workers", "the shared temp directory",
             "each worker creates its own and nothing collides")]))),
        q1=["Why was {test} flaky?", "What made {test} fail now and then on CI?"],
        q2=["What did we remove to make {test} reliable?", "How was {test} finally stabilised?"],
    ),
    dict(
        kind="latency",
        topic=("{svc} p99 went from {a}ms to {b}ms after release {ver}. What changed?",
               "The diff since the previous release touches the {area}; I'll profile it under load before guessing."),
        f1=(["profile it?", "numbers?", "anything?", "found it?"],
            "Under load {pct}% of the time is spent in {hotspot}. That is the regression."),
        f2=(["revert it", "then roll that back", "undo it", "back it out"],
            "Reverted {change}; p99 is back to {a2}ms on the canary."),
        slots=lambda r: dict(zip(("area", "hotspot", "change"), r.choice([
            ("serializer", "serde_json::to_value on every response", "the generic response wrapper"),
            ("connection pool", "waiting for a pool slot, since max_connections dropped to 4",
             "the pool size change"),
            ("auth middleware", "verifying the JWT signature twice per request", "the duplicated verifier layer"),
            ("logging layer", "formatting debug fields that are then filtered out", "the eager field formatting")]))),
        q1=["What was eating the time after {svc} {ver} shipped?", "Where did the extra latency in {svc} {ver} come from?"],
        q2=["How did we get {svc}'s tail latency back down after {ver}?", "What fixed the {ver} slowdown in {svc}?"],
    ),
    dict(
        kind="migration",
        topic=("migration {mig} on {svc} fails in staging with {err}.",
               "It fails on the ALTER TABLE step, the earlier steps commit fine. Looking at the data next."),
        f1=(["why?", "cause?", "what's going on?", "and?"],
            "The column {col} has {nulls} NULL rows in staging and the migration adds NOT NULL without a default."),
        f2=(["backfill then", "then fix the data", "do that", "ok go"],
            "Backfilled {col} with {default} in batches of 10k, then re-ran it: it passed in {secs}s."),
        slots=lambda r: dict(col=r.choice(["country_code", "currency", "tax_region", "plan_tier", "locale"]),
                             default=r.choice(["'XX'", "'EUR'", "'none'", "'free'", "'en'"]),
                             err=r.choice(["SQLSTATE 23502", "error 1138", "NOT NULL violation"])),
        q1=["Why did {mig} break on staging?", "What stopped {mig} from applying in staging?"],
        q2=["How did we get {mig} through in the end?", "What did it take to finish {mig}?"],
    ),
    dict(
        kind="upgrade",
        topic=("upgrading {dep} to {ver} in {svc} breaks the build with {err}.",
               "The error comes from a transitive crate, not our code. Checking which version cargo resolved."),
        f1=(["workaround?", "any way around it?", "fix?", "options?"],
            "Pin {dep2} to {ver2}: the new release needs it and cargo keeps resolving an older one from the lockfile."),
        f2=(["do it", "ok pin it", "go ahead", "sure"],
            "Pinned {dep2} = \"{ver2}\" in Cargo.toml; the build and all {ntests} tests pass."),
        slots=lambda r: dict(dep2=r.choice(["http-body", "tokio-util", "rustls-pki-types", "bytes", "h2"]),
                             ver2=r.choice(["1.0.1", "0.7.12", "1.9.0", "1.7.2", "0.4.6"]),
                             err=r.choice(["E0277 on a trait bound", "E0599 no method found", "a linker error"])),
        q1=["What was the workaround when the {dep} {ver} upgrade broke {svc}?",
            "How do we get past the build failure from bumping {dep} to {ver}?"],
        q2=["Did {svc} build and pass its tests after the {dep} {ver} bump?",
            "Where did the {dep} {ver} upgrade in {svc} end up?"],
    ),
]

# Facts said in passing, inside a longer session.
FACTS = [
    ("btw the {svc} staging database is behind pgbouncer on port {port}, not 5432",
     "Noted, I'll point the {svc} staging config at {port} so it goes through the pooler.",
     ["Which port gives {svc} pooled connections in staging?", "How do I reach {svc}'s staging DB through the pooler?"]),
    ("the {svc} nightly job must finish before {hh}:{mm} UTC or the finance reconciliation breaks",
     "Then I'll add an alert when the {svc} nightly job is still running at {hh2}:{mm} UTC.",
     ["What's the cutoff time for {svc}'s nightly run?", "By when does the {svc} nightly batch have to be done?"]),
    ("error {code} from {svc} means the upstream clock drifted; restart chronyd on the node, don't redeploy",
     "Added that to the {svc} runbook under {code}: restart chronyd, no redeploy.",
     ["What should on-call do when {svc} throws {code}?", "How do we handle {code} coming out of {svc}?"]),
    ("{svc} must never log the {field} field, the auditor flagged it in the last review",
     "I've added {field} to the redaction list in {svc}'s log layer.",
     ["Which field is {svc} forbidden to write into logs?", "What data can't appear in {svc} logs?"]),
    ("{svc} reads its Redis address from {envvar}; the old REDIS_URL points at a decommissioned cluster",
     "Switched the {svc} config loader to {envvar} and deleted the REDIS_URL fallback.",
     ["Which environment variable holds {svc}'s Redis address?", "Where does {svc} get its cache endpoint from?"]),
    ("the {svc} websocket idle timeout is {sec} seconds because the load balancer cuts idle connections at 60",
     "Good to know; I'll keep the {svc} keepalive ping under {sec} seconds.",
     ["Why is the {svc} websocket timeout set just under a minute?", "What limit forced {svc}'s idle timeout?"]),
    ("one {svc} pod saturates at {rps} requests per second, CPU-bound in the JSON encoder",
     "So for the peak target we need at least {pods} {svc} pods; I'll set the HPA minimum there.",
     ["How much traffic can a single {svc} pod handle?", "What's the per-pod ceiling for {svc}?"]),
    ("component {comp} is the only one allowed to write to {svc}'s ledger_entries table",
     "I'll enforce it with a grant: only {comp}'s database role gets INSERT on ledger_entries.",
     ["Which component may write ledger_entries in {svc}?", "Who is permitted to insert into {svc}'s ledger_entries?"]),
]

# Routine work: the bulk of every history, on the same services and vocabulary.
ROUTINE = [
    ("add a unit test for {fn} in {svc}",
     "Added test_{fn}_handles_empty_input in tests/{mod}.rs; it covers the empty and overflow cases and all {n} tests pass."),
    ("rename {fn} to {fn2} across {svc}", "Renamed {fn} to {fn2} in {k} files; cargo check and clippy are clean."),
    ("why does clippy warn about {lint} in src/{mod}.rs?", "Because {lwhy}. I changed it to {lfix}."),
    ("write a doc comment for {fn} in {svc}",
     "Added a doc comment on {fn} saying what it returns on an empty batch and when it errors."),
    ("the {svc} Docker build is slow",
     "Moved the dependency layer before COPY src, so rebuilds of {svc} drop from {a}s to {b}s."),
    ("bump {dep} in {svc}", "Bumped {dep} to {dver}; nothing in {svc} used the changed APIs, tests pass."),
    ("add a /healthz endpoint to {svc}",
     "Added /healthz to {svc}: it returns 200 with the build sha and checks the database connection."),
    ("log the request id in {svc}", "Every log line in {svc} now carries request_id, taken from X-Request-Id."),
    ("speed up {svc}'s CI", "Cached the target dir and split tests into {k} shards; CI went from {a} to {b} minutes."),
    ("explain what {fn} in {svc} does",
     "{fn} loads the batch, validates each row against the tenant's schema and returns the rows it rejected."),
    ("what's the retry count in {svc}'s {mod} client right now?",
     "It retries {k} times with a 200 ms base delay; the numbers are in config/{svc}.toml."),
    ("who owns {svc}?", "The {team} team owns {svc}; incidents page their on-call rotation first."),
    ("add metrics for {fn}", "Added a histogram for {fn} duration and a counter for its failures, exported on /metrics."),
    ("the {svc} build fails with E0382 in src/{mod}.rs", "A value was moved into the closure; I borrow it now and it builds."),
    ("make {fn} async", "Made {fn} async and awaited it at the {k} call sites; the blocking file read moved to spawn_blocking."),
    ("tidy up the {mod} module in {svc}", "Split {mod}.rs into two files and removed {k} unused imports; behaviour unchanged."),
    ("can you review my change to {fn}?", "Looks right; one nit: the early return skips the metric, so move it after the timer."),
    ("why is {svc} using so much memory?",
     "The {mod} cache has no size bound; I capped it at {k}k entries with LRU eviction."),
]
FOLLOW = [
    ("and the tests?", "All {n} tests pass, including the new ones for {fn}."),
    ("commit it", "Committed as {sha}: \"{mod}: tidy {fn}\"."),
    ("looks good", "Great, leaving {fn} as it is; the PR is ready for review."),
    ("any other call sites?", "{k} more in src/{mod}.rs; I updated them the same way."),
    ("push it", "Pushed {sha} to the branch; CI run #{ci} is going."),
]


def _slots(r, svc, extra=None):
    fn, fn2 = r.sample(FUNCS, 2)
    dep, dver = r.choice(DEPS)
    lint = r.choice(LINTS)
    s = dict(svc=svc, fn=fn, fn2=fn2 + "_v2", mod=r.choice(MODULES), n=r.randint(40, 400), k=r.randint(2, 12),
             a=r.randint(90, 400), b=r.randint(10, 80), dep=dep, dver=dver, team=r.choice(TEAMS),
             lint=lint[0], lwhy=lint[1], lfix=lint[2], sha=f"{r.getrandbits(28):07x}",
             ci=r.randint(1000, 9999))
    s.update(extra or {})
    return s


def _cap(s):
    return s[0].upper() + s[1:]


class _Builder:
    def __init__(self, r, project, services):
        self.r, self.project, self.services = r, project, services
        self.sessions = []  # (day offset, [(prompt, reply, key)], harness)
        self.seen = set()

    def session(self, day, turns):
        self.sessions.append((day, turns, self.r.choice(HARNESSES)))
        return len(self.sessions) - 1

    def routine_turns(self, svc, n):
        """n turns of routine work on one service, none repeating a reply already in the history."""
        r = self.r
        turns = []
        while len(turns) < n:
            u, a = r.choice(FOLLOW if turns and r.random() < 0.5 else ROUTINE)
            s = _slots(r, svc)
            turn = (u.format(**s), a.format(**s), None)
            if turn[1] not in self.seen:  # a reply said twice could not be told apart when injected
                self.seen.add(turn[1])
                turns.append(turn)
        return turns

    def wrap(self, svc, key_turns, before=(0, 2), after=(0, 2)):
        """A key turn inside a realistic session: some routine work on the same service around it."""
        r = self.r
        pre = self.routine_turns(svc, r.randint(*before)) if r.random() < 0.7 else []
        nb = r.randint(*after)
        post = self.routine_turns(svc, nb) if nb else []
        return pre + key_turns + post


N_SERVICES, N_DECISIONS, N_REVERSED, N_STORIES, N_FACTS, N_ROUTINE = 6, 8, 3, 3, 3, 110


def generate_project(r, idx):
    """One project's history: ~150 sessions on six services over 150 days, and its questions."""
    project = f"{PROJECTS[idx % len(PROJECTS)]}-{idx // len(PROJECTS) + 1}"
    services = r.sample(SERVICES, N_SERVICES)
    b = _Builder(r, project, services)
    questions = []  # (qid, category, text, key of evidence turn, key of superseded turn)
    span = 150

    # Decisions: (service, topic) pairs, each service deciding one or two things, a topic decided
    # for at most two services; the first N_REVERSED are reversed later.
    pairs, used = [], {}
    while len(pairs) < N_DECISIONS:
        svc, topic = services[len(pairs) % N_SERVICES], r.choice(sorted(TOPICS))
        if (svc, topic) in pairs or used.get(topic, 0) >= 2:
            continue
        pairs.append((svc, topic))
        used[topic] = used.get(topic, 0) + 1
    for i, (svc, topic) in enumerate(pairs):
        t = TOPICS[topic]
        opt, alt, new = r.sample(t["options"], 3)
        obj, objq = r.choice(t["obj"])
        reason = r.choice(t["reasons"])
        s = dict(svc=svc, noun=r.choice(t["noun"]), obj=obj, opt=opt, alt=alt, reason=reason, Reason=_cap(reason),
                 file=f"config/{svc}.toml", adr=r.randint(3, 60))
        u, a = r.choice(DECISION)
        dkey = f"decision-{i}"
        day = r.uniform(0, span * 0.55)
        b.session(day, b.wrap(svc, [(u.format(**s), a.format(**s), dkey)]))
        qs = dict(svc=svc, qnoun=r.choice(t["qnoun"]), objq=objq)
        if i < N_REVERSED:
            reason2 = r.choice(t["reasons"])
            s2 = dict(svc=svc, obj=obj, old=opt, new=new, problem=r.choice(t["problems"]), reason=reason2,
                      Reason=_cap(reason2), file=f"config/{svc}.toml")
            u, a = r.choice(REVERSAL)
            rkey = f"reversal-{i}"
            b.session(day + r.uniform(10, span * 0.45), b.wrap(svc, [(u.format(**s2), a.format(**s2), rkey)]))
            questions.append((f"{project}/reversal-{i}", "reversal", r.choice(REVERSAL_Q).format(**qs), rkey, dkey))
        else:
            questions.append((f"{project}/decision-{i}", "decision", r.choice(DECISION_Q).format(**qs), dkey, None))
        # The same topic and options discussed for other services, without deciding anything.
        for other in r.sample([x for x in services if x != svc], 2):
            u, a = r.choice(UNDECIDED)
            s3 = dict(s, svc=other)
            b.session(r.uniform(0, span), b.wrap(other, [(u.format(**s3), a.format(**s3), None)]))

    # Follow-up storylines: a session whose first prompt sets the topic, then short follow-ups.
    for j, story in enumerate(r.sample(STORIES, N_STORIES)):
        svc = r.choice(services)
        dep, ver = r.choice(DEPS)
        s = _slots(r, svc, dict(
            test=f"test_{r.choice(FUNCS)}_{r.choice(['roundtrip', 'concurrent', 'retry', 'expiry', 'rollback'])}",
            n=r.randint(3, 9), m=r.choice([20, 50, 100, 200]), fails=r.randint(2, 9), a=r.randint(80, 140),
            b=r.randint(300, 900), a2=r.randint(80, 140), ver=f"v{r.randint(1, 4)}.{r.randint(0, 30)}.{r.randint(0, 9)}",
            pct=r.randint(35, 80), mig=f"{r.randint(10, 99):04d}_{r.choice(['add', 'split', 'drop', 'backfill'])}_"
            f"{r.choice(['accounts', 'orders', 'invoices', 'tenants'])}", nulls=r.randint(12, 4000),
            secs=r.randint(4, 90), dep=dep, ntests=r.randint(100, 900)))
        s.update(story["slots"](r))
        if story["kind"] == "upgrade":
            s["ver"] = ver
        k1, k2 = f"story-{j}-cause", f"story-{j}-action"
        turns = [(story["topic"][0].format(**s), story["topic"][1].format(**s), None),
                 (r.choice(story["f1"][0]), story["f1"][1].format(**s), k1),
                 (r.choice(story["f2"][0]), story["f2"][1].format(**s), k2)]
        b.session(r.uniform(0, span), turns + b.routine_turns(svc, r.randint(0, 2)))
        questions.append((f"{project}/{story['kind']}-cause", "follow-up", r.choice(story["q1"]).format(**s), k1, None))
        questions.append((f"{project}/{story['kind']}-action", "follow-up", r.choice(story["q2"]).format(**s), k2, None))

    # Facts said in passing, in the middle of routine sessions.
    for j, (u, a, qt) in enumerate(r.sample(FACTS, N_FACTS)):
        svc = r.choice(services)
        hh = r.randint(2, 6)
        s = dict(svc=svc, port=r.choice([6432, 6543, 7432, 15432]), hh=f"{hh:02d}", hh2=f"{hh - 1:02d}",
                 mm=r.choice(["00", "15", "30", "45"]), code=f"E{r.randint(1000, 9999)}",
                 field=r.choice(["card_last4", "iban", "date_of_birth", "passport_no"]),
                 envvar=r.choice(["REDIS_URL_PRIMARY", "CACHE_ENDPOINT", "REDIS_MAIN_URL"]), sec=r.choice([45, 50, 55]),
                 rps=r.randint(900, 2400), pods=r.randint(4, 12), comp=f"c{r.randint(1000, 9999)}")
        key = f"fact-{j}"
        b.session(r.uniform(0, span), b.wrap(svc, [(u.format(**s), a.format(**s), key)], before=(1, 3), after=(1, 2)))
        questions.append((f"{project}/fact-{j}", "fact", r.choice(qt).format(**s), key, None))

    # Routine sessions: the bulk of the history.
    for _ in range(N_ROUTINE):
        svc = r.choice(services)
        b.session(r.uniform(0, span), b.routine_turns(svc, r.randint(1, 6)))

    # Lay the sessions out in time; a session's turns are minutes apart.
    turns, keyed = [], {}
    for n, (day, ts_turns, harness) in enumerate(sorted(b.sessions, key=lambda x: x[0])):
        sid = f"{project}-{harness}-{n:03d}-{r.getrandbits(32):08x}"
        ts = START + idx * 3 * DAY + int(day * DAY) + r.randint(8, 18) * 3600
        for i, (prompt, reply, key) in enumerate(ts_turns):
            ts += r.randint(60, 420)
            t = Turn(f"{sid}#{i}", sid, harness, ts, prompt, reply)
            turns.append(t)
            if key:
                keyed[key] = t
    turns.sort(key=lambda t: t.ts)
    qs = []
    for qid, cat, text, key, superseded in questions:
        ev = keyed[key]
        q = Question(qid, cat, text, {ev.session}, {ev.tid})
        if superseded:
            q.current_turn = ev.tid
            q.superseded_turns = {keyed[superseded].tid}
        qs.append(q)
    return Haystack(project, turns, qs)


def generate(seed, n_projects):
    r = random.Random(seed)
    return [generate_project(random.Random(r.getrandbits(64)), i) for i in range(n_projects)]


if __name__ == "__main__":
    import sys

    from units import shared_words

    hs = generate(int(sys.argv[1]) if len(sys.argv) > 1 else 8, 2)
    for h in hs:
        print(f"== {h.hid}: {len(h.turns)} turns, {len({t.session for t in h.turns})} sessions")
        by = {t.tid: t for t in h.turns}
        for q in h.questions:
            ev = by[next(iter(q.evidence_turns))]
            print(f"[{q.category}] {q.text}\n    -> ({ev.harness}) {ev.prompt!r} / {ev.reply!r}\n    shared: {shared_words(q.text, ev.text)}")
