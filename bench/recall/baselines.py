"""The two baselines every figure is set against, computed in the same run on the same units:
plain Okapi BM25 (k1=1.2, b=0.75, lower-cased alphanumeric tokens, character bigrams for Han, kana
and hangul, no stopwords, no stemming, no boosts) and recency (the k newest memories)."""

import heapq
import math
import re
from collections import Counter

from units import CJK, cjk_units

K1, B = 1.2, 0.75
TOKEN = re.compile(r"[^\W_]+")


def tokens(s):
    """Lower-cased runs of letters and digits (`[a-z0-9]+` for ASCII text), and CJK runs as
    character bigrams."""
    s = s.lower()
    return TOKEN.findall(CJK.sub(" ", s)) + cjk_units(s)


class BM25:
    """Scores `docs` (strings) for the given queries, in one pass over the documents. Only the
    query terms are counted, so a million documents fit in memory; the figures are exact BM25."""

    def __init__(self, docs, queries):
        qterms = [tokens(q) for q in queries]
        vocab = {t for ts in qterms for t in ts}
        self.queries = qterms
        self.n = 0
        total_len = 0
        self.df = Counter()
        self.lengths = []
        self.tf = {t: [] for t in vocab}  # term -> [(doc, tf)]
        for i, d in enumerate(docs):
            toks = tokens(d)
            self.lengths.append(len(toks))
            total_len += len(toks)
            self.n += 1
            counts = Counter(t for t in toks if t in vocab)
            for t, c in counts.items():
                self.df[t] += 1
                self.tf[t].append((i, c))
        self.avgdl = total_len / self.n if self.n else 0.0

    def idf(self, t):
        n = self.df[t]
        return math.log(1.0 + (self.n - n + 0.5) / (n + 0.5))

    def top(self, qi, k):
        """Indices of the k best documents for query number `qi` (ties: the newer, higher index)."""
        scores = {}
        for t in self.queries[qi]:  # a term repeated in the query counts again, as in plain BM25
            idf = self.idf(t)
            for doc, tf in self.tf.get(t, ()):
                dl = self.lengths[doc]
                s = idf * tf * (K1 + 1) / (tf + K1 * (1 - B + B * dl / self.avgdl))
                scores[doc] = scores.get(doc, 0.0) + s
        return [d for _, d in heapq.nlargest(k, ((s, d) for d, s in scores.items()))]


def recency_top(timestamps, k):
    """Indices of the k newest documents (ties: the later one)."""
    return [i for _, i in heapq.nlargest(k, ((ts, i) for i, ts in enumerate(timestamps)))]
