"""The host app's own tables: users, posts, conversations and their messages.

chatmem owns none of these; it refers to users by id and learns about posts
only through the `post_type_resolver` hook.
"""

from __future__ import annotations

import secrets
from datetime import UTC, datetime
from typing import Any

from flask_login import UserMixin
from sqlalchemy import JSON, DateTime, ForeignKey, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column
from werkzeug.security import check_password_hash, generate_password_hash

from chatmem.inputs import json_safe

from .extensions import db

POST_TYPES = ("post", "page", "header_footer")
CAPABILITIES = ("edit_posts", "manage_options")
ROLES = ("user", "assistant", "tool", "notice")


def utcnow() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)


def new_nonce() -> str:
    """A user's sign-in generation: drawn anew at logout (see sessions.py)."""
    return secrets.token_hex(16)


def iso(value: datetime | None) -> str | None:
    return value.isoformat(timespec="seconds") + "Z" if value else None


class User(UserMixin, db.Model):  # type: ignore[name-defined,misc]  # Flask-SQLAlchemy makes db.Model at run time
    __tablename__ = "demo_user"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    username: Mapped[str] = mapped_column(String(64), unique=True, nullable=False)
    password_hash: Mapped[str] = mapped_column(String(256), nullable=False)
    # Space-separated capability names: the demo's stand-in for a role system.
    capability_names: Mapped[str] = mapped_column(String(200), default="", nullable=False)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow, nullable=False)
    # Part of every sign-in cookie's binding; a new one at logout ends them all.
    session_nonce: Mapped[str] = mapped_column(
        String(64), default=new_nonce, server_default="", nullable=False
    )

    @property
    def capabilities(self) -> frozenset[str]:
        return frozenset(self.capability_names.split())

    def set_password(self, password: str) -> None:
        self.password_hash = generate_password_hash(password)

    def check_password(self, password: str) -> bool:
        return check_password_hash(self.password_hash, password)

    def to_dict(self) -> dict[str, Any]:
        return {
            "user_id": self.id,
            "username": self.username,
            "capabilities": sorted(self.capabilities),
        }


class Post(db.Model):  # type: ignore[name-defined,misc]  # Flask-SQLAlchemy makes db.Model at run time
    __tablename__ = "demo_post"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    title: Mapped[str] = mapped_column(String(200), nullable=False)
    content: Mapped[str] = mapped_column(Text, default="", nullable=False)
    post_type: Mapped[str] = mapped_column(String(32), default="post", nullable=False)
    updated_at: Mapped[datetime] = mapped_column(
        DateTime, default=utcnow, onupdate=utcnow, nullable=False
    )

    def to_dict(self, *, content: bool = True) -> dict[str, Any]:
        out: dict[str, Any] = {
            "post_id": self.id,
            "title": self.title,
            "post_type": self.post_type,
            "updated_at": iso(self.updated_at),
        }
        if content:
            out["content"] = self.content
        return out


class Conversation(db.Model):  # type: ignore[name-defined,misc]  # Flask-SQLAlchemy makes db.Model at run time
    """A chat, with the chatmem session it runs in and the context it began with.

    `system_context` is frozen at creation: a conversation under way keeps
    the project memory it started with (SPEC §5).
    """

    __tablename__ = "demo_conversation"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("demo_user.id"), index=True, nullable=False)
    title: Mapped[str] = mapped_column(String(200), default="New conversation", nullable=False)
    session_id: Mapped[str] = mapped_column(String(64), default="", index=True, nullable=False)
    system_context: Mapped[str] = mapped_column(Text, default="", nullable=False)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow, nullable=False)
    closed_at: Mapped[datetime | None] = mapped_column(DateTime)

    @property
    def project_memory(self) -> str:
        """The `## Project memory` block this conversation began with ("" when none)."""
        head, sep, block = self.system_context.partition("## Project memory")
        return sep + block if sep else ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "title": self.title,
            "system_context": self.system_context,
            "created_at": iso(self.created_at),
            "closed": self.closed_at is not None,
            "closed_at": iso(self.closed_at),
        }


class ChatMessage(db.Model):  # type: ignore[name-defined,misc]  # Flask-SQLAlchemy makes db.Model at run time
    """One entry of a conversation.

    `assistant` rows may carry the tool calls the model asked for; each
    `tool` row is one call's arguments and the result the model was shown
    (`{"error": {...}}` when it failed). `notice` rows are the app talking
    (no provider, provider down) and are never sent to the model.
    """

    __tablename__ = "demo_message"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    conversation_id: Mapped[int] = mapped_column(
        ForeignKey("demo_conversation.id", ondelete="CASCADE"), index=True, nullable=False
    )
    role: Mapped[str] = mapped_column(String(16), nullable=False)
    content: Mapped[str] = mapped_column(Text, default="", nullable=False)
    tool_calls: Mapped[list[dict[str, Any]] | None] = mapped_column(JSON)
    tool_call_id: Mapped[str | None] = mapped_column(String(128))
    tool_name: Mapped[str | None] = mapped_column(String(128))
    arguments: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    result: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    outcome: Mapped[str | None] = mapped_column(String(16))
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow, nullable=False)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id, "role": self.role, "created_at": iso(self.created_at)}
        if self.role == "tool":
            out.update(
                tool_call_id=self.tool_call_id,
                name=self.tool_name,
                # json_safe: a NaN stored before the input rules must not
                # make the whole conversation unreadable to the page.
                arguments=json_safe(self.arguments),
                result=json_safe(self.result),
                outcome=self.outcome,
            )
            return out
        out["content"] = self.content
        if self.tool_calls:
            out["tool_calls"] = json_safe(self.tool_calls)
        return out
