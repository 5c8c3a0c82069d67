"""The audit trail's lock and order on PostgreSQL, whatever database the suite was given.

Each trail is sealed under an advisory lock of its own (memory/audit.py). These
tests run on a private PostgreSQL cluster (tests/private_postgres.py), so the
SQLite pass checks the PostgreSQL branch too. One writer is held halfway (its
event flushed and sealed, its transaction open) while a second writer starts;
`pg_locks` tells when the second is waiting, so nothing sleeps for a guessed
time. PostgreSQL can also hand back a trail's rows out of the order they were
written in, so a trail is only in order where chatmem asks for the id order.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import pytest
from flask import Flask
from sqlalchemy import select, update

from chatmem.memory import audit, guidance
from chatmem.memory.models import GuidanceEvent
from tests.conftest import dispose
from tests.hostapp import USERS, create_host_app, work
from tests.private_postgres import Cluster, advisory_waiters, private_cluster, until

pytestmark = [pytest.mark.slow, pytest.mark.db_free]

WAIT = 30  # seconds: a bound for a step that should take milliseconds
DATABASES = itertools.count()  # each test its own database on the cluster


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    with private_cluster() as running:
        yield running


@pytest.fixture
def on_postgres(cluster: Cluster) -> Iterator[Flask]:
    app = create_host_app(cluster.create_database(f"audit_{next(DATABASES)}"))
    yield app
    dispose(app)


def add_entry(app: Flask, text_: str) -> int:
    return int(
        work(
            app,
            lambda memory, db: (
                guidance.admin_add(db.session(), {"type": "fact", "text": text_}, actor_id="1").id
            ),
        )
    )


def held_writer(
    app: Flask, trail: int | None, reached: threading.Event, go: threading.Event
) -> str:
    """Write one event to `trail`, flush it (sealed, the trail's lock taken), then wait."""

    def step(memory: Any, db: Any) -> str:
        db.session.add(GuidanceEvent(guidance_id=trail, action="note", actor_id="1", detail={}))
        db.session.flush()
        reached.set()
        assert go.wait(WAIT), "the held writer was never released"
        db.session.commit()
        return "written"

    return str(work(app, step))


def writer(app: Flask, trail: int | None) -> str:
    def step(memory: Any, db: Any) -> str:
        db.session.add(GuidanceEvent(guidance_id=trail, action="note", actor_id="2", detail={}))
        db.session.commit()
        return "written"

    return str(work(app, step))


def second_while_first_is_held(
    app: Flask, first_trail: int | None, second_trail: int | None
) -> tuple[bool, Future[str], Future[str]]:
    """Hold a writer of `first_trail` halfway; start one of `second_trail`. Did it finish
    before the first was released?"""
    reached, go = threading.Event(), threading.Event()
    with ThreadPoolExecutor(2) as pool:
        first = pool.submit(held_writer, app, first_trail, reached, go)
        try:
            until(lambda: reached.is_set() or first.done())
            assert reached.is_set(), f"the first writer never got halfway: {first.result()}"
            second = pool.submit(writer, app, second_trail)
            until(lambda: second.done() or advisory_waiters(app) > 0)
            finished_alone = second.done()
        finally:
            go.set()
        first.result(WAIT), second.result(WAIT)
    return finished_alone, first, second


def test_a_second_writer_of_the_same_trail_waits_for_the_first(on_postgres: Flask) -> None:
    """Sealed against the first writer's event, not beside it: one chain, verified."""
    entry = add_entry(on_postgres, "Ship on Mondays.")
    finished_alone, _first, _second = second_while_first_is_held(on_postgres, entry, entry)
    assert not finished_alone, "the second writer did not wait for the first"
    report = work(on_postgres, lambda memory, db: audit.verify(db.session()))
    assert (report.verified, report.events) == (True, 3)


@pytest.mark.parametrize("trails", ["two entries", "an entry, then the site"])
def test_writers_of_different_trails_do_not_wait_for_each_other(
    on_postgres: Flask, trails: str
) -> None:
    first = add_entry(on_postgres, "Ship on Mondays.")
    second = add_entry(on_postgres, "Ship on Tuesdays.") if trails == "two entries" else None
    finished_alone, _first, _second = second_while_first_is_held(on_postgres, first, second)
    assert finished_alone, "a writer of another trail waited for the held one"
    report = work(on_postgres, lambda memory, db: audit.verify(db.session()))
    assert report.verified


def test_a_trail_is_walked_and_sealed_again_in_id_order_not_storage_order(
    on_postgres: Flask,
) -> None:
    """A trail's first row stored and indexed after the others: `verify` and an
    erasure's reseal still take the trail in the order it was written."""
    entry = int(
        work(
            on_postgres,
            lambda memory, db: memory.call_tool(
                "remember", {"type": "fact", "text": "Ship on Mondays."}, user=USERS["editor"]
            )["id"],
        )
    )

    def edit_and_approve(memory: Any, db: Any) -> None:
        guidance.edit(db.session(), entry, {"text": "Ship on Tuesdays."}, actor_id="1")
        guidance.approve(db.session(), entry, actor_id="1")

    work(on_postgres, edit_and_approve)

    def touch_first_event(memory: Any, db: Any) -> None:
        first = db.session.scalar(
            select(GuidanceEvent.id)
            .where(GuidanceEvent.guidance_id == entry)
            .order_by(GuidanceEvent.id)
            .limit(1)
        )
        # Out of its trail and back, as a repair by hand might: the row is stored
        # and indexed anew, after the others (an update that leaves the entry id
        # alone keeps its place in the index).
        for moved_to in (None, entry):
            db.session.execute(
                update(GuidanceEvent).where(GuidanceEvent.id == first).values(guidance_id=moved_to)
            )
        db.session.commit()

    work(on_postgres, touch_first_event)
    walked = work(on_postgres, lambda memory, db: audit.verify(db.session()))
    assert (walked.verified, walked.events) == (True, 3)

    # The proposer's erasure rewrites the first event, which moves it again, and
    # seals the trail again from there; the erasure itself is the site trail's event.
    work(on_postgres, lambda memory, db: memory.erase_user(USERS["editor"], actor_id=None))
    resealed = work(on_postgres, lambda memory, db: audit.verify(db.session()))
    assert (resealed.verified, resealed.trails, resealed.events) == (True, 2, 4)
