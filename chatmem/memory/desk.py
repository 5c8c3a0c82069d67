"""The curator's changes to several entries in one transaction.

- `replace`: approve a proposal and move the active entry it supersedes to
  the trash, together or not at all. Each entry keeps its own audit event,
  naming the other (`replaces` / `replaced_by`).
- `bulk`: disable, enable, trash or restore several entries; one stale
  version or wrong status refuses them all, so a list is never half-changed.

The single-entry steps are `guidance`'s, run with `commit=False`; this
module only decides where the transaction ends.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from sqlalchemy.orm import Session as OrmSession

from ..errors import Conflict, InvalidParams
from . import guidance
from .models import Guidance

BULK_MAX = 200
BULK_ACTIONS = ("disable", "enable", "trash", "restore")


def replace(
    db: OrmSession,
    entry_id: int,
    old_id: int,
    *,
    actor_id: str,
    expected_version: int,
    old_version: int,
    despite: Sequence[str] = (),
) -> tuple[Guidance, Guidance]:
    """Approve proposal `entry_id` and trash active entry `old_id`; returns both."""
    if entry_id == old_id:
        raise InvalidParams("An entry cannot replace itself.", details={"field": "old_id"})
    try:
        old = guidance.get(db, old_id)
        if old.status != "publish":
            raise Conflict(
                f"Guidance #{old_id} is not active any more ({old.status}); reload the page.",
                details={"id": old_id, "status": old.status},
            )
        entry = guidance.approve(
            db,
            entry_id,
            actor_id=actor_id,
            expected_version=expected_version,
            despite=despite,
            extra={"replaces": old_id},
            commit=False,
        )
        old = guidance.trash(
            db,
            old_id,
            actor_id=actor_id,
            expected_version=old_version,
            extra={"replaced_by": entry_id},
            commit=False,
        )
        db.commit()
    except BaseException:
        db.rollback()
        raise
    return entry, old


def _step(action: str) -> Callable[..., Guidance]:
    if action in ("enable", "disable"):
        on = action == "enable"
        return lambda db, entry_id, **kw: guidance.set_enabled(db, entry_id, on, **kw)
    return {"trash": guidance.trash, "restore": guidance.restore}[action]


def bulk(
    db: OrmSession, action: str, versions: Mapping[int, int], *, actor_id: str
) -> list[Guidance]:
    """Apply `action` to every entry id -> the version the curator saw, or to none."""
    if action not in BULK_ACTIONS:
        raise InvalidParams(
            f"action must be one of {', '.join(BULK_ACTIONS)}.", details={"field": "action"}
        )
    if not versions:
        raise InvalidParams("Select at least one entry.", details={"field": "id"})
    if len(versions) > BULK_MAX:
        raise InvalidParams(f"Select at most {BULK_MAX} entries.", details={"field": "id"})
    step = _step(action)
    done: list[Guidance] = []
    try:
        for entry_id, version in versions.items():
            kwargs: dict[str, Any] = {"actor_id": actor_id, "expected_version": version}
            done.append(step(db, entry_id, commit=False, **kwargs))
        db.commit()
    except BaseException:
        db.rollback()
        raise
    return done
