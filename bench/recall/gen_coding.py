"""Generated coding-agent histories with known answers, built to be hard the way real histories
are: questions paraphrase (descriptions of a thing instead of its name, synonyms, other word
order), and each shares at most 3 content words with the turns that answer it (enforced; the
count is reported). Histories span five harnesses and five months: decisions, revisions of them
weeks later in other words from another harness, debugging sessions whose answers are short
follow-ups, facts said in passing (asked by identifier or in prose), questions whose answer is
spread over two or three sessions, and facts in Chinese, Japanese, Korean, German and English
with emoji, asked in their language. Most turns are distractors on the same services and topics.

Every phrasing list is split in two: the `dev` split draws the even entries and the `held` split
the odd ones (question templates, paraphrases, and the history's own wording alike), so a ranker
tuned on one split is measured on phrasings it has not seen. Seeded; never tuned against any
ranker's output."""

import random

from units import Haystack, Question, Turn, shared_words

HARNESSES = ("claude-code", "codex", "cursor", "gemini-cli", "cline")
START = 1735689600  # 2025-01-01T00:00:00Z: histories start here, so every date is reproducible
DAY = 86400
MAX_SHARED = 3  # content words a question may share with its answer turns
SPLITS = ("dev", "held")

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


def pick(r, options, split):
    """One of `options` from the split's half (even entries for dev, odd for held; a list of one
    serves both)."""
    half = options[SPLITS.index(split)::2] or options
    return r.choice(half)


