"""The guidance half of `recall(topic=...)`: a question's answer, best first.

Three tiers, each by BM25 score (then recall's order):

1. guardrails whose target the question names (every word of the target's
   value is a word of the question: "may I create a post?" names
   `tool:create_post`, "post 4" names `post_id:4`): an agent about to act
   needs them before anything else;
2. entries holding the whole topic as written (today's substring rule), so a
   caller who sent a phrase keeps its answers at the top;
3. every other entry holding any of the question's terms (`ranking`).

A question whose best entry holds less than `min_match` of its weight, and
that names no guardrail and matches no phrase, gets no guidance at all:
abstaining beats handing an agent noise.

The page and its cursor work as for a topic-less recall (`recall_page`),
over the key (tier, score, recall's order): within one revision the order
is total and fixed, so paging never repeats or skips an entry. An approval
between two pages changes every score (each word's rarity moves), so a
cursor keeps its place by key, as closely as the new scores allow.
"""

from __future__ import annotations

import heapq
import struct
from bisect import bisect_left, bisect_right
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from ..models import GUIDANCE_TYPES
from .ranking import Analyzer, RankedIndex, Scored, words
from .recall_page import Key, Ordered, Page, decode, encode
from .topic_index import SEPARATOR, TopicIndex

TIERS = ("target", "phrase", "terms")
RANKED_KEY_SIZE = 5  # a cursor's key: tier, score, and recall's order (type, approval, id)
# Questions whose scores a revision keeps (each up to one float per entry).
ANSWERS_KEPT = 16


def _bits(score: float) -> int:
    """A score as an integer of the same order (IEEE 754 bits; scores are never negative)."""
    return int(struct.unpack("<q", struct.pack("<d", score))[0])


def _score_of(bits: int) -> float:
    return float(struct.unpack("<d", struct.pack("<q", bits))[0])


def target_words(target: str) -> frozenset[str]:
    """The words a question must hold to name a guardrail's target."""
    key, sep, value = target.partition(":")
    if not sep:
        key, value = "tool", key
    named = set(words(value))
    if key.strip().lower() in ("post_id", "id"):
        named.add("post")
    return frozenset(named)


@dataclass(frozen=True)
class RankedGuidance:
    """The approved entries of one revision, indexed for questions (built on first use)."""

    approved: Ordered[dict[str, Any]]
    index: RankedIndex
    phrases: TopicIndex
    targets: tuple[tuple[int, frozenset[str]], ...]  # guardrails with a target, by place
    _answer: Callable[[str], tuple[Scored, list[list[int]]]] = field(
        init=False, repr=False, compare=False
    )

    @classmethod
    def of(
        cls,
        approved: Ordered[dict[str, Any]],
        analyzer: Analyzer,
        previous: RankedGuidance | None = None,
    ) -> RankedGuidance:
        items = approved.items
        fields = [(e.get("title") or "", e.get("text") or "") for e in items]
        lowered = [f"{title.lower()}{SEPARATOR}{text.lower()}" for title, text in fields]
        targets = (
            (place, target_words(e["target"]))
            for place, e in enumerate(items)
            if e.get("type") == "guardrail" and e.get("target")
        )
        return cls(
            approved,
            RankedIndex.of(fields, analyzer, previous.index if previous else None),
            TopicIndex.of(lowered),
            tuple((p, named) for p, named in targets if named),
        )

    def page(
        self,
        topic: str,
        *,
        type: str | None,
        limit: int,
        cursor: str | None,
        query: object,
        min_match: float,
    ) -> Page[dict[str, Any]]:
        """One page of the ranked answer, each entry saying why it matched.

        Each tier is a list of places in recall's order; `heapq.nlargest`
        by score keeps the earlier place first on a tie, which is the
        answer's order, so only the page is sorted (a key per match cost
        more than the search).
        """
        scored, tiers = self._answer(topic)
        named, phrase, rest = tiers
        score = scored.scores.__getitem__  # every place of every tier has a score now
        if not named and not phrase:
            best = heapq.nlargest(1, rest, key=score)
            if not best or scored.coverage(best[0]) < min_match:
                return Page([], 0, None)  # abstain: no entry holds enough of the question
        if type:  # a type's entries are one run of places, since type leads the order
            low, high = self._run_of(type)
            tiers = [t[bisect_left(t, low) : bisect_left(t, high)] for t in tiers]
        total = sum(map(len, tiers))
        if cursor is not None:
            tiers = self._after(tiers, decode(cursor, query, size=RANKED_KEY_SIZE), score)
        shown: list[tuple[int, int]] = []  # (tier, place)
        for tier, places in enumerate(tiers):
            best = heapq.nlargest(limit + 1 - len(shown), places, key=score)
            shown += [(tier, place) for place in best]
        following = None
        if len(shown) > limit:
            tier, place = shown[limit - 1]
            last = (tier, _bits(score(place)), *self.approved.keys[place])
            following = encode(last, query)
        start = total - sum(map(len, tiers))
        items = [
            self._explained(tier, place, start + n + 1, scored)
            for n, (tier, place) in enumerate(shown[:limit])
        ]
        return Page(items, total, following)

    def __post_init__(self) -> None:
        # The revision's request cache (as Elasticsearch's is, until a
        # refresh): an agent paging through an answer, or asking what another
        # session just asked, is not scored again. Nothing in it outlives the
        # revision, so freshness is the cache's own.
        object.__setattr__(self, "_answer", lru_cache(maxsize=ANSWERS_KEPT)(self._scored))

    def _scored(self, topic: str) -> tuple[Scored, list[list[int]]]:
        """The question's scores and its tiers (read-only from here on: they are shared)."""
        scored = self.index.search(topic)
        return scored, self._tiers(topic, scored)

    def _tiers(self, topic: str, scored: Scored) -> list[list[int]]:
        """The places of named guardrails, of the phrase, and of the other matches, ascending."""
        asked = set(words(topic))
        named = [place for place, needed in self.targets if needed <= asked]
        phrase = self.phrases.places(topic) if SEPARATOR not in topic else []
        taken = set(named)
        if taken:
            phrase = [p for p in phrase if p not in taken]
        taken.update(phrase)
        scores = scored.scores
        rest = sorted(scores.keys() - taken)
        for place in taken - scores.keys():  # a guardrail or a phrase may hold none of the terms
            scores[place] = 0.0
        return [named, phrase, rest]

    def _after(
        self, tiers: list[list[int]], key: Key, score: Callable[[int], float]
    ) -> list[list[int]]:
        """The tiers' places that come after the cursor's entry."""
        tier, bits, *order = key
        floor = _score_of(bits)
        # The first place past the cursor's entry in recall's order (it may be gone since).
        first = bisect_right(self.approved.keys, tuple(order))
        now = [p for p in tiers[tier] if (s := score(p)) < floor or (s == floor and p >= first)]
        return [*([] for _ in tiers[:tier]), now, *tiers[tier + 1 :]]

    def _run_of(self, type: str) -> tuple[int, int]:
        rank = GUIDANCE_TYPES.index(type)
        keys = self.approved.keys
        return bisect_left(keys, (rank,)), bisect_left(keys, (rank + 1,))

    def _explained(self, tier: int, place: int, rank: int, scored: Scored) -> dict[str, Any]:
        return {
            **self.approved.items[place],
            "match": {
                "rank": rank,
                "why": TIERS[tier],
                "score": round(scored.scores.get(place, 0.0), 3),
                "terms": scored.words_held(place),
            },
        }
