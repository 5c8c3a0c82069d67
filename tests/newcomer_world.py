"""A demo app with one item of every kind a curator's page lists: pending,
waiting, rejected, trashed, an entry with several versions, a token, a closed
session. Pages that only break when something is there are tested against it."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

from flask import Flask
from sqlalchemy import select, update

from tests.demo_client import DemoClient
from tests.demo_story import admin_id


def remember(client: DemoClient, conversation_id: int, text: str) -> int:
    messages = client.say(
        conversation_id, "/tool remember " + json.dumps({"type": "fact", "text": text})
    )
    return int(next(m for m in messages if m["role"] == "tool")["result"]["id"])


def seed_every_kind(app: Flask) -> dict[str, Any]:
    from chatmem.demo.extensions import db
    from chatmem.memory import guidance
    from chatmem.memory.models import Guidance, Session, utcnow

    editor = DemoClient(app, "editor")
    chat = editor.new_conversation()["id"]
    pending = remember(editor, chat, "Checkout is page 4.")
    rejected = remember(editor, chat, "The shop closes on Sundays.")
    versioned = remember(editor, chat, "Shipping to the EU takes five days.")
    trashed = remember(editor, chat, "The logo is blue.")
    editor.close(chat)
    actor = admin_id(app)
    with app.app_context():
        guidance.reject(db.session(), rejected, actor_id=actor, reason="Not true.")
        guidance.approve(db.session(), versioned, actor_id=actor)
        guidance.edit(
            db.session(), versioned, {"text": "Shipping to the EU takes a week."}, actor_id=actor
        )
        guidance.approve(db.session(), trashed, actor_id=actor)
        guidance.trash(db.session(), trashed, actor_id=actor)
        session_id = db.session.scalars(select(Session.id)).first()
    admin = DemoClient(app, "admin")
    added = admin.client.post(
        "/chatmem/memory/guidance",
        data={
            "csrf_token": admin.csrf,
            "type": "guardrail",
            "text": "Ask before changing titles.",
            "target": "update-post",
            "severity": "ask",
        },
    )
    assert added.status_code == 303, added.get_data(as_text=True)
    waiting_chat = editor.new_conversation()["id"]
    held = editor.say(waiting_chat, '/tool update-post {"post_id": 2, "title": "Sale!"}')
    [card] = [m for m in held if m["role"] == "tool"]
    made = admin.client.post(
        "/connect/tokens", data={"name": "laptop", "csrf_token": admin.csrf_from("/connect")}
    )
    assert made.status_code == 201
    hand_added = int(added.headers["Location"].rsplit("#entry-", 1)[1])
    # Upkeep's three lists: a target gone, a review date, an entry unused for months.
    with app.app_context():
        now = utcnow()
        db.session.execute(
            update(Guidance).where(Guidance.id == hand_added).values(target_gone_at=now)
        )
        db.session.execute(
            update(Guidance)
            .where(Guidance.id == versioned)
            .values(review_after=(now + timedelta(days=30)).date())
        )
        unused = guidance.admin_add(
            db.session(), {"type": "fact", "text": "Old fact."}, actor_id=actor
        ).id
        db.session.execute(
            update(Guidance)
            .where(Guidance.id == unused)
            .values(approved_at=now - timedelta(days=120), created_at=now - timedelta(days=120))
        )
        db.session.commit()
    return {
        "admin": admin,
        "editor": editor,
        "chat": chat,
        "waiting_chat": waiting_chat,
        "held": card,
        "pending": pending,
        "rejected": rejected,
        "versioned": versioned,
        "trashed": trashed,
        "session": session_id,
        "hand_added": hand_added,
        "unused": unused,
    }