# What people decide about, as they name it in the history (`names`) and as they later describe it
# when they ask (`descs`, never the name), with the choices on the table, reasons and problems.
# `objs`: what it is for, as (the history's words, the question's words).
TOPICS = {
    "deploy": dict(
        names=["deploy pipeline", "CD setup", "release pipeline", "deployment job"],
        descs=["the thing that ships our code", "the tool that pushes builds out to prod",
               "the machinery that puts a release live", "the system that gets code to production"],
        objs=[("production releases", "go-lives"), ("the EU cluster", "the European region"),
              ("hotfixes", "urgent patches")],
        options=["Jenkins on ci.internal:8080", "GitHub Actions with environments", "ArgoCD watching the deploy repo",
                 "Spinnaker with manual judgement", "a Makefile target run from a laptop"],
        reasons=["rollbacks are one click", "the ops team already runs it", "every change is a reviewed commit",
                 "it costs nothing extra"],
        problems=["queueing jobs for an hour on Mondays", "leaking credentials into build logs",
                  "drifting from what the cluster really runs", "needing a person awake at 3am"]),
    "broker": dict(
        names=["message broker", "event bus", "queueing system", "pub/sub"],
        descs=["the thing that carries events between services", "the piece that moves messages around",
               "the channel one service uses to tell another that something happened", "the async plumbing"],
        objs=[("order events", "purchase notifications"), ("outbox messages", "pending outgoing records"),
              ("webhook deliveries", "callbacks to customers")],
        options=["Kafka", "RabbitMQ", "NATS JetStream", "Amazon SQS", "Redis Streams"],
        reasons=["it keeps a replayable log for a week", "ordering per key is built in", "it needs no extra cluster",
                 "consumer lag is easy to watch"],
        problems=["dropping messages under replay load", "falling behind during the nightly batch",
                  "costing too much at our volume", "losing ordering across partitions"]),
    "datastore": dict(
        names=["primary database", "datastore", "system of record", "main DB"],
        descs=["the place where the records actually live", "the place rows get persisted",
               "our source of truth for data", "the thing everything is saved into"],
        objs=[("tenant records", "customer accounts"), ("the audit trail", "who-did-what history"),
              ("session data", "logged-in state")],
        options=["PostgreSQL 16", "MySQL 8", "CockroachDB", "DynamoDB", "SQLite in WAL mode"],
        reasons=["we need row-level security", "point-in-time recovery is cheap", "it scales writes horizontally",
                 "there is no server to run"],
        problems=["hot-partitioning on the tenant key", "replication lag above two seconds",
                  "the licence cost at the new tier", "lock contention during the monthly close"]),
    "cache": dict(
        names=["cache layer", "caching tier", "read cache", "cache"],
        descs=["the fast lookup in front of the database", "the thing that keeps hot reads from hitting disk",
               "the memory layer that saves us round trips", "the spot where computed answers are kept a while"],
        objs=[("price lookups", "price quotes"), ("profile reads", "user details"),
              ("permission checks", "access rules")],
        options=["Redis 7 with a 5 minute TTL", "Memcached", "an in-process LRU of 50k entries", "Varnish at the edge"],
        reasons=["invalidation stays in one place", "there is no network hop", "the hit rate was 97% in the test",
                 "it survives restarts"],
        problems=["serving stale prices for an hour", "evicting everything at peak", "splitting brain after a failover",
                  "eating the pod's memory"]),
    "retries": dict(
        names=["retry policy", "backoff strategy", "retry settings", "retry logic"],
        descs=["the rule for trying again when a call fails", "the behaviour after an upstream error",
               "the rules for giving a failed request another go", "the way we hammer a flaky dependency"],
        objs=[("webhook sends", "outgoing notifications"), ("database writes", "saves"),
              ("calls to the tax service", "tax lookups")],
        options=["3 retries with exponential backoff capped at 2 s", "no retries, fail fast and alert",
                 "5 retries with full jitter", "a single retry after 500 ms"],
        reasons=["the upstream recovers within a second or two", "duplicates are worse than failures",
                 "thundering herds took us down last time", "latency budgets are tight"],
        problems=["amplifying an outage at the upstream", "creating duplicate charges", "blowing the latency SLO",
                  "hiding a broken dependency for hours"]),
    "image": dict(
        names=["base image", "Docker base", "container image", "runtime image"],
        descs=["the thing our containers are built FROM", "the starting layer for every build",
               "the OS our pods boot into", "the foundation under each container"],
        objs=[("the release images", "shipped artifacts"), ("CI builds", "the build bots"),
              ("the worker containers", "background job boxes")],
        options=["distroless cc", "alpine 3.20", "debian bookworm-slim", "ubuntu 24.04 minimal"],
        reasons=["the attack surface is tiny", "it is the smallest we tested", "glibc avoids the musl DNS quirks",
                 "the security team already scans it"],
        problems=["musl's DNS resolver timing out", "having no shell for debugging", "CVE noise from unused packages",
                  "pulls taking minutes"]),
    "flags": dict(
        names=["feature flag system", "flag service", "toggle provider", "feature toggles"],
        descs=["the switches that turn things on per customer", "the way we dark-launch stuff",
               "the on/off knobs for unfinished work", "the thing that lets us enable code without a redeploy"],
        objs=[("the new checkout", "the rewritten purchase flow"), ("beta features", "early-access work"),
              ("tenant rollouts", "gradual launches to clients")],
        options=["Unleash self-hosted", "LaunchDarkly", "environment variables read at start", "a flags table in Postgres"],
        reasons=["targeting by tenant is built in", "nobody has to run it", "there is nothing to go down",
                 "flags live next to the data"],
        problems=["stale flags after a restart", "the per-seat price", "a full redeploy for every change",
                  "cache invalidation bugs"]),
    "auth": dict(
        names=["auth provider", "identity provider", "login system", "SSO"],
        descs=["the way users prove who they are", "the thing that handles sign-in", "the thing that issues our tokens",
               "the place where passwords and sessions are checked"],
        objs=[("the admin console", "back-office staff"), ("the public API", "third-party integrators"),
              ("the mobile app", "phone users")],
        options=["Keycloak", "Auth0", "Okta with SAML", "home-grown JWT signing with Ed25519 keys"],
        reasons=["we need SCIM provisioning", "it is free to self-host", "enterprise customers ask for it",
                 "we control key rotation"],
        problems=["token refresh storms at 9am", "a five-figure invoice", "SAML assertions timing out",
                  "keys nobody rotated for a year"]),
    "logs": dict(
        names=["log format", "logging setup", "log output", "structured logging"],
        descs=["the shape of what we print for ops", "the way lines in the log viewer look",
               "the stuff written to stdout for later digging", "our diagnostics text"],
        objs=[("request logs", "per-call traces"), ("error reports", "failures"), ("job logs", "batch output")],
        options=["JSON lines", "logfmt", "OpenTelemetry logs over OTLP", "plain text with a request id"],
        reasons=["Loki parses it without a pipeline", "it is readable in a terminal", "traces and logs correlate",
                 "the SIEM ingests it directly"],
        problems=["blowing up the Loki bill", "breaking the SIEM parser", "losing multi-line stack traces",
                  "being unreadable during incidents"]),
    "tests": dict(
        names=["test runner", "test harness", "testing setup", "CI test step"],
        descs=["the thing that executes the suite", "the tool that checks nothing broke",
               "the way we verify a change before merge", "the thing running assertions on every push"],
        objs=[("the integration suite", "end-to-end checks"), ("unit tests", "small isolated checks"),
              ("the contract tests", "API compatibility checks")],
        options=["cargo nextest", "plain cargo test", "nextest with partitioned CI", "cargo-llvm-cov with nextest"],
        reasons=["it runs each test in its own process", "flaky tests get retried and reported",
                 "it shards across CI machines", "coverage comes for free"],
        problems=["hiding flaky failures behind retries", "breaking doctests", "making CI logs unreadable",
                  "doubling the CI minutes"]),
}

