"""Ranked recall: a question's words against the approved guidance, by BM25.

`recall(topic=...)` takes keywords or a question. Its words are cut, folded,
stripped of stop words and stemmed (`Analyzer`, Snowball's stemmers: the
ones PostgreSQL's text search configurations use), and every entry holding
any of them is scored by Okapi BM25 with the title counted twice (BM25F's
simplest form). The index is built once per revision, beside the topic
index, from the very entries the per-revision cache holds, so a newly
approved entry is found on the next call in every worker and both database
engines give the same answer.

Why here and not in the engine (figures from `bench/recall_quality.py` on
LoCoMo): FTS5's `bm25()` fixes k1 = 1.2 and b = 0.75, and PostgreSQL's
`ts_rank_cd` weighs no term by its rarity at all; the Anserini defaults
used here (k1 = 0.9, b = 0.4) suit short entries better. The cache already
holds every entry in each worker, so ranking costs no query.
"""

from __future__ import annotations

import math
import re
import unicodedata
from array import array
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache

import snowballstemmer

from .stopwords import ENGLISH

K1 = 0.9
B = 0.4
TITLE_WEIGHT = 2.0

# Words are runs of letters and digits; `_` splits too, so `create_post`
# is found by "create post". Han, kana and Hangul have no spaces between
# words: each of their characters is a term of its own.
_WORD = re.compile(r"[^\W_]+")
_CJK = re.compile(r"([\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff])")


def words(text: str) -> list[str]:
    """The text's words, folded (NFKC, case) but not stemmed."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    return _WORD.findall(_CJK.sub(r" \1 ", folded))


@dataclass(frozen=True)
class Analyzer:
    """Text to search terms for one language (stop words dropped, stems kept)."""

    language: str = "english"

    def terms(self, text: str) -> list[str]:
        return [term for _word, term in self.pairs(text)]

    def pairs(self, text: str) -> list[tuple[str, str]]:
        """Each kept word of the text with its term (stem)."""
        stop = ENGLISH if self.language == "english" else frozenset()
        kept = [w for w in words(text) if w not in stop]
        stemmer = _stemmer(self.language)
        return list(zip(kept, kept if stemmer is None else stemmer.stemWords(kept), strict=True))


@cache
def _stemmer(language: str) -> snowballstemmer.Stemmer | None:
    if language == "simple":
        return None
    return snowballstemmer.stemmer(language)


@dataclass(frozen=True)
class Match:
    """One entry's part in a question: its score, the terms it holds, and their share."""

    place: int
    score: float
    terms: tuple[str, ...]  # the question's terms it holds, in the question's order
    coverage: float  # their inverse document frequency over the question's whole


@dataclass(frozen=True)
class RankedIndex:
    """BM25 postings of the cached entries, by their place in recall's order.

    Each posting holds the term's BM25 weight in that entry without the
    inverse document frequency (which depends on the term only), so a
    question costs one multiply-add per entry holding one of its terms.
    """

    analyzer: Analyzer
    size: int
    postings: dict[str, tuple[array[int], array[float]]]

    @classmethod
    def of(cls, fields: Sequence[tuple[str, str]], analyzer: Analyzer) -> RankedIndex:
        counts: list[dict[str, float]] = []
        lengths: list[float] = []
        for title, text in fields:
            tf: dict[str, float] = {}
            title_terms, text_terms = analyzer.terms(title), analyzer.terms(text)
            for term in title_terms:
                tf[term] = tf.get(term, 0.0) + TITLE_WEIGHT
            for term in text_terms:
                tf[term] = tf.get(term, 0.0) + 1.0
            counts.append(tf)
            lengths.append(TITLE_WEIGHT * len(title_terms) + len(text_terms))
        average = (sum(lengths) / len(lengths)) if lengths and any(lengths) else 1.0
        postings: dict[str, tuple[array[int], array[float]]] = {}
        for place, tf in enumerate(counts):
            norm = K1 * (1 - B + B * lengths[place] / average)
            for term, f in tf.items():
                places, weights = postings.setdefault(term, (array("I"), array("d")))
                places.append(place)
                weights.append(f * (K1 + 1) / (f + norm))
        return cls(analyzer, len(fields), postings)

    def idf(self, term: str) -> float:
        found = self.postings.get(term)
        n = len(found[0]) if found else 0
        return math.log(1 + (self.size - n + 0.5) / (n + 0.5))

    def search(self, question: str) -> list[Match]:
        """Every entry holding a term of the question, best first (ties: recall's order)."""
        terms = list(dict.fromkeys(self.analyzer.terms(question)))
        idf = {term: self.idf(term) for term in terms}
        whole = sum(idf.values())
        scores: dict[int, float] = {}
        held: dict[int, list[str]] = {}
        for term in terms:
            found = self.postings.get(term)
            if found is None:
                continue
            weight = idf[term]
            for place, part in zip(*found, strict=True):
                scores[place] = scores.get(place, 0.0) + weight * part
                held.setdefault(place, []).append(term)
        ranked = sorted(scores, key=lambda place: (-scores[place], place))
        return [
            Match(p, scores[p], tuple(held[p]), sum(idf[t] for t in held[p]) / whole)
            for p in ranked
        ]
