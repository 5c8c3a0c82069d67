"""The Python that docs/integrate.md shows a host, run as printed, does what the text says.

The host tool with its ownership check, the `target_labels`/`label_exists`
hooks and the layout settings are executed against a small app with the
models the text names (`Post`, `Topic` and the topic's author).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import pytest
from flask import Flask
from flask_sqlalchemy import SQLAlchemy
from jinja2 import DictLoader
from sqlalchemy import ForeignKey, String
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship

from chatmem import BlockedByMemory, ChatMemory, Forbidden, NotFound
from chatmem.memory import guidance
from tests.documented import ROOT, markdown_blocks
from tests.hostapp import create_host_app
from tests.screen_helpers import SCREEN, login

DOC = ROOT / "docs" / "integrate.md"
BLOCKS = {b.id.split("#", 1)[1]: b for b in markdown_blocks(DOC)}


@dataclass
class User:
    id: int
    username: str
    capabilities: set[str] = field(default_factory=lambda: {"edit_posts"})


JOHN, MARY = User(1, "john"), User(2, "mary")


@pytest.fixture
def host(database_url: str) -> Iterator[dict[str, Any]]:
    class Base(DeclarativeBase):
        pass

    db = SQLAlchemy(model_class=Base)

    class Account(db.Model):  # type: ignore[name-defined]
        id: Mapped[int] = mapped_column(primary_key=True)
        username: Mapped[str] = mapped_column(String(40))

    class Post(db.Model):  # type: ignore[name-defined]
        id: Mapped[int] = mapped_column(primary_key=True)
        title: Mapped[str] = mapped_column(String(200))
        author_id: Mapped[int]

    class Topic(db.Model):  # type: ignore[name-defined]
        id: Mapped[int] = mapped_column(primary_key=True)
        forum_id: Mapped[int]
        author_id: Mapped[int] = mapped_column(ForeignKey("account.id"))
        author: Mapped[Account] = relationship()

    app = Flask("docs_host")
    app.config.update(SQLALCHEMY_DATABASE_URI=database_url, SECRET_KEY="test")
    db.init_app(app)
    memory = ChatMemory(app, db=db)
    with app.app_context():
        db.drop_all()
        from chatmem.memory.models import Base as ChatmemBase

        ChatmemBase.metadata.drop_all(db.engine)
        db.create_all()
        memory.create_all()
        db.session.add_all([Account(id=1, username="john"), Account(id=2, username="mary")])
        db.session.add_all([Post(id=7, title="Hello", author_id=1)])
        db.session.add(Topic(id=14, forum_id=2, author_id=1))
        db.session.commit()
        namespace = {"memory": memory, "db": db, "Post": Post, "Topic": Topic}
        yield namespace
        db.session.remove()
        db.engine.dispose()


def run(block: str, namespace: dict[str, Any]) -> None:
    exec(compile(BLOCKS[block].text, f"{DOC}#{block}", "exec"), namespace)


def test_the_host_tool_checks_ownership_through_its_context(host: dict[str, Any]) -> None:
    run("host-tools", host)
    memory, Post = host["memory"], host["Post"]
    arguments = {"post_id": 7, "title": "Mine"}
    assert memory.call_tool("update-post", arguments, user=JOHN) == arguments
    assert host["db"].session.get(Post, 7).title == "Mine"  # committed by chatmem
    with pytest.raises(Forbidden) as refused:
        memory.call_tool("update-post", {"post_id": 7, "title": "Hers"}, user=MARY)
    assert refused.value.message == "You can only edit your own posts."
    with pytest.raises(NotFound):
        memory.call_tool("update-post", {"post_id": 8, "title": "x"}, user=JOHN)
    host["db"].session.expire_all()
    assert host["db"].session.get(Post, 7).title == "Mine"


def test_the_labels_hook_lets_a_guardrail_name_an_author_or_a_forum(
    host: dict[str, Any],
) -> None:
    run("what-a-call-touches-targets", host)
    memory, db, Topic = host["memory"], host["db"], host["Topic"]

    @memory.tool(
        name="reply",
        description="Reply in a topic.",
        input_schema={"type": "object", "properties": {"topic_id": {"type": "integer"}}},
    )
    def reply(topic_id: int) -> dict[str, Any]:
        return {"replied": topic_id}

    assert memory.call_tool("reply", {"topic_id": 14}, user=MARY) == {"replied": 14}
    for target in ("label:author:john", "label:forum:2"):
        values = {"type": "guardrail", "text": f"Not {target}.", "severity": "block"}
        rule = guidance.admin_add(db.session(), {**values, "target": target}, actor_id="1")
        with pytest.raises(BlockedByMemory) as refused:
            memory.call_tool("reply", {"topic_id": 14}, user=MARY)
        assert refused.value.details["guidance_id"] == rule.id
        rule.status = "trash"
        db.session.commit()
    gone = guidance.admin_add(
        db.session(),
        {"type": "guardrail", "text": "Not 14.", "severity": "block", "target": "label:topic:14"},
        actor_id="1",
    )
    assert memory.upkeep().flagged == 0
    db.session.delete(db.session.get(Topic, 14))
    db.session.commit()
    assert memory.upkeep().flagged == 1
    db.session.refresh(gone)
    assert gone.target_gone_at is not None


def test_the_layout_settings_and_the_themed_hook_work_as_printed(database_url: str) -> None:
    settings = SimpleNamespace(config={})
    run("inside-your-layout-2", {"app": settings})
    plain = layout_app(database_url, settings.config)
    with plain.test_client() as client:
        login(client, "admin")
        response = client.get(SCREEN)
        assert "<p>plain</p>" in response.get_data(as_text=True)
        csp = response.headers["Content-Security-Policy"]
        assert "style-src 'self' https://cdn.jsdelivr.net" in csp
        assert "font-src 'self' https://fonts.gstatic.com" in csp
    dispose(plain)
    # The themed hooks, registered before the app serves (as all hooks are).
    themed = layout_app(database_url, settings.config)
    memory = themed.extensions["test_host"]["memory"]
    run("inside-your-layout-4", {"memory": memory, "current_theme": lambda: "dark"})
    with themed.test_client() as client:
        login(client, "admin")
        assert "<p>dark</p>" in client.get(SCREEN).get_data(as_text=True)
    dispose(themed)


def layout_app(database_url: str, config: dict[str, Any]) -> Flask:
    app = create_host_app(database_url, **config)
    app.jinja_loader = DictLoader(  # type: ignore[method-assign]
        {
            "chatmem_layout.html": "<p>plain</p>{% block chatmem_content %}{% endblock %}",
            "_themes/dark/chatmem_layout.html": "<p>{{ _theme }}</p>{% block chatmem_content %}"
            "{% endblock %}",
        }
    )
    return app


def dispose(app: Flask) -> None:
    with app.app_context():
        app.extensions["test_host"]["db"].engine.dispose()


def test_the_layout_the_docs_show_is_the_one_the_browser_check_renders() -> None:
    shown = BLOCKS["inside-your-layout"].text
    tested = ROOT / "tests" / "hosts" / "cdn_layout" / "templates" / "chatmem_layout.html"
    assert shown == tested.read_text()