# A decision in the history: (user, assistant). {name} is the topic's name, {obj} what it is for.
DECISION = [
    ("For {svc}, which {name} should we use for {obj}: {opt} or {alt}?",
     "{opt}. {Reason}. {alt} would work too, but we would be running it only for this. I'll wire {svc} to {opt} in {file}."),
    ("Let's standardise {svc} on {opt} as the {name} for {obj}; {reason}.",
     "Agreed. I switched {file} to {opt} and deleted the {alt} stub we had been carrying."),
    ("I compared {opt} and {alt} as {name} options for {svc}. {Reason}, so I lean to {opt}.",
     "Then {opt} it is for {obj} on {svc}. The settings live in {file} and the ADR is docs/adr/{adr:04d}.md."),
    ("decision for the record: {svc} uses {opt} as its {name} for {obj} from now on",
     "Recorded in docs/adr/{adr:04d}.md: {opt} for {obj}, because {reason}. {alt} stays out."),
    ("We need a {name} for {obj} in {svc}. Options on the table are {opt} and {alt}, what do you think?",
     "Go with {opt}: {reason}. I've added it to {file} behind the existing interface so switching later stays cheap."),
    ("{svc} {name}: going with {opt} for {obj}, unless you see a problem",
     "No problem from me: {reason}. Wired in {file}; {alt} is not needed."),
]
# A revision weeks later, in other words, from another harness: the old choice is usually named,
# sometimes only implied ("the old setup").
REVISION = [
    ("{old} keeps {problem} in {svc}. Let's move {obj} over to {new}.",
     "Done: {svc} now runs {new} for {obj}, and {old} is gone from {file}. {Reason}."),
    ("change of plan on {svc}: we drop {old} and go with {new}, it keeps {problem}.",
     "Migrated {svc} to {new}. I left a flag for a week in case we have to roll back."),
    ("We're undoing what we picked for {obj} on {svc} back then; it keeps {problem}. {new} instead.",
     "Switched {file} to {new} and marked the earlier ADR as superseded."),
    ("{svc} can't stay on the current setup for {obj}, it keeps {problem}. What about {new}?",
     "{new} fits: {reason}. I've replaced the old one in {file} and rerun the suite."),
    ("new direction for {svc}: {new} replaces {old}. Reason: {problem}.",
     "Replaced it everywhere in {file}; {new} is live for {obj} as of today."),
    ("honestly {old} was a mistake for {svc}, {problem}. swap to {new}",
     "Swapped: {new} now, {old} removed. {Reason}."),
]
UNDECIDED = [
    ("Should {svc} look at {opt} or {alt} as a {name} too?",
     "Not yet: {svc} has no need for {opt} or {alt} until the volume grows. Let's revisit next quarter."),
    ("someone suggested {opt} for {svc}'s {obj}, thoughts?",
     "{opt} would work, but {svc} is fine as it is; I'd not change the {name} without a reason."),
    ("is {alt} any good as a {name}? thinking about {svc}",
     "{alt} is solid, but the migration cost for {svc}'s {obj} is not worth it right now."),
    ("what would it take to run {obj} for {svc} on {opt}?",
     "About a week: new {name} config in {file}, a load test, and a runbook. Nobody has asked for {opt} yet."),
]
# Questions: {desc} describes the topic, {objq} what it is for, {who} names the service (or describes it).
DECISION_Q = [
    "What did we settle on as {desc} for {who}'s {objq}?",
    "What did we end up picking as {desc} for {objq} in {who}?",
    "Remind me what {who} went with as {desc}?",
    "For {objq}, what does {who} rely on as {desc}?",
    "what's {who} using as {desc} these days, for {objq}?",
    "Do you recall what we chose as {desc} for {who}?",
    "Tell me again which option won as {desc} on {who}.",
    "{who}, {objq}: what was agreed as {desc}?",
]
REVISION_Q = [
    "What does {who} use as {desc} now?",
    "After the back and forth, what is {who} on as {desc}?",
    "What's the current pick for {desc} behind {who}'s {objq}?",
    "Is {who} still on the original choice for {desc}, or what replaced it?",
    "What is {desc} for {who} today?",
    "Which option is {who} running as {desc} at the moment?",
]

# How people refer to a service when they do not name it.
SERVICE_DESCS = {
    "billing-api": ["the invoicing backend", "the service that charges customers"],
    "ledger-worker": ["the bookkeeping job", "the thing that posts journal entries"],
    "auth-gateway": ["the login front door", "the token checker in front of everything"],
    "search-indexer": ["the thing feeding the search box", "the indexing job"],
    "notify-service": ["the service that sends alerts to users", "the push and SMS sender"],
    "checkout-web": ["the purchase pages", "the storefront's pay step"],
    "inventory-sync": ["the stock level syncer", "the job that mirrors warehouse counts"],
    "report-builder": ["the PDF report generator", "the thing producing monthly statements"],
    "media-resizer": ["the thumbnail maker", "the image scaling worker"],
    "user-profile": ["the account details service", "the thing holding user settings"],
    "rate-limiter": ["the throttling service", "the thing that caps callers"],
    "audit-log": ["the compliance trail service", "the who-did-what recorder"],
    "export-runner": ["the data dump job", "the CSV export worker"],
    "webhook-relay": ["the callback forwarder", "the thing posting events to customer URLs"],
    "session-store": ["the logged-in state service", "the cookie backend"],
    "pricing-engine": ["the price calculator", "the thing computing quotes"],
    "geo-lookup": ["the IP-to-country service", "the location resolver"],
    "email-sender": ["the mail-out worker", "the transactional mail service"],
    "metrics-agent": ["the telemetry shipper", "the stats collector on each node"],
    "catalog-api": ["the product listing service", "the backend for item pages"],
    "payout-scheduler": ["the seller payment job", "the thing that pays merchants"],
    "fraud-scorer": ["the risk model service", "the thing flagging suspicious orders"],
    "cart-service": ["the basket backend", "the shopping bag service"],
    "tenant-admin": ["the customer admin console", "the back-office for accounts"],
}

