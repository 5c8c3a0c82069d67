"""Claiming summary jobs: which worker runs a job, and for how long. No Flask in here.

Three rules keep several workers (gunicorn processes, the CLI, the background
thread) from stepping on each other:

- A claim is committed before the provider is called, and the call happens
  outside any transaction, so a slow provider never holds a lock or a
  snapshot open.
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
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import NamedTuple, Protocol

from sqlalchemy import ColumnElement, and_, or_, select, update
from sqlalchemy.orm import Session as OrmSession

from ..memory.models import SummaryJob

CLAIM_ROUNDS = 3


class LeaseTerms(Protocol):
    """What a claim needs of the job policy (`summaries.Policy`)."""

    @property
    def lease(self) -> timedelta: ...  # how long a claim holds before another worker may take it

    @property
    def max_attempts(self) -> int: ...  # tries a job gets, a dead worker's included


@dataclass(frozen=True)
class Claim:
    """A job this worker holds; `attempts` is the fencing token."""

    job_id: int
    session_id: str
    attempts: int


class Due(NamedTuple):
    """A due job as `find_due` saw it: the version a claim compares against."""

    job_id: int
    session_id: str
    status: str
    attempts: int
    claimed_at: datetime | None


def claim(db: OrmSession, policy: LeaseTerms, *, now: datetime, limit: int) -> list[Claim]:
    """Claim up to `limit` due jobs and commit; jobs another worker holds are skipped."""
    db.commit()  # start from a clean transaction, never inside a caller's
    claims: list[Claim] = []
    # Workers reading at the same moment see the same first rows; the loser of
    # a compare-and-set looks again (a few times) rather than go home empty.
    for _ in range(CLAIM_ROUNDS):
        rows = find_due(db, policy, now=now, limit=limit - len(claims))
        got = take(db, policy, rows, now=now)
        claims += got
        if len(got) == len(rows) or len(claims) >= limit:
            break
    return claims


def find_due(db: OrmSession, policy: LeaseTerms, *, now: datetime, limit: int) -> list[Due]:
    """The first half of a claim: due jobs, row-locked on PostgreSQL until `take` commits."""
    expired = now - policy.lease
    rows = db.execute(
        select(
            SummaryJob.id,
            SummaryJob.session_id,
            SummaryJob.status,
            SummaryJob.attempts,
            SummaryJob.claimed_at,
        )
        .where(
            or_(
                (SummaryJob.status == "queued") & (SummaryJob.next_run_at <= now),
                (SummaryJob.status == "running") & (SummaryJob.claimed_at < expired),
            )
        )
        .order_by(SummaryJob.next_run_at, SummaryJob.id)
        .limit(limit)
        .with_for_update(skip_locked=True)  # rendered on PostgreSQL only
    ).all()
    return [Due(*row) for row in rows]


def take(db: OrmSession, policy: LeaseTerms, rows: list[Due], *, now: datetime) -> list[Claim]:
    """The second half: compare-and-set each row to `running`, then commit.

    A row another worker changed since `find_due` read it matches no row
    here and is left to that worker.
    """
    claims: list[Claim] = []
    for job_id, session_id, status, attempts, claimed_at in rows:
        same = _same_version(job_id, status, attempts, claimed_at)
        if attempts >= policy.max_attempts:
            # Only a lease that ran out gets here: its last worker died mid-try.
            db.execute(
                update(SummaryJob)
                .where(same)
                .values(
                    status="failed",
                    last_error=f"gave up after {attempts} tries: the last worker stopped "
                    "before it finished (lease expired)",
                    transcript=None,
                )
            )
            continue
        won = db.execute(
            update(SummaryJob)
            .where(same)
            .values(status="running", claimed_at=now, attempts=attempts + 1)
        )
        if won.rowcount == 1:  # type: ignore[attr-defined]  # an UPDATE's result has rowcount; execute() is typed as a plain Result
            claims.append(Claim(job_id, session_id, attempts + 1))
    db.commit()
    return claims


def _same_version(
    job_id: int, status: str, attempts: int, claimed_at: datetime | None
) -> ColumnElement[bool]:
    """The compare-and-set condition: the row is still exactly as we read it."""
    return and_(
        SummaryJob.id == job_id,
        SummaryJob.status == status,
        SummaryJob.attempts == attempts,
        SummaryJob.claimed_at.is_(None)
        if claimed_at is None
        else SummaryJob.claimed_at == claimed_at,
    )


def still_held(held: Claim) -> ColumnElement[bool]:
    """Still our claim: running, and not re-claimed since (attempts moved on)."""
    return and_(
        SummaryJob.id == held.job_id,
        SummaryJob.status == "running",
        SummaryJob.attempts == held.attempts,
    )


def release(db: OrmSession, held: Claim) -> None:
    """Hand a claimed job back untried: its try is not counted."""
    db.execute(
        update(SummaryJob)
        .where(still_held(held))
        .values(status="queued", attempts=held.attempts - 1, claimed_at=None)
    )
    db.commit()
