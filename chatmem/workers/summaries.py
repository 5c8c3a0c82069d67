"""Auto-summary jobs: claim, call the provider, store or retry. No Flask in here.

A job's life: `queued` -> `running` (claimed) -> `done`, or back to `queued`
with a later `next_run_at` after a retryable failure, or `failed` for good.
A session with nothing to summarise (no ledgered call, no transcript) gets a
job born `digest_only`: never claimed, no provider call, and countable as a
paid call saved.
The session was already recorded with its digest when it ended, so a job
that fails only means the session stays "Digest only"; nothing is lost.
The job's transcript (a second copy of the conversation, stored redacted)
is deleted as the job ends, whether done, failed or given up; only a job
that will be retried keeps it.

How a worker holds a job (a leased, fenced claim) is `summary_claims`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from sqlalchemy import update
from sqlalchemy.orm import Session as OrmSession

from ..memory import ledger, summary_prompt
from ..memory.models import Session, SummaryJob, utcnow
from ..memory.summary_prompt import SUMMARY_MAX
from ..providers import Message, Provider, ProviderError
from ..providers.base import Usage
from ..settings import JobSettings
from ..text import for_agents, redaction
from .summary_claims import Claim, claim, release, still_held

log = logging.getLogger("chatmem.jobs")

# A server's Retry-After is honoured, but not past a day: a bogus header
# must not park a job for ever.
RETRY_AFTER_CAP = timedelta(days=1)
LAST_ERROR_MAX = 1000


@dataclass(frozen=True)
class Policy:
    """How jobs are leased, retried and fed; read from config by the extension."""

    lease: timedelta = timedelta(minutes=5)
    max_attempts: int = 5
    backoff: timedelta = timedelta(seconds=30)
    backoff_max: timedelta = timedelta(hours=1)
    input_max: int = 12_000

    @classmethod
    def of(cls, jobs: JobSettings) -> Policy:
        """The policy the CHATMEM_JOB_* and CHATMEM_SUMMARY_INPUT_MAX settings describe."""
        return cls(
            jobs.lease, jobs.max_attempts, jobs.backoff, jobs.backoff_max, jobs.summary_input_max
        )

    def delay(self, attempts: int, retry_after: float | None = None) -> timedelta:
        """Exponential back-off after `attempts` tries, or the server's wait if longer."""
        exponent = min(max(attempts - 1, 0), 30)
        wait: timedelta = min(self.backoff * (2**exponent), self.backoff_max)
        if retry_after is not None and retry_after > 0:
            wait = max(wait, min(timedelta(seconds=retry_after), RETRY_AFTER_CAP))
        return wait


@dataclass
class Stats:
    """What one run did, for the CLI's report and for tests."""

    claimed: int = 0
    done: int = 0
    retrying: int = 0
    failed: int = 0
    skipped: int = 0
    errors: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        return (
            f"{self.done} summarized, {self.retrying} to retry, {self.failed} failed, "
            f"{self.skipped} digest only"
        )


def run_due(
    db: OrmSession,
    provider: Callable[[], Provider] | None,
    policy: Policy,
    *,
    now: datetime | None = None,
    limit: int = 20,
) -> Stats:
    """Run up to `limit` jobs due at `now`, claiming each just before it runs.

    One claim at a time: a worker killed mid-run has charged a try to the one
    job in flight, not to every job it meant to run (a batch claimed up front
    lost a try for each of them, and each waited out a lease).

    `provider` is None when summaries are digest only (provider `none`, or
    Auto-summarize off): due jobs are then finished at once without any
    call. Otherwise it is a factory, so a run with nothing due builds no
    client at all. `now` is a parameter so tests can move time without
    sleeping; left out, each claim takes the clock's time as it is made. A
    time read once would date the tenth claim of a long run as made when the
    run began: its lease looks spent at once, and another worker runs the
    same job again beside this one.
    """
    stats = Stats()
    client: Provider | None = None
    try:
        while stats.claimed < limit:
            at = now or utcnow()
            claims = claim(db, policy, now=at, limit=1)
            if not claims:
                break
            [held] = claims
            stats.claimed += 1
            if provider is None:
                _finish(
                    db,
                    held,
                    summary=None,
                    note="skipped: summaries are digest only",
                    outcome="digest_only",
                )
                stats.skipped += 1
                continue
            if client is None:
                try:
                    client = provider()
                except ProviderError as exc:
                    # A setup mistake is not the job's fault: hand it back
                    # untouched (its try not counted) to run once it is fixed.
                    release(db, held)
                    stats.errors.append(str(exc))
                    log.error("summary jobs not run: %s", exc)
                    break
            outcome = run_one(db, client, policy, held, now=now)
            setattr(stats, outcome, getattr(stats, outcome) + 1)
    finally:
        close = getattr(client, "close", None)
        if callable(close):
            close()
    return stats