# Questions whose answer is spread over two or three sessions: a subject (named in the history,
# described in the question) hit by separate episodes, weeks apart.
SUBJECTS = [
    dict(name="Stripe webhooks", short="Stripe", descs=["the card processor's callbacks", "the payment provider's notifications"]),
    dict(name="the Postgres read replica", short="the replica", descs=["the read-only copy of the database", "the secondary we read from"]),
    dict(name="the Kafka consumer group", short="Kafka", descs=["the readers pulling off the event stream", "our stream subscribers"]),
    dict(name="the Redis cluster", short="Redis", descs=["the in-memory store", "the key-value box everyone leans on"]),
    dict(name="the S3 uploads bucket", short="S3", descs=["the place user files end up", "object storage for attachments"]),
    dict(name="the Cloudflare WAF", short="Cloudflare", descs=["the edge firewall", "the filter in front of our domains"]),
    dict(name="Sentry", short="Sentry", descs=["the error tracker", "the crash reporting tool"]),
    dict(name="the nightly cron on worker-3", short="worker-3", descs=["the scheduled overnight job", "the 2am batch"]),
]
EPISODES = [
    ("{subj} started failing for {svc} with {err} after {change}",
     "Found it: {cause}. I {fix}, and {subj} is healthy again for {svc}."),
    ("{svc} is seeing {err} from {subj} again, different cause this time?",
     "Yes, different: {cause}. {Fix} and added an alert on {subj}."),
    ("postmortem notes for {svc}: {subj} outage, {err} for {mins} minutes",
     "Root cause of the {subj} outage was {cause}. Action item done: we {fix}."),
    ("can you look at {subj}? {svc} logs show {err} since this morning",
     "{Cause}. I {fix}; {svc}'s errors from {subj} stopped within a few minutes."),
]
EPISODE_SLOTS = [
    ("a certificate that expired over the weekend", "renewed it and put the renewal under cert-manager"),
    ("a connection limit of 100 that the new pods exceeded", "raised max_connections to 300 and added pooling"),
    ("clock skew on two nodes", "restarted chronyd and pinned the NTP pool"),
    ("a secret rotated in vault but not in the deployment", "re-synced the secret and made the operator watch it"),
    ("a schema change that dropped a column still being read", "restored the column and added a two-step migration rule"),
    ("disk filling up with old WAL segments", "set archive cleanup and a 20 GiB alert"),
    ("an IP allow-list missing the new NAT gateway", "added the gateway's address and documented it in infra/README"),
    ("a client library upgrade that changed the default timeout to 1 s", "set the timeout back to 10 s explicitly"),
    ("a region failover that left DNS pointing at the old primary", "lowered the TTL and scripted the DNS switch"),
    ("a payload over the 256 KB limit", "moved the large field to object storage with a pointer"),
]
EPISODE_ERRS = ["HTTP 502", "ECONNRESET", "timeouts", "401 Unauthorized", "SSL handshake failures", "HTTP 429",
                "connection refused", "duplicate key errors"]
EPISODE_CHANGES = ["the Tuesday release", "the node pool upgrade", "the key rotation", "the traffic spike on Friday",
                   "the move to the new VPC", "last night's config push"]
MULTI_Q = [
    "What problems have we had with {desc}, and how was each fixed?",
    "List every time {desc} broke and what we did about it.",
    "How many separate incidents involved {desc}, and what were the causes?",
    "Give me the history of trouble with {desc}.",
    "What went wrong over time with {desc}?",
    "Summarise the outages around {desc} and their fixes.",
]

