"""`recall(topic=...)` over the approved guidance a worker already holds.

The per-revision cache (`ChatMemory.approved_guidance`) has every active
entry in recall's order. Asking the database which of them contain a topic
cost a trigram probe, an indexed query, a sort and a count (2-8 ms at 10,000
entries); finding it in one string held in memory costs a C substring
search (~0.1 ms for a rare word) and one `in` per entry for a common one.

The answer stays the scan's: the text searched is `lower(title)` and
`lower(text)` *as the database computes them* (SQLite folds ASCII only,
PostgreSQL its locale's letters), read once per cache, and the topic is
lowered as `like_pattern` lowers it. `lower(column) LIKE '%topic%'` with
the wildcards escaped is then exactly "the lowered topic is a substring".
"""

from __future__ import annotations

import threading
import weakref
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from flask_sqlalchemy import SQLAlchemy
from sqlalchemy import Engine, func, select

from .models import Guidance
from .recall_page import Ordered

# Fields and entries are joined with a character no topic may hold (a topic
# with it goes to the database), so no match spans two of them.
SEPARATOR = "\x00"
# Past this many occurrences, one `in` per entry beats a find per match.
FIND_MAX = 64

_ACTIVE_LOWERED = select(Guidance.id, func.lower(Guidance.title), func.lower(Guidance.text)).where(
    Guidance.status == "publish", Guidance.enabled.is_(True)
)


@dataclass(frozen=True)
class TopicIndex:
    """The lowered title and text of each cached entry, by its place in recall's order."""

    fields: tuple[str, ...]  # title + SEPARATOR + text, one per entry
    joined: str  # every field, each followed by SEPARATOR
    starts: tuple[int, ...]  # where each field begins in `joined`, plus its end

    @classmethod
    def of(cls, fields: Sequence[str]) -> TopicIndex:
        starts = [0]
        for text in fields:
            starts.append(starts[-1] + len(text) + 1)
        joined = SEPARATOR.join(fields) + SEPARATOR
        return cls(tuple(fields), joined, tuple(starts))

    def places(self, topic: str) -> list[int]:
        """The places (ascending) of the entries whose title or text contains the topic."""
        needle = topic.lower()
        found = self.joined.count(needle)
        if found == 0:
            return []
        if found > FIND_MAX:
            return [i for i, text in enumerate(self.fields) if needle in text]
        places = []
        at = self.joined.find(needle)
        while at >= 0:
            place = bisect_right(self.starts, at) - 1
            places.append(place)
            at = self.joined.find(needle, self.starts[place + 1])
        return places


_BUILT: weakref.WeakKeyDictionary[Engine, tuple[Ordered[Any], TopicIndex]] = (
    weakref.WeakKeyDictionary()
)
_LOCK = threading.Lock()


def searchable(topic: str) -> bool:
    """Whether the index can answer this topic (else the database does)."""
    return SEPARATOR not in topic


def for_cache(db: SQLAlchemy, approved: Ordered[dict[str, Any]]) -> TopicIndex | None:
    """The index of this cache (the same object: one per revision), built on first use.

    None when the entries read now are not the cache's (guidance changed
    since it was built: the revision moved, and the next request rebuilds
    both); the caller then asks the database.
    """
    engine = db.engine
    built = _BUILT.get(engine)
    if built is not None and built[0] is approved:
        return built[1]
    with _LOCK:
        built = _BUILT.get(engine)
        if built is not None and built[0] is approved:
            return built[1]
        rows = db.session.execute(_ACTIVE_LOWERED)
        # A NULL never matches LIKE; neither does "" hold a (non-empty) topic.
        lowered = {id: f"{title or ''}{SEPARATOR}{text or ''}" for id, title, text in rows}
        ids = [entry["id"] for entry in approved.items]
        if len(ids) != len(lowered) or any(i not in lowered for i in ids):
            return None
        index = TopicIndex.of([lowered[i] for i in ids])
        _BUILT[engine] = (approved, index)
        return index
