"""What runs outside a request, as the Python API calls it: the sweep's steps and the jobs.

`MemoryCore` (chatmem/core.py) takes these from `Housekeeping`; each is one call into
`workers/` or `memory/`, on the app's database session and settings. The
sweep (`flask chatmem sweep`, the background sweeper) calls them in turn.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

from ..memory import retention as _retention
from . import pre_review as _pre_review
from . import runs as _runs
from . import summaries as _summaries
from .claims import Policy

if TYPE_CHECKING:
    from flask_sqlalchemy import SQLAlchemy

    from ..memory.screening import ActiveIndex
    from ..memory.switches import Snapshot
    from ..settings import Settings


class _Core(Protocol):
    """What these steps need of the core they are part of."""

    db: SQLAlchemy
    _transcript_loader: Callable[[str], str | None] | None

    @property
    def settings(self) -> Settings: ...

    @property
    def server_name(self) -> str: ...

    def snapshot(self) -> Snapshot: ...

    def screening_index(self, snapshot: Snapshot) -> ActiveIndex: ...


class Housekeeping:
    """The sweep's steps and the jobs' runs, for `MemoryCore`."""

    def sweep(self: _Core) -> int:
        """End idle sessions (with their transcripts, if the host can load them)."""
        idle, load = self.settings.session_idle, self._transcript_loader
        return _runs.end_idle_sessions(self.db.session(), idle, load)

    def apply_retention(self: _Core, *, now: datetime | None = None) -> dict[str, int]:
        """Delete records older than CHATMEM_RETENTION_DAYS (memory/retention.py): the rows
        deleted, by table; nothing when it is 0 (off)."""
        return _retention.apply(self.db.session(), self.settings.retention_days, now=now)

    def deliver_notices(self: _Core, *, now: datetime | None = None) -> Any:
        """Send due webhook notices (CHATMEM_NOTIFY_WEBHOOK), retrying failures with back-off."""
        return _runs.deliver_notices(self.db.session(), self.settings, now=now)

    # -- auto-summary jobs ----------------------------------------------------

    def job_policy(self: _Core) -> Policy:
        return Policy.of(self.settings.jobs)

    def run_due_jobs(
        self: _Core, *, limit: int = 20, now: datetime | None = None
    ) -> _summaries.Stats:
        """Run due auto-summary jobs: claim, ask the provider, store or schedule a retry.

        Commits the current database session first. Safe in several processes
        at once (claims are atomic). With Memory off nothing runs and jobs wait;
        with Auto-summarize off or provider ``none`` due jobs finish at once as
        digest only, without any provider call.
        """
        snapshot = self.snapshot()
        return _runs.run_due_jobs(self.db.session(), self.settings, snapshot, now=now, limit=limit)

    def run_due_pre_reviews(
        self: _Core, *, limit: int = 20, now: datetime | None = None
    ) -> _pre_review.Stats:
        """Run due AI pre-review jobs (CHATMEM_PRE_REVIEW): an advisory note per proposal.

        Commits the current database session first; safe in several processes
        at once, like `run_due_jobs`. With Memory off nothing runs; with
        pre-review off or provider ``none`` due jobs end without a call.
        """
        snapshot = self.snapshot()
        return _runs.run_due_pre_reviews(
            self.db.session(),
            self.settings,
            snapshot,
            lambda: self.screening_index(snapshot),
            now=now,
            limit=limit,
        )
