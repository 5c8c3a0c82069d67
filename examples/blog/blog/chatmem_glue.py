"""chatmem's glue: who may do what, the blog's tools, and what each call touches."""

from sqlalchemy import select

from chatmem import Forbidden, NotFound

from .extensions import db, memory
from .models import Post, User


@memory.capability_checker
def can(user, capability):
    return capability in user.capabilities


@memory.user_by_name  # `flask --app blog chatmem token create <username>`
def user_by_name(username):
    return db.session.scalar(select(User).filter_by(username=username))


@memory.tool(
    name="update-post",
    description="Change the title of one of your posts.",
    input_schema={
        "type": "object",
        "properties": {
            "post_id": {"type": "integer"},
            "title": {"type": "string", "minLength": 1, "maxLength": 140},
        },
        "required": ["post_id", "title"],
    },
)
def update_post(post_id, title, context):
    post = db.session.get(Post, post_id)
    if post is None:
        raise NotFound(f"There is no post {post_id}.", details={"field": "post_id"})
    if post.author_id != context.user.id and not can(context.user, "manage_options"):
        raise Forbidden("You can only edit your own posts.", details={"field": "post_id"})
    post.title = title  # flushed, not committed: chatmem commits it with the ledger line
    return {"post_id": post.id, "title": post.title}


@memory.target_labels(reads=("post_id",))  # the labels depend on the post only
def labels(tool_name, arguments):
    """A post's author is a target too: a guardrail can protect `label:author:susan`."""
    post = db.session.get(Post, arguments["post_id"]) if "post_id" in arguments else None
    return [f"author:{post.author.username}"] if post else []


@memory.label_exists
def label_exists(label):
    kind, _, name = label.partition(":")
    if kind != "author":
        return True
    return db.session.scalar(select(User.id).filter_by(username=name)) is not None
