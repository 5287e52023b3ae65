"""The needle sweep: 20 distinct facts planted at spread-out ages among N filler memories built from
the same services, identifiers and subjects, each asked in natural language that shares only two
or three content words with its needle."""

import hashlib
import random

from gen_coding import SERVICES, FUNCS, MODULES, DEPS, TEAMS

DAY = 86400

# (subject, needle user text, needle assistant text, question). {svc} is the needle's service.
NEEDLES = [
    ("keys", "heads-up: {svc}'s TLS private keys sit in vault under secret/{svc}/tls, rotated every 60 days by certbot-renew",
     "Got it, the sidecar will read them from that vault path.", "Where are {svc}'s private keys stored?"),
    ("export", "the nightly {svc} export must finish before 04:15 UTC or the finance reconciliation in Snowflake breaks",
     "I'll add an alert if it is still running at 04:00.", "What's the deadline for {svc}'s nightly export?"),
    ("openssl", "we pinned {svc} to openssl 3.0.13 because 3.1 broke the FIPS provider on the RHEL 8 hosts",
     "Pinned in the Dockerfile with a comment pointing at the FIPS issue.",
     "Why is {svc} held back on an older openssl?"),
    ("component", "component c4417 is the only thing allowed to write to the {svc} ledger_entries table",
     "I'll enforce that with a role grant: only c4417's database user gets INSERT.",
     "Which component may write ledger_entries?"),
    ("error", "error E7731 from {svc} means the upstream clock drifted more than 5 seconds; restart chronyd, don't redeploy",
     "Adding that to the runbook.", "What should on-call do when {svc} throws E7731?"),
    ("port", "{svc} staging uses port 6543 for pgbouncer, not 5432; 5432 goes straight to the primary and skips pooling",
     "Updated .env.staging to 6543.", "Which port gives {svc} pooled connections?"),
    ("flag", "the {svc} flag new_checkout_flow must stay off for EU tenants until legal signs off the consent banner",
     "I've added an EU tenant guard around it.", "Why can't European customers get new_checkout_flow on {svc} yet?"),
    ("load", "load test result: {svc} saturates at 1,850 requests/s per pod, CPU-bound in the JSON serializer",
     "So we need 6 pods for the 10k rps target.", "How much traffic can one {svc} pod take before it maxes out?"),
    ("oncall", "the {svc} on-call moved from PagerDuty to Opsgenie on the 1st; escalation goes to Priya after 15 minutes",
     "Updated the escalation policy doc.", "Who takes over when the {svc} on-call doesn't respond?"),
    ("backup", "backups for {svc} are encrypted with age; the identity file lives on the two YubiKeys in the office safe",
     "Noted, restores need one of those keys.", "Where would I find what's needed to decrypt {svc} backups?"),
    ("arm64", "{svc} image builds must include linux/arm64 because the Graviton nodes in eu-west-1 pull the same tag",
     "Added arm64 to the buildx matrix.", "Why does {svc} need an arm64 build?"),
    ("upload", "max body size for {svc} uploads is 25 MB at the nginx ingress; larger files go through presigned S3 URLs",
     "I'll document that next to the ingress annotations.", "What's the biggest upload {svc} accepts directly?"),
    ("migration", "the {svc} migration 0042_split_address is irreversible: it drops the legacy address column after copying",
     "I'll mark it irreversible in the migration header.", "Can the 0042 migration on {svc} be rolled back?"),
    ("slo", "for {svc} we agreed on a 99.5% monthly availability SLO, with the error budget reviewed every second Tuesday",
     "I'll set up the burn-rate alerts for it.", "What availability target did we commit to for {svc}?"),
    ("redact", "{svc} must never log the card_last4 field; the PCI auditor flagged it in March",
     "Added card_last4 to the log redaction list.", "Which field is {svc} forbidden to write into logs?"),
    ("websocket", "the {svc} websocket idle timeout is 55 seconds because the AWS ALB cuts idle connections at 60",
     "I'll keep the ping interval below that.", "Why is the {svc} websocket timeout set just under a minute?"),
    ("redis", "{svc} reads its Redis connection string from REDIS_URL_PRIMARY, never REDIS_URL, which points at the old cluster",
     "Switched the config loader over.", "Which environment variable holds {svc}'s Redis address?"),
    ("schema", "the {svc} GraphQL schema is published to the registry by the release-schema workflow, only from main",
     "Good, no manual publishing then.", "What pushes the {svc} API contract to the registry?"),
    ("flaky", "flaky test test_concurrent_refunds in {svc} is quarantined until OPS-2291 lands; it races on a shared sequence",
     "Marked it #[ignore] with the ticket number.", "Why is test_concurrent_refunds skipped in {svc}?"),
    ("ratelimit", "{svc} rate limit for partner keys is 600 requests per minute with a burst of 100; internal keys are unlimited",
     "I'll add that to the partner docs.", "How many calls a minute can a partner make against {svc}?"),
]

