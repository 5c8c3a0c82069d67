"""What one process derives from the active guidance, kept until the revision moves.

One row (`chatmem_state`) holds the revision, and every change that affects
the block, the guardrails or the tokens bumps it in the same transaction. A
request reads that row once (a `Snapshot`); this cache is rebuilt only when
the snapshot's revision differs from the one it was built at.

Nothing here decides what a guardrail matches: the index and the matcher
live in `memory/guardrails/`, and `guardrail_for` asks them.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import partial
from typing import TYPE_CHECKING, Any

from .memory import block as _block
from .memory import screening as _screening
from .memory.fields import WRITTEN
from .memory.guardrails.index import GuardrailIndex
from .memory.guardrails.matching import LabelResolver, Refusal, refusal
from .memory.models import guidance_record
from .memory.recall.ranked import RankedGuidance
from .memory.recall.ranking import Analyzer
from .memory.recall.recall_page import Ordered
from .memory.revalidation import Watched
from .text import for_agents_record

if TYPE_CHECKING:
    from sqlalchemy.orm import Session as OrmSession

    from .memory.switches import Snapshot


@dataclass
class Derived:
    """The block, guardrail index and recall order at one revision."""

    revision: int = -1
    block: _block.Block = _block.EMPTY
    guardrails: GuardrailIndex = field(default_factory=GuardrailIndex)
    # What a topic-less `recall` pages through as guidance, in recall's order.
    approved: Ordered[dict[str, Any]] = field(default_factory=lambda: Ordered((), ()))
    # API tokens seen valid at this revision (token hash -> KnownToken); see auth/token_check.py.
    tokens: dict[str, Any] = field(default_factory=dict)
    # Active guidance indexed for screening proposals; built on first use.
    screening: _screening.ActiveIndex | None = None
    # The same entries indexed for questions (`recall(topic=...)`); built on first use.
    ranked: RankedGuidance | None = None
    # Which entries watch which target (revalidation.py); built on a call's first need.
    watched: Watched | None = None
    # When this process first saw the revision: the memory changed no later (cache hints).
    seen_at: float = field(default_factory=time.monotonic)


def _shaped(
    previous: dict[tuple[Any, ...], dict[str, Any]],
    shaped: dict[tuple[Any, ...], dict[str, Any]],
    entry: Any,
) -> dict[str, Any]:
    """An entry as agents read it (`for_agents_record`), the last revision's if unchanged.

    The shape is a function of the record alone and the key is all of the
    record, so an entry changed in any field is shaped afresh. Shaping every
    entry (a secret scan of each) was most of a rebuild after an approval.
    """
    record = guidance_record(entry)
    key = tuple(record.values())
    shaped[key] = previous.get(key) or for_agents_record(record, WRITTEN)
    return shaped[key]


class RevisionCache:
    """One app's derived state, shared by its threads, rebuilt when the revision moves."""

    def __init__(
        self,
        session: Callable[[], OrmSession],
        server_name: str,
        resolve_post_type: Callable[[], Callable[[Any], str | None] | None],
        resolve_labels: Callable[[], LabelResolver | None] = lambda: None,
        analyzer: Analyzer | None = None,
        *,
        hold_changed: bool,
    ) -> None:
        self.session = session  # the host's scoped session: the current one per call
        self.server_name = server_name
        # CHATMEM_CHANGED_TARGETS = "review": an entry marked "target changed" is
        # left out of the block and recall (its guardrail is still enforced).
        self.hold_changed = hold_changed
        # Read at each check: the host may register its resolvers after init_app.
        self._resolve_post_type = resolve_post_type
        self._resolve_labels = resolve_labels
        self.analyzer = analyzer or Analyzer()
        self._derived = Derived()
        self._lock = threading.Lock()
        # The newest screening index, so the next revision's rebuild reuses its entries.
        self._screening: _screening.ActiveIndex | None = None
        self._ranked: RankedGuidance | None = None
        # The last revision's entries as agents read them, by their record's
        # values: an entry no change touched is not shaped (redacted) again.
        self._shaped: dict[tuple[Any, ...], dict[str, Any]] = {}

    def at(self, snapshot: Snapshot) -> Derived:
        derived = self._derived
        if derived.revision == snapshot.revision:
            return derived
        with self._lock:
            if self._derived.revision != snapshot.revision:
                entries = _block.active_entries(self.session())
                shown = [e for e in entries if not (self.hold_changed and e.target_changed_at)]
                shaped: dict[tuple[Any, ...], dict[str, Any]] = {}
                self._derived = Derived(
                    revision=snapshot.revision,
                    block=replace(_block.compose(shown), revision=snapshot.revision),
                    guardrails=GuardrailIndex.build(entries, self.server_name),
                    approved=Ordered.of(shown, partial(_shaped, self._shaped, shaped)),
                )
                self._shaped = shaped
            return self._derived

    def screening(self, snapshot: Snapshot) -> _screening.ActiveIndex:
        """Active guidance indexed for screening, built on first use (few revisions screen)."""
        derived = self.at(snapshot)
        if derived.screening is None:
            with self._lock:
                if derived.screening is None:
                    index = _screening.ActiveIndex.load(
                        self.session(), self.server_name, self._screening
                    )
                    derived.screening = self._screening = index
        return derived.screening

    def ranked(self, snapshot: Snapshot) -> RankedGuidance:
        """Active guidance indexed for questions, built on first use of the revision."""
        derived = self.at(snapshot)
        if derived.ranked is None:
            with self._lock:
                if derived.ranked is None:
                    # The last revision's index, so only changed entries are read again.
                    index = RankedGuidance.of(derived.approved, self.analyzer, self._ranked)
                    derived.ranked = self._ranked = index
        return derived.ranked

    def watched(self, snapshot: Snapshot) -> Watched:
        """Which active entries watch which target, built on first use of the revision."""
        derived = self.at(snapshot)
        if derived.watched is None:
            with self._lock:
                if derived.watched is None:
                    derived.watched = Watched.load(self.session())
        return derived.watched

    def guardrail_for(
        self, tool_name: str, arguments: dict[str, Any], snapshot: Snapshot
    ) -> Refusal | None:
        """The refusal this revision's guardrails give this call (see `matching.refusal`)."""
        return refusal(
            self.at(snapshot).guardrails,
            tool_name,
            arguments,
            self._resolve_post_type(),
            self._resolve_labels(),
        )
