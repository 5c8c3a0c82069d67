"""The glue integrate.md asks for: who may curate, how users are found, one tool."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from chatmem import ChatMemory, Forbidden, NotFound

from .extensions import db
from .models import Post, User

_connected: set[int] = set()


def connect(memory: ChatMemory) -> None:
    """Register once: `memory` is module-level, the factory runs once per app."""
    if id(memory) in _connected:
        return
    _connected.add(id(memory))

    @memory.capability_checker
    def can(user: Any, capability: str) -> bool:
        if capability == "manage_options":
            return bool(getattr(user, "is_admin", False))
        return getattr(user, "is_authenticated", False)

    @memory.user_by_name
    def by_name(username: str) -> User | None:
        return db.session.scalar(sa.select(User).where(User.username == username))

    @memory.user_loader
    def by_id(user_id: str) -> User | None:
        return db.session.get(User, int(user_id))

    @memory.tool(
        name="edit-post",
        description="Change the text of one of your posts.",
        input_schema={
            "type": "object",
            "properties": {"post_id": {"type": "integer"}, "body": {"type": "string"}},
            "required": ["post_id", "body"],
        },
        capability="edit_posts",
    )
    def edit_post(post_id: int, body: str, context: Any) -> dict[str, Any]:
        post = db.session.get(Post, post_id)
        if post is None:
            raise NotFound(f"No post {post_id}.")
        if post.user_id != context.user.id:
            raise Forbidden("Only the author may edit a post.")
        post.body = body
        db.session.flush()
        return {"id": post.id, "body": post.body}
