"""The per-user mint lock on PostgreSQL, step by step, whatever database the suite was given.

`tokens.issue` counts a user's live tokens and writes the new one under a lock
of that user's own: on PostgreSQL an advisory lock per user. These tests run on
a private PostgreSQL cluster (tests/private_postgres.py), so the SQLite pass
checks the PostgreSQL branch too. A host's `user_fingerprint` hook that waits,
as a slow user directory would, holds one mint halfway (counted, not yet
written) while a second mint starts; `pg_locks` tells when that second mint is
waiting for the first, so nothing sleeps for a guessed time.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import pytest
from flask import Flask
from sqlalchemy import update

from chatmem import Conflict
from chatmem.auth import tokens
from chatmem.memory.models import ApiToken
from tests.conftest import dispose
from tests.hostapp import USERS, create_host_app, reconfigure, work
from tests.private_postgres import Cluster, advisory_waiters, private_cluster, until

# The cluster is this file's own: its runs do not depend on which database the
# suite was given, so the PostgreSQL pass need not repeat them.
pytestmark = [pytest.mark.slow, pytest.mark.db_free]

WAIT = 30  # seconds: a bound for a step that should take milliseconds


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    with private_cluster() as running:
        yield running


@pytest.fixture
def on_postgres(cluster: Cluster, request: pytest.FixtureRequest) -> Iterator[Flask]:
    """The test host app on the private cluster, each test its own database."""
    app = create_host_app(cluster.create_database(f"tokens_{request.node.name.lower()}"[:60]))
    yield app
    dispose(app)


class HeldDirectory:
    """A host `user_fingerprint` hook that holds the first lookup of one user until told.

    `issue` asks for the fingerprint after counting the user's live tokens and
    before writing the new one: the first mint of `username` waits there,
    holding its lock, until `release()`.
    """

    def __init__(self, app: Flask, username: str) -> None:
        self.username = username
        self.reached = threading.Event()
        self.go = threading.Event()
        self.held = False

        @app.extensions["test_host"]["memory"].user_fingerprint
        def fingerprint(user: Any) -> str:
            if user.username == self.username and not self.held:
                self.held = True
                self.reached.set()
                assert self.go.wait(WAIT), "the held mint was never released"
            return str(user.username)

    def release(self) -> None:
        self.go.set()


def mint(app: Flask, username: str, name: str) -> str:
    """One mint through `tokens.issue`: `made` or `refused` (the cap)."""
    try:
        work(app, lambda memory, db: tokens.issue(memory, USERS[username], name=name))
    except Conflict:
        return "refused"
    return "made"


def halfway(directory: HeldDirectory, first: Future[str]) -> None:
    """Wait until the first mint is held halfway; a mint that fails says why here."""
    until(lambda: directory.reached.is_set() or first.done())
    if not directory.reached.is_set():
        raise AssertionError(f"the first mint never got halfway: {first.result()}")


def settled(app: Flask, second: Future[str]) -> bool:
    """The second mint has finished, or waits for the first one's lock."""
    return second.done() or advisory_waiters(app) > 0


def names(app: Flask) -> list[str]:
    return [t.name for t in work(app, lambda memory, db: tokens.list_tokens(db.session()))]


def test_a_second_mint_of_the_same_user_waits_and_then_meets_the_cap(on_postgres: Flask) -> None:
    """With a cap of one, a mint that starts while another is halfway waits for it, then
    counts the token it wrote: one token, the second mint refused."""
    reconfigure(on_postgres, CHATMEM_TOKENS_PER_USER=1)
    directory = HeldDirectory(on_postgres, "editor")
    with ThreadPoolExecutor(2) as pool:
        first = pool.submit(mint, on_postgres, "editor", "first")
        try:
            halfway(directory, first)
            second = pool.submit(mint, on_postgres, "editor", "second")
            until(lambda: settled(on_postgres, second))
            assert not second.done(), "the second mint did not wait for the first"
        finally:
            directory.release()
        assert (first.result(WAIT), second.result(WAIT)) == ("made", "refused")
    assert names(on_postgres) == ["first"]


def test_one_users_mint_does_not_hold_up_another_users(on_postgres: Flask) -> None:
    """The lock is per user: the editor's mint goes through while the admin's is halfway."""
    directory = HeldDirectory(on_postgres, "admin")
    with ThreadPoolExecutor(2) as pool:
        first = pool.submit(mint, on_postgres, "admin", "admin's")
        try:
            halfway(directory, first)
            second = pool.submit(mint, on_postgres, "editor", "editor's")
            until(lambda: settled(on_postgres, second))
            assert second.done(), "the editor's mint waited for the admin's"
            assert second.result() == "made"
        finally:
            directory.release()
        assert first.result(WAIT) == "made"
    assert sorted(names(on_postgres)) == ["admin's", "editor's"]


def test_the_token_list_is_in_making_order_on_postgresql(on_postgres: Flask) -> None:
    """PostgreSQL moves an updated row to the end of its table; the list keeps making order,
    for every user's tokens and for one user's."""

    def make_and_rename(memory: Any, db: Any) -> list[int]:
        made = [tokens.issue(memory, USERS["editor"], name=f"t{n}")[0].id for n in range(3)]
        db.session.execute(update(ApiToken).where(ApiToken.id == made[0]).values(name="renamed"))
        db.session.commit()
        return made

    made = work(on_postgres, make_and_rename)
    everyone = work(on_postgres, lambda memory, db: tokens.list_tokens(db.session()))
    editors = work(on_postgres, lambda memory, db: tokens.list_tokens(db.session(), user_id="2"))
    assert [t.id for t in everyone] == made
    assert [t.id for t in editors] == made
    assert [t.name for t in editors] == ["renamed", "t1", "t2"]