# Facts said in passing. `id_q`: questions that name the fact's identifier; `prose_q`: questions
# that only describe it. Slots are filled per project.
FACTS = [
    ("btw the {svc} staging database is behind pgbouncer on port {port}, not 5432",
     "Noted, I'll point the {svc} staging config at {port} so it goes through the pooler.",
     ["Is {port} the right number for {who} in staging?", "What is port {port} used for on {who}?"],
     ["Which number do I connect to for {who}'s pre-prod connection pooling?",
      "How do I reach {who}'s test-environment DB without opening direct connections?"]),
    ("the {svc} nightly job must finish before {hh}:{mm} UTC or the finance reconciliation breaks",
     "Then I'll add an alert when the {svc} nightly job is still running at {hh2}:{mm} UTC.",
     ["What happens if {who} runs past {hh}:{mm}?", "Why does {hh}:{mm} UTC matter for {who}?"],
     ["By when does {who}'s overnight batch have to be done?", "What's the cutoff for the after-hours work on {who}?"]),
    ("error {code} from {svc} means the upstream clock drifted; restart chronyd on the node, don't redeploy",
     "Added that to the {svc} runbook under {code}: restart chronyd, no redeploy.",
     ["{code} just fired, what do I do?", "What does {code} mean and how do we handle it?"],
     ["What should on-call do when {who} complains about time being off?",
      "How do we recover when {who}'s host time goes out of sync?"]),
    ("{svc} must never log the {field} field, the auditor flagged it in the last review",
     "I've added {field} to the redaction list in {svc}'s log layer.",
     ["Can {field} show up in {who}'s output?", "Why is {field} scrubbed for {who}?"],
     ["Which piece of customer data is {who} forbidden to write into its output?",
      "What sensitive value did compliance tell {who} to keep out of diagnostics?"]),
    ("{svc} reads its Redis address from {envvar}; the old REDIS_URL points at a decommissioned cluster",
     "Switched the {svc} config loader to {envvar} and deleted the REDIS_URL fallback.",
     ["What is {envvar} for in {who}?", "Which service reads {envvar}?"],
     ["Which environment setting tells {who} where its cache lives?", "Where does {who} get its key-value endpoint?"]),
    ("the {svc} websocket idle timeout is {sec} seconds because the load balancer cuts idle connections at 60",
     "Good to know; I'll keep the {svc} keepalive ping under {sec} seconds.",
     ["Why {sec} seconds for {who}?", "Where does the {sec} s number on {who} come from?"],
     ["Why is {who}'s socket cutoff set just under a minute?", "What forced the quiet-connection limit on {who}?"]),
    ("one {svc} pod saturates at {rps} requests per second, CPU-bound in the JSON encoder",
     "So for the peak target we need at least {pods} {svc} pods; I'll set the HPA minimum there.",
     ["Is {rps} rps the ceiling for {who}?", "Where does the {rps} figure for {who} come from?"],
     ["How much traffic can a single replica of {who} handle?", "What's the per-instance throughput limit of {who}?"]),
    ("component {comp} is the only one allowed to write to {svc}'s ledger_entries table",
     "I'll enforce it with a grant: only {comp}'s database role gets INSERT on ledger_entries.",
     ["What may {comp} do that nothing else can?", "Why does {comp} have special rights?"],
     ["Who is permitted to add rows to {who}'s bookkeeping table?", "Which part of the system alone may write the journal for {who}?"]),
    ("the {svc} API key for the maps vendor sits in vault at secret/{svc}/maps, rotated every {days} days",
     "I'll make the sidecar read secret/{svc}/maps and alert {days2} days before rotation.",
     ["What lives at secret/{svc}/maps?", "How often is secret/{svc}/maps rotated?"],
     ["Where is {who}'s credential for the mapping provider kept?", "How do I find the location-vendor token for {who}?"]),
    ("feature flag {flag} in {svc} must stay off for EU tenants until legal signs off the consent banner",
     "I've put an EU tenant guard around {flag} in {svc}.",
     ["Can we turn on {flag} for everyone?", "Why is {flag} restricted?"],
     ["Why can't European customers get the new behaviour on {who} yet?",
      "What is blocking the launch for customers in Europe on {who}?"]),
]

