"""Shared steps of the demo story: what the admin does and what the story must show."""

from __future__ import annotations

from typing import Any

from flask import Flask

from chatmem.memory import guidance
from chatmem.memory.models import Session

GUARDRAIL = {
    "type": "guardrail",
    "title": "Header and footer are off limits",
    "text": "Never edit the site header or footer templates.",
    "target": "post_type:header_footer",
    "severity": "block",
}
FACT = "Checkout is page 4."
HEADER, FIRST_POST = 5, 1  # seeded: "Site header" (header_footer), "Welcome to the demo" (post)


def admin_id(app: Flask) -> str:
    from chatmem.demo.extensions import db
    from chatmem.demo.models import User

    with app.app_context():
        return str(db.session.query(User.id).filter_by(username="admin").scalar())


def approve(app: Flask, entry_id: int) -> None:
    """The admin approves a proposal (the domain call the Memory screen makes)."""
    from chatmem.demo.extensions import db

    actor = admin_id(app)
    with app.app_context():
        guidance.approve(db.session(), entry_id, actor_id=actor)


def add_guardrail(app: Flask) -> None:
    from chatmem.demo.extensions import db

    actor = admin_id(app)
    with app.app_context():
        guidance.admin_add(db.session(), GUARDRAIL, actor_id=actor)


def post_title(app: Flask, post_id: int) -> str:
    from chatmem.demo.extensions import db
    from chatmem.demo.models import Post

    with app.app_context():
        post = db.session.get(Post, post_id)
        assert post is not None
        return post.title


def assert_digest(app: Flask, closed: dict[str, Any], conversation_id: int) -> None:
    """The session record lists exactly the successful change and the blocked attempt."""
    from chatmem.demo.extensions import db
    from chatmem.demo.models import Conversation

    with app.app_context():
        conversation = db.session.get(Conversation, conversation_id)
        assert conversation is not None and conversation.session_id
        record = db.session.get(Session, conversation.session_id)
        assert record is not None and record.ended_at is not None
        digest, changes = record.digest or "", record.change_count
    assert closed["closed"] is True
    assert closed["digest"] == digest
    assert changes == 2
    lines = digest.splitlines()
    assert lines[0] == "2 calls: 1 ok, 1 blocked, 0 failed."
    assert len(lines) == 3
    assert "update-post" in lines[1] and f'"post_id": {HEADER}' in lines[1]
    assert "→ blocked (blocked_by_memory" in lines[1]
    assert "update-post" in lines[2] and f'"post_id": {FIRST_POST}' in lines[2]
    assert lines[2].endswith("→ ok")
