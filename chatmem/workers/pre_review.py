"""AI pre-review jobs: claim, ask the provider, keep the note or drop it. No Flask in here.

A small sibling of the summary jobs (`summaries`, `summary_claims`), with
the same rules: a claim is a committed compare-and-set (rows picked with
`FOR UPDATE SKIP LOCKED` on PostgreSQL), `attempts` is the fencing token, a
claim is a lease that a dead worker's job is claimed again after, and the
provider is called outside any transaction. Retryable failures (timeouts,
429, 5xx) are tried again with the jobs' back-off, up to
CHATMEM_JOB_MAX_ATTEMPTS.

It fails closed: whatever goes wrong (no answer, an answer that is not a
note of the expected form, a note that is too long), the entry gets no note
and is reviewed as before. And it only ever writes the entry's
pre_review_* columns: it never approves, rejects or edits anything.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy import ColumnElement, and_, or_, select, update
from sqlalchemy.orm import Session as OrmSession

from ..memory import pre_review
from ..memory.models import Guidance, PreReviewJob, utcnow
from ..memory.screening import ActiveIndex
from ..providers import Message, Provider, ProviderError
from ..providers.base import Usage
from ..text import redaction
from .summaries import LAST_ERROR_MAX, Policy

log = logging.getLogger("chatmem.jobs")


@dataclass
class Stats:
    """What one run did, for the CLI's report and for tests."""

    claimed: int = 0
    noted: int = 0
    refused: int = 0
    retrying: int = 0
    failed: int = 0
    skipped: int = 0
    errors: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        return (
            f"{self.noted} noted, {self.refused} answers dropped, {self.retrying} to retry, "
            f"{self.failed} failed, {self.skipped} skipped"
        )


@dataclass(frozen=True)
class _Claim:
    job_id: int
    guidance_id: int
    attempts: int


def run_due(
    db: OrmSession,
    provider: Callable[[], Provider] | None,
    policy: Policy,
    index: Callable[[], ActiveIndex],
    *,
    now: datetime | None = None,
    limit: int = 20,
) -> Stats:
    """Run up to `limit` due pre-review jobs, one claim at a time (as `summaries.run_due`).

    `provider` is None when pre-review is off or no provider is configured:
    due jobs then end `skipped`, without a call. `index` gives the active
    guidance as the poisoning screen holds it, for the similar entries.
    """
    stats = Stats()
    client: Provider | None = None
    try:
        while stats.claimed < limit:
            held = _claim_one(db, policy, now=now or utcnow())
            if held is None:
                break
            stats.claimed += 1
            if provider is None:
                _finish(db, held, outcome="skipped", note="skipped: pre-review is off")
                stats.skipped += 1
                continue
            if client is None:
                try:
                    client = provider()
                except ProviderError as exc:
                    _release(db, held)  # a setup mistake is not the job's fault
                    stats.errors.append(str(exc))
                    log.error("pre-review jobs not run: %s", exc)
                    break
            outcome = run_one(db, client, policy, held, index, now=now)
            setattr(stats, outcome, getattr(stats, outcome) + 1)
    finally:
        close = getattr(client, "close", None)
        if callable(close):
            close()
    return stats


def run_one(
    db: OrmSession,
    provider: Provider,
    policy: Policy,
    held: _Claim,
    index: Callable[[], ActiveIndex],
    *,
    now: datetime | None,
) -> str:
    """Pre-review one claimed proposal: 'noted', 'refused', 'retrying', 'failed' or 'skipped'."""
    entry = db.get(Guidance, held.guidance_id)
    if entry is None or entry.status != "pending":
        _finish(db, held, outcome="skipped", note="skipped: the entry is no longer pending")
        return "skipped"
    fields = {
        name: getattr(entry, name)
        for name in ("type", "title", "text", "scope", "target", "severity")
    }
    text = pre_review.build_input(fields, pre_review.similar(db, index(), entry))
    key = entry.text_key
    db.commit()  # nothing held open while the provider thinks
    try:
        reply = provider.complete(
            system=pre_review.SYSTEM_PROMPT,
            messages=[Message.user(text)],
            max_output_tokens=pre_review.MAX_OUTPUT_TOKENS,
        )
    except ProviderError as exc:
        return _fail(db, policy, held, exc, now=now or utcnow())
    note = pre_review.note_of(reply.text)
    if note is None:
        # Paid for, but not a note we keep: no retry (the same question gets the
        # same kind of answer), no note, and the Cost card counts the call.
        _finish(
            db,
            held,
            outcome="refused",
            note=f"dropped: the answer was not a note of the expected form "
            f"({len(reply.text)} characters, stop reason {reply.stop_reason!r})",
            usage=reply.usage,
        )
        return "refused"
    model = f"{provider.name}/{provider.model}" if provider.model else provider.name
    if not _finish(db, held, outcome="note", usage=reply.usage, commit=False):
        return "skipped"
    if not pre_review.keep_note(db, held.guidance_id, key, note, model, now=utcnow()):
        log.info("pre-review of entry %s: decided or edited meanwhile; note dropped", entry.id)
    db.commit()
    return "noted"


