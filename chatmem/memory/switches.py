"""The module switch, Require approval and Auto-summarize, kept in the database.

All three sit on the single `chatmem_state` row beside the revision, so one
primary-key read tells a process both whether its caches are fresh and how
the switches stand. Changing a switch bumps the revision like a guidance
change does, because the switch changes what is injected and enforced.

No Flask here: a request that keeps the state it read passes its own store
(the WSGI environ) to `current`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, MutableMapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session as OrmSession

from ..errors import InvalidParams
from . import reads
from .models import GuidanceEvent, State
from .recall import records_revision

SWITCHES = ("memory_enabled", "require_approval", "auto_summarize")
STATE_ID = 1


@dataclass(frozen=True)
class Snapshot:
    revision: int
    memory_enabled: bool
    require_approval: bool
    auto_summarize: bool
    #: The session records' own revision (`recall.records_revision`); None
    #: when its row is missing, and then nothing is kept by it.
    records_revision: int | None = None


DEFAULT_SNAPSHOT = Snapshot(0, True, True, False)


#: The state's columns, as `snapshot_of` reads them: the reads that join the
#: state row to something else select these too.
STATE_COLUMNS = (
    State.revision,
    State.memory_enabled,
    State.require_approval,
    State.auto_summarize,
    records_revision.REVISION,
)
# Built once: it is read on every call, and building it cost more than running it.
_READ = select(*STATE_COLUMNS).where(State.id == STATE_ID)


def read(db: OrmSession) -> Snapshot:
    """The current revision and switches: one primary-key read, never cached."""
    row = reads.first(db, _READ)
    if row is None:
        return DEFAULT_SNAPSHOT
    return snapshot_of(row)


def snapshot_of(row: Any) -> Snapshot:
    """The state of a row holding the state's columns by name (`_READ`'s, or a join's)."""
    return Snapshot(
        row.revision,
        row.memory_enabled,
        row.require_approval,
        row.auto_summarize,
        row.records_revision,
    )


#: Where a request keeps the state it read: on the request itself (its WSGI
#: environ, passed in as `kept`), not on flask.g, which an app context shares
#: between requests (a test's, a CLI's).
_REQUEST_KEY = "chatmem.snapshot"

#: Bumps made by this thread: a request runs in one thread, so what it kept
#: before its own bump is read again, and other threads' requests are untouched.
_bumps = threading.local()

#: Where the current request keeps its state, or None outside a request.
KeptBy = Callable[[], MutableMapping[str, Any] | None]


def _bumped() -> int:
    return int(getattr(_bumps, "count", 0))


def current(db: OrmSession, kept: MutableMapping[str, Any] | None) -> Snapshot:
    """The state as this request sees it: one read per transaction, again after a bump.

    `kept` is the request's own store (None outside a request: a command, the
    sweeper, a test's app context), where every call reads afresh, so a
    long-lived app context never goes stale. Within a request a commit reads
    it again: the database counts session records itself (triggers, not
    `bump_revision`), so a tool call that recorded one and committed is seen
    by the next call of the same request (a chat turn's).
    """
    if kept is None:
        return read(db)
    found: tuple[int, Any, Snapshot] | None = kept.get(_REQUEST_KEY)
    if found is not None and found[0] == _bumped() and found[1] is db.get_transaction():
        return found[2]
    snapshot = read(db)
    keep(kept, db, snapshot)
    return snapshot


def keep(kept: MutableMapping[str, Any], db: OrmSession, snapshot: Snapshot) -> None:
    """Keep a state the request read itself (in a statement of its own) as `current` would."""
    kept[_REQUEST_KEY] = (_bumped(), db.get_transaction(), snapshot)


def forget(kept: MutableMapping[str, Any] | None) -> None:
    """Drop the state a request kept: a long-lived request (a listen stream) reads afresh."""
    if kept is not None:
        kept.pop(_REQUEST_KEY, None)


class Reader:
    """Reads the state row: the dispatcher's view of the revision and switches.

    Built once per app, so it holds the session *factory* (the host's scoped
    session) and asks it for the current unit of work on each read.
    """

    def __init__(self, session: Callable[[], OrmSession], kept_by: KeptBy) -> None:
        self.session = session
        self.kept_by = kept_by

    def snapshot(self) -> Snapshot:
        return current(self.session(), self.kept_by())


def ensure_state_row(db: OrmSession) -> None:
    """Create the state row if a fresh database lacks it (safe under races)."""
    if db.get(State, STATE_ID) is not None:
        return
    try:
        with db.begin_nested():
            db.add(State(id=STATE_ID, revision=0))
    except IntegrityError:
        pass  # another process created it first


def bump_revision(db: OrmSession) -> None:
    """Mark the block and guardrail index stale, in the caller's transaction."""
    _bumps.count = _bumped() + 1  # what this thread's request kept is read again (`current`)
    ensure_state_row(db)
    db.execute(update(State).where(State.id == STATE_ID).values(revision=State.revision + 1))


def set_setting(db: OrmSession, name: str, value: bool, *, actor_id: str | None) -> Snapshot:
    if name not in SWITCHES:
        raise InvalidParams(f"Unknown setting {name!r}.", details={"field": "name"})
    if not isinstance(value, bool):
        raise InvalidParams(f"Setting {name!r} takes true or false.", details={"field": "value"})
    bump_revision(db)
    db.execute(update(State).where(State.id == STATE_ID).values({name: value}))
    db.add(
        GuidanceEvent(action="setting", actor_id=actor_id, detail={"name": name, "value": value})
    )
    db.commit()
    return read(db)
