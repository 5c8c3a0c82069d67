"""Per-minute budgets on the `limits` library that Flask-Limiter runs on.

A moving one-minute window per key (Flask-Limiter's "moving-window"): at most
N calls in any 60 seconds, with no double burst across a window's edge. The
counts live in the store `CHATMEM_RATELIMIT_STORAGE_URI` names: `memory://`
(the default) counts inside this process, which is right for one process;
several workers or hosts point it at one Redis (`redis://host:6379`), or each
would count alone and the limit would be multiplied by their number. Keys
start with `CHATMEM_RATELIMIT_KEY_PREFIX`, so deployments sharing a Redis
keep apart. The store is built once, in `init_app`: a bad URI stops start-up.
"""

from __future__ import annotations

import math
import re
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from flask import current_app
from limits import RateLimitItemPerMinute
from limits.errors import ConfigurationError
from limits.storage import Storage, storage_from_string
from limits.strategies import MovingWindowRateLimiter

from ..errors import ChatmemError, RateLimited

if TYPE_CHECKING:
    from flask import Flask

    from ..settings import RateSettings

EXTENSION_KEY = "chatmem_ratelimit"
# What a client is told when the store cannot be reached: try again shortly.
UNREACHABLE_RETRY_SECONDS = 5


@dataclass(frozen=True)
class Budgets:
    """The app's rate-limit store and the strategy that counts in it."""

    storage: Storage
    strategy: MovingWindowRateLimiter
    prefix: str


def init_app(app: Flask, settings: RateSettings) -> None:
    """Build the store named by the app's settings (ValueError naming the key if unusable)."""
    uri = settings.storage_uri
    shown = _without_password(uri)
    try:
        storage = storage_from_string(uri)
    except ConfigurationError as error:
        reason = str(error).replace(uri, shown)
        raise ValueError(
            f"CHATMEM_RATELIMIT_STORAGE_URI {shown!r} cannot be used: {reason}"
        ) from None
    if not isinstance(storage, Storage):
        raise ValueError(f"CHATMEM_RATELIMIT_STORAGE_URI {shown!r} names an async store")
    try:
        strategy = MovingWindowRateLimiter(storage)
    except NotImplementedError:  # memcached keeps no moving window
        raise ValueError(
            f"CHATMEM_RATELIMIT_STORAGE_URI {shown!r} cannot keep a moving window: "
            "use memory:// or redis://"
        ) from None
    prefix = settings.key_prefix
    app.extensions[EXTENSION_KEY] = Budgets(storage, strategy, prefix)


def _without_password(uri: str) -> str:
    """The URI as an error message may show it: `redis://:secret@host` -> `redis://***@host`."""
    return re.sub(r"://[^/@]*@", "://***@", uri)


def store_unreachable(error: Exception) -> ChatmemError:
    """What a request is told when the store cannot count it.

    Logged in one line, as a database outage is: not a trace per request while it lasts.
    """
    first_line = next(iter(str(error).splitlines()), "") or type(error).__name__
    current_app.logger.warning("rate-limit store unreachable: %s", first_line)
    return ChatmemError(
        "The rate-limit store cannot be reached; try again shortly.",
        code="unavailable",
        status=503,
        details={"retry_after": UNREACHABLE_RETRY_SECONDS},
    )


def charge(kind: str, key: Any, limit: int) -> None:
    """Count one request for `kind`/`key`; RateLimited (with retry_after) past `limit` a minute.

    `limit` 0 turns the budget off. A store that cannot be reached refuses the
    request (503 `unavailable`): a limit that fails open is no limit.
    """
    if limit <= 0:
        return
    budgets: Budgets = current_app.extensions[EXTENSION_KEY]
    item = RateLimitItemPerMinute(limit)
    identity = (budgets.prefix, kind, str(key))
    try:
        allowed = budgets.strategy.hit(item, *identity)
        # When the oldest call in the window leaves it (asked only when refused).
        reset_at = 0.0 if allowed else budgets.strategy.get_window_stats(item, *identity).reset_time
    except Exception as error:  # the store's client raises its own errors (redis, memcached)
        raise store_unreachable(error) from None
    if not allowed:
        retry_after = max(1, math.ceil(reset_at - time.time()))
        raise RateLimited(
            f"Too many calls for this {kind}: at most {limit} a minute. "
            f"Try again in {retry_after} s.",
            details={"retry_after": retry_after},
        )
