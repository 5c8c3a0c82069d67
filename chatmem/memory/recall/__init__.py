"""The queries behind the `recall` tool.

Guidance: without a topic, one bounded page at a time in recall's order
(see `recall_page`); with one, the ranked answer to it as a question (see
`ranked`). Session records: the newest, or a topic's best among the newest
matches (see `records`).

`guidance(topic=...)` and `scan=True` keep the substring rule: the topic as
written, a case-insensitive substring of title or text. It is the reference
the indexes are held to (an FTS5 trigram index narrows its rows on SQLite,
a pg_trgm index serves its predicate on PostgreSQL; see `search`), and the
fallback when the per-revision cache is not at hand.
"""

from __future__ import annotations

from bisect import bisect_left
from typing import Any

from sqlalchemy import (
    ColumnElement,
    and_,
    case,
    column,
    func,
    literal_column,
    or_,
    select,
    table,
)
from sqlalchemy.orm import Session as OrmSession

from ..models import (
    GUIDANCE_RECORD_COLUMNS,
    GUIDANCE_TYPES,
    Guidance,
    guidance_record,
)
from . import search, topic_index
from .ranked import RankedGuidance
from .ranking import Analyzer
from .recall_page import (
    DEFAULT_LIMIT,
    Key,
    Ordered,
    Page,
    approved_at_of,
    decode,
    following,
    page,
    page_of,
    query_of,
)
from .records import session_record, session_records
from .search import ESCAPE, like_pattern

__all__ = ["ESCAPE", "like_pattern", "recall", "session_records"]


def _contains(col: Any, pattern: str) -> ColumnElement[bool]:
    # No coalesce: NULL never matches a non-empty pattern anyway, and a bare
    # lower(column) is what PostgreSQL's expression indexes are built on.
    return func.lower(col).like(pattern, escape=ESCAPE)


def topic_filter(
    db: OrmSession, target: str, rowid: Any, columns: tuple[Any, ...], topic: str, *, scan: bool
) -> ColumnElement[bool]:
    """The topic predicate for one table, narrowed by its FTS index when there is one."""
    pattern = like_pattern(topic)
    predicate = or_(*(_contains(c, pattern) for c in columns))
    if scan:
        return predicate
    connection = db.connection()
    fts = search.fts_table(connection.engine, connection, target, topic)
    if fts is None:
        return predicate
    index = table(fts, column("rowid"))
    candidates = select(index.c.rowid).where(
        literal_column(fts).op("MATCH")(search.match_phrase(topic.lower()))
    )
    # The index finds a superset (it folds Unicode case); the predicate decides.
    return and_(rowid.in_(candidates), predicate)


# The statements every plain `recall` runs, built once (building them cost
# more than running them on a small site).
_ACTIVE_GUIDANCE = select(*GUIDANCE_RECORD_COLUMNS).where(
    Guidance.status == "publish", Guidance.enabled.is_(True)
)
# A topic the SQLite index finds in fewer guidance entries than this is
# rare: the index serves it. A common one is served better by scanning the
# active entries.
RARE = 1000


def _rare_in_guidance(db: OrmSession, topic: str) -> bool:
    """Whether the trigram index finds this topic in fewer than RARE guidance entries (SQLite).

    Asking costs 0.1-1.5 ms: the probe stops at RARE candidates, but a
    common trigram's list is read whole. It saves a common topic the index's
    cost of listing thousands of candidates (FTS5 is slower than a scan
    then). The candidates are a superset, so a topic counted rare is rare.
    On PostgreSQL (no FTS table) it answers False.
    """
    connection = db.connection()
    fts = search.fts_table(connection.engine, connection, "chatmem_guidance", topic)
    if fts is None:
        return False
    probe = f"SELECT count(*) FROM (SELECT rowid FROM {fts} WHERE {fts} MATCH ? LIMIT ?)"
    phrase = search.match_phrase(topic.lower())
    return int(connection.exec_driver_sql(probe, (phrase, RARE)).scalar() or 0) < RARE


# recall's guidance order (see recall_page.order_key), for the query.
_type_rank: ColumnElement[int] = case(
    {t: i for i, t in enumerate(GUIDANCE_TYPES)}, value=Guidance.type
)
_approved: ColumnElement[Any] = func.coalesce(Guidance.approved_at, Guidance.created_at)
_RECALL_ORDER = (_type_rank, _approved.desc(), Guidance.id.desc())


def _after(key: Key) -> ColumnElement[bool]:
    """Entries that come after `key` in recall's order (the keyset condition)."""
    rank, _when, minus_id = key
    when = approved_at_of(key)
    later_in_type = or_(_approved < when, and_(_approved == when, Guidance.id < -minus_id))
    return or_(_type_rank > rank, and_(_type_rank == rank, later_in_type))


