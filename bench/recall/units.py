"""The data model every suite shares (turns, questions, haystacks), the LongMemEval-format loader,
and the honest mapping of an injected item back to dataset turns by verbatim text overlap."""

import datetime
import re
from dataclasses import dataclass, field

# Runs are measured in UTF-8 bytes, so a shared run carries about as much text in every script:
# 40 bytes are 40 Latin characters, or 13 Han, kana or hangul ones.
WINDOW = 40  # an item covers a turn when a run of at least this many bytes is shared
STRIDE = 8  # turn windows are indexed every STRIDE bytes: runs of WINDOW+STRIDE-1 are always seen
BOILERPLATE_TURNS = 25  # a window found in more turns than this is boilerplate and credits none


@dataclass
class Turn:
    tid: str
    session: str
    harness: str
    ts: int
    prompt: str
    reply: str

    @property
    def text(self):
        return self.prompt + "\n" + self.reply


@dataclass
class Question:
    qid: str
    category: str
    text: str
    evidence_sessions: set
    evidence_turns: set = field(default_factory=set)
    current_turn: str = None  # for a reversal: the turn that holds the decision in force
    superseded_turns: set = field(default_factory=set)


@dataclass
class Haystack:
    hid: str
    turns: list  # chronological
    questions: list


def norm(s):
    """Whitespace normalised, as UTF-8 bytes (what windows are cut from)."""
    return " ".join(s.split()).encode()


class TurnIndex:
    """Maps injected text back to turns: WINDOW-byte windows of each turn's prompt and reply."""

    def __init__(self, turns):
        self.turns = turns
        self.index = {}
        for i, t in enumerate(turns):
            for seg in (t.prompt, t.reply):  # indexed apart: how a store joins them is its own business
                s = norm(seg)
                step = 1 if len(s) < 10 * WINDOW else STRIDE  # short texts exactly, so near-twins stay apart
                for p in range(0, len(s) - WINDOW + 1, step):
                    hits = self.index.setdefault(s[p:p + WINDOW], [])
                    if not hits or hits[-1] != i:
                        hits.append(i)

    def turns_of(self, item):
        """Indices of the turns an item shows. Every WINDOW-byte run the item shares with a turn
        marks those item bytes as that turn's; then turns are taken greedily, most newly covered
        bytes first, while a turn adds at least WINDOW bytes not yet explained.
        A near-duplicate turn (same template, other values) explains nothing new and is not taken;
        a passage built from two turns maps to both. Windows found in more than BOILERPLATE_TURNS
        turns are boilerplate and ignored."""
        s = norm(item)
        span = (1 << WINDOW) - 1
        masks = {}
        for q in range(0, len(s) - WINDOW + 1):
            hits = self.index.get(s[q:q + WINDOW])
            if hits and len(hits) <= BOILERPLATE_TURNS:
                for i in hits:
                    masks[i] = masks.get(i, 0) | (span << q)
        found, covered = set(), 0
        while masks:
            gains = {i: (m & ~covered).bit_count() for i, m in masks.items()}
            best = max(gains.values())
            if best < WINDOW:
                break
            tied = [i for i, g in gains.items() if g == best]
            found.update(tied)  # the same text in several turns: each of them is shown
            for i in tied:
                covered |= masks.pop(i)
        return found


def contains_run(item, text):
    """Whether `item` shows a WINDOW-byte run of `text` (normalised whitespace)."""
    a, b = norm(item), norm(text)
    if len(b) < WINDOW:
        return b in a
    return any(b[p:p + WINDOW] in a for p in range(0, len(b) - WINDOW + 1, 4))


# Content words, for reporting how much a question shares with its evidence (not for ranking).
STOPWORDS = set("""a about above after again against all am an and any are as at be because been before being below
between both but by can could did do does doing down during each few for from further had has have having he her here
hers herself him himself his how i if in into is it its itself just me more most my myself no nor not now of off on
once only or other our ours ourselves out over own same she should so some such than that the their theirs them
themselves then there these they this those through to too under until up very was we were what when where which while
who whom why will with would you your yours yourself yourselves let lets let's ok okay yes also still get got go going
use used using one two make made new now yet ever""".split())

