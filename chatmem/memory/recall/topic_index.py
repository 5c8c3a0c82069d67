"""`recall(topic=...)` over the approved guidance a worker already holds.

The per-revision cache (`ChatMemory.approved_guidance`) has every active
entry in recall's order. Asking the database which of them contain a topic
cost a trigram probe, an indexed query, a sort and a count (2-8 ms at 10,000
entries); here a rare topic costs a look-up in the list of distinct words
and a common one at most one `in` per entry.

The answer stays the scan's: the text searched is `lower(title)` and
`lower(text)` *as the database computes them* (SQLite folds ASCII only,
PostgreSQL its locale's letters), read once per cache, and the topic is
lowered as `like_pattern` lowers it. `lower(column) LIKE '%topic%'` with
the wildcards escaped is then exactly "the lowered topic is a substring".
"""

from __future__ import annotations

import threading
import weakref
from array import array
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Engine, func, select
from sqlalchemy.orm import Session as OrmSession

from ..models import Guidance
from .recall_page import Ordered

# No topic may hold this character (a topic with it goes to the database);
# it separates an entry's title from its text.
SEPARATOR = "\x00"
# Words are listed one per line: a piece of a topic holds no whitespace.
_WORD_END = "\n"

_ACTIVE_LOWERED = select(Guidance.id, func.lower(Guidance.title), func.lower(Guidance.text)).where(
    Guidance.status == "publish", Guidance.enabled.is_(True)
)


@dataclass(frozen=True)
class TopicIndex:
    """The lowered title and text of each cached entry, by its place in recall's order.

    Searching 10,000 texts one by one costs ~1 ms whatever the topic; so
    the index also lists the distinct words (whitespace-separated runs) and
    the places that hold each. A topic's longest piece between spaces lies
    inside one word of every text that contains the topic, so the places
    of the words holding that piece are a superset; each is then checked
    whole. Real prose has a few tens of thousands of distinct words, so the
    word list is a fraction of the texts.
    """

    fields: tuple[str, ...]  # lowered title + SEPARATOR + lowered text, one per entry
    words: str  # every distinct word, each followed by _WORD_END
    word_starts: tuple[int, ...]  # where each word begins in `words`, plus its end
    postings: tuple[array[int], ...]  # per word, the places holding it (ascending)

    @classmethod
    def of(cls, fields: Sequence[str]) -> TopicIndex:
        by_word: dict[str, array[int]] = {}
        for place, text in enumerate(fields):
            for word in set(text.split()):
                by_word.setdefault(word, array("I")).append(place)
        starts = [0]
        for word in by_word:
            starts.append(starts[-1] + len(word) + 1)
        words = "".join(word + _WORD_END for word in by_word)
        return cls(tuple(fields), words, tuple(starts), tuple(by_word.values()))

    def places(self, topic: str) -> list[int]:
        """The places (ascending) of the entries whose title or text contains the topic."""
        needle = topic.lower()
        pieces = needle.split()
        if not pieces:  # only whitespace: no word to narrow by
            return self._scan(needle)
        piece = max(pieces, key=len)
        candidates: set[int] = set()
        read = 0
        at = self.words.find(piece)
        while at >= 0:
            word = bisect_right(self.word_starts, at) - 1
            posting = self.postings[word]
            read += len(posting)
            if read > len(self.fields):  # a piece in most words: one pass is cheaper
                return self._scan(needle)
            candidates.update(posting)
            at = self.words.find(piece, self.word_starts[word + 1])
        if piece == needle:  # a word holding the whole topic: its text holds it too
            return sorted(candidates)
        fields = self.fields
        return sorted(p for p in candidates if needle in fields[p])

    def _scan(self, needle: str) -> list[int]:
        return [place for place, text in enumerate(self.fields) if needle in text]


_BUILT: weakref.WeakKeyDictionary[Engine, tuple[Ordered[Any], TopicIndex]] = (
    weakref.WeakKeyDictionary()
)
_LOCK = threading.Lock()


def searchable(topic: str) -> bool:
    """Whether the index can answer this topic (else the database does)."""
    return SEPARATOR not in topic


def for_cache(db: OrmSession, approved: Ordered[dict[str, Any]]) -> TopicIndex | None:
    """The index of this cache (the same object: one per revision), built on first use.

    None when the entries read now are not the cache's (guidance changed
    since it was built: the revision moved, and the next request rebuilds
    both); the caller then asks the database.
    """
    engine = db.get_bind().engine  # one index per database, whatever the bind
    built = _BUILT.get(engine)
    if built is not None and built[0] is approved:
        return built[1]
    with _LOCK:
        built = _BUILT.get(engine)
        if built is not None and built[0] is approved:
            return built[1]
        rows = db.execute(_ACTIVE_LOWERED)
        # A NULL never matches LIKE; neither does "" hold a (non-empty) topic.
        lowered = {id: f"{title or ''}{SEPARATOR}{text or ''}" for id, title, text in rows}
        ids = [entry["id"] for entry in approved.items]
        if len(ids) != len(lowered) or any(i not in lowered for i in ids):
            return None
        index = TopicIndex.of([lowered[i] for i in ids])
        _BUILT[engine] = (approved, index)
        return index
