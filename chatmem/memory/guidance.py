"""The life of a guidance entry: propose, approve, reject, edit, switch,
trash, restore and admin add, each with an audit event.

Every change that can alter what is injected or enforced bumps the revision
in the same transaction. Concurrent changes to one entry are refused by the
`version` column (SQLAlchemy's version counter turns a lost race into a
StaleDataError, which becomes `conflict`), and a caller that read the entry
earlier can pass `expected_version` so a stale page is refused too.
What each field may hold is checked in `fields`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session as OrmSession
from sqlalchemy.orm.exc import StaleDataError

from ..errors import Conflict, NotFound
from . import revalidation, switches
from .fields import (
    blank_to_none,
    checked_changes,
    checked_fields,
    checked_reason,
    default_title,
    text_key,
)
from .models import ENFORCED_SEVERITIES, Guidance, GuidanceEvent, iso, utcnow

# Actor ids of changes made from a shell (`flask chatmem guidance ...`): `cli:<login>`,
# never a host user id, so no user loader is asked about them.
CLI_ACTOR_PREFIX = "cli:"
# Actor ids in an imported trail are the other site's: a copy names them
# `imported:<the name the file gave>`, so no local user with that id is named.
IMPORTED_ACTOR_PREFIX = "imported:"


def propose(
    db: OrmSession,
    fields: Mapping[str, Any],
    *,
    session_id: str | None,
    actor_id: str | None,
    flags: Sequence[str] = (),
) -> tuple[Guidance, bool]:
    """An agent's proposal; returns (entry, created).

    Text identical after folding to a pending or published entry returns that
    entry instead of a second one, so retries and repeated takeaways are
    harmless. `flags` are the screening codes (see `screening`): a flagged
    proposal waits for a person even when Require approval is off, and its
    audit event keeps them. The caller commits.
    """
    key = text_key(fields["text"])
    existing = db.scalars(
        select(Guidance)
        .where(Guidance.text_key == key, Guidance.status.in_(("pending", "publish")))
        .order_by(Guidance.id)
        .limit(1)
    ).first()
    if existing is not None:
        return existing, False
    publish_now = not switches.read(db).require_approval and not flags
    entry = _new_entry(fields, status="publish" if publish_now else "pending", origin="agent")
    entry.session_id = session_id
    entry.created_by = actor_id
    if publish_now:
        entry.approved_at = entry.created_at
        switches.bump_revision(db)
    db.add(entry)
    db.flush()
    detail: dict[str, Any] = {"status": entry.status}
    if flags:
        detail["flags"] = list(flags)
    _event(db, entry, "propose", actor_id, detail)
    return entry, True


def admin_add(db: OrmSession, fields: Mapping[str, Any], *, actor_id: str) -> Guidance:
    """Guidance written by hand on the Memory screen: active at once, 'by admin'."""
    entry = _new_entry(checked_fields(fields), status="publish", origin="admin")
    entry.created_by = entry.approved_by = actor_id
    entry.approved_at = entry.created_at
    db.add(entry)
    switches.bump_revision(db)
    db.flush()
    _event(db, entry, "admin_add", actor_id, None)
    db.commit()
    return entry


def approve(
    db: OrmSession,
    entry_id: int,
    *,
    actor_id: str,
    expected_version: int | None = None,
    despite: Sequence[str] = (),
    extra: Mapping[str, Any] | None = None,
    commit: bool = True,
) -> Guidance:
    """`despite`: the screening flags the approver saw and approved anyway (audited).

    `extra` adds to the audit event's detail; `commit=False` leaves the
    transaction open for a caller that changes several entries at once.
    """
    entry = _load(db, entry_id, expected_version)
    _require_status(entry, "pending", "approve")
    entry.status = "publish"
    entry.enabled = True
    entry.approved_by = actor_id
    entry.approved_at = utcnow()
    detail = {"anyway": True, "flags": list(despite)} if despite else {}
    detail |= revalidation.cleared(entry)  # approved as it is now: the change was seen
    return _commit_change(db, entry, "approve", actor_id, _with(detail, extra), commit=commit)


def reject(
    db: OrmSession,
    entry_id: int,
    *,
    actor_id: str,
    expected_version: int | None = None,
    reason: str | None = None,
    extra: Mapping[str, Any] | None = None,
    commit: bool = True,
) -> Guidance:
    """`reason`: optional, kept in the audit event (the text rules apply to it).

    `extra` and `commit` as for `approve`.
    """
    checked = checked_reason(reason)
    entry = _load(db, entry_id, expected_version)
    _require_status(entry, "pending", "reject")
    entry.status = "rejected"
    detail = _with({"reason": checked} if checked else {}, extra)
    return _commit_change(db, entry, "reject", actor_id, detail, commit=commit)


def rejections(db: OrmSession, entry_ids: Iterable[int]) -> dict[int, GuidanceEvent]:
    """The latest `reject` event of each entry (who, when, and the reason in `detail`)."""
    wanted = set(entry_ids)
    if not wanted:
        return {}
    query = (
        select(GuidanceEvent)
        .where(GuidanceEvent.guidance_id.in_(wanted), GuidanceEvent.action == "reject")
        .order_by(GuidanceEvent.id)
    )
    return {event.guidance_id: event for event in db.scalars(query) if event.guidance_id}


def reason_of(event: GuidanceEvent | None) -> str | None:
    detail = event.detail if event is not None else None
    reason = detail.get("reason") if isinstance(detail, dict) else None
    return reason if isinstance(reason, str) and reason else None


def edit(
    db: OrmSession,
    entry_id: int,
    changes: Mapping[str, Any],
    *,
    actor_id: str,
    expected_version: int | None = None,
) -> Guidance:
    entry = _load(db, entry_id, expected_version)
    if entry.status == "trash":
        raise Conflict("Restore this entry from the trash before editing it.")
    checked = checked_changes(changes)
    # A title left blank, or still the one derived from the old text, follows the text.
    derived = entry.title == default_title(entry.text)
    if "title" in checked:
        derived = checked["title"] in (None, default_title(entry.text))
        if derived:
            del checked["title"]
    before = {name: getattr(entry, name) for name in (*checked, "title")}
    for name, value in checked.items():
        setattr(entry, name, value)
    if "text" in checked:
        if entry.text_key != text_key(entry.text):
            # The AI pre-review's note was about the old text (pre_review.py).
            entry.pre_review_note = entry.pre_review_model = entry.pre_review_at = None
        entry.text_key = text_key(entry.text)
    if derived:
        entry.title = default_title(entry.text)
    diff: dict[str, Any] = {
        k: [v, getattr(entry, k)] for k, v in before.items() if v != getattr(entry, k)
    }
    diff |= revalidation.cleared(entry)  # a curator's edit is a look at the entry
    return _commit_change(db, entry, "edit", actor_id, diff)


def set_enabled(
    db: OrmSession,
    entry_id: int,
    enabled: bool,
    *,
    actor_id: str,
    expected_version: int | None = None,
    commit: bool = True,
) -> Guidance:
    entry = _load(db, entry_id, expected_version)
    _require_status(entry, "publish", "switch")
    entry.enabled = bool(enabled)
    action = "enable" if enabled else "disable"
    return _commit_change(db, entry, action, actor_id, None, commit=commit)


def trash(
    db: OrmSession,
    entry_id: int,
    *,
    actor_id: str,
    expected_version: int | None = None,
    extra: Mapping[str, Any] | None = None,
    commit: bool = True,
) -> Guidance:
    entry = _load(db, entry_id, expected_version)
    if entry.status == "trash":
        raise Conflict(f"Guidance #{entry_id} is already in the trash.", details={"id": entry_id})
    entry.status_before_trash = entry.status
    entry.status = "trash"
    return _commit_change(db, entry, "trash", actor_id, _with({}, extra), commit=commit)


def restore(
    db: OrmSession,
    entry_id: int,
    *,
    actor_id: str,
    expected_version: int | None = None,
    commit: bool = True,
) -> Guidance:
    entry = _load(db, entry_id, expected_version)
    _require_status(entry, "trash", "restore")
    entry.status = entry.status_before_trash or "pending"
    entry.status_before_trash = None
    detail = {"status": entry.status}
    return _commit_change(db, entry, "restore", actor_id, detail, commit=commit)


def get(db: OrmSession, entry_id: int) -> Guidance:
    entry = db.get(Guidance, entry_id)
    if entry is None:
        raise NotFound(f"No guidance entry #{entry_id}.", details={"id": entry_id})
    return entry


def events(db: OrmSession, entry_id: int) -> list[GuidanceEvent]:
    return list(
        db.scalars(
            select(GuidanceEvent)
            .where(GuidanceEvent.guidance_id == entry_id)
            .order_by(GuidanceEvent.id)
        )
    )


def _new_entry(fields: Mapping[str, Any], *, status: str, origin: str) -> Guidance:
    text = fields["text"].strip()
    now = utcnow()
    return Guidance(
        type=fields["type"],
        text=text,
        text_key=text_key(text),
        title=(fields.get("title") or "").strip() or default_title(text),
        scope=blank_to_none(fields.get("scope")),
        target=blank_to_none(fields.get("target")),
        severity=blank_to_none(fields.get("severity")),
        status=status,
        enabled=True,
        origin=origin,
        created_at=now,
        updated_at=now,
    )


def _load(db: OrmSession, entry_id: int, expected_version: int | None) -> Guidance:
    entry = get(db, entry_id)
    if expected_version is not None and entry.version != expected_version:
        raise Conflict(
            f"Guidance #{entry_id} changed since you loaded it; reload and review it again.",
            details={"id": entry_id, "version": entry.version},
        )
    return entry


def _require_status(entry: Guidance, status: str, verb: str) -> None:
    if entry.status != status:
        raise Conflict(
            f"Cannot {verb} guidance #{entry.id}: it is {entry.status}, not {status}.",
            details={"id": entry.id, "status": entry.status},
        )


def _with(detail: dict[str, Any], extra: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """An audit detail with the caller's additions; None when there is nothing to say."""
    merged = {**detail, **(extra or {})}
    return merged or None


