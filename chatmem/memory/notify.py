"""Notices of new work for curators: host hooks after commit, and a webhook outbox. No Flask.

A proposal or a held call *stages* a notice in the database session that
made it. When that transaction commits, the notice becomes *ready* (a
rollback drops it), and the facade hands ready notices to the host's
`on_proposal` / `on_waiting_call` hooks once the agent's call is over, so a
hook never sees work that was not stored and a failing hook never fails the
call. When a webhook is set, the same commit stores a `chatmem_notify_job`
row (an outbox): the sweep sends it and retries failures with back-off, so
a notice outlives a restart or an unreachable receiver.

A notice names the item (id, type, tool, who, when) and carries no text an
agent wrote: its `title` is a neutral label made from the id and the type
("Proposal #12 (fact)"), never the entry's own title or text, a call's
arguments, or a token. Agent text can hold a secret no redaction rule knows,
and the receiver (a chat channel, a mail gateway) is outside the trust model.

The webhook follows no redirects: a 3xx is a failed delivery, retried with
the back-off and then given up, so a receiver (or whoever took over its
address) cannot bounce the notices to another host.
"""

from __future__ import annotations

import json
import logging
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from flask_sqlalchemy import SQLAlchemy
from sqlalchemy import and_, or_, select, update
from sqlalchemy.orm import Session as OrmSession

from ..text import redaction
from .models import Guidance, HeldCall, NotifyJob, iso, utcnow

if TYPE_CHECKING:
    from .jobs import Policy  # its lease and back-off; jobs imports the tools, so not at run time

log = logging.getLogger("chatmem.notify")

PROPOSAL = "proposal"
WAITING_CALL = "waiting_call"
EVENTS = (PROPOSAL, WAITING_CALL)
STAGED = "chatmem_notices_staged"
READY = "chatmem_notices_ready"
TIMEOUT_SECONDS = 10.0
ERROR_MAX = 500
USER_AGENT = "chatmem-webhook/1"


@dataclass(frozen=True)
class Notice:
    event: str
    data: dict[str, Any]


@dataclass
class Sent:
    """What one delivery run did."""

    sent: int = 0
    retrying: int = 0
    failed: int = 0
    errors: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        return f"{self.sent} sent, {self.retrying} to retry, {self.failed} failed"


def proposal_notice(entry: Guidance, user_name: str | None) -> Notice:
    return Notice(
        PROPOSAL,
        {
            "event": PROPOSAL,
            "id": entry.id,
            "type": entry.type,
            "title": label(entry),
            "severity": entry.severity,
            "status": entry.status,
            "user": user_name,
            "at": iso(entry.created_at),
        },
    )


def waiting_call_notice(call: HeldCall) -> Notice:
    return Notice(
        WAITING_CALL,
        {
            "event": WAITING_CALL,
            "id": call.id,
            "tool": call.tool,
            "guidance_id": call.guidance_id,
            "user": call.user_name,
            "at": iso(call.created_at),
        },
    )


def stage(db: SQLAlchemy, notice: Notice) -> None:
    """Queue a notice on the current transaction: ready if it commits, gone if not."""
    db.session.info.setdefault(STAGED, []).append(notice)


def take_ready(db: SQLAlchemy) -> list[Notice]:
    """The notices whose transactions committed, once each."""
    ready: list[Notice] = db.session.info.pop(READY, [])
    return ready


def staged_on(session: OrmSession) -> list[Notice]:
    notices: list[Notice] = session.info.get(STAGED, [])
    return notices


def promote(session: OrmSession) -> None:
    """After a commit: what it staged is ready."""
    staged = session.info.pop(STAGED, None)
    if staged:
        session.info.setdefault(READY, []).extend(staged)


def drop_staged(session: OrmSession) -> None:
    """After a rollback: what it staged never happened."""
    session.info.pop(STAGED, None)


def outbox_rows(notices: list[Notice], now: datetime | None = None) -> list[NotifyJob]:
    now = now or utcnow()
    return [
        NotifyJob(event=n.event, payload=n.data, status="queued", attempts=0, next_run_at=now)
        for n in notices
    ]


# -- delivery ----------------------------------------------------------------------

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
    db: SQLAlchemy,
    url: str,
    policy: Policy,
    *,
    post: Post = post_json,
    now: datetime | None = None,
    limit: int = 50,
) -> Sent:
    """Send due outbox rows; each is claimed with a compare-and-set before it is sent.

    The claim is committed first and the POST happens outside any
    transaction; a row whose claim (lease) ran out is claimed again, so a
    dead worker's notice is sent later rather than lost. A receiver may get
    a notice twice in that case; `id` in the body tells them apart.
    """
    now = now or utcnow()
    done = Sent()
    db.session.commit()
    expired = now - policy.lease
    rows = db.session.execute(
        select(NotifyJob.id, NotifyJob.status, NotifyJob.attempts, NotifyJob.claimed_at)
        .where(
            or_(
                (NotifyJob.status == "queued") & (NotifyJob.next_run_at <= now),
                (NotifyJob.status == "running") & (NotifyJob.claimed_at < expired),
            )
        )
        .order_by(NotifyJob.next_run_at, NotifyJob.id)
        .limit(limit)
        .with_for_update(skip_locked=True)
    ).all()
    claimed: list[tuple[int, int]] = []
    for job_id, status, attempts, claimed_at in rows:
        same = and_(
            NotifyJob.id == job_id,
            NotifyJob.status == status,
            NotifyJob.attempts == attempts,
            NotifyJob.claimed_at.is_(None)
            if claimed_at is None
            else NotifyJob.claimed_at == claimed_at,
        )
        won = db.session.execute(
            update(NotifyJob)
            .where(same)
            .values(status="running", attempts=attempts + 1, claimed_at=now)
        )
        if won.rowcount == 1:  # type: ignore[attr-defined]
            claimed.append((job_id, attempts + 1))
    db.session.commit()
    for job_id, attempts in claimed:
        job = db.session.get(NotifyJob, job_id)
        if job is None:
            continue
        body = json.dumps({**job.payload, "delivery": job_id}, ensure_ascii=False).encode()
        db.session.commit()  # nothing held open while the receiver answers
        mine = and_(
            NotifyJob.id == job_id, NotifyJob.status == "running", NotifyJob.attempts == attempts
        )
        try:
            post(url, body)
        except DeliveryError as error:
            message = redaction.redact(f"try {attempts}: {error}")[:ERROR_MAX]
            done.errors.append(message)
            if error.retryable and attempts < policy.max_attempts:
                values: dict[str, Any] = {
                    "status": "queued",
                    "next_run_at": now + policy.delay(attempts),
                    "last_error": message,
                }
                done.retrying += 1
            else:
                values = {"status": "failed", "last_error": message}
                done.failed += 1
            db.session.execute(update(NotifyJob).where(mine).values(**values))
            db.session.commit()
            log.warning("webhook notice %s: %s", job_id, message)
            continue
        db.session.execute(update(NotifyJob).where(mine).values(status="done", last_error=None))
        db.session.commit()
        done.sent += 1
    return done


def label(entry: Guidance) -> str:
    """A proposal's neutral name: its id and type, never a word of what the agent wrote."""
    return f"Proposal #{entry.id} ({entry.type})"
