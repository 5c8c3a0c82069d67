"""The lease rules every job table shares (chatmem/workers/claims.py), edge by edge.

Each job table is claimed the same way, so these tests use the webhook outbox
(no provider needed) and, where a job's end is recorded, the summary jobs.
Times are passed in, so every lease edge is exact.
"""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import select

from chatmem.memory.models import NotifyJob, SummaryJob, utcnow
from chatmem.workers import claims
from chatmem.workers.claims import Policy

LEASE = timedelta(seconds=60)
POLICY = Policy(lease=LEASE, max_attempts=3)
GIVEN_UP = "gave up after {n} tries: the last worker stopped before it finished (lease expired)"


def notices(db: Any, count: int, *, at: Any = None) -> list[int]:
    """`count` queued webhook notices, due at `at` (the default: now)."""
    rows = [NotifyJob(event="proposal", payload={"n": n}) for n in range(count)]
    for row in rows:
        if at is not None:
            row.next_run_at = at
    db.session.add_all(rows)
    db.session.commit()
    return [row.id for row in rows]


def summary_job(memory: Any, db: Any, editor: Any) -> SummaryJob:
    """A queued summary job for a new session of `editor`, with a transcript to send."""
    job = SummaryJob(session_id=memory.start_session(editor, "chat"), transcript="t")
    db.session.add(job)
    db.session.commit()
    return job


def state(db: Any, table: Any, job_id: int) -> tuple[str, int, Any]:
    db.session.expire_all()
    row = db.session.get(table, job_id)
    return (row.status, row.attempts, row.claimed_at)


def test_a_lease_runs_out_only_after_its_whole_length(db: Any) -> None:
    (job_id,) = notices(db, 1)
    t0 = utcnow()
    first = claims.claim_one(db.session(), NotifyJob, POLICY, now=t0)
    assert first is not None and first.attempts == 1

    assert claims.claim_one(db.session(), NotifyJob, POLICY, now=t0 + LEASE) is None
    again = claims.claim_one(
        db.session(), NotifyJob, POLICY, now=t0 + LEASE + timedelta(microseconds=1)
    )
    assert again is not None and (again.job_id, again.attempts) == (job_id, 2)


def test_the_job_due_first_is_claimed_first_and_ties_go_by_id(db: Any) -> None:
    now = utcnow()
    later, earlier = (
        notices(db, 1, at=now - timedelta(seconds=1)),
        notices(db, 1, at=now - timedelta(seconds=5)),
    )
    # Two due at the same moment, the higher id inserted first: the lower id goes first.
    tied = [
        NotifyJob(id=900, event="proposal", payload={}),
        NotifyJob(id=800, event="proposal", payload={}),
    ]
    for row in tied:
        row.next_run_at = now
    db.session.add_all(tied)
    db.session.commit()

    order = []
    while (held := claims.claim_one(db.session(), NotifyJob, POLICY, now=now)) is not None:
        order.append(held.job_id)
    assert order == [*earlier, *later, 800, 900]


def test_a_job_finished_while_another_worker_read_it_as_expired_is_not_claimed_again(
    db: Any,
) -> None:
    (job_id,) = notices(db, 1)
    t0 = utcnow()
    slow = claims.claim_one(db.session(), NotifyJob, POLICY, now=t0)
    assert slow is not None
    late = t0 + LEASE + timedelta(seconds=1)
    seen = claims.find_due(db.session(), NotifyJob, POLICY, now=late, limit=10)
    assert [(r.job_id, r.status) for r in seen] == [(job_id, "running")]
    db.session.commit()
    # The slow worker was alive after all, and finishes before the other claims.
    assert claims.finish(db.session(), NotifyJob, slow, "sent", last_error=None) is True

    assert claims.take(db.session(), NotifyJob, POLICY, seen, now=late) == []
    assert state(db, NotifyJob, job_id) == ("done", 1, t0)


def test_a_worker_whose_job_was_claimed_again_can_neither_finish_nor_fail_it(
    db: Any, caplog: pytest.LogCaptureFixture
) -> None:
    (job_id,) = notices(db, 1)
    t0 = utcnow()
    first = claims.claim_one(db.session(), NotifyJob, POLICY, now=t0)
    second = claims.claim_one(db.session(), NotifyJob, POLICY, now=t0 + LEASE * 2)
    assert first is not None and second is not None and second.attempts == 2

    with caplog.at_level(logging.WARNING, logger="chatmem.jobs"):
        assert claims.finish(db.session(), NotifyJob, first, "sent", last_error=None) is False
    assert [r.getMessage() for r in caplog.records] == [
        f"NotifyJob {job_id}: lost its claim (lease expired); result dropped"
    ]
    failed = claims.fail(
        db.session(), NotifyJob, POLICY, first, "try 1: HTTP 500", retryable=False, now=t0
    )
    assert failed == "skipped"
    assert state(db, NotifyJob, job_id) == ("running", 2, t0 + LEASE * 2)

    assert claims.finish(db.session(), NotifyJob, second, "sent", last_error=None) is True
    assert state(db, NotifyJob, job_id)[:2] == ("done", 2)


