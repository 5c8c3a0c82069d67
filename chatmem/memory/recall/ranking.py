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
import threading
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache, lru_cache

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
    if text.isascii():  # most text: NFKC and the CJK split change nothing
        return _WORD.findall(text.lower())
    folded = unicodedata.normalize("NFKC", text).casefold()
    return _WORD.findall(_CJK.sub(r" \1 ", folded))


@dataclass(frozen=True)
class Analyzer:
    """Text to search terms for one language (stop words dropped, stems kept)."""

    language: str = "english"

    def terms(self, text: str) -> list[str]:
        stop, stems = self._stop(), _stems(self.language)
        return [stems[w] for w in words(text) if w not in stop]

    def pairs(self, text: str) -> list[tuple[str, str]]:
        """Each kept word of the text with its term (stem)."""
        stop, stems = self._stop(), _stems(self.language)
        return [(w, stems[w]) for w in words(text) if w not in stop]

    def _stop(self) -> frozenset[str]:
        return ENGLISH if self.language == "english" else frozenset()


class _Stems(dict[str, str]):
    """A language's stems, each word stemmed once per process.

    Snowball in pure Python costs ~35 µs a word; a site's vocabulary is a few
    tens of thousands of words. A known word is a dict look-up in C.
    """

    def __init__(self, language: str) -> None:
        super().__init__()
        self.stemmer = None if language == "simple" else snowballstemmer.stemmer(language)
        self.lock = threading.Lock()  # the Snowball stemmer keeps state while it works

    def __missing__(self, word: str) -> str:
        if self.stemmer is None:
            return word
        with self.lock:
            stem: str = self.stemmer.stemWord(word)
        self[word] = stem
        return stem


@cache
def _stems(language: str) -> _Stems:
    return _Stems(language)


# One entry's terms: their weighted frequencies, and the entry's weighted length.
Analysed = tuple[dict[str, float], float]


@dataclass(frozen=True)
class RankedIndex:
    """BM25 postings of the cached entries, by their place in recall's order.

    Each posting holds the term's BM25 weight in that entry without the
    inverse document frequency (which depends on the term only), so a
    question costs one multiply-add per entry holding one of its terms.
    `analysed` keeps each (title, text)'s terms, so the next revision's
    index re-reads only the entries that changed.
    """

    analyzer: Analyzer
    size: int
    postings: dict[str, dict[int, float]]
    analysed: dict[tuple[str, str], Analysed]

    @classmethod
    def of(
        cls,
        fields: Sequence[tuple[str, str]],
        analyzer: Analyzer,
        previous: RankedIndex | None = None,
    ) -> RankedIndex:
        known = previous.analysed if previous and previous.analyzer == analyzer else {}
        analysed = {f: known.get(f) or cls._analyse(f, analyzer) for f in fields}
        entries = [analysed[f] for f in fields]
        average = (sum(length for _tf, length in entries) / len(entries)) if entries else 0
        postings: dict[str, dict[int, float]] = {}
        for place, (tf, length) in enumerate(entries):
            norm = K1 * (1 - B + B * length / (average or 1))
            for term, f in tf.items():
                postings.setdefault(term, {})[place] = f * (K1 + 1) / (f + norm)
        return cls(analyzer, len(fields), postings, analysed)

    @staticmethod
    @lru_cache(maxsize=4096)
    def _analyse(field: tuple[str, str], analyzer: Analyzer) -> Analysed:
        # Cached by the text itself: recall ranks the same newest session
        # records call after call (their analysis was 70% of that ranking).
        title, text = analyzer.terms(field[0]), analyzer.terms(field[1])
        tf: dict[str, float] = {}
        for term in title:
            tf[term] = tf.get(term, 0.0) + TITLE_WEIGHT
        for term in text:
            tf[term] = tf.get(term, 0.0) + 1.0
        return tf, TITLE_WEIGHT * len(title) + len(text)

    def idf(self, term: str) -> float:
        n = len(self.postings.get(term, ()))
        return math.log(1 + (self.size - n + 0.5) / (n + 0.5))

    def search(self, question: str) -> Scored:
        """The question's terms and the score of every entry holding one of them."""
        spoken: dict[str, str] = {}
        for word, term in self.analyzer.pairs(question):
            spoken.setdefault(term, word)
        terms = tuple(spoken)
        idf = {term: self.idf(term) for term in terms}
        scores: dict[int, float] = {}
        for term in terms:
            weight, posting = idf[term], self.postings.get(term, {})
            if not scores:  # the first term fills the scores in one C-speed pass
                scores = {place: weight * part for place, part in posting.items()}
                continue
            get = scores.get
            for place, part in posting.items():
                scores[place] = get(place, 0.0) + weight * part
        return Scored(self, terms, spoken, idf, scores)


@dataclass(frozen=True)
class Scored:
    """A question scored against the index: what explains and judges one entry."""

    index: RankedIndex
    terms: tuple[str, ...]
    spoken: dict[str, str]  # term -> the question's word for it
    idf: dict[str, float]
    scores: dict[int, float]

    def held(self, place: int) -> tuple[str, ...]:
        """The question's terms this entry holds, in the question's order."""
        postings = self.index.postings
        return tuple(t for t in self.terms if place in postings.get(t, ()))

    def words_held(self, place: int) -> list[str]:
        """The same, as the question spelled them."""
        return [self.spoken[t] for t in self.held(place)]

    def coverage(self, place: int) -> float:
        """The share of the question's weight (its terms' idf) this entry holds."""
        whole = sum(self.idf.values())
        return sum(self.idf[t] for t in self.held(place)) / whole if whole else 0.0
