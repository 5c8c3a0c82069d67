"""Triage lanes on Pending review (issue 32): which proposals a curator reads first.

Every pending proposal is in exactly one lane:

- `flagged`: the poisoning screen flagged it, whatever its kind;
- `steers`: a guardrail or an instruction, unflagged (it changes what agents do);
- `facts`: a fact or a convention, unflagged.

Flags are never stored (they are computed afresh against the active
guidance), so the lanes are not either: these are pure functions over the
proposals and the ids the screen flagged, with no query and no Flask. A
proposal has waited since it entered Pending (`pending_since`, else
`created_at`), the same clock as the badge's oldest wait.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass
from datetime import datetime

from ..errors import InvalidParams
from .models import Guidance

#: The lanes, in the order the Pending tab shows them.
LANES = ("flagged", "steers", "facts")
LABELS = {"flagged": "Flagged", "steers": "Steers agents", "facts": "Facts and conventions"}
# The kinds that change what agents do; every other kind states something.
STEERING = ("guardrail", "instruction")


@dataclass(frozen=True)
class Lane:
    key: str
    items: list[Guidance]  # in the order they were given
    oldest: Guidance | None  # the one that has waited longest

    @property
    def label(self) -> str:
        return LABELS[self.key]

    @property
    def count(self) -> int:
        return len(self.items)

    @property
    def since(self) -> datetime | None:
        return waiting_since(self.oldest) if self.oldest is not None else None


def lane_of(kind: str, flagged: bool) -> str:
    """The lane of a proposal of this kind: a flag outranks the kind."""
    if flagged:
        return "flagged"
    return "steers" if kind in STEERING else "facts"


def waiting_since(entry: Guidance) -> datetime:
    """Since when a proposal waits: since it (last) entered Pending."""
    return entry.pending_since or entry.created_at


def _waited_longest(entries: Iterable[Guidance]) -> Guidance | None:
    return min(entries, key=lambda e: (waiting_since(e), e.id), default=None)


def split(entries: Iterable[Guidance], flagged: Collection[int]) -> list[Lane]:
    """The three lanes, in `LANES` order (empty ones too), each keeping the given order."""
    by_lane: dict[str, list[Guidance]] = {key: [] for key in LANES}
    for entry in entries:
        by_lane[lane_of(entry.type, entry.id in flagged)].append(entry)
    return [Lane(key, items, _waited_longest(items)) for key, items in by_lane.items()]


def longest_waiting(lanes: Iterable[Lane]) -> Lane | None:
    """The lane holding the proposal that has waited longest, or None when all are empty."""
    listed = list(lanes)
    oldest = _waited_longest(lane.oldest for lane in listed if lane.oldest is not None)
    return next((lane for lane in listed if oldest is not None and lane.oldest is oldest), None)


def choose(value: object) -> str:
    """A lane named by a URL or form ("" for all of them); an unknown one is refused."""
    name = str(value or "").strip()
    if name and name not in LANES:
        raise InvalidParams(f"lane must be one of {', '.join(LANES)}.", details={"field": "lane"})
    return name