def test_a_given_up_job_stays_given_up_when_its_slow_worker_finishes(
    memory: Any, db: Any, editor: Any
) -> None:
    policy = Policy(lease=LEASE, max_attempts=1)
    job = summary_job(memory, db, editor)
    t0 = utcnow()
    slow = claims.claim_one(db.session(), SummaryJob, policy, now=t0)
    assert slow is not None
    late = t0 + LEASE * 2

    assert claims.claim_one(db.session(), SummaryJob, policy, now=late) is None
    db.session.expire_all()
    given_up = db.session.get(SummaryJob, job.id)
    assert (given_up.status, given_up.last_error) == ("failed", GIVEN_UP.format(n=1))
    assert (given_up.outcome, given_up.finished_at, given_up.transcript) == ("failed", late, None)

    assert claims.finish(db.session(), SummaryJob, slow, "summary", last_error=None) is False
    assert state(db, SummaryJob, job.id)[:2] == ("failed", 1)


def test_a_claim_skips_a_job_it_gives_up_and_takes_the_next(db: Any) -> None:
    policy = Policy(lease=LEASE, max_attempts=1)
    t0 = utcnow()
    dying, fresh, third, fourth = notices(db, 4, at=t0 - timedelta(seconds=10))
    assert claims.claim_one(db.session(), NotifyJob, policy, now=t0) is not None  # `dying`
    late = t0 + LEASE * 2

    # One read of two rows: the first is given up, the second still claimed.
    seen = claims.find_due(db.session(), NotifyJob, policy, now=late, limit=2)
    taken = claims.take(db.session(), NotifyJob, policy, seen, now=late)
    assert [c.job_id for c in taken] == [fresh]
    assert state(db, NotifyJob, dying)[0] == "failed"

    # A batch claim looks again for what it lost, up to its limit and no more.
    assert [c.job_id for c in claims.claim(db.session(), NotifyJob, policy, now=late, limit=1)] == [
        third
    ]
    assert state(db, NotifyJob, fourth) == ("queued", 0, None)


def test_a_batch_claim_keeps_what_each_round_won(db: Any) -> None:
    policy = Policy(lease=LEASE, max_attempts=1)
    t0 = utcnow()
    dying, *rest = notices(db, 4, at=t0 - timedelta(seconds=10))
    assert claims.claim_one(db.session(), NotifyJob, policy, now=t0) is not None  # `dying`

    # Round one reads `dying` and the next, gives one up and wins one; round two
    # asks for the one still missing.
    got = claims.claim(db.session(), NotifyJob, policy, now=t0 + LEASE * 2, limit=2)
    assert [c.job_id for c in got] == rest[:2]
    assert state(db, NotifyJob, rest[2]) == ("queued", 0, None)


def test_a_released_job_is_as_it_was_before_the_claim(db: Any) -> None:
    (job_id,) = notices(db, 1)
    held = claims.claim_one(db.session(), NotifyJob, POLICY, now=utcnow())
    assert held is not None
    claims.release(db.session(), NotifyJob, held)
    assert state(db, NotifyJob, job_id) == ("queued", 0, None)


def test_a_failed_try_that_is_not_retried_ends_the_job_then(
    memory: Any, db: Any, editor: Any
) -> None:
    summary_job(memory, db, editor)
    t0 = utcnow()
    held = claims.claim_one(db.session(), SummaryJob, POLICY, now=t0)
    assert held is not None
    outcome = claims.fail(
        db.session(), SummaryJob, POLICY, held, "try 1: auth: bad key", retryable=False, now=t0
    )
    assert outcome == "failed"
    db.session.expire_all()
    ended = db.session.scalars(select(SummaryJob)).one()
    assert (ended.status, ended.outcome, ended.finished_at, ended.transcript) == (
        "failed",
        "failed",
        t0,
        None,
    )


def test_the_back_off_honours_a_short_retry_after_and_stops_doubling_at_2_to_the_30() -> None:
    quick = Policy(backoff=timedelta(0))
    assert quick.delay(1, retry_after=1) == timedelta(seconds=1)
    assert quick.delay(1, retry_after=0) == timedelta(0)
    huge = Policy(backoff=timedelta(seconds=1), backoff_max=timedelta(days=100_000))
    assert huge.delay(31) == timedelta(seconds=2**30)
    assert huge.delay(40) == timedelta(seconds=2**30)


def test_a_job_ended_without_a_call_is_committed_even_as_the_runs_last(
    memory: Any, db: Any, editor: Any
) -> None:
    """Auto-summarize is off: the due job ends digest only, and stays ended for other workers."""
    job = summary_job(memory, db, editor)
    job_id = job.id
    assert memory.run_due_jobs(limit=1, now=utcnow()).skipped == 1
    db.session.remove()  # what the request or command does next: nothing uncommitted survives
    assert db.session.get(SummaryJob, job_id).outcome == "digest_only"