# German function words too, for the multilingual questions.
STOPWORDS |= set("""der die das den dem des ein eine einer eines einem einen und oder aber ist sind war wird werden
wie wo was wer wann welche welcher welches welchem welchen wir ihr sie es ich du mit von zu zum zur im in am an auf
für bei nach über unter aus um als noch nicht nur auch jetzt neuerdings inzwischen darf ab""".split())

WORD = re.compile(r"[^\W_](?:[\w./-]*[^\W_])?")
# Scripts written without spaces (Han, kana, hangul): counted as character bigrams, as ovmem and
# the BM25 baseline index them.
CJK = re.compile(r"[\u1100-\u11ff\u3040-\u30ff\u3130-\u318f\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uff66-\uffdc]+")


def cjk_units(s):
    """Character bigrams of every CJK run in `s` (a lone character stands for itself)."""
    out = []
    for run in CJK.findall(s):
        out.extend([run] if len(run) == 1 else [run[i:i + 2] for i in range(len(run) - 1)])
    return out


def stem(w):
    for suf in ("ing", "ed", "es", "s"):
        if len(w) > len(suf) + 2 and w.endswith(suf):
            return w[: -len(suf)]
    return w


def content_words(s):
    s = s.lower()
    words = {stem(w) for w in WORD.findall(CJK.sub(" ", s)) if w not in STOPWORDS and len(w) > 1}
    return words | set(cjk_units(s))


def shared_words(question, evidence):
    return sorted(content_words(question) & content_words(evidence))


# LongMemEval format ------------------------------------------------------------------------------

def parse_lme_date(s):
    """'2023/05/20 (Sat) 02:21' -> Unix seconds (UTC)."""
    s = re.sub(r"\s*\([A-Za-z]{3}\)\s*", " ", s).strip()
    for fmt in ("%Y/%m/%d %H:%M", "%Y/%m/%d %H:%M:%S", "%Y/%m/%d"):
        try:
            return int(datetime.datetime.strptime(s, fmt).replace(tzinfo=datetime.timezone.utc).timestamp())
        except ValueError:
            continue
    raise ValueError(f"unreadable LongMemEval date {s!r}")


def session_turns(sid, messages, start_ts, harness):
    """User messages up to an assistant reply make one turn (a prompt and its answer). Returns the
    turns and the ids of those holding a message the data marks `has_answer`."""
    turns, prompts, marked, n = [], [], False, 0
    evidence = set()
    for m in messages:
        role, content = m.get("role"), (m.get("content") or "").strip()
        if not content:
            continue
        marked = marked or bool(m.get("has_answer"))
        if role == "user":
            prompts.append(content)
        elif role == "assistant":
            turns.append(Turn(f"{sid}#{n}", sid, harness, start_ts + 60 * n, "\n".join(prompts), content))
            if marked:
                evidence.add(turns[-1].tid)
            prompts, marked, n = [], False, n + 1
    if prompts:
        turns.append(Turn(f"{sid}#{n}", sid, harness, start_ts + 60 * n, "\n".join(prompts), ""))
        if marked:
            evidence.add(turns[-1].tid)
    return turns, evidence


def lme_haystack(rec, harness="gemini-cli"):
    """One LongMemEval record -> a Haystack with its one question (evidence = answer_session_ids;
    turn evidence from `has_answer` where the data marks it)."""
    turns, ev_turns = [], set()
    for sid, date, msgs in zip(rec["haystack_session_ids"], rec["haystack_dates"], rec["haystack_sessions"]):
        st, ev = session_turns(sid, msgs, parse_lme_date(date), harness)
        turns.extend(st)
        ev_turns |= ev
    turns.sort(key=lambda t: t.ts)
    q = Question(rec["question_id"], rec["question_type"], rec["question"], set(rec["answer_session_ids"]), ev_turns)
    return Haystack(rec["question_id"], turns, [q])
