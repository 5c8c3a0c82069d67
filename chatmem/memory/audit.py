"""The audit trail proves itself: every event is sealed to the one before it.

Each entry's events form a trail (the site's own events, settings, tokens,
imports and erasures, form one more). When an event is written its `seal` is
the SHA-256 of what it says (action, actor, time, detail), of the SHA-256 of
the entry's text at that moment (`text_sha256`: an approval binds exactly the
text that was approved), and of the seal before it in its trail. `verify`
walks every trail and names each row that no longer matches: an event edited,
inserted or deleted outside chatmem, an entry whose text is not the text
its trail last saw, or a trail whose entry was deleted outside chatmem.

Sealing happens as the event is flushed, whichever code path wrote it, under
a lock per trail (PostgreSQL: an advisory lock; SQLite: the write lock), so
two writers never seal against the same predecessor. What chatmem itself
rewrites in old events (an erasure's "erased user") is sealed again by
`reseal`, for the trails it touched only.

A chain of plain hashes shows an edit made by anyone who did not also
recompute every seal after it; `flask chatmem audit verify` prints each
trail's last seal, which an operator can keep outside the database to rule
out that too.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import event, func, select, update
from sqlalchemy.orm import Session as OrmSession
from sqlalchemy.orm import UOWTransaction

from .models import Guidance, GuidanceEvent, utcnow

#: The seal before a trail's first event.
GENESIS = "0" * 64
#: The name of the site's own trail (events of no entry) in a lock.
SITE = "site"


def text_digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def seal_of(
    *,
    action: str,
    actor_id: str | None,
    at: datetime,
    detail: Any,
    text_sha256: str | None,
    previous: str,
) -> str:
    """The seal of one event: its content and its predecessor's seal, canonical JSON."""
    content = {
        "action": action,
        "actor": actor_id,
        "at": at.isoformat(timespec="microseconds"),
        "detail": detail,
        "text": text_sha256,
        "previous": previous,
    }
    canonical = json.dumps(content, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def _sealed(row: GuidanceEvent, previous: str) -> str:
    return seal_of(
        action=row.action,
        actor_id=row.actor_id,
        at=row.at,
        detail=row.detail,
        text_sha256=row.text_sha256,
        previous=previous,
    )


# -- sealing as events are written ---------------------------------------------------


@event.listens_for(OrmSession, "before_flush")
def _seal_new_events(db: OrmSession, _flush: UOWTransaction, _instances: Any) -> None:
    # `Session.new` lists rows in the order they were added, the order the flush
    # inserts and numbers them in, so each trail is sealed in its id order.
    new = [row for row in db.new if isinstance(row, GuidanceEvent) and row.seal is None]
    last: dict[int | None, str] = {}
    for row in new:
        trail = row.guidance_id
        if trail not in last:
            _lock(db, trail)
            last[trail] = _last_seal(db, trail)
        row.at = row.at or utcnow()
        if trail is not None and row.text_sha256 is None:
            entry = db.get(Guidance, trail)
            row.text_sha256 = text_digest(entry.text) if entry is not None else None
        row.seal = last[trail] = _sealed(row, last[trail])


def _lock(db: OrmSession, trail: int | None) -> None:
    """Hold this trail's lock until the transaction ends: one writer seals at a time."""
    if db.get_bind().dialect.name == "postgresql":
        key = func.hashtext(f"chatmem-audit:{trail if trail is not None else SITE}")
        db.execute(select(func.pg_advisory_xact_lock(key)))
    else:  # a write that changes nothing takes SQLite's write lock now
        db.execute(
            update(GuidanceEvent).where(GuidanceEvent.id < 0).values(action=GuidanceEvent.action)
        )


def _last_seal(db: OrmSession, trail: int | None) -> str:
    found = db.scalar(
        select(GuidanceEvent.seal)
        .where(_in_trail(trail), GuidanceEvent.seal.is_not(None))
        .order_by(GuidanceEvent.id.desc())
        .limit(1)
    )
    return found or GENESIS


def _in_trail(trail: int | None) -> Any:
    if trail is None:
        return GuidanceEvent.guidance_id.is_(None)
    return GuidanceEvent.guidance_id == trail


# -- verifying -------------------------------------------------------------------------


@dataclass(frozen=True)
class Break:
    """One place a trail does not match what was sealed."""

    trail: int | None  # an entry's id; None for the site's trail
    position: int  # 1-based, in the trail's order; 0 for the entry itself
    event_id: int | None
    reason: str

    def __str__(self) -> str:
        name = f"entry #{self.trail}" if self.trail is not None else "the site trail"
        where = f"event {self.position} (row #{self.event_id})" if self.position else "the entry"
        return f"{name}, {where}: {self.reason}"


@dataclass
class Report:
    """What `verify` walked, what did not match, and each trail's last seal."""

    trails: int = 0
    events: int = 0
    breaks: list[Break] = field(default_factory=list)
    heads: dict[int | None, str] = field(default_factory=dict)

    @property
    def verified(self) -> bool:
        return not self.breaks


UNSEALED = "no seal: written outside chatmem"
EDITED = "does not match its seal: edited outside chatmem, or an event before it removed or added"
TEXT_CHANGED = "its text is not the text its trail last sealed: changed outside chatmem"
NO_TRAIL = "has no audit trail: written outside chatmem"
ENTRY_GONE = "its trail remains but the entry is gone: deleted outside chatmem"


def verify(db: OrmSession, *, entry_id: int | None = None) -> Report:
    """Walk every trail (or one entry's) and name each row that does not match its seal."""
    report = Report()
    events = select(GuidanceEvent).order_by(GuidanceEvent.guidance_id, GuidanceEvent.id)
    entries = select(Guidance.id, Guidance.text)
    if entry_id is not None:
        events = events.where(GuidanceEvent.guidance_id == entry_id)
        entries = entries.where(Guidance.id == entry_id)
    texts = {row.id: row.text for row in db.execute(entries)}
    rows = db.scalars(events.execution_options(yield_per=1000))
    for trail, trail_rows in _trails(rows):
        report.trails += 1
        report.events += len(trail_rows)
        head, bound = _walk(trail, trail_rows, report.breaks)
        report.heads[trail] = head
        if trail is not None:
            report.breaks.extend(_entry_breaks(trail, texts.pop(trail, None), bound))
    report.breaks.extend(Break(entry, 0, None, NO_TRAIL) for entry in sorted(texts))
    return report


def _entry_breaks(trail: int, text: str | None, bound: str | None) -> list[Break]:
    """The entry a trail belongs to: still there, with the text the trail last bound."""
    if text is None:
        return [Break(trail, 0, None, ENTRY_GONE)]
    if bound is not None and text_digest(text) != bound:
        return [Break(trail, 0, None, TEXT_CHANGED)]
    return []


def _walk(trail: int | None, rows: list[GuidanceEvent], breaks: list[Break]) -> tuple[str, Any]:
    """Check one trail's seals in order; its last seal and the last text it bound."""
    previous, bound = GENESIS, None
    for position, row in enumerate(rows, 1):
        if row.seal is None:
            breaks.append(Break(trail, position, row.id, UNSEALED))
            continue
        if _sealed(row, previous) != row.seal:
            breaks.append(Break(trail, position, row.id, EDITED))
        previous, bound = row.seal, row.text_sha256 or bound
    return previous, bound


def exported_trail_holds(events: list[dict[str, Any]], text: str) -> bool:
    """An exported entry's trail checked as `verify` checks a stored one: every event
    matches its seal and the text is the one last sealed. A file written before seals
    existed carries none and has nothing to check; one with only some was altered."""
    if not any(row.get("seal") for row in events):
        return True
    rows = [
        GuidanceEvent(
            action=row["action"],
            actor_id=row["actor_id"],
            at=datetime.fromisoformat(str(row["at"]).removesuffix("Z")),
            detail=row["detail"],
            text_sha256=row.get("text_sha256"),
            seal=row.get("seal"),
        )
        for row in events
    ]
    breaks: list[Break] = []
    _head, bound = _walk(None, rows, breaks)
    return not breaks and (bound is None or text_digest(text) == bound)


def reseal(db: OrmSession, trails: Iterable[int | None]) -> None:
    """Seal these trails again from their first event: chatmem rewrote old events in them
    (an erasure's "erased user"). Run in the caller's transaction."""
    for trail in set(trails):
        previous = GENESIS
        for row in db.scalars(
            select(GuidanceEvent).where(_in_trail(trail)).order_by(GuidanceEvent.id)
        ):
            row.seal = previous = _sealed(row, previous)
    db.flush()


def _trails(rows: Iterable[GuidanceEvent]) -> Iterator[tuple[int | None, list[GuidanceEvent]]]:
    """Events ordered by trail, grouped into one list per trail."""
    current: list[GuidanceEvent] = []
    for row in rows:
        if current and row.guidance_id != current[0].guidance_id:
            yield current[0].guidance_id, current
            current = []
        current.append(row)
    if current:
        yield current[0].guidance_id, current
