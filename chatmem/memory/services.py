"""What the three memory tools need besides their caller: bound when they are registered.

A host tool needs none of this (it has its own database session and
permission checks), so the context every tool gets (`tools.CallContext`)
stays narrow: the caller, the channel, the session, the settings. The
facade builds one `MemoryServices` from its own methods and hands it to
`memory.tools.register`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from sqlalchemy.orm import Session as OrmSession

from .recall.ranked import RankedGuidance
from .recall.recall_page import Ordered
from .screening import Flag
from .switches import Snapshot


class Screen(Protocol):
    """The poisoning screen for a proposal's fields (`ChatMemory.screen`)."""

    def __call__(
        self,
        fields: dict[str, Any],
        *,
        entry_id: int | None = None,
        snapshot: Snapshot | None = None,
    ) -> list[Flag]: ...


@dataclass(frozen=True)
class MemoryServices:
    """The memory tools' few collaborators; made once per ChatMemory, app-independent."""

    #: The host's scoped session: called, it gives the current unit of work.
    session: Callable[[], OrmSession]
    can: Callable[[Any, str], bool]
    #: The revision and switches as this request read them: the dispatcher's
    #: own read, kept on the request, so a tool answers at the revision its call
    #: was checked against (outside a request, a command's call, it reads again).
    snapshot: Callable[[], Snapshot]
    approved_guidance: Callable[[Snapshot], Ordered[dict[str, Any]]]
    ranked_guidance: Callable[[Snapshot], RankedGuidance]
    recalled_marks: Callable[[], dict[int, datetime]]
    screen: Screen
