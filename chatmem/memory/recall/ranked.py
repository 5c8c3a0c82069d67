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
from bisect import bisect_left, bisect_right
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ..models import GUIDANCE_TYPES
from .ranking import Analyzer, RankedIndex, Scored, words
from .recall_page import Ordered, Page, decode, encode
from .topic_index import SEPARATOR, TopicIndex

TIERS = ("target", "phrase", "terms")
RANKED_KEY_SIZE = 5  # a cursor's key: tier, score, and recall's order (type, approval, id)

# An entry's place in the answer is one integer, compared in C: the tier,
# then the score (whole millionths, higher first), then the place in
# recall's order. Building a tuple per match cost more than the search.
_SCORE_SCALE = 1_000_000
_PLACE_BITS = 32
_SCORE_BITS = 48
_TIER_SHIFT = _PLACE_BITS + _SCORE_BITS
_PLACE_MASK = (1 << _PLACE_BITS) - 1
_SCORE_MAX = (1 << _SCORE_BITS) - 1


def _key(tier: int, score: int, place: int) -> int:
    return (tier << _TIER_SHIFT) + ((_SCORE_MAX - score) << _PLACE_BITS) + place


def _keys(tier: int, places: Iterable[int], scored: Scored) -> list[int]:
    # A score is under a few thousand (a sum of idf * (K1 + 1) per term), so
    # its millionths stay far below _SCORE_MAX.
    get, base = scored.scores.get, (tier << _TIER_SHIFT) + (_SCORE_MAX << _PLACE_BITS)
    return [base - (int(get(p, 0.0) * _SCORE_SCALE) << _PLACE_BITS) + p for p in places]


def _place(key: int) -> int:
    return key & _PLACE_MASK


def _score(key: int) -> int:
    return _SCORE_MAX - ((key >> _PLACE_BITS) & _SCORE_MAX)


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
        """One page of the ranked answer, each entry saying why it matched."""
        scored = self.index.search(topic)
        asked = set(words(topic))
        named = {place for place, needed in self.targets if needed <= asked}
        phrase = set(self.phrases.places(topic)) - named if SEPARATOR not in topic else set()
        rest = scored.scores.keys() - named - phrase
        keys = [*_keys(0, named, scored), *_keys(1, phrase, scored), *_keys(2, rest, scored)]
        if (
            not named
            and not phrase
            and (not keys or scored.coverage(_place(min(keys))) < min_match)
        ):
            return Page([], 0, None)  # abstain: no entry holds enough of the question
        if type:  # a type's entries are one run of places, since type leads the order
            low, high = self._run_of(type)
            keys = [k for k in keys if low <= _place(k) < high]
        total = len(keys)
        if cursor is not None:
            tier, score, *order = decode(cursor, query, size=RANKED_KEY_SIZE)
            # The first place past the cursor's entry in recall's order (it may be gone since).
            after = _key(tier, score, bisect_right(self.approved.keys, tuple(order))) - 1
            keys = [k for k in keys if k > after]
        top = heapq.nsmallest(limit + 1, keys)
        shown = top[:limit]
        following = None
        if len(top) > limit:
            last = shown[-1]
            tier, score = last >> _TIER_SHIFT, _score(last)
            following = encode((tier, score, *self.approved.keys[_place(last)]), query)
        start = total - len(keys)
        items = [self._explained(k, start + n + 1, scored) for n, k in enumerate(shown)]
        return Page(items, total, following)

    def _run_of(self, type: str) -> tuple[int, int]:
        rank = GUIDANCE_TYPES.index(type)
        keys = self.approved.keys
        return bisect_left(keys, (rank,)), bisect_left(keys, (rank + 1,))

    def _explained(self, key: int, rank: int, scored: Scored) -> dict[str, Any]:
        place = _place(key)
        return {
            **self.approved.items[place],
            "match": {
                "rank": rank,
                "why": TIERS[key >> _TIER_SHIFT],
                "score": round(scored.scores.get(place, 0.0), 3),
                "terms": scored.words_held(place),
            },
        }
