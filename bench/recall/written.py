"""Hand-written histories with known answers (`bench/recall/written/<kind>/*.json`): coding-agent
projects, histories retold from real repositories' commit logs, long conversations between two
people, and assistant chats with personal facts. Written by people (not by a generator, never
against a ranker's output), so their wording has the variety a template cannot give; the files are
split into `dev` (tune on these) and `held` (report these).

File format (one history):
    {"name": str, "about": str, "split": "dev" | "held",
     "sessions": [{"id": str, "harness": str, "start": "2026-02-03T09:12:00Z",
                   "turns": [{"user": str, "assistant": str, "at"?: ISO time}, ...]}, ...],
     "questions": [{"id": str, "category": str, "question": str,
                    "evidence": ["<session id>#<turn index>", ...],
                    "current"?: "<session id>#<turn index>", "superseded"?: ["<ref>", ...]}, ...]}
A turn without `at` is dated its session's start plus two minutes per turn. A revision question
names the turn in force (`current`, also in `evidence`) and the turns it replaced (`superseded`).

`python3 bench/recall/written.py check [FILES]` validates files and prints, per file and per
category, plain BM25's session recall@5 and the content words questions share with their evidence.
"""

import datetime
import glob
import json
import os
import sys

from units import Haystack, Question, Turn, shared_words

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "written")
KINDS = ("coding", "repos", "conversation", "assistant")
HARNESSES = ("claude-code", "codex", "cursor", "gemini-cli", "cline")
MAX_SHARED = 3


def parse_time(s):
    """ISO-8601 ('2026-02-03T09:12:00Z', with or without the Z) -> Unix seconds, UTC."""
    s = s.strip().replace("Z", "+00:00")
    d = datetime.datetime.fromisoformat(s)
    if d.tzinfo is None:
        d = d.replace(tzinfo=datetime.timezone.utc)
    return int(d.timestamp())


def files(kinds=KINDS, split=None):
    """The written histories of `kinds`, in name order, of one split (None: both)."""
    out = []
    for kind in kinds:
        for path in sorted(glob.glob(os.path.join(ROOT, kind, "*.json"))):
            with open(path) as f:
                doc = json.load(f)
            if split is None or doc.get("split") == split:
                out.append((kind, path, doc))
    return out


def haystack(kind, path, doc):
    """One file -> a Haystack. Raises ValueError naming the file and the fault."""
    name = f"{kind}/{os.path.basename(path)[:-5]}"
    turns, refs, seen = [], {}, set()
    for s in doc["sessions"]:
        sid = s["id"]
        if sid in seen:
            raise ValueError(f"{path}: session id {sid!r} twice")
        seen.add(sid)
        harness = s.get("harness", "claude-code")
        if harness not in HARNESSES:
            raise ValueError(f"{path}: session {sid}: harness {harness!r} is not one of {', '.join(HARNESSES)}")
        start = parse_time(s["start"])
        for i, t in enumerate(s["turns"]):
            ts = parse_time(t["at"]) if t.get("at") else start + 120 * i
            tid = f"{name}:{sid}#{i}"
            turn = Turn(tid, f"{name}:{sid}", harness, ts, t["user"].strip(), t["assistant"].strip())
            if not turn.prompt:
                raise ValueError(f"{path}: {sid}#{i} has no user text")
            refs[f"{sid}#{i}"] = turn
            turns.append(turn)
    turns.sort(key=lambda t: (t.ts, t.tid))

    def ref(r, qid):
        if r not in refs:
            raise ValueError(f"{path}: question {qid}: no turn {r!r}")
        return refs[r].tid

    questions = []
    for q in doc["questions"]:
        ev = [ref(r, q["id"]) for r in q["evidence"]]
        if not ev:
            raise ValueError(f"{path}: question {q['id']} has no evidence")
        by_tid = {t.tid: t for t in turns}
        cur = ref(q["current"], q["id"]) if q.get("current") else None
        sup = {ref(r, q["id"]) for r in q.get("superseded", [])}
        if cur and cur not in ev:
            raise ValueError(f"{path}: question {q['id']}: `current` must be in `evidence`")
        if cur and any(by_tid[s].ts >= by_tid[cur].ts for s in sup):
            raise ValueError(f"{path}: question {q['id']}: a superseded turn is not older than the current one")
        questions.append(Question(f"{name}:{q['id']}", q["category"], q["question"].strip(),
                                  {by_tid[t].session for t in ev}, set(ev), cur, sup))
    return Haystack(name, turns, questions)


def load(kinds=KINDS, split=None):
    return [haystack(k, p, d) for k, p, d in files(kinds, split)]


def check(paths):
    """Validates files; prints plain BM25 session R@5 and shared words per category."""
    from baselines import BM25

    docs = []
    for p in paths:
        kind = os.path.basename(os.path.dirname(os.path.abspath(p)))
        with open(p) as f:
            docs.append((kind, p, json.load(f)))
    if not docs:
        docs = files()
    total = {}
    for kind, p, doc in docs:
        h = haystack(kind, p, doc)
        by_tid = {t.tid: t for t in h.turns}
        bm = BM25([t.text for t in h.turns], [q.text for q in h.questions])
        per = {}
        for qi, q in enumerate(h.questions):
            shown = {h.turns[i].session for i in bm.top(qi, 5)}
            rec = len(q.evidence_sessions & shown) / len(q.evidence_sessions)
            ev_text = " ".join(by_tid[t].text for t in q.evidence_turns)
            sw = shared_words(q.text, ev_text)
            for key in (q.category, "all"):
                per.setdefault(key, []).append((rec, len(sw)))
                total.setdefault(key, []).append((rec, len(sw)))
            if len(sw) > MAX_SHARED:
                print(f"  {q.qid}: shares {len(sw)} content words with its evidence: {sw}")
        print(f"{p}: {len(h.turns)} turns in {len({t.session for t in h.turns})} sessions, {len(h.questions)} "
              f"questions, split {doc.get('split')}")
        for key, xs in sorted(per.items()):
            print(f"  {key:18s} n={len(xs):3d}  BM25 R@5 {100 * sum(r for r, _ in xs) / len(xs):5.1f}%  "
                  f"shared words mean {sum(s for _, s in xs) / len(xs):.2f} max {max(s for _, s in xs)}")
    if len(docs) > 1:
        print("all files")
        for key, xs in sorted(total.items()):
            print(f"  {key:18s} n={len(xs):3d}  BM25 R@5 {100 * sum(r for r, _ in xs) / len(xs):5.1f}%")


if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1] != "check":
        sys.exit(__doc__)
    check(sys.argv[2:])