def run_one(
    db: OrmSession, provider: Provider, policy: Policy, held: Claim, *, now: datetime | None
) -> str:
    """Summarize one claimed session; returns 'done', 'retrying', 'failed' or 'skipped'.

    A retry is scheduled from `now`, or from the clock once the provider has answered.
    """
    session = db.get(Session, held.session_id)
    job = db.get(SummaryJob, held.job_id)
    if session is None or job is None:
        db.rollback()
        return "skipped"
    if session.summary is not None:
        _finish(
            db,
            held,
            summary=None,
            note="skipped: the session already has a summary",
            outcome="skipped",
        )
        return "skipped"
    digest = session.digest if session.digest is not None else ledger.digest(db, session.id)[0]
    text = summary_prompt.build_input(
        digest=digest,
        transcript=job.transcript,
        channel=session.channel,
        user_name=session.user_name,
        limit=policy.input_max,
    )
    # End the read transaction: nothing is held open while the provider thinks.
    db.commit()
    try:
        reply = provider.complete(
            system=summary_prompt.SYSTEM_PROMPT,
            messages=[Message.user(text)],
            max_output_tokens=summary_prompt.MAX_OUTPUT_TOKENS,
        )
        summary = for_agents(reply.text).strip()
        if not summary:
            raise ProviderError(
                f"{provider.name}: the reply had no text (stop reason {reply.stop_reason!r})",
                kind="server",
            )
    except ProviderError as exc:
        return _fail(db, policy, held, exc, now=now or utcnow())
    _finish(db, held, summary=summary[:SUMMARY_MAX], usage=reply.usage)
    return "done"


def _finish(
    db: OrmSession,
    held: Claim,
    *,
    summary: str | None,
    note: str | None = None,
    outcome: str = "summary",
    usage: Usage | None = None,
) -> None:
    """Mark the job done and store the summary, unless the claim was lost meanwhile.

    The summary goes in only where the session still has none: an agent
    that saved its own summary meanwhile always wins over an automatic one.
    """
    won = db.execute(
        update(SummaryJob)
        .where(still_held(held))
        .values(
            status="done",
            last_error=note,
            transcript=None,
            outcome=outcome,
            finished_at=utcnow(),
            # The provider's count, for the Cost card; None when it reported none.
            input_tokens=usage.input_tokens or None if usage else None,
            output_tokens=usage.output_tokens or None if usage else None,
        )
    )
    if won.rowcount != 1:  # type: ignore[attr-defined]  # an UPDATE's result has rowcount; execute() is typed as a plain Result
        db.rollback()
        log.warning("summary job %s: lost its claim (lease expired); result dropped", held.job_id)
        return
    if summary is not None:
        db.execute(
            update(Session)
            .where(Session.id == held.session_id, Session.summary.is_(None))
            .values(summary=summary, summary_auto=True)
        )
    db.commit()


def _fail(db: OrmSession, policy: Policy, held: Claim, exc: ProviderError, *, now: datetime) -> str:
    """Record a failed try: retry later if the error allows and tries remain."""
    error = redaction.redact(f"try {held.attempts}: {exc.kind}: {exc}")[:LAST_ERROR_MAX]
    if exc.retryable and held.attempts < policy.max_attempts:
        values: dict[str, object] = {
            "status": "queued",
            "next_run_at": now + policy.delay(held.attempts, exc.retry_after),
            "last_error": error,
        }
        outcome = "retrying"
    else:
        values = {
            "status": "failed",
            "last_error": error,
            "transcript": None,
            "outcome": "failed",
            "finished_at": now,
        }
        outcome = "failed"
    won = db.execute(update(SummaryJob).where(still_held(held)).values(**values))
    if won.rowcount != 1:  # type: ignore[attr-defined]  # an UPDATE's result has rowcount; execute() is typed as a plain Result
        db.rollback()
        return "skipped"
    db.commit()
    log.warning("summary job %s for session %s: %s", held.job_id, held.session_id, error)
    return outcome