def guidance(
    db: OrmSession,
    *,
    type: str | None = None,
    topic: str | None = None,
    scan: bool = False,
    limit: int = DEFAULT_LIMIT,
    cursor: str | None = None,
) -> Page[dict[str, Any]]:
    """One page of the approved, enabled entries matching the filters, in recall's order.

    The database sorts and stops at the page (a word in half the entries
    would otherwise bring thousands of rows to Python to keep fifty), and
    counts the matches for `guidance_total`.
    """
    query_filters = query_of(type, topic)
    after = decode(cursor, query_filters) if cursor is not None else None
    matching = _ACTIVE_GUIDANCE
    if type:
        matching = matching.where(Guidance.type == type)
    if topic:
        columns = (Guidance.title, Guidance.text)
        indexed = not scan and _rare_in_guidance(db, topic)
        matching = matching.where(
            topic_filter(db, "chatmem_guidance", Guidance.id, columns, topic, scan=not indexed)
        )
    paged = matching if after is None else matching.where(_after(after))
    # One more than the page: whether another page follows.
    rows = list(db.execute(paged.order_by(*_RECALL_ORDER).limit(limit + 1)))
    more = len(rows) > limit
    if after is None and not more:
        total = len(rows)  # the first page holds them all: nothing left to count
    else:
        # A query of its own: `count(*) OVER ()` in the page query made
        # SQLite keep every match, text and all, to sort them (84 ms for
        # 5,000 matches, against a few ms for this count and a top-N sort).
        count = select(func.count()).select_from(matching.subquery())
        total = int(db.execute(count).scalar() or 0)
    next_cursor = following(rows[limit - 1], query_filters) if more else None
    return Page([guidance_record(r) for r in rows[:limit]], total, next_cursor)


def _cached_page(
    db: OrmSession,
    approved: Ordered[dict[str, Any]],
    type: str | None,
    topic: str,
    *,
    limit: int,
    cursor: str | None,
) -> Page[dict[str, Any]] | None:
    """A topic's page from the cache's topic index; None when the index cannot answer.

    Built on first use only: with the ranked index at hand (the tool's call)
    the topic index is never asked, so it is never built.
    """
    index = topic_index.for_cache(db, approved) if topic_index.searchable(topic) else None
    if index is None:
        return None
    places = index.places(topic)
    if type:  # a type's entries are one run of places, since type leads the order
        rank = GUIDANCE_TYPES.index(type)
        low, high = bisect_left(approved.keys, (rank,)), bisect_left(approved.keys, (rank + 1,))
        places = places[bisect_left(places, low) : bisect_left(places, high)]
    return page_of(approved, places, limit=limit, cursor=cursor, query=query_of(type, topic))


def recall(
    db: OrmSession,
    *,
    type: str | None = None,
    topic: str | None = None,
    limit: int = 10,
    guidance_limit: int = DEFAULT_LIMIT,
    cursor: str | None = None,
    scan: bool = False,
    approved: Ordered[dict[str, Any]] | None = None,
    ranked: RankedGuidance | None = None,
    min_match: float = 0.0,
    user_id: str | None = None,
    records_revision: int | None = None,
) -> dict[str, Any]:
    """`scan=True` skips the indexes: the reference the indexed path must equal.

    `ranked`, when given, answers a topic as a question (see `ranked`):
    named guardrails, then the phrase, then the entries by relevance, or
    nothing when the best holds under `min_match` of the question. Without
    it a topic is the substring rule, which the other paths keep as the
    reference.

    `user_id` limits the session records to that user's (guidance is the
    site's, approved by a person, and the same for everyone).
    `records_revision`, read with the state row, lets a worker reuse the
    records it sent for the same question at that revision.

    `approved`, when given, is all active guidance already shaped and in
    recall's order (the caller's per-revision cache); it stands in for the
    guidance query, with a topic too (see `topic_index`). Only the page is
    copied out of it.

    Guidance comes a page at a time (`guidance_limit`, `cursor`); sessions
    are the newest `limit` records on every page.
    """
    shown: Page[dict[str, Any]] | None = None
    if ranked is not None and topic and not scan:
        shown = ranked.page(
            topic,
            type=type,
            limit=guidance_limit,
            cursor=cursor,
            query=query_of(type, topic),
            min_match=min_match,
        )
    elif approved is not None and not topic:
        shown = page(
            approved.of_type(type),
            limit=guidance_limit,
            cursor=cursor,
            query=query_of(type, topic),
        )
    elif approved is not None and topic and not scan:
        shown = _cached_page(db, approved, type, topic, limit=guidance_limit, cursor=cursor)
    if shown is None:
        shown = guidance(db, type=type, topic=topic, scan=scan, limit=guidance_limit, cursor=cursor)
    return {
        "guidance": [dict(g) for g in shown.items],
        "guidance_total": shown.total,
        "cursor": shown.cursor,
        "sessions": [
            session_record(s)
            for s in session_records(
                db,
                topic=topic,
                limit=limit,
                scan=scan,
                user_id=user_id,
                analyzer=ranked.index.analyzer if ranked else Analyzer(),
                revision=records_revision,
            )
        ],
    }