# Facts in other languages and scripts, asked in their language: (lang, user, assistant,
# questions). Distractors in the same language follow.
MULTILINGUAL = [
    ("zh", "记一下：{svc} 的部署流程跑在 Jenkins 上，地址是 ci.internal:{port}，每次发布都走这条流水线。",
     "好的，已经记下：{svc} 通过 ci.internal:{port} 上的 Jenkins 发布。",
     ["我们把代码推到线上用的是哪个工具？", "上线新版本的时候，是靠什么系统完成的？"]),
    ("zh", "{svc} 的数据库连接池上限改成了 {n} 个，之前的 20 个在高峰期不够用。",
     "明白，已把 {svc} 的连接池上限调到 {n}。",
     ["高峰时段那个服务最多能同时开多少条连接？", "池子的最大容量后来定成多少了？"]),
    ("ja", "メモ：{svc} のログは全部 Loki に送っていて、保存期間は {days} 日です。",
     "了解です。{svc} のログは Loki で {days} 日間保持、と記録しました。",
     ["出力した記録はどこに溜めて、何日残る？", "障害調査用のテキストはどのくらいの期間取っておける？"]),
    ("ja", "{svc} のバッチ処理は毎晩 {hh} 時に始まり、終わらないと翌朝の集計が壊れます。",
     "承知しました。{svc} の夜間ジョブが {hh} 時開始であることをランブックに追加します。",
     ["夜中の定期作業は何時にスタートする？", "深夜に動く仕事の開始時刻はいつ？"]),
    ("ko", "{svc} 의 결제 재시도는 최대 {k}번이고, 그 이후에는 운영팀에 알림이 갑니다.",
     "알겠습니다. {svc} 는 {k}번 재시도 후 운영팀에 알림을 보내도록 설정했습니다.",
     ["돈 받는 요청이 실패하면 몇 번까지 다시 해?", "청구가 안 되면 몇 차례 더 시도한 다음 사람을 불러?"]),
    ("ko", "{svc} 스테이징 서버는 포트 {port} 번을 쓰고, 5432 는 운영 DB 로 바로 연결됩니다.",
     "네, {svc} 스테이징 설정을 {port} 번으로 바꿨습니다.",
     ["테스트 환경에서는 몇 번으로 접속해야 해?", "시험용 서버에 붙을 때 쓰는 번호가 뭐였지?"]),
    ("de", "Zur Info: {svc} speichert Rechnungen jetzt in PostgreSQL 16, weil wir Row-Level-Security brauchen.",
     "Verstanden, {svc} nutzt ab sofort PostgreSQL 16 für die Rechnungen.",
     ["Wo landen die Abrechnungsbelege inzwischen?", "Welches System hält neuerdings unsere Kundenbelege?"]),
    ("de", "Die Größe der Uploads bei {svc} ist auf {mb} MB begrenzt, größere Dateien gehen über vorsignierte URLs.",
     "Alles klar, ich dokumentiere das Limit von {mb} MB für {svc}.",
     ["Wie dick darf eine hochgeladene Datei höchstens sein?", "Ab welchem Umfang müssen Anhänge einen anderen Weg nehmen?"]),
    ("emoji", "🚀 heads-up: {svc} releases are frozen every Friday after 14:00 🧊, no exceptions 🙅",
     "Got it 👍 I'll block merges to {svc}'s main branch on Friday afternoons.",
     ["😅 can I ship something late on the last workday of the week?",
      "Is pushing a build out at the end of the week allowed? 🤔"]),
    ("emoji", "🐛 the {svc} crash was a null pointer in the retry path 🔁, fixed in {sha} ✅",
     "Nice 🎉 I've linked {sha} in the incident ticket for {svc}.",
     ["💥 what caused that blow-up, and which commit fixed it?", "🔍 why did it fall over, and where's the patch?"]),
]
MULTILINGUAL_DISTRACTORS = {
    "zh": [("{svc} 的单元测试又挂了，帮我看看？", "是 {fn} 的断言写错了，已经修好，{n} 个测试全部通过。"),
           ("给 {svc} 加一个健康检查接口", "已添加 /healthz，返回 200 和构建版本号。"),
           ("{svc} 的内存占用太高了", "缓存没有上限，我把它限制在 {k} 万条。")],
    "ja": [("{svc} のテストが落ちています、見てもらえますか？", "{fn} のアサーションが古かったので直しました。全 {n} 件通ります。"),
           ("{svc} にヘルスチェックを追加して", "/healthz を追加しました。ビルド番号を返します。"),
           ("{svc} のビルドが遅い", "依存レイヤーを先にコピーするようにして、{a} 秒から {b} 秒に短縮しました。")],
    "ko": [("{svc} 테스트가 깨졌어요, 봐줄래요?", "{fn} 의 단언이 잘못돼서 고쳤습니다. 테스트 {n}개 모두 통과."),
           ("{svc} 에 헬스체크 엔드포인트 추가해줘", "/healthz 를 추가했습니다. 빌드 해시를 돌려줍니다."),
           ("{svc} 메모리 사용량이 너무 높아", "캐시에 상한이 없어서 {k}만 개로 제한했습니다.")],
    "de": [("Kannst du die Tests von {svc} reparieren?", "Die Assertion in {fn} war veraltet; alle {n} Tests laufen wieder."),
           ("Bitte einen Health-Check für {svc} einbauen", "Ich habe /healthz ergänzt, es liefert den Build-Hash."),
           ("Der Docker-Build von {svc} dauert ewig", "Die Abhängigkeiten werden jetzt zuerst kopiert: {a} s auf {b} s.")],
    "emoji": [("✨ tidy up {svc}'s {mod} module pls", "Done 🧹 split {mod}.rs in two and removed {k} unused imports."),
              ("🔥 {svc} CI is red again", "Fixed ✅ a flaky port binding in the {mod} tests, CI is green."),
              ("📦 bump {dep} in {svc}", "Bumped {dep} to {dver} 🎯 tests pass.")],
}
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
    def __init__(self, r, project, services, split):
        self.r, self.project, self.services, self.split = r, project, services, split
        self.sessions = []  # (day offset, [(prompt, reply, key)], harness)
        self.seen = set()

    def session(self, day, turns, harness=None):
        self.sessions.append((day, turns, harness or self.r.choice(HARNESSES)))
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
        """Key turns inside a realistic session: some routine work on the same service around them."""
        r = self.r
        pre = self.routine_turns(svc, r.randint(*before)) if r.random() < 0.7 else []
        nb = r.randint(*after)
        post = self.routine_turns(svc, nb) if nb else []
        return pre + key_turns + post

    def who(self, svc):
        """The service as a question names it: its name, or (half the time) a description."""
        return svc if self.r.random() < 0.5 else pick(self.r, SERVICE_DESCS[svc], self.split)


