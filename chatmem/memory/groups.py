"""One decision for the same proposal from many sessions (issue 32).

Agents in different sessions often propose the same thing in slightly
different words. On Pending review such proposals are one card, so a
curator decides once:

- Two pending proposals are *alike* when they are of the same kind (type,
  target, severity and scope) and their texts are nearly the same by the
  poisoning screen's own measure (`screening.active_index.nearly_same`: the
  `near_duplicate` similarity and threshold, the same polarity and numbers).
- A group is led by its oldest proposal, the *representative*; every other
  member is alike to it (not merely to another member), so nothing drifts
  away from the text the card shows.
- Approving a group approves the representative, exactly as shown, and
  rejects each other member as merged into it (`reject` with the reason
  "Merged into #N." and `merged_into`); the kept entry's approval names the
  merged ids (`merged`). Rejecting a group rejects every member with the
  curator's reason. Either is one transaction, and each member's version is
  the one the curator saw: a member changed or decided meanwhile refuses the
  whole decision (`conflict`), and nothing is changed.

Pure functions over proposals (no Flask); the decisions take a Session and
leave the commit or rollback to this module, like `desk`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy.orm import Session as OrmSession

from ..errors import Conflict, InvalidParams
from . import guidance
from .fields import checked_reason
from .models import Guidance
from .screening.active_index import nearly_same
from .screening.content import Content

#: Most proposals one group decision takes (as many as a bulk action).
GROUP_MAX = 200


@dataclass(frozen=True)
class Group:
    """Alike pending proposals: the representative (the oldest) first."""

    members: tuple[Guidance, ...]

    @property
    def representative(self) -> Guidance:
        return self.members[0]

    @property
    def id(self) -> int:
        return self.members[0].id

    @property
    def others(self) -> tuple[Guidance, ...]:
        return self.members[1:]

    @property
    def size(self) -> int:
        return len(self.members)

    @property
    def session_ids(self) -> list[str]:
        """The sessions that proposed it, each once, oldest proposal first."""
        return list(dict.fromkeys(m.session_id for m in self.members if m.session_id))

    @property
    def sessions(self) -> int:
        """How many sessions proposed it (a proposal made outside a session counts as one)."""
        return len(self.session_ids) + sum(1 for m in self.members if not m.session_id)

    @property
    def users(self) -> int:
        return len({m.created_by or f"#{m.id}" for m in self.members})


def _content(entry: Guidance, server_name: str) -> Content:
    return Content.of(entry.text, entry.target, server_name, key=entry.text_key)


def _kind(entry: Guidance, content: Content) -> tuple[str, str, str, str]:
    """What must be equal besides the words: approving one approves it for all."""
    scope = (entry.scope or "").strip().casefold()
    return (entry.type, content.target or "", entry.severity or "", scope)


def _oldest(entry: Guidance) -> tuple[Any, int]:
    return (entry.created_at, entry.id)


def alike(a: Guidance, b: Guidance, server_name: str) -> bool:
    """Whether two proposals are the same proposal in other words (see the module)."""
    left, right = _content(a, server_name), _content(b, server_name)
    return _kind(a, left) == _kind(b, right) and nearly_same(left, right)


def group(entries: Iterable[Guidance], server_name: str) -> list[Group]:
    """Every proposal in exactly one group (most of size one), oldest representative first.

    A proposal joins the oldest group whose representative it is alike to;
    the candidates are the groups of its kind sharing a content word (or its
    whole folded text) with it, so the cost grows with the near matches,
    not with the square of the list.
    """
    leads: list[tuple[Guidance, Content]] = []
    members: list[list[Guidance]] = []
    index: dict[tuple[Any, ...], dict[str, list[int]]] = {}
    for entry in sorted(entries, key=_oldest):
        content = _content(entry, server_name)
        words = index.setdefault(_kind(entry, content), {})
        keys = [f"={content.key}", *content.words]
        candidates = sorted({i for key in keys for i in words.get(key, ())})
        found = next((i for i in candidates if nearly_same(leads[i][1], content)), None)
        if found is None:
            found = len(leads)
            leads.append((entry, content))
            members.append([])
            for key in keys:
                words.setdefault(key, []).append(found)
        members[found].append(entry)
    return [Group(tuple(found)) for found in members]


def by_member(groups: Iterable[Group]) -> dict[int, Group]:
    """Each proposal id -> its group."""
    return {m.id: g for g in groups for m in g.members}


def _decided(
    db: OrmSession, rep_id: int, versions: Mapping[int, int], server_name: str
) -> tuple[Guidance, list[Guidance]]:
    """The representative and the other members, as the curator saw them, or a refusal."""
    if rep_id not in versions:
        raise InvalidParams(
            f"Send the version of #{rep_id}, the proposal the card shows.",
            details={"field": "version"},
        )
    if len(versions) < 2:
        raise InvalidParams("A group holds at least two proposals.", details={"field": "member"})
    if len(versions) > GROUP_MAX:
        raise InvalidParams(
            f"A group decision takes at most {GROUP_MAX} proposals.", details={"field": "member"}
        )
    rep = guidance.get(db, rep_id)
    others = [guidance.get(db, i) for i in versions if i != rep_id]
    for entry in (rep, *others):
        if entry.status != "pending" or entry.version != versions[entry.id]:
            raise Conflict(
                f"Proposal #{entry.id} of this group was changed or decided since you loaded "
                "the page, so nothing was decided: reload it and review the group again.",
                details={"id": entry.id, "status": entry.status, "version": entry.version},
            )
    for other in others:
        if not alike(rep, other, server_name):
            raise InvalidParams(
                f"Proposal #{other.id} is not a near-duplicate of #{rep_id}, "
                "so it is not decided with it.",
                details={"field": "member", "id": other.id},
            )
    return rep, others


def approve(
    db: OrmSession,
    rep_id: int,
    versions: Mapping[int, int],
    *,
    actor_id: str,
    server_name: str,
    despite: Sequence[str] = (),
    member_flags: Mapping[int, Sequence[str]] | None = None,
) -> tuple[Guidance, list[Guidance]]:
    """Approve `rep_id` as shown and merge the other members into it; returns both.

    `versions`: every member id (the representative's too) -> the version the
    curator saw. `despite`: the representative's flags approved anyway;
    `member_flags`: a merged member's flags, kept on its own trail.
    """
    try:
        rep, others = _decided(db, rep_id, versions, server_name)
        merged_ids = sorted(o.id for o in others)
        kept = guidance.approve(
            db,
            rep.id,
            actor_id=actor_id,
            expected_version=versions[rep.id],
            despite=despite,
            extra={"merged": merged_ids},
            commit=False,
        )
        merged = []
        for other in others:
            extra: dict[str, Any] = {"merged_into": rep.id}
            if (member_flags or {}).get(other.id):
                extra["flags"] = list((member_flags or {})[other.id])
            merged.append(
                guidance.reject(
                    db,
                    other.id,
                    actor_id=actor_id,
                    expected_version=versions[other.id],
                    reason=f"Merged into #{rep.id}.",
                    extra=extra,
                    commit=False,
                )
            )
        db.commit()
    except BaseException:
        db.rollback()
        raise
    return kept, merged


def reject(
    db: OrmSession,
    rep_id: int,
    versions: Mapping[int, int],
    *,
    actor_id: str,
    server_name: str,
    reason: str | None = None,
) -> list[Guidance]:
    """Reject every member with the curator's reason; the representative first."""
    checked = checked_reason(reason)  # a bad reason rejects nothing
    try:
        rep, others = _decided(db, rep_id, versions, server_name)
        ids = [rep.id, *sorted(o.id for o in others)]
        done = [
            guidance.reject(
                db,
                entry_id,
                actor_id=actor_id,
                expected_version=versions[entry_id],
                reason=checked,
                extra={"group": [i for i in ids if i != entry_id]},
                commit=False,
            )
            for entry_id in ids
        ]
        db.commit()
    except BaseException:
        db.rollback()
        raise
    return done
