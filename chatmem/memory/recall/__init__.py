"""The queries behind the `recall` tool.

`topic` is a case-insensitive substring over guidance title and text and over
session summaries and digests. Guidance is returned one bounded page at a
time in recall's order (see `recall_page`), sessions newest first.

The predicate is always the plain scan's (`lower(column) LIKE '%topic%'`); on
SQLite an FTS5 trigram index first narrows the rows it is applied to, and on
PostgreSQL a pg_trgm index serves the predicate itself (see `search`). Either
way the answer is the scan's answer, only sooner.
"""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import (
    ColumnElement,
    DateTime,
    Executable,
    Integer,
    Row,
    String,
    and_,
    bindparam,
    case,
    column,
    func,
    literal,
    literal_column,
    or_,
    select,
    table,
)
from sqlalchemy.orm import Session as OrmSession

from .. import reads
from ..models import (
    GUIDANCE_RECORD_COLUMNS,
    GUIDANCE_TYPES,
    SESSION_RECORD_COLUMNS,
    Guidance,
    Session,
    guidance_record,
    session_record,
)
from . import search, topic_index
from .ranked import RankedGuidance
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

ESCAPE = "/"


def like_pattern(topic: str) -> str:
    """`%topic%` with LIKE's wildcards taken literally."""
    escaped = topic.lower().replace(ESCAPE, ESCAPE * 2).replace("%", "/%").replace("_", "/_")
    return f"%{escaped}%"


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
_RECORDS = select(*SESSION_RECORD_COLUMNS).where(Session.recorded_at.is_not(None))
_NEWEST = (Session.recorded_at.desc(), Session.id)
_NEWEST_RECORDS = _RECORDS.order_by(*_NEWEST).limit(bindparam("limit", type_=Integer))
# One user's records: `ix_chatmem_session_user_recorded (user_id, recorded_at)`
# hands them over newest first, so the LIMIT stops the walk on both engines.
_OWN = Session.user_id == bindparam("user_id")
_OWN_NEWEST_RECORDS = (
    _RECORDS.where(_OWN).order_by(*_NEWEST).limit(bindparam("limit", type_=Integer))
)


# The windows of newest records the first, index-free passes over sessions
# read, smallest first: a topic absent from the first is rare enough for the
# index.
WINDOWS = (100, 1000)
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


# The statements of a topic over session records, built once per shape
# (own records or everyone's): building and compiling them on every call
# cost more than running them. The topic comes in as `pattern` (and the
# FTS5 `phrase`), the sizes as `limit` and `skip`.
_PATTERN = bindparam("pattern", type_=String)
_MATCHES = or_(
    func.lower(Session.summary).like(_PATTERN, escape=ESCAPE),
    func.lower(Session.digest).like(_PATTERN, escape=ESCAPE),
)
_LIMIT = bindparam("limit", type_=Integer)
_SESSION_FTS = "chatmem_session_fts"
_FTS_HITS = select(table(_SESSION_FTS, column("rowid")).c.rowid).where(
    literal_column(_SESSION_FTS).op("MATCH")(bindparam("phrase", type_=String))
)
_ROWID: ColumnElement[int] = literal_column("chatmem_session.rowid")
# SQLite's unary + keeps a term off the indexes: with the plain user term the
# planner walked all of a user's records by (user_id, recorded_at) to skip
# the sort, checking each against the FTS5 candidates (a user with 10,000
# records: 8 ms for an absent topic instead of 0.5 ms).
_OWN_UNINDEXED: ColumnElement[bool] = literal_column("+chatmem_session.user_id") == bindparam(
    "user_id"
)


# Before any session was recorded: a window wider than the history is all of it.
_BEGINNING = literal(datetime(1970, 1, 1), DateTime)


@dataclass(frozen=True)
class _TopicStatements:
    window: Executable  # matches among the newest `skip`+1 records, newest first
    scan: Executable  # matches, newest first, by the plain predicate
    fts: Executable  # the same, narrowed by the FTS5 index first (SQLite)
    pg: Executable  # the same, the pg_trgm indexes kept apart from the LIMIT


def _topic_statements(own: bool) -> _TopicStatements:
    records = _RECORDS.where(_OWN) if own else _RECORDS
    times = select(Session.recorded_at).where(Session.recorded_at.is_not(None))
    times = times.where(_OWN) if own else times
    # The window is a bound on recorded_at (the `skip`+1-th newest time, an
    # index-only walk), not a LIMITed derived table: SQLite sorted that table
    # whole before keeping `limit`; this walk stops at the `limit`-th match.
    # One statement: on PostgreSQL each round trip costs more than the walk.
    cutoff = (
        times.order_by(Session.recorded_at.desc())
        .offset(bindparam("skip", type_=Integer))
        .limit(1)
        .scalar_subquery()
    )
    # Without LIMIT in sight the planner picks the pg_trgm indexes; with it,
    # it would walk recorded_at hoping for early matches (all rows for a rare
    # topic). MATERIALIZED keeps the two apart. The matches come out whole,
    # not as ids to look up again: fetching each row twice took longer than
    # the search.
    hits = records.where(_MATCHES).cte("topic_hits").prefix_with("MATERIALIZED")
    return _TopicStatements(
        window=records.where(_MATCHES, Session.recorded_at >= func.coalesce(cutoff, _BEGINNING))
        .order_by(*_NEWEST)
        .limit(_LIMIT),
        scan=records.where(_MATCHES).order_by(*_NEWEST).limit(_LIMIT),
        fts=(_RECORDS.where(_OWN_UNINDEXED) if own else _RECORDS)
        .where(_ROWID.in_(_FTS_HITS), _MATCHES)
        .order_by(*_NEWEST)
        .limit(_LIMIT),
        pg=select(hits).order_by(hits.c.recorded_at.desc(), hits.c.id).limit(_LIMIT),
    )


