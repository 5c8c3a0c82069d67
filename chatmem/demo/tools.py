"""The demo's built-in tools and its chatmem hooks.

This is the part a host copies: each tool is a plain function with a JSON
Schema, registered with `@memory.tool`, and knows nothing of validation,
permissions, guardrails or the ledger: `memory.call_tool` does all of that
before (and after) the function runs, whichever channel the call came from.
"""

from __future__ import annotations

from typing import Any

from flask import current_app
from sqlalchemy import select

from chatmem import Conflict, InvalidParams, NotFound

from .extensions import db, memory
from .models import CAPABILITIES, POST_TYPES, Post, User

LIST_LIMIT = 100
_POST_ID = {"type": "integer", "minimum": 1, "description": "The post's id."}
_TITLE = {"type": "string", "minLength": 1, "maxLength": 200, "pattern": r"\S"}
_CONTENT = {"type": "string", "maxLength": 20000, "description": "The post body (plain text)."}
_POST_TYPE = {
    "type": "string",
    "enum": list(POST_TYPES),
    "description": "post (blog post), page (site page) or header_footer (site template).",
}


# -- hooks ----------------------------------------------------------------


MAX_ID = 2**31 - 1  # the id columns are INTEGER: a larger number names no row (and overflows)


def row_id(value: Any) -> int | None:
    """A row id from a caller's value, or None when it cannot name a row."""
    text = str(value)
    if not text.isascii() or not text.isdigit() or not 0 < int(text) <= MAX_ID:
        return None
    return int(text)


def load_user(user_id: str) -> User | None:
    """A user by id. flask-login's loader (`sessions.signed_in_user`) also checks the cookie."""
    found = row_id(user_id)
    return db.session.get(User, found) if found is not None else None


# No `request_loader`: an API token is never a login to this app's pages (it
# would open the Memory screen to an agent). The chat API authenticates a
# token itself, on its own routes (`views.chat_api.api_login`).


@memory.user_loader
def memory_user(user_id: str) -> User | None:
    """How chatmem's token and CLI code find our users."""
    return load_user(user_id)


@memory.user_fingerprint
def user_fingerprint(user: User) -> str:
    """Binds API tokens to a user: kept across a rename, never shared by a reused id.

    A user made later (a deleted user's id given to someone new, even under
    the same name) has another creation time, so the old token stops working.
    """
    return f"created {user.created_at.isoformat()}"


@memory.user_by_name
def user_named(username: str) -> User | None:
    """How `flask chatmem token create <username>` (and `token list`) find our users."""
    return db.session.scalar(select(User).where(User.username == username))


@memory.capability_checker
def can(user: Any, capability: str) -> bool:
    return capability in getattr(user, "capabilities", ())


@memory.license_checker
def licensed() -> bool:
    """The demo is 'Pro' unless DEMO_LICENSE_ACTIVE=False shows the locked screen."""
    return bool(current_app.config.get("DEMO_LICENSE_ACTIVE", True))


@memory.post_type_resolver
def post_type(post_id: Any) -> str | None:
    """Lets `post_type:header_footer` guardrails see what a call would touch."""
    found = row_id(post_id)
    post = db.session.get(Post, found) if found is not None else None
    return post.post_type if post else None


def _post(post_id: int) -> Post:
    post = db.session.get(Post, post_id)
    if post is None:
        raise NotFound(f"There is no post {post_id}.", details={"field": "post_id"})
    return post


# -- read-only tools --------------------------------------------------------


@memory.tool(
    name="list-posts",
    description="List the site's posts, pages and header/footer templates (newest first).",
    input_schema={
        "type": "object",
        "properties": {
            "post_type": {**_POST_TYPE, "description": "Only this post type."},
            "limit": {"type": "integer", "minimum": 1, "maximum": LIST_LIMIT, "default": 20},
        },
        "additionalProperties": False,
    },
    read_only=True,
)
def list_posts(post_type: str | None = None, limit: int = 20) -> dict[str, Any]:
    query = select(Post).order_by(Post.id.desc()).limit(limit)
    if post_type:
        query = query.where(Post.post_type == post_type)
    return {"posts": [p.to_dict(content=False) for p in db.session.scalars(query)]}


@memory.tool(
    name="get-post",
    description="Read one post, page or header/footer template, with its content.",
    input_schema={
        "type": "object",
        "properties": {"post_id": _POST_ID},
        "required": ["post_id"],
        "additionalProperties": False,
    },
    read_only=True,
)
def get_post(post_id: int) -> dict[str, Any]:
    return _post(post_id).to_dict()


# -- writes -------------------------------------------------------------------


@memory.tool(
    name="create-post",
    description="Create a post, page or header/footer template.",
    input_schema={
        "type": "object",
        "properties": {"title": _TITLE, "content": _CONTENT, "post_type": _POST_TYPE},
        "required": ["title"],
        "additionalProperties": False,
    },
)
def create_post(title: str, content: str = "", post_type: str = "post") -> dict[str, Any]:
    post = Post(title=title.strip(), content=content, post_type=post_type)
    db.session.add(post)
    db.session.flush()  # the id; chatmem commits with the ledger row
    return post.to_dict()


@memory.tool(
    name="update-post",
    description="Change a post's title and/or content.",
    input_schema={
        "type": "object",
        "properties": {"post_id": _POST_ID, "title": _TITLE, "content": _CONTENT},
        "required": ["post_id"],
        "additionalProperties": False,
    },
)
def update_post(
    post_id: int, title: str | None = None, content: str | None = None
) -> dict[str, Any]:
    # Checked here rather than with a top-level anyOf: the OpenAI and Anthropic
    # tool APIs refuse combinators at the top of a function's schema.
    if title is None and content is None:
        raise InvalidParams("Give a new title or content.", details={"field": "title"})
    post = _post(post_id)
    if title is not None:
        post.title = title.strip()
    if content is not None:
        post.content = content
    db.session.flush()
    return post.to_dict()


@memory.tool(
    name="delete-post",
    description="Delete a post permanently.",
    input_schema={
        "type": "object",
        "properties": {"post_id": _POST_ID},
        "required": ["post_id"],
        "additionalProperties": False,
    },
)
def delete_post(post_id: int) -> dict[str, Any]:
    db.session.delete(_post(post_id))
    return {"deleted": post_id}


@memory.tool(
    name="create-user",
    description="Create a site user with a password and capabilities (admins only).",
    input_schema={
        "type": "object",
        "properties": {
            "username": {
                "type": "string",
                "pattern": r"^[a-zA-Z0-9_.-]{2,64}$",
                "description": "2 to 64 letters, digits, dots, dashes or underscores",
            },
            # writeOnly: the ledger and the chat keep "[hidden]", never the password.
            "password": {"type": "string", "minLength": 8, "maxLength": 200, "writeOnly": True},
            "capabilities": {
                "type": "array",
                "items": {"type": "string", "enum": list(CAPABILITIES)},
                "uniqueItems": True,
                "default": [],
            },
        },
        "required": ["username", "password"],
        "additionalProperties": False,
    },
    capability="manage_options",
)
def create_user(
    username: str, password: str, capabilities: list[str] | None = None
) -> dict[str, Any]:
    exists = db.session.scalar(select(User.id).where(User.username == username))
    if exists is not None:
        raise Conflict(f"A user named {username!r} already exists.", details={"field": "username"})
    user = User(username=username, capability_names=" ".join(sorted(set(capabilities or ()))))
    user.set_password(password)
    db.session.add(user)
    db.session.flush()
    return user.to_dict()
