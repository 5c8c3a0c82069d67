"""The work `ChatMemory`'s worker methods start, given the app's settings.

`memory.sweep()`, `memory.run_due_jobs()`, `memory.run_due_pre_reviews()` and
`memory.deliver_notices()` are
the documented way a host's cron or the background sweeper runs chatmem's
work; each is one call here, so the facade only says which settings apply.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from ..memory import held, sessions, tasks
from . import pre_review, summaries, webhook
from .claims import Policy

if TYPE_CHECKING:
    from sqlalchemy.orm import Session as OrmSession

    from ..memory.screening import ActiveIndex
    from ..memory.switches import Snapshot
    from ..settings import Settings

log = logging.getLogger("chatmem")

TranscriptLoader = Callable[[str], "str | None"]


def end_idle_sessions(
    db: OrmSession, idle: timedelta, load_transcript: TranscriptLoader | None
) -> int:
    """End sessions idle for `idle`, with their transcripts if the host can load them."""
    # Grants past their time are ledgered first, so an ending session's digest has them.
    held.expire_due(db)
    tasks.expire_due(db)  # MCP tasks past their ttl go, with the answers they kept
    ids = sessions.idle_ids(db, idle)
    for session_id in ids:
        sessions.end(db, session_id, transcript=_transcript(db, load_transcript, session_id))
    return len(ids)


def _transcript(db: OrmSession, load: TranscriptLoader | None, session_id: str) -> str | None:
    if load is None:
        return None
    try:
        return load(session_id)
    except Exception:
        # A host bug must not stop the sweep: the digest alone still records it.
        log.exception("transcript_loader failed for session %s", session_id)
        db.rollback()
        return None


def deliver_notices(db: OrmSession, settings: Settings, *, now: datetime | None) -> webhook.Sent:
    """Send due webhook notices when CHATMEM_NOTIFY_WEBHOOK is set."""
    url = settings.notify_webhook
    if not url:
        return webhook.Sent()
    policy = Policy.of(settings.jobs)
    return webhook.deliver_due(db, str(url), policy, post=webhook.post_json, now=now)


def run_due_jobs(
    db: OrmSession, settings: Settings, snapshot: Snapshot, *, now: datetime | None, limit: int
) -> summaries.Stats:
    """Due auto-summary jobs; with Memory off none run, and digest-only ones skip the provider."""
    if not snapshot.memory_enabled:
        return summaries.Stats()
    from ..providers import provider_from_config

    provider = settings.provider
    digest_only = not snapshot.auto_summarize or provider.name == "none"
    factory = None if digest_only else (lambda: provider_from_config(provider.as_config()))
    policy = Policy.of(settings.jobs)
    return summaries.run_due(db, factory, policy, now=now, limit=limit)


def run_due_pre_reviews(
    db: OrmSession,
    settings: Settings,
    snapshot: Snapshot,
    index: Callable[[], ActiveIndex],
    *,
    now: datetime | None,
    limit: int,
) -> pre_review.Stats:
    """Due AI pre-review jobs; with Memory off none run, with pre-review or the provider off
    they end without a call."""
    if not snapshot.memory_enabled:
        return pre_review.Stats()
    from ..providers import provider_from_config

    provider = settings.provider
    off = not settings.pre_review or provider.name == "none"
    factory = None if off else (lambda: provider_from_config(provider.as_config()))
    policy = Policy.of(settings.jobs)
    return pre_review.run_due(db, factory, policy, index, now=now, limit=limit)