_TOPIC_STATEMENTS = {own: _topic_statements(own) for own in (False, True)}


def _indexed(
    db: OrmSession, statements: _TopicStatements, topic: str, params: dict[str, Any]
) -> Executable:
    """The whole-history pass this engine has for `topic` (adding the FTS phrase it needs)."""
    connection = db.connection()
    if connection.engine.dialect.name == "postgresql":
        return statements.pg
    if search.fts_table(connection.engine, connection, "chatmem_session", topic):
        params["phrase"] = search.match_phrase(topic.lower())
        return statements.fts
    return statements.scan  # no trigram for this topic (or this SQLite)


def session_records(
    db: OrmSession,
    *,
    topic: str | None = None,
    limit: int = 10,
    scan: bool = False,
    user_id: str | None = None,
) -> list[Row[Any]]:
    """The newest records (rows of SESSION_RECORD_COLUMNS) matching `topic`.

    `user_id` keeps one user's records only (None: everyone's). It is part
    of every pass, the scan included, so the reference path answers the same.

    A common topic is best served by walking the newest records and stopping
    at `limit` matches; a rare one by the trigram index. So the first passes
    scan only windows of the newest records (WINDOWS): if one finds `limit`
    matches they are exactly the newest matches overall. One that finds
    none, or the last window falling short, hands over to the indexed pass
    over the whole history. The same on both engines: no probe of the index
    first, which cost a common topic more (1-2 ms on SQLite, listing its
    candidates) than the first window costs a rare one (0.1-0.5 ms).
    """
    own = user_id is not None
    if not topic:
        if own:
            return reads.rows(db, _OWN_NEWEST_RECORDS, {"limit": limit, "user_id": user_id})
        return reads.rows(db, _NEWEST_RECORDS, {"limit": limit})
    statements = _TOPIC_STATEMENTS[own]
    params: dict[str, Any] = {"pattern": like_pattern(topic), "limit": limit}
    if own:
        params["user_id"] = user_id
    if scan:
        return reads.rows(db, statements.scan, params)
    indexed = _indexed(db, statements, topic, params)
    # Ties at a window's cutoff all come in, so a window is a prefix of the
    # order: `limit` matches in it are the newest overall.
    for window in WINDOWS:
        found = reads.rows(db, statements.window, {**params, "skip": window - 1})
        if len(found) == limit:
            return found
        if not found:
            break  # not even one among the newest: the index is quicker than a wider window
    return reads.rows(db, indexed, params)


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
) -> dict[str, Any]:
    """`scan=True` skips the indexes: the reference the indexed path must equal.

    `ranked`, when given, answers a topic as a question (see `ranked`):
    named guardrails, then the phrase, then the entries by relevance, or
    nothing when the best holds under `min_match` of the question. Without
    it a topic is the substring rule, which the other paths keep as the
    reference.

    `user_id` limits the session records to that user's (guidance is the
    site's, approved by a person, and the same for everyone).

    `approved`, when given, is all active guidance already shaped and in
    recall's order (the caller's per-revision cache); it stands in for the
    guidance query, with a topic too (see `topic_index`). Only the page is
    copied out of it.

    Guidance comes a page at a time (`guidance_limit`, `cursor`); sessions
    are the newest `limit` records on every page.
    """
    index = None
    if approved is not None and topic and not scan and topic_index.searchable(topic):
        index = topic_index.for_cache(db, approved)
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
    elif approved is not None and index is not None and topic:
        places = index.places(topic)
        if type:  # a type's entries are one run of places, since type leads the order
            rank = GUIDANCE_TYPES.index(type)
            low, high = bisect_left(approved.keys, (rank,)), bisect_left(approved.keys, (rank + 1,))
            places = places[bisect_left(places, low) : bisect_left(places, high)]
        shown = page_of(
            approved, places, limit=guidance_limit, cursor=cursor, query=query_of(type, topic)
        )
    else:
        shown = guidance(db, type=type, topic=topic, scan=scan, limit=guidance_limit, cursor=cursor)
    return {
        "guidance": [dict(g) for g in shown.items],
        "guidance_total": shown.total,
        "cursor": shown.cursor,
        "sessions": [
            session_record(s)
            for s in session_records(db, topic=topic, limit=limit, scan=scan, user_id=user_id)
        ],
    }
