"""Checks the benchmark's own machinery without the binary: the LongMemEval loader, mapping items
back to turns, BM25 and recency, the block parser, the generators. run.sh runs it first."""

import random
import sys

import gen_coding
import needle
import written
from baselines import BM25, recency_top
from ovmemdrv import capture_events, memory_text, parse_items
from units import CJK, TurnIndex, contains_run, lme_haystack, shared_words

FAILS = []


def check(cond, what):
    if not cond:
        FAILS.append(what)


def lme_fixture():
    return {
        "question_id": "q1", "question_type": "knowledge-update", "question": "Which city did I move to?",
        "answer": "Lisbon", "question_date": "2023/06/01 (Thu) 10:00",
        "haystack_session_ids": ["s_a", "answer_1", "s_c"],
        "haystack_dates": ["2023/05/01 (Mon) 09:00", "2023/05/20 (Sat) 02:21", "2023/05/25 (Thu) 18:30"],
        "haystack_sessions": [
            [{"role": "user", "content": "Can you suggest a good pasta recipe for a weeknight dinner?"},
             {"role": "assistant", "content": "Try a lemon garlic spaghetti: it takes twenty minutes and uses pantry staples."}],
            [{"role": "user", "content": "I just moved to Lisbon last week and need tips on the tram lines.", "has_answer": True},
             {"role": "assistant", "content": "Tram 28 crosses the old town; buy a Viva Viagem card for the rides."},
             {"role": "user", "content": "thanks"}],
            [{"role": "assistant", "content": "Welcome back!"},
             {"role": "user", "content": "What's a good stretching routine after running a long distance?"},
             {"role": "assistant", "content": "Hold each stretch for thirty seconds: calves, hamstrings, quads, hips."}],
        ],
        "answer_session_ids": ["answer_1"],
    }


