"""The forum's chatmem plugin: all of chatmem's glue, outside the app factory.

`setup(app)` is the forum's plugin hook. The plugin owns its `ChatMemory`,
its tools, what each call touches (forum, topic, author) and the layout the
Memory screen uses in whichever theme the page is drawn with; its one
template ships in the plugin (a blueprint's templates folder), since the
forum has no app templates folder to put a `chatmem/base.html` in.
"""

from flask import Blueprint, current_app
from forum import current_theme
from forum.models import Forum, Post, Topic, User, db
from sqlalchemy import select

from chatmem import ChatMemory, NotFound

memory = ChatMemory(db=db)
# Only templates: it makes the plugin's `forum_chatmem/...` templates findable.
templates = Blueprint("forum_chatmem", __name__, template_folder="templates")


def setup(app):
    memory.init_app(app)
    app.register_blueprint(templates)


@memory.capability_checker
def can(user, capability):
    if capability == "manage_options":
        return user.is_moderator
    return capability == "edit_posts"


@memory.base_template
def screen_layout():
    """The theme's own `chatmem.html` if it has one, else the plugin's, inside the theme."""
    return current_app.jinja_env.select_template(
        [f"_themes/{current_theme()}/chatmem.html", "forum_chatmem/screen_layout.html"]
    )


@memory.screen_context
def theme_context():
    """The theme the layout's `theme_static()` reads, which the forum's own pages carry."""
    return {"_theme": current_theme()}


def _topic(topic_id):
    topic = db.session.get(Topic, topic_id)
    if topic is None:
        raise NotFound(f"There is no topic {topic_id}.", details={"field": "topic_id"})
    return topic


@memory.tool(
    name="move-topic",
    description="Move a topic to another forum.",
    input_schema={
        "type": "object",
        "properties": {"topic_id": {"type": "integer"}, "forum_id": {"type": "integer"}},
        "required": ["topic_id", "forum_id"],
    },
)
def move_topic(topic_id, forum_id):
    topic = _topic(topic_id)
    if db.session.get(Forum, forum_id) is None:
        raise NotFound(f"There is no forum {forum_id}.", details={"field": "forum_id"})
    topic.forum_id = forum_id  # flushed, not committed: chatmem commits with the ledger line
    return {"topic_id": topic.id, "forum_id": forum_id}


@memory.tool(
    name="edit-post",
    description="Change the text of a post.",
    input_schema={
        "type": "object",
        "properties": {"post_id": {"type": "integer"}, "text": {"type": "string"}},
        "required": ["post_id", "text"],
    },
)
def edit_post(post_id, text):
    post = db.session.get(Post, post_id)
    if post is None:
        raise NotFound(f"There is no post {post_id}.", details={"field": "post_id"})
    post.text = text
    return {"post_id": post.id}


@memory.target_labels(reads=("post_id", "topic_id", "forum_id"))
def labels(tool_name, arguments):
    """A call touches its topic, the topic's forum (both forums for a move) and its author."""
    if "post_id" in arguments:
        post = db.session.get(Post, arguments["post_id"])
        topic = post.topic if post else None
    else:
        topic = db.session.get(Topic, arguments.get("topic_id", 0))
    if topic is None:
        return []
    found = [f"topic:{topic.id}", f"forum:{topic.forum_id}", f"author:{topic.author.username}"]
    if "forum_id" in arguments:
        found.append(f"forum:{arguments['forum_id']}")
    return found


@memory.label_exists
def label_exists(label):
    kind, _, value = label.partition(":")
    model = {"topic": Topic, "forum": Forum}.get(kind)
    if model is not None:
        return db.session.get(model, int(value)) is not None
    if kind == "author":
        return db.session.scalar(select(User.id).filter_by(username=value)) is not None
    return True