def _commit_change(
    db: OrmSession,
    entry: Guidance,
    action: str,
    actor_id: str,
    detail: dict[str, Any] | None,
    *,
    commit: bool = True,
) -> Guidance:
    """Audit, bump the revision and commit; `commit=False` only flushes (the
    caller commits several changes as one, or rolls them all back)."""
    entry_id = entry.id
    entry.updated_at = utcnow()
    try:
        _event(db, entry, action, actor_id, detail)
        switches.bump_revision(db)
        if commit:
            db.commit()
        else:
            db.flush()  # a lost race shows now, as the version check
    except StaleDataError:
        db.rollback()
        raise Conflict(
            f"Guidance #{entry_id} was changed by someone else at the same time; reload it.",
            details={"id": entry_id},
        ) from None
    return entry


def _event(db: OrmSession, entry: Guidance, action: str, actor_id: str | None, detail: Any) -> None:
    db.add(GuidanceEvent(guidance_id=entry.id, action=action, actor_id=actor_id, detail=detail))


def with_hits(db: OrmSession, records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Recall's guidance records for a curator: each enforced (block or ask) guardrail
    with its hit count.

    One query over the block guardrails listed; the records are copied, not
    changed (they may be the per-revision cache's).
    """
    ids = [
        r["id"]
        for r in records
        if r.get("type") == "guardrail" and r.get("severity") in ENFORCED_SEVERITIES
    ]
    if not ids:
        return records
    query = select(Guidance.id, Guidance.hits, Guidance.last_hit_at).where(Guidance.id.in_(ids))
    counts = {row.id: row for row in db.execute(query)}
    return [
        {**r, "hits": counts[r["id"]].hits, "last_hit_at": iso(counts[r["id"]].last_hit_at)}
        if r["id"] in counts
        else r
        for r in records
    ]