def main():
    h = lme_haystack(lme_fixture())
    # A trailing prompt without a reply, and a reply without a prompt, are turns of their own.
    check([t.session for t in h.turns] == ["s_a", "answer_1", "answer_1", "s_c", "s_c"], "LongMemEval turns in time order")
    check((h.turns[2].prompt, h.turns[2].reply, h.turns[3].prompt) == ("thanks", "", ""), "unpaired messages kept")
    check(h.questions[0].evidence_sessions == {"answer_1"}, "evidence sessions from answer_session_ids")
    check(h.questions[0].evidence_turns == {"answer_1#0"}, "evidence turns from has_answer")
    check(h.turns[1].ts == 1684549260, "session date parsed as UTC")

    turns = h.turns
    idx = TurnIndex(turns)
    item = "- [2023-05-20, gemini-cli] User: I just moved to Lisbon last week and need tips on the tram lines.\n" \
           "  Assistant: Tram 28 crosses the old town; buy a Viva Viagem card for the rides."
    check(idx.turns_of(item) == {1}, "an item maps to the turn it shows")
    passage = "- [2023-05-25] …moved to Lisbon last week and need tips on the tram lines … " \
              "Hold each stretch for thirty seconds: calves, hamstrings, quads, hips."
    check(idx.turns_of(passage) == {1, 4}, "a passage from two turns maps to both")
    check(idx.turns_of("- [2023-05-01] something else entirely, nothing shared with any turn at all") == set(),
          "an unrelated item maps to nothing")
    twins = gen_coding.Turn("a#0", "a", "codex", 1, "any other call sites?", "12 more in src/db.rs; I updated them the same way.")
    twin2 = gen_coding.Turn("b#0", "b", "codex", 2, "any other call sites?", "10 more in src/db.rs; I updated them the same way.")
    check(TurnIndex([twins, twin2]).turns_of("- [x] User: any other call sites?\n  Assistant: 12 more in src/db.rs; "
                                             "I updated them the same way.") == {0}, "a near-twin turn is not credited")
    check(contains_run("… Tram 28 crosses the old town; buy a Viva Viagem card for the rides.", turns[1].text),
          "contains_run sees a shared run")
    check(not contains_run("… Tram 29 crosses the new town; buy a Lisboa card for the trips.", turns[1].text),
          "contains_run needs a long run")

    docs = ["the tram crosses the old town", "pasta with lemon and garlic", "tram tram tram schedule in Lisbon"]
    bm = BM25(docs, ["Lisbon tram", "garlic"])
    check(bm.top(0, 1) == [2] and bm.top(1, 3) == [1], "BM25 ranks the documents holding the query terms")
    check(recency_top([5, 9, 1], 2) == [1, 0], "recency takes the newest")

    block = "<ovmem-memory>\nFacts recalled:\n- [2025-01-02, codex] User: a\n  Assistant: b\n- [2025-01-03] c\n</ovmem-memory>"
    check(parse_items(block) == ["- [2025-01-02, codex] User: a\n  Assistant: b", "- [2025-01-03] c"], "block parser")
    labelled = "- [2025-01-02, codex] User: ok, do it\n  Assistant: done\n  (in a session about: the staging deploy…)"
    check(memory_text(labelled) == "- [2025-01-02, codex] User: ok, do it\n  Assistant: done", "topic label left out of the mapping")
    two = labelled.replace("staging deploy…)", "staging deploy\n  of friday…)") + "\n  User: and then?\n  Assistant: rolled back"
    check(memory_text(two) == "- [2025-01-02, codex] User: ok, do it\n  Assistant: done\n  User: and then?\n  Assistant: rolled back",
          "a topic label over two lines, then the next turn")
    for harness in gen_coding.HARNESSES:
        evs = capture_events(harness, "s1", "/p", "hi there", "hello", 1700000000)
        check(len(evs) == 2 and all(isinstance(p, dict) for _, p in evs), f"capture payloads for {harness}")

    a, b = gen_coding.generate(3, 3), gen_coding.generate(3, 3)
    check([t.text for x in a for t in x.turns] == [t.text for x in b for t in x.turns], "the generator is deterministic")
    for x in a:
        replies = [t.reply for t in x.turns]
        check(len(replies) == len(set(replies)), f"{x.hid}: no reply repeats")
        by = {t.tid: t for t in x.turns}
        for q in x.questions:
            check(all(t in by for t in q.evidence_turns) and q.evidence_sessions == {by[t].session for t in q.evidence_turns},
                  f"{q.qid}: evidence turns exist")
            if q.category == "revision":
                cur, old = by[q.current_turn], by[next(iter(q.superseded_turns))]
                check(cur.ts > old.ts + 14 * 86400 and cur.session != old.session and cur.harness != old.harness,
                      f"{q.qid}: the revision comes weeks later, from another harness")
            if q.category == "multi-session":
                check(len(q.evidence_sessions) >= 2, f"{q.qid}: the answer spans sessions")
    cats = {q.category for x in gen_coding.generate(1, 2) for q in x.questions}
    check(cats == {"decision", "revision", "follow-up", "identifier", "prose", "multi-session", "multilingual"},
          f"all seven coding categories: {sorted(cats)}")
    harnesses = {t.harness for x in gen_coding.generate(1, 2) for t in x.turns}
    check(harnesses == set(gen_coding.HARNESSES), "all five harnesses appear")
    # Hard by paraphrase, not by noise: every question shares at most MAX_SHARED content words with
    # its answer turns, and plain BM25 finds at most 65% of the evidence sessions at k=5 (quick set).
    texts = {}
    for split in gen_coding.SPLITS:
        hays = gen_coding.generate(1, 20, split)
        got, n = 0.0, 0
        for x in hays:
            by = {t.tid: t for t in x.turns}
            bm = BM25([t.text for t in x.turns], [q.text for q in x.questions])
            for qi, q in enumerate(x.questions):
                ev = " ".join(by[t].text for t in q.evidence_turns)
                shared = shared_words(q.text, ev)
                check(len(shared) <= gen_coding.MAX_SHARED, f"{q.qid} ({split}): shares {shared}")
                top = {x.turns[i].session for i in bm.top(qi, 5)}
                got += len(top & q.evidence_sessions) / len(q.evidence_sessions)
                n += 1
            texts[split] = {q.text for x in hays for q in x.questions}
        check(got / n <= 0.65, f"{split}: plain BM25 session recall@5 is {got / n:.1%}, above 65%")
    check(not texts["dev"] & texts["held"], "the held split asks in other words than the dev split")

    # The written histories load (every reference resolves, revisions are older than what
    # replaced them), questions keep to the shared-word limit (CJK: 6 bigrams), and plain BM25
    # finds at most 65% of the evidence sessions in each split.
    for split in ("dev", "held"):
        got, n = 0.0, 0
        for x in written.load(split=split):
            by = {t.tid: t for t in x.turns}
            bm = BM25([t.text for t in x.turns], [q.text for q in x.questions])
            for qi, q in enumerate(x.questions):
                ev = " ".join(by[t].text for t in q.evidence_turns)
                shared = shared_words(q.text, ev)
                limit = 6 if any(CJK.search(w) for w in shared) else written.MAX_SHARED
                check(len(shared) <= limit, f"{q.qid}: shares {shared}")
                top = {x.turns[i].session for i in bm.top(qi, 5)}
                got += len(top & q.evidence_sessions) / len(q.evidence_sessions)
                n += 1
        check(n > 0 and got / n <= 0.65, f"written {split}: plain BM25 session recall@5 is {got / max(n, 1):.1%}")

    ns = needle.needles(1)
    check(len({svc for _, svc, _, _ in ns}) == 20 and len({q for *_, q in ns}) == 20, "20 distinct needles")
    for subject, svc, text, q in ns:
        n = len(shared_words(q, text))
        check(2 <= n <= 3, f"needle {subject}: question shares {n} content words")
    hay = list(needle.haystack(1, 2000, 1764547200))
    where = [i for i, (_, _, ni) in enumerate(hay) if ni is not None]
    check(len(where) == 20 and where[0] < 100 and where[-1] > 1900, "needles spread from oldest to newest")
    check(all(hay[i][0] <= hay[i + 1][0] + 60 for i in range(len(hay) - 1)), "haystack comes oldest first")
    fillers = [c for _, c, ni in hay if ni is None]
    # ovmem stores a repeated text once: a size counts memories only if no filler repeats.
    big = [c for _, c, _ in needle.haystack(2, 50_000, 1764547200)]
    check(len(set(big)) == len(big) == 50_020, f"every filler is distinct ({len(set(big))} of {len(big)})")
    for _, svc, text, _ in ns:
        check(not any(contains_run(f, text) for f in random.Random(0).sample(fillers, 300)), "no filler repeats a needle")

    if FAILS:
        print("selftest failed:\n  " + "\n  ".join(FAILS), file=sys.stderr)
        sys.exit(1)
    print("selftest: all checks passed", file=sys.stderr)


if __name__ == "__main__":
    main()
