"""One grant, two workers: exactly one run (SPEC §6, the `ask` severity).

Real gunicorn with two workers on SQLite (WAL) and PostgreSQL, as in
test_multiworker.py. Both workers receive the allowed call at the same
instant; the grant is used by one conditional UPDATE, so one runs it and the
other is held again as a new request.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from flask import Flask
from sqlalchemy import select

from chatmem.memory import guidance, held
from chatmem.memory.models import HeldCall, LedgerEntry
from tests.gunicorn_server import Server, gunicorn
from tests.test_multiworker import _race, deployed  # noqa: F401 - the fixture

pytestmark = pytest.mark.slow

ROUNDS = 25


@pytest.fixture
def server(deployed: Flask, database_url: str, tmp_path: Path) -> Iterator[Server]:  # noqa: F811
    with gunicorn(database_url, tmp_path) as running:
        yield running


def test_two_workers_using_one_grant_run_it_once(server: Server, deployed: Flask) -> None:  # noqa: F811
    with deployed.app_context():
        db = deployed.extensions["test_host"]["db"]
        guidance.admin_add(
            db.session(),
            {"type": "guardrail", "text": "Ask first", "target": "post_id:7", "severity": "ask"},
            actor_id="1",
        )
    editor = server.connection()
    for round_ in range(ROUNDS):
        call = {"tool": "update-post", "arguments": {"post_id": 7, "title": f"Title {round_}"}}
        status, data = editor.request("POST", "/t/call", call)
        assert status == 403 and data["error"]["code"] == "approval_required", data
        request_id = data["error"]["request_id"]
        with deployed.app_context():
            db = deployed.extensions["test_host"]["db"]
            held.decide(
                db.session(),
                request_id,
                "allow",
                actor_id="1",
                actor_name="admin",
                note=None,
                grant_minutes=30,
            )
            db.session.remove()
        results = _race(server, [("/t/call", call)] * 2)
        assert sorted(s for s, _d in results) == [200, 403], results
        assert len({d["pid"] for _s, d in results}) == 2  # one request per worker
        [loser] = [d for s, d in results if s == 403]
        assert loser["error"]["code"] == "approval_required"
        assert loser["error"]["request_id"] != request_id  # held again, a new request
    editor.close()
    with deployed.app_context():
        db = deployed.extensions["test_host"]["db"]
        runs = db.session.scalars(
            select(LedgerEntry).where(LedgerEntry.outcome == "granted-run")
        ).all()
        assert len(runs) == ROUNDS
        states = db.session.scalars(select(HeldCall.state).order_by(HeldCall.id)).all()
        # Per round: the held call (used), the loser's new request (waiting).
        assert states.count("used") == ROUNDS
        assert states.count("waiting") == ROUNDS
