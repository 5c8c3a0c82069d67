"""Reviews that don't rot (issue 15, point 8): host hooks after commit, and a webhook
sent from a durable outbox with retries, tested against a real local HTTP server.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Iterator
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from flask import Flask
from sqlalchemy import func, select

from chatmem import ApprovalRequired
from chatmem.memory import guidance, notify
from chatmem.memory.models import Guidance, NotifyJob, utcnow
from chatmem.workers import webhook
from tests.fake_llm import closed_port
from tests.hostapp import USERS, reconfigure, work

TEXT = "The staging site lives at staging.shop.example and is wiped every night."


class Receiver:
    """A webhook receiver on 127.0.0.1: answers the scripted statuses, records bodies."""

    def __init__(self) -> None:
        self.statuses: list[int] = []
        self.bodies: list[dict[str, Any]] = []
        self.raw: list[bytes] = []
        self.headers: list[dict[str, str]] = []
        self.paths: list[str] = []
        # Where a 3xx answer points (Location): this same server, another path.
        self.location = "/elsewhere"
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length)
                receiver.raw.append(body)
                receiver.bodies.append(json.loads(body))
                receiver.headers.append(dict(self.headers))
                receiver.paths.append(self.path)
                status = receiver.statuses.pop(0) if receiver.statuses else 204
                self.send_response(status)
                if 300 <= status < 400:
                    self.send_header("Location", receiver.location)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def do_GET(self) -> None:
                # A client following a 301/302/303 turns the POST into a GET here.
                receiver.paths.append(self.path)
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_port}/hooks/chatmem"


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    found = Receiver()
    found.thread.start()
    yield found
    found.server.shutdown()
    found.server.server_close()


def remember(memory: Any, text: str = TEXT, user: str = "editor", **fields: Any) -> Any:
    return memory.call_tool("remember", {"type": "fact", "text": text, **fields}, user=USERS[user])


def outbox(app: Flask) -> list[tuple[str, str, int]]:
    def read(memory: Any, db: Any) -> list[tuple[str, str, int]]:
        rows = db.session.scalars(select(NotifyJob).order_by(NotifyJob.id))
        return [(row.event, row.status, row.attempts) for row in rows]

    return work(app, read)


# -- host hooks ---------------------------------------------------------------------


def test_on_proposal_runs_after_the_commit_with_the_item_named_not_its_text(
    app: Flask, second_worker: Flask
) -> None:
    seen: list[tuple[dict[str, Any], bool]] = []
    memory = app.extensions["test_host"]["memory"]

    @memory.on_proposal
    def notice(data: dict[str, Any]) -> None:
        # Another worker (its own connection) already sees the entry: committed.
        stored = work(second_worker, lambda m, db: db.session.get(Guidance, data["id"]))
        seen.append((data, stored is not None))

    result = work(app, lambda m, db: remember(m, title="Staging site"))
    # The same text again is the same proposal: no second notice.
    work(app, lambda m, db: remember(m, user="admin"))

    assert len(seen) == 1
    data, committed = seen[0]
    assert committed
    assert data == {
        "event": "proposal",
        "id": result["id"],
        "type": "fact",
        "title": f"Proposal #{result['id']} (fact)",
        "severity": None,
        "status": "pending",
        "user": "editor",
        "at": data["at"],
    }
    assert TEXT not in json.dumps(data) and "Staging site" not in json.dumps(data)


def test_a_failing_hook_never_breaks_the_agents_call(
    app: Flask, caplog: pytest.LogCaptureFixture
) -> None:
    memory = app.extensions["test_host"]["memory"]
    later: list[int] = []

    @memory.on_proposal
    def broken(data: dict[str, Any]) -> None:
        raise RuntimeError("the notifier is down")

    @memory.on_proposal
    def second(data: dict[str, Any]) -> None:
        later.append(data["id"])

    with caplog.at_level(logging.ERROR, logger="chatmem.upkeep"):
        result = work(app, lambda m, db: remember(m))

    assert result["status"] == "pending"
    assert work(app, lambda m, db: db.session.get(Guidance, result["id"]).text) == TEXT
    assert later == [result["id"]]  # the next hook still ran
    assert "the proposal hook failed" in caplog.text
    assert "the notifier is down" in caplog.text


def test_a_notice_of_a_rolled_back_transaction_is_dropped(app: Flask) -> None:
    def step(memory: Any, db: Any) -> tuple[list[Any], list[Any]]:
        entry, _ = guidance.propose(
            db.session(), {"type": "fact", "text": "Rolled back."}, session_id=None, actor_id="2"
        )
        notify.stage(db.session(), notify.proposal_notice(entry, "editor"))
        db.session.rollback()
        dropped = notify.take_ready(db.session())
        entry, _ = guidance.propose(
            db.session(), {"type": "fact", "text": "Committed."}, session_id=None, actor_id="2"
        )
        notify.stage(db.session(), notify.proposal_notice(entry, "editor"))
        db.session.commit()
        return dropped, notify.take_ready(db.session())

    dropped, ready = work(app, step)
    assert dropped == []
    assert [n.data["title"] for n in ready] == [f"Proposal #{ready[0].data['id']} (fact)"]


def test_on_waiting_call_names_the_held_call_never_its_arguments(app: Flask) -> None:
    memory = app.extensions["test_host"]["memory"]
    seen: list[dict[str, Any]] = []
    memory.on_waiting_call(seen.append)
    rule = work(
        app,
        lambda m, db: (
            guidance.admin_add(
                db.session(),
                {
                    "type": "guardrail",
                    "text": "Ask first.",
                    "target": "update-post",
                    "severity": "ask",
                },
                actor_id="1",
            ).id
        ),
    )
    arguments = {"post_id": 7, "title": "Private launch plan", "api_key": "k-123456789"}

    def call(memory: Any, db: Any) -> str:
        with pytest.raises(ApprovalRequired) as held:
            memory.call_tool("update-post", arguments, user=USERS["editor"])
        return str(held.value.details["request_id"])

    request_id = work(app, call)
    # Asking again is the same request: no second notice.
    work(app, call)

    assert seen == [
        {
            "event": "waiting_call",
            "id": int(request_id),
            "tool": "update-post",
            "guidance_id": rule,
            "user": "editor",
            "at": seen[0]["at"],
        }
    ]
    assert "Private launch plan" not in json.dumps(seen)


# -- the webhook --------------------------------------------------------------------


def test_no_webhook_no_outbox(app: Flask) -> None:
    work(app, lambda m, db: remember(m))
    assert outbox(app) == []
    assert str(work(app, lambda m, db: m.deliver_notices())) == "0 sent, 0 to retry, 0 failed"


def test_the_webhook_gets_a_json_post_with_no_text_and_no_token(
    app: Flask, receiver: Receiver, make_token: Any
) -> None:
    reconfigure(app, CHATMEM_NOTIFY_WEBHOOK=receiver.url)
    plain = make_token("editor")
    with app.test_client() as client:
        response = client.post(
            "/chatmem/api/tools/remember",
            json={"type": "convention", "title": "Staging", "text": TEXT},
            headers={"Authorization": f"Bearer {plain}"},
        )
    assert response.status_code == 200, response.json
    entry_id = response.json["id"]
    # Stored with the proposal, sent by the sweep.
    assert outbox(app) == [("proposal", "queued", 0)]
    assert receiver.bodies == []

    result = app.test_cli_runner().invoke(args=["chatmem", "sweep"])

    assert result.exit_code == 0, result.output
    assert "Webhook notices: 1 sent, 0 to retry, 0 failed." in result.output
    (body,) = receiver.bodies
    (job_id,) = work(app, lambda m, db: db.session.scalars(select(NotifyJob.id)).all())
    assert body == {
        "event": "proposal",
        "id": entry_id,
        "type": "convention",
        "title": f"Proposal #{entry_id} (convention)",
        "severity": None,
        "status": "pending",
        "user": "editor",
        "at": body["at"],
        "delivery": job_id,
    }
    raw = receiver.raw[0].decode()
    assert TEXT not in raw and plain not in raw and plain[:12] not in raw
    assert "Staging" not in raw, "the agent's title is agent-written text too"
    assert receiver.headers[0]["Content-Type"] == "application/json"
    assert outbox(app) == [("proposal", "done", 1)]
    # Sent once: the next sweep has nothing to send.
    assert work(app, lambda m, db: m.deliver_notices()).sent == 0
    assert len(receiver.bodies) == 1


def test_a_failed_delivery_is_retried_with_back_off_then_sent(
    app: Flask, receiver: Receiver
) -> None:
    reconfigure(app, CHATMEM_NOTIFY_WEBHOOK=receiver.url, CHATMEM_JOB_BACKOFF_SECONDS=60)
    receiver.statuses = [503, 429]
    work(app, lambda m, db: remember(m))
    now = utcnow()

    first = work(app, lambda m, db: m.deliver_notices(now=now))
    assert (first.sent, first.retrying) == (0, 1)
    assert first.errors == ["try 1: HTTP 503"]
    assert outbox(app) == [("proposal", "queued", 1)]
    # Not due yet: nothing is sent before the back-off has passed.
    assert work(app, lambda m, db: m.deliver_notices(now=now + timedelta(seconds=59))).retrying == 0
    assert len(receiver.bodies) == 1

    second = work(app, lambda m, db: m.deliver_notices(now=now + timedelta(seconds=60)))
    assert second.retrying == 1 and second.errors == ["try 2: HTTP 429"]
    # The wait doubles: 120 s after the second try.
    later = now + timedelta(seconds=60 + 119)
    assert work(app, lambda m, db: m.deliver_notices(now=later)).sent == 0
    third = work(app, lambda m, db: m.deliver_notices(now=later + timedelta(seconds=1)))
    assert third.sent == 1
    assert outbox(app) == [("proposal", "done", 3)]
    assert [b["id"] for b in receiver.bodies] == [receiver.bodies[0]["id"]] * 3


def test_a_refused_delivery_is_not_retried_and_an_unreachable_one_is(
    app: Flask, receiver: Receiver
) -> None:
    reconfigure(app, CHATMEM_NOTIFY_WEBHOOK=receiver.url)
    receiver.statuses = [400]
    work(app, lambda m, db: remember(m))
    done = work(app, lambda m, db: m.deliver_notices())
    assert (done.failed, done.retrying) == (1, 0)
    assert outbox(app) == [("proposal", "failed", 1)]

    reconfigure(app, CHATMEM_NOTIFY_WEBHOOK=f"http://127.0.0.1:{closed_port()}/hook")
    work(app, lambda m, db: remember(m, text="Another fact for the queue."))
    done = work(app, lambda m, db: m.deliver_notices())
    assert (done.failed, done.retrying) == (0, 1)
    assert done.errors[0].startswith("try 1: unreachable")


def test_gives_up_after_the_job_attempts(app: Flask, receiver: Receiver) -> None:
    reconfigure(
        app,
        CHATMEM_NOTIFY_WEBHOOK=receiver.url,
        CHATMEM_JOB_MAX_ATTEMPTS=2,
        CHATMEM_JOB_BACKOFF_SECONDS=1,
    )
    receiver.statuses = [500, 500, 500]
    work(app, lambda m, db: remember(m))
    now = utcnow()
    work(app, lambda m, db: m.deliver_notices(now=now))
    last = work(app, lambda m, db: m.deliver_notices(now=now + timedelta(hours=1)))
    assert (last.failed, last.retrying) == (1, 0)
    assert outbox(app) == [("proposal", "failed", 2)]
    assert work(app, lambda m, db: m.deliver_notices(now=now + timedelta(days=1))).failed == 0
    assert len(receiver.bodies) == 2


def test_a_held_call_is_sent_too(app: Flask, receiver: Receiver) -> None:
    reconfigure(app, CHATMEM_NOTIFY_WEBHOOK=receiver.url)
    work(
        app,
        lambda m, db: guidance.admin_add(
            db.session(),
            {"type": "guardrail", "text": "Ask first.", "target": "create-user", "severity": "ask"},
            actor_id="1",
        ),
    )

    def held(memory: Any, db: Any) -> None:
        with pytest.raises(ApprovalRequired):
            memory.call_tool(
                "create-user",
                {"username": "mallory-x9", "password": "pw-0123456789"},
                user=USERS["editor"],
            )

    work(app, held)
    assert work(app, lambda m, db: m.deliver_notices()).sent == 1
    (body,) = receiver.bodies
    assert (body["event"], body["tool"], body["user"]) == ("waiting_call", "create-user", "editor")
    raw = receiver.raw[0].decode()
    assert "mallory-x9" not in raw and "pw-0123456789" not in raw
    count = work(app, lambda m, db: db.session.scalar(select(func.count()).select_from(NotifyJob)))
    assert count == 1


class WorkerKilled(BaseException):
    """The sending worker dies mid-POST (a SIGKILL, as far as the outbox can tell)."""


def die(url: str, body: bytes) -> None:
    raise WorkerKilled


def test_a_worker_killed_while_sending_charges_only_the_notice_in_flight(
    app: Flask, receiver: Receiver
) -> None:
    reconfigure(app, CHATMEM_NOTIFY_WEBHOOK=receiver.url, CHATMEM_JOB_LEASE_SECONDS=60)
    for n in range(3):
        work(app, lambda m, db, n=n: remember(m, text=f"Fact number {n} for the outbox."))
    now = utcnow()

    def send_dying(memory: Any, db: Any) -> None:
        policy = memory.job_policy()
        with pytest.raises(WorkerKilled):
            webhook.deliver_due(db.session(), receiver.url, policy, post=die, now=now)

    work(app, send_dying)
    # Claimed one at a time: the two notices it never reached lost no try.
    assert outbox(app) == [
        ("proposal", "running", 1),
        ("proposal", "queued", 0),
        ("proposal", "queued", 0),
    ]
    # The others go at once; the one in flight waits out its lease, then goes.
    assert work(app, lambda m, db: m.deliver_notices(now=now)).sent == 2
    assert work(app, lambda m, db: m.deliver_notices(now=now + timedelta(seconds=61))).sent == 1
    assert outbox(app) == [
        ("proposal", "done", 2),
        ("proposal", "done", 1),
        ("proposal", "done", 1),
    ]


def test_a_notice_that_keeps_killing_its_worker_is_given_up(app: Flask, receiver: Receiver) -> None:
    reconfigure(
        app,
        CHATMEM_NOTIFY_WEBHOOK=receiver.url,
        CHATMEM_JOB_LEASE_SECONDS=60,
        CHATMEM_JOB_MAX_ATTEMPTS=2,
    )
    work(app, lambda m, db: remember(m))
    now = utcnow()

    for _ in range(2):  # two workers die in turn under it
        with pytest.raises(WorkerKilled):
            work(
                app,
                lambda m, db, at=now: webhook.deliver_due(
                    db.session(), receiver.url, m.job_policy(), post=die, now=at
                ),
            )
        now += timedelta(seconds=61)

    assert work(app, lambda m, db: m.deliver_notices(now=now)).sent == 0
    assert outbox(app) == [("proposal", "failed", 2)]
    (error,) = work(app, lambda m, db: db.session.scalars(select(NotifyJob.last_error)).all())
    assert "gave up after 2 tries" in error and "lease expired" in error
    assert receiver.bodies == []


@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
def test_a_redirect_is_not_followed_but_retried_then_given_up(
    app: Flask, receiver: Receiver, status: int
) -> None:
    """A 3xx is a failed delivery: the Location is never posted to, whoever it names."""
    reconfigure(
        app,
        CHATMEM_NOTIFY_WEBHOOK=receiver.url,
        CHATMEM_JOB_MAX_ATTEMPTS=2,
        CHATMEM_JOB_BACKOFF_SECONDS=1,
    )
    receiver.statuses = [status, status]
    work(app, lambda m, db: remember(m))
    now = utcnow()

    first = work(app, lambda m, db: m.deliver_notices(now=now))
    assert (first.sent, first.retrying, first.failed) == (0, 1, 0)
    assert first.errors == [f"try 1: HTTP {status}: redirects are not followed"]
    assert outbox(app) == [("proposal", "queued", 1)]
    last = work(app, lambda m, db: m.deliver_notices(now=now + timedelta(hours=1)))
    assert (last.sent, last.retrying, last.failed) == (0, 0, 1)
    assert outbox(app) == [("proposal", "failed", 2)]
    # Two tries, both to the webhook's own path: /elsewhere was never asked.
    assert receiver.paths == ["/hooks/chatmem"] * 2


def test_a_redirect_to_another_host_is_never_posted_to(app: Flask, receiver: Receiver) -> None:
    other = Receiver()
    other.thread.start()
    try:
        receiver.location = other.url
        reconfigure(app, CHATMEM_NOTIFY_WEBHOOK=receiver.url)
        receiver.statuses = [302]
        work(app, lambda m, db: remember(m))
        done = work(app, lambda m, db: m.deliver_notices())
        assert done.retrying == 1
        assert other.bodies == []
    finally:
        other.server.shutdown()
        other.server.server_close()


def test_no_agent_written_word_reaches_the_webhook(app: Flask, receiver: Receiver) -> None:
    """Title and text alike: whatever an agent wrote (a secret no rule knows, say) stays home."""
    reconfigure(app, CHATMEM_NOTIFY_WEBHOOK=receiver.url)
    title, text = "Quartermaster note", "The quartermaster keeps the spare keys in room 4."
    result = work(app, lambda m, db: remember(m, title=title, text=text))
    assert work(app, lambda m, db: m.deliver_notices()).sent == 1
    raw = receiver.raw[0].decode()
    assert "quartermaster" not in raw.lower() and "room 4" not in raw
    assert receiver.bodies[0]["title"] == f"Proposal #{result['id']} (fact)"
