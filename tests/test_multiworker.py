"""chatmem under a real gunicorn with several workers, on SQLite (WAL) and PostgreSQL.

Each test starts its own server on a fresh schema built by the migrations,
drives it over keep-alive HTTP connections pinned to each worker, and checks
what a user would see: fresh blocks and guardrails on every worker, one
winner per race, no half-applied write after a worker is killed, and no
provider call paid twice when workers are killed under their summary jobs.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import random
import signal
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from sqlalchemy import text

from chatmem.memory.models import Guidance, GuidanceEvent, LedgerEntry, SummaryJob
from chatmem.memory.models import Session as SessionRecord
from tests.conftest import dispose
from tests.dbtools import drop_chatmem
from tests.fake_llm import RESPONSES, FakeLLM, openai_text
from tests.gunicorn_server import Connection, Server, gunicorn
from tests.hostapp import USERS
from tests.wsgi_host import build

pytestmark = pytest.mark.slow

PROBES = 1000
# What a request gets when its worker is killed: a reset, or a response cut short.
DIED = (OSError, http.client.HTTPException)
PER_WORKER = 4  # keep-alive connections (and client threads) per worker


@pytest.fixture
def deployed(database_url: str) -> Iterator[Flask]:
    """A database set up the production way: host tables, then `db upgrade`."""
    app = build(database_url)
    with app.app_context():
        host = app.extensions["test_host"]
        db, Post = host["db"], host["Post"]
        drop_chatmem(db.engine)
        db.drop_all()
        db.create_all()
        host["memory"].upgrade_db()
        db.session.add_all(
            [
                Post(id=7, title="Hello", post_type="post"),
                Post(id=42, title="Checkout", post_type="page"),
                Post(id=3, title="Header", post_type="header_footer"),
            ]
        )
        db.session.commit()
        if db.engine.dialect.name == "postgresql":
            db.session.execute(
                text("SELECT setval(pg_get_serial_sequence('host_post', 'id'), 1000)")
            )
            db.session.commit()
    yield app
    dispose(app)


@pytest.fixture
def server(deployed: Flask, database_url: str, tmp_path: Path) -> Iterator[Server]:
    env = {"CHATMEM_WSGI_SIGNAL_DIR": str(tmp_path)}
    with gunicorn(database_url, tmp_path, env=env) as running:
        yield running


@pytest.fixture
def llm_server(
    deployed: Flask, database_url: str, tmp_path: Path, fake_llm: FakeLLM, provider_env: None
) -> Iterator[Server]:
    """Workers whose provider is the fake LLM, with a 2-second job lease."""
    config = {"CHATMEM_PROVIDER": "openai", "CHATMEM_JOB_LEASE_SECONDS": 2}
    env = {
        "CHATMEM_WSGI_CONFIG": json.dumps(config),
        "OPENAI_BASE_URL": fake_llm.openai_base_url,
        "OPENAI_API_KEY": "sk-test-not-a-real-key",
    }
    with gunicorn(database_url, tmp_path, env=env) as running:
        yield running


def spread(
    server: Server, count: int, probe: Callable[[Connection], tuple[int, dict[str, Any]]]
) -> list[tuple[int, dict[str, Any]]]:
    """Run `count` probes over keep-alive connections to both workers, in threads."""
    pools = server.pinned(PER_WORKER)
    connections = [c for pool in pools.values() for c in pool]
    share = [
        count // len(connections) + (i < count % len(connections)) for i in range(len(connections))
    ]

    def run(conn: Connection, n: int) -> list[tuple[int, dict[str, Any]]]:
        return [probe(conn) for _ in range(n)]

    try:
        with ThreadPoolExecutor(len(connections)) as pool:
            chunks = list(pool.map(run, connections, share, timeout=120))
    finally:
        for conn in connections:
            conn.close()
    results = [r for chunk in chunks for r in chunk]
    assert len(results) == count
    served = Counter(data.get("pid") for _status, data in results)
    assert len(served) == 2 and min(served.values()) >= count // 3, served
    return results


def test_every_worker_sees_each_change_on_its_next_call(server: Server) -> None:
    admin = server.connection()
    context = lambda c: c.request("GET", "/t/context")  # noqa: E731
    update = lambda c: c.request(  # noqa: E731
        "POST", "/t/call", {"tool": "update-post", "arguments": {"post_id": 7, "title": "T"}}
    )
    # Both workers have built their caches at the old revision.
    assert {d["context"] for _s, d in spread(server, 50, context)} == {""}
    assert {s for s, _d in spread(server, 50, update)} == {200}

    # 1. an approval: the new fact is in every block served after it.
    status, proposed = admin.request(
        "POST",
        "/t/call",
        {"tool": "remember", "arguments": {"type": "fact", "text": "Deploys happen on Tuesdays"}},
    )
    assert status == 200 and proposed["result"]["status"] == "pending"
    status, _ = admin.request("POST", f"/t/guidance/{proposed['result']['id']}/approve", {})
    assert status == 200
    results = spread(server, PROBES, context)
    stale = [d for _s, d in results if "Site facts: Deploys happen on Tuesdays" not in d["context"]]
    assert stale == []

    # 2. a new block guardrail: no call to post 7 gets through, on any worker.
    status, rule = admin.request(
        "POST",
        "/t/guidance",
        {
            "type": "guardrail",
            "text": "Post 7 is frozen",
            "target": "post_id:7",
            "severity": "block",
        },
    )
    assert status == 200
    results = spread(server, PROBES, update)
    let_through = [d for s, d in results if s != 403]
    assert let_through == []
    assert {d["error"]["code"] for _s, d in results} == {"blocked_by_memory"}
    assert {d["error"]["guidance_id"] for _s, d in results} == {rule["id"]}

    # 3. switching the guardrail off: no call is still refused by it.
    status, _ = admin.request("POST", f"/t/guidance/{rule['id']}/enabled", {"enabled": False})
    assert status == 200
    results = spread(server, PROBES, update)
    stale_blocks = [d for s, d in results if s != 200]
    assert stale_blocks == []

    # 4. the module switch off: no block anywhere.
    status, _ = admin.request("POST", "/t/settings", {"name": "memory_enabled", "value": False})
    assert status == 200
    results = spread(server, PROBES, context)
    assert [d for _s, d in results if d["context"] != ""] == []
    admin.close()


def _race(server: Server, requests: list[tuple[str, Any]]) -> list[tuple[int, dict[str, Any]]]:
    """Send one request per worker at the same instant (released by a barrier)."""
    pools = server.pinned(1)
    connections = [pool[0] for pool in pools.values()]
    barrier = threading.Barrier(len(connections), timeout=20)

    def send(conn: Connection, request: tuple[str, Any]) -> tuple[int, dict[str, Any]]:
        barrier.wait()
        return conn.request("POST", *request)

    try:
        with ThreadPoolExecutor(len(connections)) as pool:
            return list(pool.map(send, connections, requests, timeout=30))
    finally:
        for conn in connections:
            conn.close()


def test_two_workers_approving_one_proposal_one_wins(server: Server, deployed: Flask) -> None:
    admin = server.connection()
    ids = []
    for i in range(100):
        status, data = admin.request(
            "POST",
            "/t/call",
            {"tool": "remember", "arguments": {"type": "fact", "text": f"Fact number {i}"}},
        )
        assert status == 200, data
        entry_id = data["result"]["id"]
        ids.append(entry_id)
        results = _race(server, [(f"/t/guidance/{entry_id}/approve", {})] * 2)
        assert sorted(s for s, _d in results) == [200, 409], results
        loser = next(d for s, d in results if s == 409)
        assert loser["error"]["code"] == "conflict"
        assert f"#{entry_id}" in loser["error"]["message"]
    admin.close()
    with deployed.app_context():
        db = deployed.extensions["test_host"]["db"]
        for entry_id in ids:
            entry = db.session.get(Guidance, entry_id)
            assert (entry.status, entry.version) == ("publish", 2)
            approvals = db.session.query(GuidanceEvent).filter_by(
                guidance_id=entry_id, action="approve"
            )
            assert approvals.count() == 1


def test_a_stale_version_always_gets_409(server: Server, deployed: Flask) -> None:
    admin = server.connection()
    status, entry = admin.request("POST", "/t/guidance", {"type": "fact", "text": "v0"})
    assert status == 200
    version = entry["version"]
    for i in range(50):
        edits = [
            (
                f"/t/guidance/{entry['id']}/edit",
                {"text": f"edit {i} by worker {w}", "version": version},
            )
            for w in (1, 2)
        ]
        results = _race(server, edits)
        assert sorted(s for s, _d in results) == [200, 409], results
        assert next(d for s, d in results if s == 409)["error"]["code"] == "conflict"
        winner = next(d for s, d in results if s == 200)
        assert winner["version"] == version + 1
        # The loser retrying with what it saw is refused too.
        status, data = admin.request("POST", edits[0][0], edits[0][1])
        assert (status, data["error"]["code"]) == (409, "conflict")
        version = winner["version"]
    admin.close()
    with deployed.app_context():
        db = deployed.extensions["test_host"]["db"]
        final = db.session.get(Guidance, entry["id"])
        assert final.version == version and final.text.startswith("edit 49 by worker")
        edits = db.session.query(GuidanceEvent).filter_by(guidance_id=entry["id"], action="edit")
        assert edits.count() == 50


def test_a_killed_worker_leaves_nothing_half_applied(
    server: Server, deployed: Flask, tmp_path: Path
) -> None:
    acked: set[str] = set()
    unknown: set[str] = set()
    # Writers with a write acknowledged that they sent before / after the kill.
    before_kill: set[int] = set()
    after_kill: set[int] = set()
    killed = threading.Event()
    stop = threading.Event()
    progress = threading.Condition()

    def stream(writer: int) -> None:
        conn = server.connection()
        for n in range(10_000):
            if stop.is_set():
                break
            title = f"w{writer}-{n}"
            sent_after_kill = killed.is_set()
            try:
                status, data = conn.request(
                    "POST", "/t/call", {"tool": "add-post", "arguments": {"title": title}}
                )
            except DIED:  # the worker died under this request: outcome unknown
                with progress:
                    unknown.add(title)
                conn.close()
                conn = server.connection()
                continue
            with progress:
                (acked if status == 200 else unknown).add(title)
                if status == 200:
                    (after_kill if sent_after_kill else before_kill).add(writer)
                    progress.notify_all()
        conn.close()

    def held() -> None:
        conn = server.connection()
        with contextlib.suppress(*DIED):  # expected: its worker is killed mid-transaction
            conn.request(
                "POST",
                "/t/call",
                {"tool": "add-post", "arguments": {"title": "HELD", "hold": True}},
            )
        conn.close()

    writers = [threading.Thread(target=stream, args=(w,)) for w in range(4)]
    holder = threading.Thread(target=held)
    for thread in writers:
        thread.start()
    with progress:
        assert progress.wait_for(lambda: len(before_kill) == 4, timeout=60), before_kill
    holder.start()
    victim = _wait_for_holder(tmp_path)
    os.kill(victim, signal.SIGKILL)
    killed.set()
    server.wait_for_workers(2, gone=victim)  # the master forks a fresh worker
    with progress:  # every writer carries on past the kill
        assert progress.wait_for(lambda: len(after_kill) == 4, timeout=60), after_kill
    stop.set()
    for thread in (*writers, holder):
        thread.join(timeout=30)
        assert not thread.is_alive()

    # Both workers, the fresh one included, still write.
    pools = server.pinned(1)
    assert victim not in pools
    after = set()
    for pid, (conn,) in pools.items():
        title = f"after-{pid}"
        status, _data = conn.request(
            "POST", "/t/call", {"tool": "add-post", "arguments": {"title": title}}
        )
        assert status == 200
        after.add(title)
        conn.close()

    with deployed.app_context():
        host = deployed.extensions["test_host"]
        db, Post = host["db"], host["Post"]
        posts = Counter(p.title for p in db.session.query(Post).filter(Post.id.notin_((3, 7, 42))))
        ledgered = Counter(
            e.arguments["title"]
            for e in db.session.query(LedgerEntry).filter_by(tool="add-post", outcome="ok")
        )
    assert "HELD" not in posts and "HELD" not in ledgered  # rolled back with its worker
    assert acked | after <= set(posts)  # every acknowledged write is there
    assert posts == ledgered  # each effect with its ledger row, once; nothing half-applied
    assert max(posts.values()) == 1
    assert set(posts) - acked - after <= unknown


def _wait_for_holder(tmp_path: Path) -> int:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        found = list(tmp_path.glob("holding-*"))
        if found:
            return int(found[0].name.split("-", 1)[1])
        time.sleep(0.02)
    raise AssertionError("the held write never started")


def test_a_summary_job_whose_worker_was_killed_is_run_again(
    llm_server: Server, deployed: Flask, fake_llm: FakeLLM
) -> None:
    fake_llm.enqueue(RESPONSES, body=openai_text("never delivered"), delay=60)
    fake_llm.enqueue(RESPONSES, body=openai_text("Retitled post 7 to Hi."))
    admin = llm_server.connection()
    assert admin.request("POST", "/t/settings", {"name": "auto_summarize", "value": True})[0] == 200
    status, data = admin.request("POST", "/t/sessions", {})
    assert status == 200
    session_id = data["session_id"]
    admin.close()

    pools = llm_server.pinned(1)
    (victim, first), (_other, second) = ((pid, pool[0]) for pid, pool in pools.items())

    def run_jobs_on_the_victim() -> None:
        with contextlib.suppress(*DIED):  # its worker is killed under it
            first.request("POST", "/t/jobs")
        first.close()

    runner = threading.Thread(target=run_jobs_on_the_victim)
    runner.start()
    deadline = time.monotonic() + 20
    while not fake_llm.requests_to(RESPONSES) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert fake_llm.requests_to(RESPONSES), "the job never reached the provider"
    os.kill(victim, signal.SIGKILL)  # dies holding the claim, mid provider call
    runner.join(timeout=30)

    with deployed.app_context():
        db = deployed.extensions["test_host"]["db"]
        job = db.session.query(SummaryJob).filter_by(session_id=session_id).one()
        assert (job.status, job.attempts) == ("running", 1)
        db.session.remove()

    # Once the lease has run out, another worker picks the job up and finishes it.
    deadline = time.monotonic() + 20
    claimed = 0
    while not claimed and time.monotonic() < deadline:
        time.sleep(0.5)
        status, data = second.request("POST", "/t/jobs")
        assert status == 200, data
        claimed = data["claimed"]
    second.close()
    assert claimed == 1
    with deployed.app_context():
        db = deployed.extensions["test_host"]["db"]
        job = db.session.query(SummaryJob).filter_by(session_id=session_id).one()
        record = db.session.get(SessionRecord, session_id)
        assert (job.status, job.attempts) == ("done", 2)
        assert (record.summary, record.summary_auto) == ("Retitled post 7 to Hi.", True)


KILLED_JOBS = 60  # ended sessions waiting for a summary
CALL_SECONDS = 0.5  # the fake provider's time per summary
LATER_KILLS = 5  # single kills after the first volley, one every KILL_EVERY
KILL_EVERY = 1.5


def test_workers_killed_under_their_jobs_cost_at_most_the_call_in_flight(
    deployed: Flask, database_url: str, tmp_path: Path, fake_llm: FakeLLM, provider_env: None
) -> None:
    """Four workers sweep on their own (the documented post_worker_init hook) while
    being SIGKILLed: first all four at once, then one every 1.5 s.

    No request is ever sent to the server, so every job is run by a sweeper
    that started as its worker booted, replacements included. A kill may
    cost the one call its worker had in flight, nothing more: provider calls
    <= claims (attempts) <= jobs + kills, and every job ends `done`.
    """
    host = deployed.extensions["test_host"]
    memory, editor = host["memory"], USERS["editor"]
    with deployed.app_context():
        memory.set_setting("auto_summarize", True, actor=USERS["admin"])
        for i in range(KILLED_JOBS):
            session_id = memory.start_session(editor, "chat")
            memory.call_tool(
                "update-post",
                {"post_id": 7, "title": f"Hi {i}"},
                user=editor,
                session_id=session_id,
            )
            memory.end_session(session_id, transcript=f"user: retitle post 7 to Hi {i}")
        host["db"].session.remove()
    for _ in range(2 * KILLED_JOBS):
        fake_llm.enqueue(RESPONSES, body=openai_text("Retitled post 7."), delay=CALL_SECONDS)
    config = {
        "CHATMEM_PROVIDER": "openai",
        "CHATMEM_JOB_LEASE_SECONDS": 6,  # 12 calls long: only a dead worker outlives it
        "CHATMEM_BACKGROUND_SWEEP_SECONDS": 1,
    }
    env = {
        "CHATMEM_WSGI_CONFIG": json.dumps(config),
        "OPENAI_BASE_URL": fake_llm.openai_base_url,
        "OPENAI_API_KEY": "sk-test-not-a-real-key",
    }
    hook = ("--config", "python:chatmem.workers.gunicorn")

    def unfinished() -> int:
        with deployed.app_context():
            db = host["db"]
            count = db.session.query(SummaryJob).filter(SummaryJob.status != "done").count()
            db.session.remove()
            return int(count)

    def calls() -> int:
        return len(fake_llm.requests_to(RESPONSES))

    with gunicorn(database_url, tmp_path, workers=4, env=env, options=hook, probe=False) as server:
        originals = server.wait_for_workers(4)
        deadline = time.monotonic() + 30
        while calls() < 4 and time.monotonic() < deadline:
            time.sleep(0.05)  # each sweeper is mid-call
        assert calls() >= 4, f"the sweepers never called the provider:\n{server.log_text()}"
        for pid in originals:
            os.kill(pid, signal.SIGKILL)
        kills = len(originals)
        calls_by_the_originals = calls()
        for _ in range(LATER_KILLS):
            time.sleep(KILL_EVERY)
            if not unfinished():
                break
            workers = server.wait_for_workers(4)
            victim = random.choice(workers)
            os.kill(victim, signal.SIGKILL)
            kills += 1
            server.wait_for_workers(4, gone=victim)
        deadline = time.monotonic() + 90
        while unfinished() and time.monotonic() < deadline:
            time.sleep(0.25)
        left = unfinished()
        log = server.log_text()

    assert left == 0, f"{left} jobs never finished:\n{log}"
    assert calls() > calls_by_the_originals, "the replacements, never called, ran no job"
    with deployed.app_context():
        db = host["db"]
        jobs = db.session.query(SummaryJob).all()
        records = db.session.query(SessionRecord).filter(SessionRecord.ended_at.is_not(None)).all()
        db.session.remove()
    attempts = sum(job.attempts for job in jobs)
    assert len(jobs) == KILLED_JOBS and {job.status for job in jobs} == {"done"}
    assert calls() <= attempts <= KILLED_JOBS + kills, (calls(), attempts, kills)
    assert {(r.summary, r.summary_auto) for r in records} == {("Retitled post 7.", True)}
