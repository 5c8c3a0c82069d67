"""One rate-limit budget across gunicorn workers, kept in a real Redis.

Two workers, one token, calls alternating between the workers over pinned
keep-alive connections: with CHATMEM_RATELIMIT_STORAGE_URI on Redis exactly
LIMIT calls get through in all, whichever worker served them. With the
default `memory://` each worker counts alone and twice LIMIT get through:
the reason the setting exists (and proof that the first test can fail).
The budget is the user's, across their tokens, with a per-token budget
inside it: both are counted in the same Redis (two app instances, no
gunicorn, for the second test).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from flask import Flask

from chatmem.auth import tokens
from tests.conftest import dispose
from tests.gunicorn_server import Connection, Server, gunicorn
from tests.hostapp import USERS, create_host_app
from tests.redis_store import fresh_prefix, keys_under, redis_url
from tests.test_multiworker import deployed  # noqa: F401 - the fixture: a migrated database

LIMIT = 10
REST = "/chatmem/api/tools"


def editor_token(app: Flask) -> str:
    with app.app_context():
        return tokens.issue(app.extensions["test_host"]["memory"], USERS["editor"])[1]


def get(conn: Connection, token: str) -> tuple[int, dict[str, Any]]:
    conn.http.request("GET", REST, headers={"Authorization": f"Bearer {token}"})
    response = conn.http.getresponse()
    body = json.loads(response.read())
    if response.status == 429:
        assert int(response.headers["Retry-After"]) >= 1
    return response.status, body


@pytest.fixture
def start(database_url: str, tmp_path: Path) -> Iterator[Any]:
    def started(storage_uri: str, prefix: str) -> Any:
        config = {
            "CHATMEM_RATE_LIMIT_PER_MINUTE": LIMIT,
            "CHATMEM_RATELIMIT_STORAGE_URI": storage_uri,
            "CHATMEM_RATELIMIT_KEY_PREFIX": prefix,
        }
        return gunicorn(database_url, tmp_path, env={"CHATMEM_WSGI_CONFIG": json.dumps(config)})

    yield started


def alternate(server: Server, token: str, calls: int) -> dict[int, list[int]]:
    """`calls` REST calls, taking turns between the two workers: statuses by worker pid."""
    pools = server.pinned(1)
    statuses: dict[int, list[int]] = {pid: [] for pid in pools}
    try:
        for turn in range(calls):
            pid = list(pools)[turn % 2]
            statuses[pid].append(get(pools[pid][0], token)[0])
    finally:
        for pool in pools.values():
            pool[0].close()
    return statuses


@pytest.mark.slow
def test_redis_holds_one_budget_across_two_workers(deployed: Flask, start: Any) -> None:  # noqa: F811
    prefix = fresh_prefix()
    token = editor_token(deployed)
    with start(redis_url(), prefix) as server:
        statuses = alternate(server, token, 2 * LIMIT)
    served = [status for worker in statuses.values() for status in worker]
    assert served.count(200) == LIMIT, statuses
    assert served.count(429) == LIMIT, statuses
    # Both workers let some through and refused some: they counted in one place.
    assert all(200 in worker and 429 in worker for worker in statuses.values()), statuses
    assert len(keys_under(prefix)) == 1, "one key: the user's, in this test's prefix"


@pytest.mark.slow
def test_in_memory_each_worker_counts_alone(deployed: Flask, start: Any) -> None:  # noqa: F811
    token = editor_token(deployed)
    with start("memory://", fresh_prefix()) as server:
        statuses = alternate(server, token, 2 * LIMIT)
    assert [status for worker in statuses.values() for status in worker] == [200] * 2 * LIMIT


def test_one_users_tokens_share_one_budget_in_redis_with_a_per_token_one_inside(
    database_url: str,
) -> None:
    """Two workers, two tokens of one user: 5 calls a minute for the user, 3 per token."""
    config = {
        "CHATMEM_RATE_LIMIT_PER_MINUTE": 5,
        "CHATMEM_RATE_LIMIT_PER_TOKEN_PER_MINUTE": 3,
        "CHATMEM_RATELIMIT_STORAGE_URI": redis_url(),
        "CHATMEM_RATELIMIT_KEY_PREFIX": fresh_prefix(),
    }
    one = create_host_app(database_url, **config)
    two = create_host_app(database_url, seed=False, **config)
    try:
        first, second = editor_token(one), editor_token(one)

        def status(app: Flask, token: str) -> int:
            response = app.test_client().get(REST, headers={"Authorization": f"Bearer {token}"})
            return response.status_code

        # The first token: 3 on its own budget (over both workers), then refused.
        assert [status(one, first), status(two, first), status(one, first)] == [200] * 3
        assert status(two, first) == 429
        # The second token: the user's 2 left, then the user's budget refuses it.
        assert [status(two, second), status(one, second)] == [200, 200]
        assert status(two, second) == 429
        prefix = config["CHATMEM_RATELIMIT_KEY_PREFIX"]
        assert len(keys_under(str(prefix))) == 3, "the user's key and one per token"
    finally:
        dispose(one)
        dispose(two)