# Fillers: the same subjects with other values, and routine work, on the same services.
FILLERS = [
    ("keys", "where does {svc} keep its {what}?", "{svc} reads its {what} from vault under secret/{svc}/{leaf}."),
    ("export", "the {svc} {freq} export takes {m} minutes now", "That's up from {m2}; the {table} table doubled."),
    ("openssl", "can {svc} move to openssl {ossl}?", "Yes, nothing in {svc} depends on the old provider API."),
    ("component", "component c{c} reads from the {svc} {table} table", "Fine, it only needs SELECT on {table}."),
    ("error", "what does error E{code} from {svc} mean?", "E{code} is {svc}'s {errmeaning}; the runbook says {errfix}."),
    ("port", "what port does {svc} listen on in {env}?", "{svc} listens on {port} in {env}, behind the {lb}."),
    ("flag", "turn on the {svc} flag {flagname} for tenant t{c}", "Enabled {flagname} for t{c} only; everyone else keeps it off."),
    ("load", "rerun the {svc} load test with {rps} rps", "At {rps} rps {svc} p99 is {ms} ms and CPU sits at {pct}%."),
    ("oncall", "who is on call for {svc} this week?", "{person} from {team} is on call for {svc} until Monday."),
    ("backup", "when did the last {svc} backup run?", "The {svc} backup ran at {hh}:{mm} UTC and took {m} minutes."),
    ("arm64", "the {svc} image is {size} MB, can we shrink it?", "Stripping symbols and using {base} gets it to {size2} MB."),
    ("upload", "{svc} returns 413 for a {size} MB file", "The ingress allows {size2} MB for {svc}; raise it or split the file."),
    ("migration", "write a migration for {svc} that adds {col} to {table}", "Added {mig} adding {col} with a default, so it is reversible."),
    ("slo", "what was {svc}'s availability last month?", "{svc} was at {avail}% last month, {cmp} the target."),
    ("redact", "does {svc} log the {field2} field?", "It does at debug level; I'll add {field2} to the redaction list."),
    ("websocket", "{svc} websocket clients disconnect every {sec2} seconds", "The client ping interval was {sec2}s; I set it to {sec3}s."),
    ("redis", "{svc} can't reach Redis in {env}", "The {envvar} secret was missing in {env}; restored it and {svc} reconnected."),
    ("schema", "add a {field2} field to the {svc} GraphQL schema", "Added {field2} as nullable so old clients keep working."),
    ("flaky", "test_{fn}_{suffix} in {svc} failed once on CI", "It passed on rerun; I'll keep an eye on it, no quarantine yet."),
    ("ratelimit", "{svc} returned 429 to {who}", "{who} went past {svc}'s {rl} requests per minute; the limit is working."),
    (None, "add a unit test for {fn} in {svc}", "Added test_{fn}_{suffix} in tests/{mod}.rs; {n} tests pass."),
    (None, "bump {dep} in {svc}", "Bumped {dep} to {dver}; {svc} tests pass."),
    (None, "make {fn} in {svc} async", "Made {fn} async and updated {k} call sites."),
    (None, "who owns {svc}?", "The {team} team owns {svc}."),
    (None, "why is {svc}'s {mod} module so slow?", "The {mod} loop clones every row; borrowing cut it by {pct}%."),
]

PEOPLE = ["Priya", "Marek", "Ana", "Tomasz", "Yuki", "Sam", "Lena", "Omar", "Ines", "Jonas"]


