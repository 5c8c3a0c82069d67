"""Import: a checked document's new entries added in one transaction.

Import is all or nothing: `document` checks the whole file before anything
is written, and any failure while adding rolls every entry back. An entry
whose text, folded as for de-duplication, is already here (or earlier in the
same file) is skipped: import never overwrites an entry, so a newer local
version always stays. By default imported entries are pending, so imported
memory passes the same gate as an agent's proposal. `keep_status` copies
their status, through the poisoning screen `remember` runs: an active entry
the screen flags waits in Pending with its flags, one that passes is
approved by whoever imported it, at import time. An entry whose trail no
longer matches its seals (the file was changed after export) waits in Pending
too, whatever `keep_status` says. The file's approver and
approval time are only history: they go into the entry's `import` event,
never into its approval columns.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from sqlalchemy import Table, select, update
from sqlalchemy.orm import Session as OrmSession

from .. import audit, guidance, switches
from ..fields import default_title, text_key
from ..models import Guidance, GuidanceEvent, utcnow
from ..screening import Flag
from .document import actors_of, checked_entry, parse_when, validate

# An entry's fields (as `remember` takes them) -> the flags `remember` would give.
Screen = Callable[[Mapping[str, Any]], Sequence[Flag]]


@dataclass
class Result:
    imported: list[int] = field(default_factory=list)  # the new ids, in file order
    skipped: list[dict[str, Any]] = field(default_factory=list)  # {"entry", "id", "existing"}
    # Entries the poisoning screen flagged: {"entry", "id", "new", "flags"} (codes).
    flagged: list[dict[str, Any]] = field(default_factory=list)
    # Entries whose trail no longer matches its seals (memory/audit.py): the file was
    # changed after export, so they wait for a person: {"entry", "id", "new"}.
    altered: list[dict[str, Any]] = field(default_factory=list)
    status: str = "pending"


def summary(result: Result) -> str:
    """What an import did, in one line, for the Memory screen and the shell alike."""
    count = len(result.imported)
    message = f"Imported {count} entr{'y' if count == 1 else 'ies'} ({result.status})."
    if result.skipped:
        message += f" Skipped {len(result.skipped)} whose text is already here."
    if result.flagged:
        flagged = len(result.flagged)
        message += (
            f" The poisoning screen flagged {flagged}: "
            f"{'it waits' if flagged == 1 else 'they wait'} in Pending review."
        )
    if result.altered:
        altered = len(result.altered)
        message += (
            f" {altered} {'was' if altered == 1 else 'were'} changed after export (the trail "
            f"no longer matches its seals): {'it waits' if altered == 1 else 'they wait'} "
            "in Pending review."
        )
    return message


def import_document(
    db: OrmSession,
    document: Any,
    *,
    actor_id: str,
    keep_status: bool = False,
    screen: Screen | None = None,
) -> Result:
    """Check the whole document, then add its new entries in one transaction.

    `screen`: the poisoning screen `remember` runs (`Memory.screen`); required
    with `keep_status`, as it decides which entries may stay active.
    """
    if keep_status and screen is None:
        raise TypeError("keep_status needs the poisoning screen")
    validate(document)
    checked = [checked_entry(index, row) for index, row in enumerate(document["entries"])]
    try:
        result = _add(db, document, checked, actor_id, keep_status, screen)
    except BaseException:
        db.rollback()  # all or nothing, whatever went wrong
        raise
    db.commit()
    return result


def _add(
    db: OrmSession,
    document: Mapping[str, Any],
    checked: list[dict[str, Any]],
    actor_id: str,
    keep_status: bool,
    screen: Screen | None,
) -> Result:
    seen: dict[str, int] = {
        key: entry_id for key, entry_id in db.execute(select(Guidance.text_key, Guidance.id))
    }
    result = Result(status="with their status" if keep_status else "pending")
    publishes = False
    now = utcnow()
    for index, (row, fields) in enumerate(zip(document["entries"], checked, strict=True)):
        key = text_key(fields["text"])
        if key in seen:
            result.skipped.append({"entry": index + 1, "id": row["id"], "existing": seen[key]})
            continue
        flags = [flag.code for flag in screen(fields)] if screen is not None else []
        altered = not audit.exported_trail_holds(row["events"], row["text"])
        entry = _new(row, fields, _status(row, keep_status, bool(flags) or altered))
        entry.created_by = _foreign(document, row["created_by"])
        if entry.status == "publish" or entry.status_before_trash == "publish":
            # Approved here, now, by whoever imported it: the file's approval is history.
            entry.approved_by, entry.approved_at = actor_id, now
        db.add(entry)
        db.flush()
        # The ORM numbers a new row's version 1: the copy keeps the file's (the
        # entry's own history), set past the version counter.
        table = cast(Table, Guidance.__table__)
        db.execute(update(table).where(table.c.id == entry.id).values(version=row["version"]))
        db.expire(entry, ["version"])
        seen[key] = entry.id
        for event in row["events"]:
            db.add(
                GuidanceEvent(
                    guidance_id=entry.id,
                    action=event["action"],
                    actor_id=_foreign(document, event["actor_id"]),
                    at=parse_when(event["at"]),
                    detail=event["detail"],
                    text_sha256=event.get("text_sha256"),
                )
            )
        db.add(
            GuidanceEvent(
                guidance_id=entry.id,
                action="import",
                actor_id=actor_id,
                at=now,
                detail=_import_detail(document, row, entry, flags, altered),
            )
        )
        if altered:
            result.altered.append({"entry": index + 1, "id": row["id"], "new": entry.id})
        if flags:
            result.flagged.append(
                {"entry": index + 1, "id": row["id"], "new": entry.id, "flags": flags}
            )
        publishes = publishes or entry.status == "publish"
        result.imported.append(entry.id)
    # Who imported what, from where: one site-level audit event per import.
    db.add(
        GuidanceEvent(
            guidance_id=None,
            action="import",
            actor_id=actor_id,
            at=now,
            detail={
                "source": document["server_name"],
                "imported": result.imported,
                "skipped": len(result.skipped),
                "flagged": len(result.flagged),
                "keep_status": keep_status,
            },
        )
    )
    if publishes:
        switches.bump_revision(db)
    return result


def _foreign(document: Mapping[str, Any], actor: str | None) -> str | None:
    """An actor of the other site as this one records it: never a local user's id."""
    if actor is None or actor.startswith(
        (guidance.CLI_ACTOR_PREFIX, guidance.IMPORTED_ACTOR_PREFIX)
    ):
        return actor
    name = document["actors"].get(actor) or f"user #{actor}"
    return f"{guidance.IMPORTED_ACTOR_PREFIX}{name}"[:64]