N_SERVICES, N_DECISIONS, N_REVISED, N_STORIES, N_FACTS, N_MULTI, N_LANG, N_ROUTINE = 6, 8, 3, 3, 4, 2, 5, 100
SPAN = 150  # days


def _question(r, evidence_text, make, tries=40):
    """A question from `make()` sharing at most MAX_SHARED content words with `evidence_text`:
    the first of `tries` draws that does, else None (the question is left out and counted)."""
    for _ in range(tries):
        q = make()
        if len(shared_words(q, evidence_text)) <= MAX_SHARED:
            return q
    return None


def generate_project(r, idx, split="dev"):
    """One project's history: ~150 sessions on six services over five months, and its questions."""
    project = f"{PROJECTS[idx % len(PROJECTS)]}-{idx // len(PROJECTS) + 1}"
    services = r.sample(SERVICES, N_SERVICES)
    b = _Builder(r, project, services, split)
    # (qid, category, text maker, [evidence keys], superseded key)
    pending = []

    # Decisions, the first N_REVISED revised weeks later from another harness in other words.
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
        obj, objq = pick(r, t["objs"], split)
        reason = r.choice(t["reasons"])
        s = dict(svc=svc, name=pick(r, t["names"], split), obj=obj, opt=opt, alt=alt, reason=reason,
                 Reason=_cap(reason), file=f"config/{svc}.toml", adr=r.randint(3, 60))
        u, a = pick(r, DECISION, split)
        dkey = f"decision-{i}"
        day = r.uniform(0, SPAN * 0.5)
        first_harness = r.choice(HARNESSES)
        b.session(day, b.wrap(svc, [(u.format(**s), a.format(**s), dkey)]), first_harness)

        def make(t=t, svc=svc, objq=objq, templates=REVISION_Q if i < N_REVISED else DECISION_Q):
            return pick(r, templates, split).format(desc=pick(r, t["descs"], split), who=b.who(svc), objq=objq)

        if i < N_REVISED:
            reason2 = r.choice(t["reasons"])
            s2 = dict(svc=svc, obj=obj, old=opt, new=new, problem=r.choice(t["problems"]), reason=reason2,
                      Reason=_cap(reason2), file=f"config/{svc}.toml")
            u, a = pick(r, REVISION, split)
            rkey = f"revision-{i}"
            other = r.choice([h for h in HARNESSES if h != first_harness])
            b.session(day + r.uniform(14, SPAN * 0.45), b.wrap(svc, [(u.format(**s2), a.format(**s2), rkey)]), other)
            pending.append((f"{project}/revision-{i}", "revision", make, [rkey], dkey))
        else:
            pending.append((f"{project}/decision-{i}", "decision", make, [dkey], None))
        # The same topic and options discussed for other services, without deciding anything.
        for other in r.sample([x for x in services if x != svc], 2):
            for _ in range(20):
                u, a = r.choice(UNDECIDED)
                s3 = dict(s, svc=other, name=pick(r, t["names"], split), file=f"config/{other}.toml")
                if a.format(**s3) not in b.seen:
                    break
            b.seen.add(a.format(**s3))
            b.session(r.uniform(0, SPAN), b.wrap(other, [(u.format(**s3), a.format(**s3), None)]))

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
        b.session(r.uniform(0, SPAN), turns + b.routine_turns(svc, r.randint(0, 2)))
        for key, qs in ((k1, story["q1"]), (k2, story["q2"])):
            pending.append((f"{project}/{story['kind']}-{key[-5:]}", "follow-up",
                            lambda qs=qs, s=s: pick(r, qs, split).format(**s), [key], None))

    # Facts said in passing, in the middle of routine sessions: asked by identifier or in prose.
    for j, (u, a, id_q, prose_q) in enumerate(r.sample(FACTS, N_FACTS)):
        svc = r.choice(services)
        hh = r.randint(2, 6)
        s = dict(svc=svc, port=r.choice([6432, 6543, 7432, 15432]), hh=f"{hh:02d}", hh2=f"{hh - 1:02d}",
                 mm=r.choice(["00", "15", "30", "45"]), code=f"E{r.randint(1000, 9999)}",
                 field=r.choice(["card_last4", "iban", "date_of_birth", "passport_no"]),
                 envvar=r.choice(["REDIS_URL_PRIMARY", "CACHE_ENDPOINT", "REDIS_MAIN_URL"]), sec=r.choice([45, 50, 55]),
                 rps=r.randint(900, 2400), pods=r.randint(4, 12), comp=f"c{r.randint(1000, 9999)}",
                 days=r.choice([30, 60, 90]), days2=r.choice([3, 5, 7]), flag=r.choice(
                     ["new_checkout_flow", "smart_retry_v2", "tenant_sso", "fast_export"]))
        key = f"fact-{j}"
        b.session(r.uniform(0, SPAN), b.wrap(svc, [(u.format(**s), a.format(**s), key)], before=(1, 3), after=(1, 2)))
        # The same kind of fact for another service, with other values: what an identifier must tell apart.
        other = r.choice([x for x in services if x != svc])
        s_other = dict(s, svc=other, port=s["port"] + 1, code=f"E{r.randint(1000, 9999)}", comp=f"c{r.randint(1000, 9999)}")
        b.session(r.uniform(0, SPAN), b.wrap(other, [(u.format(**s_other), a.format(**s_other), None)]))
        cat = "identifier" if j % 2 == 0 else "prose"
        qs = id_q if cat == "identifier" else prose_q
        pending.append((f"{project}/{cat}-{j}", cat, lambda qs=qs, s=s, svc=svc: pick(r, qs, split).format(
            **dict(s, who=b.who(svc))), [key], None))

    # Questions spanning sessions: one subject, two or three episodes weeks apart.
    for j, subj in enumerate(r.sample(SUBJECTS, N_MULTI)):
        keys = []
        n_ep = r.choice([2, 3])
        slots = r.sample(EPISODE_SLOTS, n_ep)
        days = sorted(r.uniform(0, SPAN) for _ in range(n_ep))
        for e, ((cause, fix), day) in enumerate(zip(slots, days)):
            svc = r.choice(services)
            u, a = r.choice(EPISODES)
            s = dict(subj=subj["name"], svc=svc, err=r.choice(EPISODE_ERRS), change=r.choice(EPISODE_CHANGES),
                     cause=cause, Cause=_cap(cause), fix=fix, Fix=_cap(fix), mins=r.randint(5, 90))
            key = f"multi-{j}-{e}"
            keys.append(key)
            b.session(day, b.wrap(svc, [(_cap(u.format(**s)), a.format(**s), key)]))
        # Mostly described, sometimes named the short way people do ("Redis", "Sentry").
        pending.append((f"{project}/multi-{j}", "multi-session", lambda subj=subj: pick(r, MULTI_Q, split).format(
            desc=subj["short"] if r.random() < 0.3 else pick(r, subj["descs"], split)), keys, None))

    # Facts in other languages and scripts, with routine work in the same language around them.
    langs = {}
    for lang, u, a, qs in MULTILINGUAL:
        langs.setdefault(lang, []).append((u, a, qs))
    for j, lang in enumerate(sorted(langs)[:N_LANG]):
        u, a, qs = r.choice(langs[lang])
        svc = r.choice(services)
        s = _slots(r, svc, dict(port=r.choice([6432, 6543, 7432, 15432]), days=r.choice([14, 30, 90]),
                                hh=r.randint(1, 4), mb=r.choice([10, 25, 50]), k=r.randint(3, 7)))
        key = f"lang-{lang}"
        filler = [(x.format(**_slots(r, svc)), y.format(**_slots(r, svc)), None)
                  for x, y in r.sample(MULTILINGUAL_DISTRACTORS[lang], 2)]
        b.session(r.uniform(0, SPAN), filler[:1] + [(u.format(**s), a.format(**s), key)] + filler[1:])
        pending.append((f"{project}/lang-{lang}", "multilingual", lambda qs=qs: pick(r, qs, split), [key], None))

    # Routine sessions: the bulk of the history.
    for _ in range(N_ROUTINE):
        svc = r.choice(services)
        b.session(r.uniform(0, SPAN), b.routine_turns(svc, r.randint(1, 6)))

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
    questions, dropped = [], 0
    for qid, cat, make, keys, superseded in pending:
        ev = [keyed[k] for k in keys]
        text = _question(r, " ".join(t.text for t in ev), make)
        if text is None:
            dropped += 1
            continue
        q = Question(qid, cat, text, {t.session for t in ev}, {t.tid for t in ev})
        if superseded:
            q.current_turn = ev[0].tid
            q.superseded_turns = {keyed[superseded].tid}
        questions.append(q)
    h = Haystack(project, turns, questions)
    h.dropped = dropped
    return h


def generate(seed, n_projects, split="dev"):
    """`n_projects` histories. The held split draws other seeds as well as other phrasings."""
    r = random.Random(seed if split == "dev" else seed * 1_000_003 + 7)
    return [generate_project(random.Random(r.getrandbits(64)), i, split) for i in range(n_projects)]


if __name__ == "__main__":
    import sys

    hs = generate(int(sys.argv[1]) if len(sys.argv) > 1 else 8, 2, sys.argv[2] if len(sys.argv) > 2 else "dev")
    for h in hs:
        print(f"== {h.hid}: {len(h.turns)} turns, {len({t.session for t in h.turns})} sessions, {h.dropped} dropped")
        by = {t.tid: t for t in h.turns}
        for q in h.questions:
            ev = " ".join(by[t].text for t in sorted(q.evidence_turns))
            print(f"[{q.category}] {q.text}\n    -> {ev[:300]!r}\n    shared: {shared_words(q.text, ev)}")
