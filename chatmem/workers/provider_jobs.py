"""Running the jobs that call the provider (auto-summaries, AI pre-reviews). No Flask in here.

Both kinds run the same way: claim the next due job just before it runs
(`claims`), build the provider's client only once there is something to
send, ask, and record the answer as soon as it arrives. What differs, what is
asked and what is kept, is the kind's own `run_one`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TypeVar

from sqlalchemy.orm import Session as OrmSession

from ..memory.models import utcnow
from ..providers import Provider, ProviderError
from ..providers.base import Usage
from ..text import redaction
from . import claims
from .claims import Claim, Policy, Table

log = logging.getLogger("chatmem.jobs")

LAST_ERROR_MAX = 1000


@dataclass
class Stats:
    """What one run did, for the CLI's report and for tests; each kind adds its outcomes."""

    claimed: int = 0
    retrying: int = 0
    failed: int = 0
    skipped: int = 0
    errors: list[str] = field(default_factory=list)


Counted = TypeVar("Counted", bound=Stats)


def run_each(
    db: OrmSession,
    table: Table,
    policy: Policy,
    provider: Callable[[], Provider] | None,
    stats: Counted,
    *,
    run_one: Callable[[Provider, Claim], str],
    skip: Callable[[Claim], None],
    now: datetime | None,
    limit: int,
) -> Counted:
    """Run up to `limit` due jobs of `table`, claiming each just before it runs.

    `provider` is None when the kind is off (no provider, or its switch off):
    each due job is then handed to `skip`, without a call. Otherwise it is a
    factory, so a run with nothing due builds no client at all; a client that
    cannot be built hands the job back untried (a setup mistake is not the
    job's fault). `run_one` returns the name of the `stats` field to count.

    `now` is a parameter so tests can move time without sleeping; left out,
    each claim takes the clock's time as it is made. A time read once would
    date the tenth claim of a long run as made when the run began: its lease
    looks spent at once, and another worker runs the same job beside this one.
    """
    client: Provider | None = None
    try:
        while stats.claimed < limit:
            held = claims.claim_one(db, table, policy, now=now or utcnow())
            if held is None:
                break
            stats.claimed += 1
            if provider is None:
                skip(held)
                stats.skipped += 1
                continue
            if client is None:
                try:
                    client = provider()
                except ProviderError as exc:
                    claims.release(db, table, held)
                    stats.errors.append(str(exc))
                    log.error("%s: jobs not run: %s", table.__name__, exc)
                    break
            outcome = run_one(client, held)
            setattr(stats, outcome, getattr(stats, outcome) + 1)
    finally:
        close = getattr(client, "close", None)
        if callable(close):
            close()
    return stats


def fail(
    db: OrmSession, table: Table, policy: Policy, held: Claim, exc: ProviderError, *, now: datetime
) -> str:
    """A try the provider did not answer: retried later if the error allows and tries remain."""
    error = redaction.redact(f"try {held.attempts}: {exc.kind}: {exc}")[:LAST_ERROR_MAX]
    outcome = claims.fail(
        db,
        table,
        policy,
        held,
        error,
        retryable=exc.retryable,
        retry_after=exc.retry_after,
        now=now,
    )
    if outcome != "skipped":
        log.warning("%s %s (%s): %s", table.__name__, held.job_id, held.subject, error)
    return outcome


def usage(reply_usage: Usage | None) -> dict[str, Any]:
    """The call's token counts for the Cost card; None where the provider reported none."""
    if reply_usage is None:
        return {}
    return {
        "input_tokens": reply_usage.input_tokens or None,
        "output_tokens": reply_usage.output_tokens or None,
    }
