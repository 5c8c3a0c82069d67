"""Sending the webhook outbox: claim a row, POST it, record the outcome. No Flask.

The notices and their outbox rows are made in `memory/notify.py`, in the
transaction that made the work; this worker sends them, from the sweep, with
each row claimed (a leased compare-and-set, `claims`) just before it is sent.
The webhook follows no redirects: a 3xx is a failed delivery, retried with the
back-off and then given up, so a receiver (or whoever took over its address)
cannot bounce the notices to another host.
"""

from __future__ import annotations

import json
import logging
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy.orm import Session as OrmSession

from ..memory.models import NotifyJob, utcnow
from ..text import redaction
from . import claims
from .claims import Policy

log = logging.getLogger("chatmem.notify")

TIMEOUT_SECONDS = 10.0
ERROR_MAX = 500
USER_AGENT = "chatmem-webhook/1"


@dataclass
class Sent:
    """What one delivery run did."""

    sent: int = 0
    retrying: int = 0
    failed: int = 0
    errors: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        return f"{self.sent} sent, {self.retrying} to retry, {self.failed} failed"


Post = Callable[[str, bytes], None]


class DeliveryError(Exception):
    def __init__(self, message: str, *, retryable: bool) -> None:
        super().__init__(message)
        self.retryable = retryable


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    """Refuse every redirect: urllib then raises the 3xx as an HTTPError."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


# Built once: the default handlers (proxies from the environment, https), minus redirects.
_OPENER = urllib.request.build_opener(_NoRedirects)


def post_json(url: str, body: bytes) -> None:
    """POST `body` as JSON; raises DeliveryError (retryable unless the receiver refused it).

    A redirect is not followed: it is a failed delivery, retried like a 5xx (a
    moved receiver is fixed by changing CHATMEM_NOTIFY_WEBHOOK, not by us
    posting wherever a Location header points).
    """
    request = urllib.request.Request(
        url,
        data=body,
        method="POST",
        headers={"Content-Type": "application/json", "User-Agent": USER_AGENT},
    )
    try:
        with _OPENER.open(request, timeout=TIMEOUT_SECONDS) as response:
            response.read(1024)
    except urllib.error.HTTPError as error:
        if 300 <= error.code < 400:
            raise DeliveryError(
                f"HTTP {error.code}: redirects are not followed", retryable=True
            ) from None
        # 4xx says the request itself is wrong: sending it again will not help,
        # except for a timeout or a rate limit.
        retry = error.code >= 500 or error.code in (408, 429)
        raise DeliveryError(f"HTTP {error.code}", retryable=retry) from None
    except (urllib.error.URLError, OSError, TimeoutError) as error:
        reason = getattr(error, "reason", error)
        raise DeliveryError(f"unreachable: {reason}", retryable=True) from None


def deliver_due(
    db: OrmSession,
    url: str,
    policy: Policy,
    *,
    post: Post = post_json,
    now: datetime | None = None,
    limit: int = 50,
) -> Sent:
    """Send due outbox rows, each claimed (`claims`) just before it is sent.

    The claim is committed first and the POST happens outside any
    transaction; a row whose claim (lease) ran out is claimed again, so a
    dead worker's notice is sent later rather than lost. A receiver may get
    a notice twice in that case; `delivery` in the body tells them apart.
    """
    done = Sent()
    claimed = 0
    while claimed < limit:
        at = now or utcnow()
        held = claims.claim_one(db, NotifyJob, policy, now=at)
        if held is None:
            break
        claimed += 1
        job = db.get(NotifyJob, held.job_id)
        if job is None:
            continue
        body = json.dumps({**job.payload, "delivery": held.job_id}, ensure_ascii=False).encode()
        db.commit()  # nothing held open while the receiver answers
        try:
            post(url, body)
        except DeliveryError as error:
            message = redaction.redact(f"try {held.attempts}: {error}")[:ERROR_MAX]
            done.errors.append(message)
            outcome = claims.fail(
                db, NotifyJob, policy, held, message, retryable=error.retryable, now=at
            )
            if outcome in ("retrying", "failed"):
                setattr(done, outcome, getattr(done, outcome) + 1)
            log.warning("webhook notice %s: %s", held.job_id, message)
            continue
        if claims.finish(db, NotifyJob, held, "sent", last_error=None):
            done.sent += 1
    return done
