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

from bisect import bisect_right
from dataclasses import dataclass
from typing import Any

from ..models import GUIDANCE_TYPES
from .ranking import Analyzer, Match, RankedIndex, words
from .recall_page import Key, Ordered, Page, decode, encode
from .topic_index import SEPARATOR, TopicIndex

TIERS = ("target", "phrase", "terms")
_SCORE_SCALE = 1_000_000  # scores go in the cursor as whole millionths
RANKED_KEY_SIZE = 5  # tier, score, and recall's order (type, approval, id)


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
class Ranked:
    """One entry's place in a ranked answer."""

    place: int
    tier: int
    score: float
    terms: tuple[str, ...]

    def key(self, order: Key) -> Key:
        return (self.tier, -round(self.score * _SCORE_SCALE), *order)


@dataclass(frozen=True)
class RankedGuidance:
    """The approved entries of one revision, indexed for questions (built on first use)."""

    approved: Ordered[dict[str, Any]]
    index: RankedIndex
    phrases: TopicIndex
    targets: tuple[tuple[int, frozenset[str]], ...]  # guardrails with a target, by place

    @classmethod
    def of(cls, approved: Ordered[dict[str, Any]], analyzer: Analyzer) -> RankedGuidance:
        items = approved.items
        fields = [(e.get("title") or "", e.get("text") or "") for e in items]
        lowered = [f"{title.lower()}{SEPARATOR}{text.lower()}" for title, text in fields]
        targets = tuple(
            (place, target_words(e["target"]))
            for place, e in enumerate(items)
            if e.get("type") == "guardrail" and e.get("target")
        )
        return cls(
            approved,
            RankedIndex.of(fields, analyzer),
            TopicIndex.of(lowered),
            tuple((p, named) for p, named in targets if named),
        )

    def rank(self, topic: str, *, type: str | None, min_match: float) -> list[Ranked]:
        """Every entry answering the topic, in the answer's order; [] to abstain."""
        matches = {m.place: m for m in self.index.search(topic)}
        asked = set(words(topic))
        named = {place for place, needed in self.targets if needed <= asked}
        phrase = set(self.phrases.places(topic)) if SEPARATOR not in topic else set()
        best = max((m.coverage for m in matches.values()), default=0.0)
        if not named and not phrase and best < min_match:
            return []
        places = matches.keys() | named | phrase
        if type:
            rank = GUIDANCE_TYPES.index(type)
            places = {p for p in places if self.approved.keys[p][0] == rank}
        found = [self._ranked(p, matches.get(p), named, phrase) for p in places]
        keys = self.approved.keys
        return sorted(found, key=lambda r: r.key(keys[r.place]))

    @staticmethod
    def _ranked(place: int, match: Match | None, named: set[int], phrase: set[int]) -> Ranked:
        tier = 0 if place in named else 1 if place in phrase else 2
        if match is None:
            return Ranked(place, tier, 0.0, ())
        return Ranked(place, tier, match.score, match.terms)

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
        ranked = self.rank(topic, type=type, min_match=min_match)
        order = self.approved.keys
        keys = [r.key(order[r.place]) for r in ranked]
        start = 0
        if cursor is not None:
            after = decode(cursor, query, size=RANKED_KEY_SIZE)
            start = bisect_right(keys, after)
        end = start + limit
        following = encode(keys[end - 1], query) if end < len(keys) else None
        spoken = dict((term, word) for word, term in reversed(self.index.analyzer.pairs(topic)))
        items = [
            {
                **self.approved.items[r.place],
                "match": {
                    "rank": start + n + 1,
                    "why": TIERS[r.tier],
                    "score": round(r.score, 3),
                    "terms": [spoken.get(t, t) for t in r.terms],
                },
            }
            for n, r in enumerate(ranked[start:end])
        ]
        return Page(items, len(ranked), following)