def _filler_slots(r):
    dep, dver = r.choice(DEPS)
    return dict(
        what=r.choice(["database password", "API token", "signing key", "webhook secret"]),
        leaf=r.choice(["db", "api", "signing", "hooks"]), freq=r.choice(["weekly", "hourly", "monthly"]),
        m=r.randint(3, 90), m2=r.randint(3, 90), table=r.choice(["orders", "invoices", "events", "tenants", "payouts"]),
        ossl=r.choice(["3.2.1", "3.3.0", "3.0.14"]), c=r.randint(1000, 9999), code=r.randint(1000, 9999),
        errmeaning=r.choice(["upstream timeout", "schema mismatch", "quota exceeded", "stale cache entry"]),
        errfix=r.choice(["retry after a minute", "redeploy the consumer", "flush the cache", "page the owner"]),
        env=r.choice(["staging", "prod-eu", "prod-us", "dev"]), port=r.randint(3000, 9999),
        lb=r.choice(["internal ALB", "nginx ingress", "envoy sidecar"]),
        flagname=r.choice(["fast_search", "bulk_export", "dark_mode", "new_pricing_page", "async_refunds"]),
        rps=r.randint(200, 5000), ms=r.randint(20, 900), pct=r.randint(10, 95), person=r.choice(PEOPLE),
        team=r.choice(TEAMS), hh=f"{r.randint(0, 23):02d}", mm=f"{r.randint(0, 59):02d}", size=r.randint(30, 900),
        size2=r.randint(10, 200), base=r.choice(["distroless", "alpine", "scratch"]),
        col=r.choice(["region", "locale", "plan_tier", "archived_at"]), mig=f"{r.randint(100, 999):04d}_add_column",
        avail=f"{r.uniform(98.5, 99.99):.2f}", cmp=r.choice(["above", "below", "right at"]),
        field2=r.choice(["email", "ip_address", "user_agent", "phone"]), sec2=r.randint(20, 120), sec3=r.randint(10, 40),
        envvar=r.choice(["REDIS_URL", "CACHE_URL", "REDIS_HOST"]), fn=r.choice(FUNCS),
        suffix=r.choice(["roundtrip", "retry", "expiry", "rollback", "empty"]), who=r.choice(["a partner", "the mobile app",
                                                                                              "an internal cron"]),
        rl=r.choice([120, 300, 1000, 2000]), mod=r.choice(MODULES), n=r.randint(20, 500), dep=dep, dver=dver,
        k=r.randint(2, 14))


def needles(seed):
    """The 20 needles with their services drawn by seed: [(subject, svc, text, question)]."""
    r = random.Random(seed)
    svcs = r.sample(SERVICES, len(NEEDLES))
    out = []
    for (subject, u, a, q), svc in zip(NEEDLES, svcs):
        out.append((subject, svc, f"User: {u.format(svc=svc)}\nAssistant: {a.format(svc=svc)}", q.format(svc=svc)))
    return out


def haystack(seed, n_fillers, now, span_days=730):
    """Yields (created_at, content, is_needle_index_or_None) oldest first: n fillers spread over
    `span_days`, the needles at ages spread evenly across the same span."""
    r = random.Random(seed * 7919 + n_fillers)
    ns = needles(seed)
    taken = {(subject, svc) for subject, svc, _, _ in ns}
    span = span_days * DAY
    start = now - span
    # Needle i sits at fraction (i + 0.5) / 20 of the filler sequence: the oldest ~2.5% in, the newest ~97.5%.
    slots = {int((i + 0.5) / len(ns) * n_fillers): i for i in range(len(ns))}
    # Every filler is a memory of its own: ovmem stores a repeated text once, so a repeat would
    # make the bank smaller than its size says (drawn again until new; 8 bytes of hash each).
    seen = set()
    for j in range(n_fillers):
        if j in slots:
            i = slots[j]
            yield start + int(span * j / n_fillers), ns[i][2], i
        while True:
            subject, u, a = r.choice(FILLERS)
            svc = r.choice(SERVICES)
            if (subject, svc) in taken:
                continue
            s = _filler_slots(r)
            s["svc"] = svc
            content = f"User: {u.format(**s)}\nAssistant: {a.format(**s)}"
            key = hashlib.blake2b(content.encode(), digest_size=8).digest()
            if key not in seen:
                seen.add(key)
                break
        yield start + int(span * j / n_fillers) + r.randint(0, 59), content, None