def _status(row: Mapping[str, Any], keep_status: bool, flagged: bool) -> tuple[str, str | None]:
    """(status, status_before_trash) of the copy: a flagged or altered entry is not
    active, nor can it become active by a restore from the trash; it waits for a person."""
    if not keep_status:
        return "pending", None
    status, before = row["status"], row.get("status_before_trash")
    if status == "publish" and flagged:
        status = "pending"
    if status != "trash":
        before = None
    elif before == "publish" and flagged:
        before = "pending"
    return status, before


def _import_detail(
    document: Mapping[str, Any],
    row: Mapping[str, Any],
    entry: Guidance,
    flags: list[str],
    altered: bool,
) -> dict[str, Any]:
    """The entry's `import` event: what it was in the file and what the screen found."""
    detail: dict[str, Any] = {"status": entry.status, "source": document["server_name"]}
    if entry.status != row["status"]:
        detail["was"] = row["status"]
    if flags:
        detail["flags"] = flags
    if altered:
        detail["altered_after_export"] = True
    if row["approved_by"] is not None or row["approved_at"] is not None:
        # Who approved it on the other site (that site's id and name): history only.
        detail["approved_by"] = row["approved_by"]
        detail["approver"] = document["actors"].get(row["approved_by"] or "")
        detail["approved_at"] = row["approved_at"]
    # The ids in the copied trail are the other site's: keep the names it gave them.
    names = {a: document["actors"][a] for a in actors_of(row) if a in document["actors"]}
    if names:
        detail["actors"] = dict(sorted(names.items()))
    return detail


def _new(
    row: Mapping[str, Any], fields: Mapping[str, Any], status: tuple[str, str | None]
) -> Guidance:
    """The copy, not approved here (the caller approves an active one)."""
    return Guidance(
        type=fields["type"],
        title=fields.get("title") or default_title(fields["text"]),
        text=fields["text"],
        text_key=text_key(fields["text"]),
        scope=fields.get("scope"),
        target=fields.get("target"),
        severity=fields.get("severity"),
        status=status[0],
        status_before_trash=status[1],
        enabled=bool(row["enabled"]) or status[0] == "pending",
        origin=row["origin"],
        session_id=row["session_id"],
        created_by=None,  # set by the caller, as the other site's actor
        created_at=parse_when(row["created_at"]),
        approved_by=None,
        approved_at=None,
        updated_at=parse_when(row["updated_at"]),
        review_after=fields["review_after"],
    )
