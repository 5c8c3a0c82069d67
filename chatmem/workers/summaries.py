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

How a worker holds a job (a leased, fenced claim) is `claims`; how a run
claims, calls and counts is `provider_jobs`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import update
from sqlalchemy.orm import Session as OrmSession

from ..memory import ledger, summary_prompt
from ..memory.models import Session, SummaryJob, utcnow
from ..memory.summary_prompt import SUMMARY_MAX
from ..providers import Message, Provider, ProviderError
from ..text import for_agents
from . import claims, provider_jobs
from .claims import Claim, Policy


@dataclass
class Stats(provider_jobs.Stats):
    """What one run did, for the CLI's report and for tests."""

    done: int = 0

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

    `provider` is None when summaries are digest only (provider `none`, or
    Auto-summarize off): due jobs are then finished at once without any
    call. How a run claims and counts is `provider_jobs.run_each`.
    """

    def skip(held: Claim) -> None:
        claims.finish(
            db, SummaryJob, held, "digest_only", last_error="skipped: summaries are digest only"
        )

    def run(client: Provider, held: Claim) -> str:
        return run_one(db, client, policy, held, now=now)

    return provider_jobs.run_each(
        db, SummaryJob, policy, provider, Stats(), run_one=run, skip=skip, now=now, limit=limit
    )


def run_one(
    db: OrmSession, provider: Provider, policy: Policy, held: Claim, *, now: datetime | None
) -> str:
    """Summarize one claimed session; returns 'done', 'retrying', 'failed' or 'skipped'.

    A retry is scheduled from `now`, or from the clock once the provider has answered.
    """
    session = db.get(Session, held.subject)
    job = db.get(SummaryJob, held.job_id)
    if session is None or job is None:
        db.rollback()
        return "skipped"
    if session.summary is not None:
        claims.finish(
            db, SummaryJob, held, "skipped", last_error="skipped: the session already has a summary"
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
        return provider_jobs.fail(db, SummaryJob, policy, held, exc, now=now or utcnow())
    done = claims.finish(
        db,
        SummaryJob,
        held,
        "summary",
        commit=False,
        last_error=None,
        **provider_jobs.usage(reply.usage),
    )
    if done:
        # An agent that saved its own summary meanwhile always wins over an automatic one.
        db.execute(
            update(Session)
            .where(Session.id == held.subject, Session.summary.is_(None))
            .values(summary=summary[:SUMMARY_MAX], summary_auto=True)
        )
        db.commit()
    return "done"
