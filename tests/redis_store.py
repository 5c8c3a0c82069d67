"""The real Redis the multi-process rate-limit tests share, and a key prefix per test.

Parallel test runs (and other checkouts on this machine) use the same Redis:
each test gets a prefix of its own (`CHATMEM_RATELIMIT_KEY_PREFIX`), so no
two runs ever count in one key, and nothing needs flushing.
"""

from __future__ import annotations

import os
import uuid

import redis

REDIS_URL = os.environ.get("CHATMEM_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")


def redis_url() -> str:
    """The test Redis, checked to answer (a clear failure rather than 503s later)."""
    client = redis.Redis.from_url(REDIS_URL, socket_connect_timeout=5)
    try:
        assert client.ping(), f"no Redis answers at {REDIS_URL} (CHATMEM_TEST_REDIS_URL)"
    finally:
        client.close()
    return REDIS_URL


def fresh_prefix() -> str:
    return f"test-{uuid.uuid4().hex[:16]}"


def keys_under(prefix: str) -> list[str]:
    """The rate-limit keys stored for one prefix (what the workers wrote)."""
    client = redis.Redis.from_url(REDIS_URL)
    try:
        return sorted(k.decode() for k in client.scan_iter(match=f"*/{prefix}/*"))
    finally:
        client.close()
