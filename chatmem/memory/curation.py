"""A curator's action on one entry: edit (and edit-then-approve), approve,
reject, switch on or off, trash, restore.

The Memory screen's forms and its JSON both come here, with the fields
already read; what each action checks and changes is the domain's, not a
view's. An approval is screened (`chatmem.memory.screening`) on the text
that would go live, an edit included, so a flag that appeared since the page
was drawn still stops it unless the curator said "approve anyway".
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..errors import Conflict
from . import guidance, screening, staleness
from .fields import EDITABLE

if TYPE_CHECKING:
    from sqlalchemy.orm import Session as OrmSession

    from .models import Guidance
    from .screening import Flag

#: Fresh poisoning flags for an entry's fields as they would go live: (fields, entry_id).
Screen = Callable[[dict[str, Any], int], list["Flag"]]

ACTIONS = ("approve", "reject", "edit", "enable", "disable", "trash", "restore")


def apply(
    db: OrmSession,
    entry_id: int,
    action: str,
    fields: dict[str, Any],
    version: int | None,
    *,
    actor_id: str,
    anyway: bool,
    screen: Screen,
) -> tuple[Guidance, str]:
    """Run `action` (one of ACTIONS) on entry `entry_id`; the entry and what to tell the curator.

    `version` is the version the curator reviewed (the domain refuses a stale
    one); `anyway` approves despite flags.
    """
    if action == "edit":
        return _edit(db, entry_id, fields, version, actor_id, anyway=anyway, screen=screen)
    if action == "approve":
        despite = screened(guidance.get(db, entry_id), {}, version, anyway=anyway, screen=screen)
        entry = guidance.approve(
            db, entry_id, actor_id=actor_id, expected_version=version, despite=despite
        )
        return entry, f"Approved “{entry.title}”: active now."
    if action in ("enable", "disable"):
        entry = guidance.set_enabled(
            db, entry_id, action == "enable", actor_id=actor_id, expected_version=version
        )
        state = "on: injected and enforced" if entry.enabled else "off: kept, not injected"
        return entry, f"“{entry.title}” is {state}."
    if action == "reject":
        entry = guidance.reject(
            db, entry_id, actor_id=actor_id, expected_version=version, reason=fields.get("reason")
        )
        return entry, f"Rejected “{entry.title}”."
    step = {
        "trash": (guidance.trash, "Moved “{}” to the trash."),
        "restore": (guidance.restore, "Restored “{}”."),
    }[action]
    entry = step[0](db, entry_id, actor_id=actor_id, expected_version=version)
    return entry, step[1].format(entry.title)


def _edit(
    db: OrmSession,
    entry_id: int,
    fields: dict[str, Any],
    version: int | None,
    actor_id: str,
    *,
    anyway: bool,
    screen: Screen,
) -> tuple[Guidance, str]:
    """Save the edit, then (`then=approve`) approve what was saved, in one request."""
    current = guidance.get(db, entry_id)
    changes = {k: fields[k] for k in EDITABLE if k in fields}
    then_approve = fields.get("then") == "approve"
    if then_approve and current.status != "pending":
        raise Conflict(f"Guidance #{entry_id} is no longer pending; reload the page.")
    # The edited text is what goes live: screen it before anything is saved.
    despite = (
        screened(current, changes, version, anyway=anyway, screen=screen) if then_approve else []
    )
    if "review_after" in fields and (version is None or current.version == version):
        # Saved with the edit, in its transaction (one version step).
        review_after = staleness.parse_review_after(fields["review_after"])
        staleness.set_review_after(db, current, review_after, actor_id=actor_id)
    entry = guidance.edit(db, entry_id, changes, actor_id=actor_id, expected_version=version)
    if not then_approve:
        return entry, f"Saved “{entry.title}”."
    entry = guidance.approve(
        db, entry_id, actor_id=actor_id, expected_version=entry.version, despite=despite
    )
    return entry, f"Saved and approved “{entry.title}”: active now."


def screened(
    entry: Guidance,
    changes: dict[str, Any],
    version: int | None,
    *,
    anyway: bool,
    screen: Screen,
    besides: int | None = None,
) -> list[str]:
    """The flags an approval goes ahead despite; a flagged one needs `anyway`.

    Computed now, on the text that would go live (an edit included), so a
    flag that appeared since the page was drawn still stops the approval.
    `besides`: an entry this approval replaces, whose flags (a near
    duplicate of it, say) are the point of replacing it.
    """
    if version is not None and entry.version != version:
        return []  # stale: the domain refuses it with its own message
    flags = screen(screening.fields_of(entry, changes), entry.id)
    flags = [flag for flag in flags if besides is None or flag.entry_id != besides]
    if flags and not anyway:
        reasons = " ".join(flag.reason for flag in flags)
        raise Conflict(
            f"“{entry.title}” is flagged, so it was not approved: {reasons} Read the flags; "
            "if it should still be active, use Approve anyway.",
            details={"id": entry.id, "flags": [flag.to_dict() for flag in flags]},
        )
    return [flag.code for flag in flags]
