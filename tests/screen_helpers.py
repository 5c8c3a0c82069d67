"""Helpers the Memory screen tests share: sign-in, tokens, seeding, state."""

from __future__ import annotations

import re
from typing import Any

from flask import Flask
from flask.testing import FlaskClient
from flask_wtf.csrf import generate_csrf

from tests.hostapp import USERS

SCREEN = "/chatmem/memory"
JSON = {"Accept": "application/json"}


def add_token_route(app: Flask) -> None:
    """A host route that hands out the signed-in session's CSRF token.

    Refused pages carry no token, yet "refused without capability" must be
    tested with a *valid* token, or it would only prove the CSRF check.
    """
    app.add_url_rule("/_test/csrf", "test_csrf", lambda: generate_csrf())


def login(client: FlaskClient, username: str) -> None:
    with client.post("/login", data={"username": username, "password": username}) as response:
        assert response.status_code == 302


def token(client: FlaskClient) -> str:
    with client.get("/_test/csrf") as response:
        return response.get_data(as_text=True)


def page_token(html: str) -> str:
    found = re.search(r'name="csrf_token" value="([^"]+)"', html)
    assert found, "the page carries no CSRF token"
    return found.group(1)


def propose(memory: Any, text: str, *, user: str = "editor", **fields: Any) -> int:
    """An agent's proposal through the real tool path; returns its id."""
    result = memory.call_tool(
        "remember", {"type": "fact", "text": text, **fields}, user=USERS[user]
    )
    return int(result["id"])


def state(app: Flask) -> dict[str, Any]:
    """Everything an action could change: entries, switches, the audit trail."""
    from sqlalchemy import func, select

    from chatmem.memory.models import Guidance, GuidanceEvent

    with app.app_context():
        memory = app.extensions["test_host"]["memory"]
        db = memory.db
        rows = db.session.scalars(select(Guidance).order_by(Guidance.id))
        entries = [
            (g.id, g.status, g.enabled, g.type, g.title, g.text, g.target, g.version) for g in rows
        ]
        events = db.session.scalar(select(func.count()).select_from(GuidanceEvent))
        snapshot = memory.snapshot()
        db.session.remove()
        return {"entries": entries, "events": events, "settings": snapshot}


def entry(app: Flask, entry_id: int) -> Any:
    from chatmem.memory import guidance

    with app.app_context():
        memory = app.extensions["test_host"]["memory"]
        found = guidance.get(memory.db.session(), entry_id)
        memory.db.session.expunge(found)
        return found
