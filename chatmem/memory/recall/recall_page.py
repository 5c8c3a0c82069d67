"""The bounded guidance answer of `recall` (SPEC §3): one page, the total, a cursor.

Order: guardrails, facts, conventions, instructions; newest approval first
within a type, and the higher id first on a tie, so no two entries share a
place. `order_key` is that order as an ascending tuple.

The cursor is a keyset position, the key of the last entry sent, not an
offset: the next page starts right after it whatever was approved or removed
in between, so paging never repeats an entry and never skips one that was
there all along. It is opaque (base64url), names the query it belongs to
(type and topic), and carries a checksum, so a cursor that was cut, edited or
made up is refused with `invalid_params` rather than quietly answering
something else. It is not an authority: any position it could name, the
caller may read anyway.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Generic, TypeVar

from ...errors import InvalidParams
from ..models import GUIDANCE_TYPES

DEFAULT_LIMIT = 50
LIMIT_MAX = 500
CURSOR_MAX = 200  # a cursor is ~60 characters; the schema refuses anything far longer

# recall's order (type, approval, id); a ranked answer puts its tier and score first.
Key = tuple[int, ...]
T = TypeVar("T")

_EPOCH = datetime(1970, 1, 1)
_MICROSECOND = timedelta(microseconds=1)
_VERSION = 1
_CHECK = 6  # checksum bytes


def order_key(entry: Any) -> Key:
    """Where an entry (a Guidance or a row of its record columns) goes in recall's order."""
    approved = entry.approved_at or entry.created_at
    return (GUIDANCE_TYPES.index(entry.type), -((approved - _EPOCH) // _MICROSECOND), -entry.id)


def approved_at_of(key: Key) -> datetime:
    """The approval time a key holds (for the query's keyset condition)."""
    return _EPOCH + timedelta(microseconds=-key[1])


def query_of(type: str | None, topic: str | None) -> list[str | None]:
    """What a cursor is bound to: the filters that decide which entries match."""
    return [type or None, topic or None]


@dataclass(frozen=True)
class Ordered(Generic[T]):
    """Entries in recall's order, with their keys (for bisecting)."""

    keys: tuple[Key, ...]
    items: tuple[T, ...]

    @classmethod
    def of(cls, entries: Sequence[Any], shape: Any) -> Ordered[Any]:
        """`shape(entry)` for every entry, sorted by `order_key`."""
        ranked = sorted(((order_key(e), e) for e in entries), key=lambda pair: pair[0])
        return cls(tuple(k for k, _e in ranked), tuple(shape(e) for _k, e in ranked))

    def of_type(self, type: str | None) -> Ordered[T]:
        """Only entries of this type: a contiguous run, since type leads the key."""
        if not type:
            return self
        rank = GUIDANCE_TYPES.index(type)
        low = bisect_left(self.keys, (rank,))
        high = bisect_left(self.keys, (rank + 1,))
        return Ordered(self.keys[low:high], self.items[low:high])


@dataclass(frozen=True)
class Page(Generic[T]):
    items: list[T]
    total: int
    cursor: str | None


def following(last: Any, query: object) -> str:
    """The cursor for the page after the one `last` (an entry) ends."""
    return encode(order_key(last), query)


def page(ordered: Ordered[T], *, limit: int, cursor: str | None, query: object) -> Page[T]:
    """The entries after `cursor` (from the start without one), at most `limit` of them.

    `query` is whatever names the filters (type and topic): a cursor made for
    one query is refused by another.
    """
    start = 0
    if cursor is not None:
        start = bisect_right(ordered.keys, decode(cursor, query))
    end = start + limit
    following = None
    if end < len(ordered.keys):
        following = encode(ordered.keys[end - 1], query)
    return Page(list(ordered.items[start:end]), len(ordered.keys), following)


def page_of(
    ordered: Ordered[T], places: Sequence[int], *, limit: int, cursor: str | None, query: object
) -> Page[T]:
    """`page` over some of the entries: those at `places` (ascending) in `ordered`."""
    keys = ordered.keys
    start = 0
    if cursor is not None:
        start = bisect_right(places, decode(cursor, query), key=lambda place: keys[place])
    end = start + limit
    following = None
    if end < len(places):
        following = encode(keys[places[end - 1]], query)
    return Page([ordered.items[p] for p in places[start:end]], len(places), following)


def _fingerprint(query: object) -> str:
    text = json.dumps(query, sort_keys=True, ensure_ascii=False)
    return hashlib.blake2b(text.encode(), digest_size=6).hexdigest()


def _check(payload: bytes) -> bytes:
    return hashlib.blake2b(payload, digest_size=_CHECK, person=b"chatmem-cursor").digest()


def encode(key: Key, query: object) -> str:
    payload = json.dumps([_VERSION, _fingerprint(query), *key], separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(payload + _check(payload)).decode().rstrip("=")


def _refuse(reason: str) -> InvalidParams:
    return InvalidParams(f"cursor {reason}.", details={"field": "cursor"})


def decode(cursor: str, query: object, size: int = 3) -> Key:
    """The key a cursor names, or invalid_params if it is not one this query gave out."""
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
    except (binascii.Error, ValueError):
        raise _refuse("is not one recall gave out") from None
    payload, check = raw[:-_CHECK], raw[-_CHECK:]
    if len(raw) <= _CHECK or check != _check(payload):
        raise _refuse("is not one recall gave out")
    try:
        version, fingerprint, *key = json.loads(payload)
    except (ValueError, TypeError):  # pragma: no cover - the checksum held, so we wrote it
        raise _refuse("is not one recall gave out") from None
    if version != _VERSION or not all(type(k) is int for k in key):
        raise _refuse("is not one recall gave out")  # pragma: no cover - same
    if fingerprint != _fingerprint(query) or len(key) != size:
        raise _refuse("belongs to a recall with other filters (type, topic)")
    return tuple(key)
