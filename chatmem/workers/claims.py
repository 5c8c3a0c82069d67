"""Claiming jobs: which worker runs a job, and for how long. No Flask in here.

One set of rules for every job table (`LeasedJob`: summaries, pre-reviews,
webhook notices), so several workers (gunicorn processes, the CLI, the
background thread) never step on each other:

- A claim is committed before the work starts, and the work (a provider
  call, a POST) happens outside any transaction, so a slow provider never
  holds a lock or a snapshot open.
- A claim is atomic: rows are picked with `FOR UPDATE SKIP LOCKED` on
  PostgreSQL, and every claim is a compare-and-set
  (`UPDATE ... WHERE id=? AND status=? AND attempts=? AND claimed_at IS ?`)
  whose row count says who won, which is what makes SQLite safe too.
  `attempts` grows by one with every claim, so it doubles as a fencing
  token: a worker whose lease ran out cannot finish a job someone else has
  since re-claimed.
- A claim is a lease. A `running` job whose claim is older than the lease
  belongs to a worker that died, and is claimed again; the dead worker's try
  still counts, so a job that kills its worker cannot loop for ever.
- A worker claims what it is about to run, one job at a time: a worker
  killed mid-run has charged a try to the one job in flight only.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, NamedTuple

from sqlalchemy import ColumnElement, and_, null, or_, select, update
from sqlalchemy.orm import Session as OrmSession

from ..memory.models import utcnow
from ..memory.models.jobs import LeasedJob
from ..settings import JobSettings

log = logging.getLogger("chatmem.jobs")

CLAIM_ROUNDS = 3
# A server's Retry-After is honoured, but not past a day: a bogus header
# must not park a job for ever.
RETRY_AFTER_CAP = timedelta(days=1)

Table = type[LeasedJob]


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


@dataclass(frozen=True)
class Claim:
    """A job this worker holds; `attempts` is the fencing token."""

    job_id: int
    subject: Any  # the table's `subject` column (a session id, an entry id), or None
    attempts: int


class Due(NamedTuple):
    """A due job as `find_due` saw it: the version a claim compares against."""

    job_id: int
    subject: Any
    status: str
    attempts: int
    claimed_at: datetime | None


def claim(
    db: OrmSession, table: Table, policy: Policy, *, now: datetime, limit: int
) -> list[Claim]:
    """Claim up to `limit` due jobs and commit; jobs another worker holds are skipped."""
    db.commit()  # start from a clean transaction, never inside a caller's
    claims: list[Claim] = []
    # Workers reading at the same moment see the same first rows; the loser of
    # a compare-and-set looks again (a few times) rather than go home empty.
    for _ in range(CLAIM_ROUNDS):
        rows = find_due(db, table, policy, now=now, limit=limit - len(claims))
        got = take(db, table, policy, rows, now=now)
        claims += got
        if len(got) == len(rows) or len(claims) >= limit:
            break
    return claims


def claim_one(db: OrmSession, table: Table, policy: Policy, *, now: datetime) -> Claim | None:
    """The next due job, claimed; None when nothing is due."""
    claims = claim(db, table, policy, now=now, limit=1)
    return claims[0] if claims else None


def find_due(
    db: OrmSession, table: Table, policy: Policy, *, now: datetime, limit: int
) -> list[Due]:
    """The first half of a claim: due jobs, row-locked on PostgreSQL until `take` commits."""
    expired = now - policy.lease
    subject = getattr(table, table.subject) if table.subject else null()
    rows = db.execute(
        select(table.id, subject, table.status, table.attempts, table.claimed_at)
        .where(
            or_(
                (table.status == "queued") & (table.next_run_at <= now),
                (table.status == "running") & (table.claimed_at < expired),
            )
        )
        .order_by(table.next_run_at, table.id)
        .limit(limit)
        .with_for_update(skip_locked=True)  # rendered on PostgreSQL only
    ).all()
    return [Due(*row) for row in rows]


def take(
    db: OrmSession, table: Table, policy: Policy, rows: list[Due], *, now: datetime
) -> list[Claim]:
    """The second half: compare-and-set each row to `running`, then commit.

    A row another worker changed since `find_due` read it matches no row
    here and is left to that worker.
    """
    claims: list[Claim] = []
    for job_id, subject, status, attempts, claimed_at in rows:
        same = and_(
            table.id == job_id,
            table.status == status,
            table.attempts == attempts,
            table.claimed_at.is_(None) if claimed_at is None else table.claimed_at == claimed_at,
        )
        if attempts >= policy.max_attempts:
            # Only a lease that ran out gets here: its last worker died mid-try.
            db.execute(
                update(table)
                .where(same)
                .values(
                    status="failed",
                    last_error=f"gave up after {attempts} tries: the last worker stopped "
                    "before it finished (lease expired)",
                    **table.ended("failed", now),
                )
            )
            continue
        won = db.execute(
            update(table)
            .where(same)
            .values(status="running", claimed_at=now, attempts=attempts + 1)
        )
        if won.rowcount == 1:  # type: ignore[attr-defined]  # an UPDATE's result has rowcount; execute() is typed as a plain Result
            claims.append(Claim(job_id, subject, attempts + 1))
    db.commit()
    return claims


def still_held(table: Table, held: Claim) -> ColumnElement[bool]:
    """Still our claim: running, and not re-claimed since (attempts moved on)."""
    return and_(table.id == held.job_id, table.status == "running", table.attempts == held.attempts)


def release(db: OrmSession, table: Table, held: Claim) -> None:
    """Hand a claimed job back untried: its try is not counted."""
    db.execute(
        update(table)
        .where(still_held(table, held))
        .values(status="queued", attempts=held.attempts - 1, claimed_at=None)
    )
    db.commit()


def finish(
    db: OrmSession,
    table: Table,
    held: Claim,
    outcome: str,
    *,
    commit: bool = True,
    **values: Any,
) -> bool:
    """Mark the job done, unless its claim was lost meanwhile (then False, rolled back).

    With `commit=False` the caller writes the job's result in the same transaction.
    """
    won = db.execute(
        update(table)
        .where(still_held(table, held))
        .values(status="done", **table.ended(outcome, utcnow()), **values)
    )
    if won.rowcount != 1:  # type: ignore[attr-defined]  # an UPDATE's result has rowcount; execute() is typed as a plain Result
        db.rollback()
        log.warning(
            "%s %s: lost its claim (lease expired); result dropped",
            table.__name__,
            held.job_id,
        )
        return False
    if commit:
        db.commit()
    return True


def fail(
    db: OrmSession,
    table: Table,
    policy: Policy,
    held: Claim,
    error: str,
    *,
    retryable: bool,
    retry_after: float | None = None,
    now: datetime,
) -> str:
    """Record a try that got no answer: 'retrying' if the error allows and tries remain,
    else 'failed'; 'skipped' if the claim was lost meanwhile. `error` is stored as given."""
    if retryable and held.attempts < policy.max_attempts:
        values: dict[str, Any] = {
            "status": "queued",
            "next_run_at": now + policy.delay(held.attempts, retry_after),
            "last_error": error,
        }
        outcome = "retrying"
    else:
        values = {"status": "failed", "last_error": error, **table.ended("failed", now)}
        outcome = "failed"
    won = db.execute(update(table).where(still_held(table, held)).values(**values))
    if won.rowcount != 1:  # type: ignore[attr-defined]  # an UPDATE's result has rowcount; execute() is typed as a plain Result
        db.rollback()
        return "skipped"
    db.commit()
    return outcome
