"""Two app hosts against one PostgreSQL database and one Redis (issue 12).

Two separate gunicorn servers on two ports stand for two machines: nothing
is shared between them but the database URL and the Redis URL, exactly as
"More than one machine" in docs/production.md sets them up. They show that
a change through one host is seen by the other on its very next call, that
the rate limit is one budget across both, that a summary job is claimed
once, and that a guardrail approved on one host refuses on the other at
once. PostgreSQL only: a SQLite file is one machine's.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
from flask import Flask

from chatmem.memory.models import SummaryJob
from tests.conftest import PG_URL
from tests.fake_llm import RESPONSES, FakeLLM, openai_text
from tests.gunicorn_server import Connection, Server, gunicorn
from tests.redis_store import fresh_prefix, redis_url
from tests.test_multiworker import deployed  # noqa: F401 - the fixture: a migrated database
from tests.test_rate_limits_redis import LIMIT, editor_token, get

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not PG_URL, reason="two hosts share a PostgreSQL database"),
]


@pytest.fixture
def hosts(
    deployed: Flask,  # noqa: F811
    database_url: str,
    tmp_path: Path,
    fake_llm: FakeLLM,
    provider_env: None,
) -> Iterator[tuple[Server, Server]]:
    """Host A and host B: one worker each, each its own server, on the same DB and Redis."""
    config = {
        "CHATMEM_PROVIDER": "openai",
        "CHATMEM_RATE_LIMIT_PER_MINUTE": LIMIT,
        "CHATMEM_RATELIMIT_STORAGE_URI": redis_url(),
        "CHATMEM_RATELIMIT_KEY_PREFIX": fresh_prefix(),
    }
    env = {
        "CHATMEM_WSGI_CONFIG": json.dumps(config),
        "OPENAI_BASE_URL": fake_llm.openai_base_url,
        "OPENAI_API_KEY": "sk-test-not-a-real-key",
    }
    with ExitStack() as stack:
        servers = []
        for name in ("a", "b"):
            folder = tmp_path / name
            folder.mkdir()
            servers.append(stack.enter_context(gunicorn(database_url, folder, workers=1, env=env)))
        assert servers[0].port != servers[1].port
        yield servers[0], servers[1]


def call(conn: Connection, tool: str, **arguments: Any) -> tuple[int, dict[str, Any]]:
    return conn.request("POST", "/t/call", {"tool": tool, "arguments": arguments})


def context(conn: Connection) -> str:
    status, data = conn.request("GET", "/t/context")
    assert status == 200, data
    return str(data["context"])


def test_a_change_through_one_host_is_seen_by_the_other_on_its_next_call(
    hosts: tuple[Server, Server],
) -> None:
    a, b = (host.connection() for host in hosts)
    assert context(a) == context(b) == ""  # both have built their caches
    status, proposed = call(b, "remember", type="fact", text="Deploys happen on Tuesdays")
    assert status == 200 and proposed["result"]["status"] == "pending"
    entry = proposed["result"]["id"]
    status, approved = a.request("POST", f"/t/guidance/{entry}/approve", {})
    assert status == 200, approved
    assert "Site facts: Deploys happen on Tuesdays" in context(b)
    # And back: edits through one host, each read through the other at once.
    version = approved["version"]
    for turn in range(4):
        writer, reader = (a, b) if turn % 2 else (b, a)
        text = f"Deploys happen on day {turn}"
        status, edited = writer.request(
            "POST", f"/t/guidance/{entry}/edit", {"text": text, "version": version}
        )
        assert status == 200, edited
        version = edited["version"]
        assert f"Site facts: {text}" in context(reader)
    a.close()
    b.close()


def test_the_rate_limit_is_one_budget_across_both_hosts(
    hosts: tuple[Server, Server],
    deployed: Flask,  # noqa: F811
) -> None:
    token = editor_token(deployed)
    connections = [host.connection() for host in hosts]
    statuses: list[list[int]] = [[], []]
    for turn in range(2 * LIMIT):
        statuses[turn % 2].append(get(connections[turn % 2], token)[0])
    refused = get(connections[0], token)[1]
    for conn in connections:
        conn.close()
    assert sum(s.count(200) for s in statuses) == LIMIT, statuses
    assert all(200 in host and 429 in host for host in statuses), statuses
    assert refused["error"]["code"] == "rate_limited"


def test_a_summary_job_is_claimed_once(
    hosts: tuple[Server, Server],
    deployed: Flask,  # noqa: F811
    fake_llm: FakeLLM,
) -> None:
    jobs = 4
    for number in range(jobs):
        fake_llm.enqueue(RESPONSES, body=openai_text(f"Summary {number}."))
    a, b = (host.connection() for host in hosts)
    assert a.request("POST", "/t/settings", {"name": "auto_summarize", "value": True})[0] == 200
    for number in range(jobs):  # sessions closed through both hosts
        status, _ = (a, b)[number % 2].request("POST", "/t/sessions", {})
        assert status == 200
    barrier = threading.Barrier(2, timeout=20)

    def run_jobs(conn: Connection) -> int:
        barrier.wait()  # both hosts ask for due jobs at the same instant
        status, data = conn.request("POST", "/t/jobs")
        assert status == 200, data
        return int(data["claimed"])

    with ThreadPoolExecutor(2) as pool:
        claimed = list(pool.map(run_jobs, (a, b), timeout=60))
    a.close()
    b.close()
    assert sum(claimed) == jobs, claimed
    assert len(fake_llm.requests_to(RESPONSES)) == jobs, "one provider call per job"
    with deployed.app_context():
        db = deployed.extensions["test_host"]["db"]
        done = [(job.status, job.attempts) for job in db.session.query(SummaryJob)]
        db.session.remove()
    assert done == [("done", 1)] * jobs


def test_a_guardrail_approved_on_one_host_refuses_on_the_other_at_once(
    hosts: tuple[Server, Server],
) -> None:
    a, b = (host.connection() for host in hosts)
    for conn in (a, b):  # both hosts have their guardrail index for this revision
        assert call(conn, "update-post", post_id=7, title="Before")[0] == 200
    status, proposed = call(
        a, "remember", type="guardrail", text="Post 7 is frozen", target="post_id:7",
        severity="block",
    )  # fmt: skip
    assert status == 200 and proposed["result"]["status"] == "pending"
    assert call(b, "update-post", post_id=7, title="Pending")[0] == 200, "pending: no effect"
    rule = proposed["result"]["id"]
    assert a.request("POST", f"/t/guidance/{rule}/approve", {})[0] == 200
    status, refused = call(b, "update-post", post_id=7, title="After")
    assert status == 403, refused
    assert refused["error"]["code"] == "blocked_by_memory"
    assert refused["error"]["guidance_id"] == rule
    a.close()
    b.close()
