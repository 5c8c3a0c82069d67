"""One decision for a group card on Pending review (issue 32).

A group card's Approve and Reject post here, with the representative's
version and each other member's id and version (`member`, `version-<id>`),
as the card showed them; Approve selected and Reject selected reach
`decide` for a ticked group card. What a decision does is
`chatmem.memory.groups`'s; here the request is read, every member screened
afresh (a flagged one needs Approve anyway, as on a single card), and
answered like every action: 303 back with a message, or JSON.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from flask import request
from flask.typing import ResponseReturnValue

from ... import inputs
from ...core import current_memory
from ...errors import ChatmemError, Conflict, InvalidParams, NotFound
from ...memory import curation, groups, guidance, screening
from ...memory.models import Guidance
from ...memory.screening import Flag
from .access import admin_only, error_response
from .blueprint import ID_MAX, actor_id, bp
from .forms import done, failed, read_fields, read_version

DECISIONS = ("approve", "reject")


def _screen(fields: dict[str, Any], entry_id: int) -> list[Flag]:
    return current_memory().screen(fields, entry_id=entry_id)


def read_versions(
    rep_id: int, rep_version: Any, member_ids: list[Any], version_of: Callable[[int], Any]
) -> dict[int, int]:
    """Member id -> the version the curator saw, the representative's first."""
    if len(member_ids) >= groups.GROUP_MAX:
        raise InvalidParams(
            f"A group decision takes at most {groups.GROUP_MAX} proposals.",
            details={"field": "member"},
        )
    version = read_version({"version": rep_version}, required=True)
    assert version is not None
    versions = {rep_id: version}
    for raw in member_ids:
        member = inputs.whole_number(raw, field="member")
        seen = read_version({"version": version_of(member)}, required=True)
        assert seen is not None
        versions[member] = seen
    return versions


def decide(
    rep_id: int,
    action: str,
    versions: dict[int, int],
    *,
    anyway: bool,
    reason: Any = None,
) -> tuple[Guidance, str]:
    """Approve or reject the group led by `rep_id`; the kept (or first) entry and the message."""
    memory = current_memory()
    db = memory.db.session()
    others = [i for i in versions if i != rep_id]
    if action == "reject":
        rejected = groups.reject(
            db,
            rep_id,
            versions,
            actor_id=actor_id(),
            server_name=memory.server_name,
            reason=reason,
        )
        first = rejected[0]
        return first, f"Rejected “{first.title}” and its {_near(len(others))}."
    # What goes live is the representative's text: screened as a single approval is.
    despite = curation.screened(
        guidance.get(db, rep_id), {}, versions[rep_id], anyway=anyway, screen=_screen
    )
    member_flags: dict[int, list[str]] = {}
    for member_id in others:
        member = guidance.get(db, member_id)
        if member.version != versions[member_id]:
            continue  # stale: the domain refuses the whole decision
        found = _screen(screening.fields_of(member), member_id)
        if found:
            member_flags[member_id] = [flag.code for flag in found]
    if member_flags and not anyway:
        named = ", ".join(f"#{i}" for i in member_flags)
        raise Conflict(
            f"{named} in this group {'is' if len(member_flags) == 1 else 'are'} flagged, so "
            "nothing was approved. Read the flags; if it should still be active, use "
            "Approve anyway.",
            details={"id": rep_id, "flagged": list(member_flags)},
        )
    kept, merged = groups.approve(
        db,
        rep_id,
        versions,
        actor_id=actor_id(),
        server_name=memory.server_name,
        despite=despite,
        member_flags=member_flags,
    )
    ids = ", ".join(f"#{m.id}" for m in merged)
    return kept, f"Approved “{kept.title}”: active now; merged its {_near(len(merged))} ({ids})."


def _near(count: int) -> str:
    return f"{count} near-duplicate{'' if count == 1 else 's'}"


@bp.post(f"/guidance/<int(max={ID_MAX}):entry_id>/group/<action>")
@admin_only(changes_state=True)
def group_decision(entry_id: int, action: str) -> ResponseReturnValue:
    """Approve or reject a group card: every member as the curator saw it, or none."""
    if action not in DECISIONS:
        return error_response(NotFound(f"Unknown action {action!r}."))
    try:
        fields = read_fields()
        if request.is_json:
            raw = fields.get("members")
            if not isinstance(raw, dict):
                raise InvalidParams(
                    "members must be an object of id -> version.", details={"field": "members"}
                )
            versions = read_versions(
                entry_id, fields.get("version"), list(raw), lambda i: raw.get(str(i))
            )
        else:
            form = request.form
            versions = read_versions(
                entry_id,
                form.get("version"),
                form.getlist("member"),
                lambda i: form.get(f"version-{i}"),
            )
        anyway = inputs.boolean_field(fields.get("anyway"), field="anyway")
        entry, message = decide(
            entry_id, action, versions, anyway=anyway, reason=fields.get("reason")
        )
    except ChatmemError as error:
        return failed(error, "pending")
    return done(entry, message, "pending")