# -- claims (the summary jobs' rules, on this table) ------------------------------------


def _claim_one(db: OrmSession, policy: Policy, *, now: datetime) -> _Claim | None:
    db.commit()  # start from a clean transaction, never inside a caller's
    expired = now - policy.lease
    for _ in range(3):  # the loser of a compare-and-set looks again
        row = db.execute(
            select(
                PreReviewJob.id,
                PreReviewJob.guidance_id,
                PreReviewJob.status,
                PreReviewJob.attempts,
                PreReviewJob.claimed_at,
            )
            .where(
                or_(
                    (PreReviewJob.status == "queued") & (PreReviewJob.next_run_at <= now),
                    (PreReviewJob.status == "running") & (PreReviewJob.claimed_at < expired),
                )
            )
            .order_by(PreReviewJob.next_run_at, PreReviewJob.id)
            .limit(1)
            .with_for_update(skip_locked=True)  # rendered on PostgreSQL only
        ).first()
        if row is None:
            db.commit()
            return None
        job_id, guidance_id, status, attempts, claimed_at = row
        same = and_(
            PreReviewJob.id == job_id,
            PreReviewJob.status == status,
            PreReviewJob.attempts == attempts,
            PreReviewJob.claimed_at.is_(None)
            if claimed_at is None
            else PreReviewJob.claimed_at == claimed_at,
        )
        if attempts >= policy.max_attempts:
            # Only a lease that ran out gets here: its last worker died mid-try.
            db.execute(
                update(PreReviewJob)
                .where(same)
                .values(
                    status="failed",
                    outcome="failed",
                    finished_at=now,
                    last_error=f"gave up after {attempts} tries: the last worker stopped "
                    "before it finished (lease expired)",
                )
            )
            db.commit()
            continue
        won = db.execute(
            update(PreReviewJob)
            .where(same)
            .values(status="running", claimed_at=now, attempts=attempts + 1)
        )
        db.commit()
        if won.rowcount == 1:  # type: ignore[attr-defined]  # an UPDATE's result has rowcount; execute() is typed as a plain Result
            return _Claim(job_id, guidance_id, attempts + 1)
    return None


def _held(held: _Claim) -> ColumnElement[bool]:
    return and_(
        PreReviewJob.id == held.job_id,
        PreReviewJob.status == "running",
        PreReviewJob.attempts == held.attempts,
    )


def _release(db: OrmSession, held: _Claim) -> None:
    db.execute(
        update(PreReviewJob)
        .where(_held(held))
        .values(status="queued", attempts=held.attempts - 1, claimed_at=None)
    )
    db.commit()


def _finish(
    db: OrmSession,
    held: _Claim,
    *,
    outcome: str,
    note: str | None = None,
    usage: Usage | None = None,
    commit: bool = True,
) -> bool:
    """Mark the job done, unless its claim was lost meanwhile (then False, rolled back)."""
    won = db.execute(
        update(PreReviewJob)
        .where(_held(held))
        .values(
            status="done",
            outcome=outcome,
            last_error=note,
            finished_at=utcnow(),
            input_tokens=usage.input_tokens or None if usage else None,
            output_tokens=usage.output_tokens or None if usage else None,
        )
    )
    if won.rowcount != 1:  # type: ignore[attr-defined]  # an UPDATE's result has rowcount; execute() is typed as a plain Result
        db.rollback()
        log.warning(
            "pre-review job %s: lost its claim (lease expired); result dropped", held.job_id
        )
        return False
    if commit:
        db.commit()
    return True


def _fail(
    db: OrmSession, policy: Policy, held: _Claim, exc: ProviderError, *, now: datetime
) -> str:
    """A try without an answer: retry later if the error allows and tries remain."""
    error = redaction.redact(f"try {held.attempts}: {exc.kind}: {exc}")[:LAST_ERROR_MAX]
    if exc.retryable and held.attempts < policy.max_attempts:
        values: dict[str, object] = {
            "status": "queued",
            "next_run_at": now + policy.delay(held.attempts, exc.retry_after),
            "last_error": error,
        }
        outcome = "retrying"
    else:
        values = {"status": "failed", "outcome": "failed", "last_error": error, "finished_at": now}
        outcome = "failed"
    won = db.execute(update(PreReviewJob).where(_held(held)).values(**values))
    if won.rowcount != 1:  # type: ignore[attr-defined]  # an UPDATE's result has rowcount; execute() is typed as a plain Result
        db.rollback()
        return "skipped"
    db.commit()
    log.warning("pre-review job %s for entry %s: %s", held.job_id, held.guidance_id, error)
    return outcome
