"""The forum example end to end: a plugin holds chatmem's glue, guardrails name forums and topics.

`forum/` is a host with plugins and themes and no app templates folder;
`forum_chatmem/` is the plugin that plugs chatmem in. This script builds it
on a fresh SQLite file and shows a guardrail on a forum, the Memory screen
drawn in the page's theme, and upkeep noticing a deleted topic. From the
checkout::

    .venv/bin/python examples/forum/tour.py
"""

import re
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from forum import create_app  # noqa: E402
from forum.models import Forum, Post, Topic, User, db  # noqa: E402
from forum_chatmem import memory  # noqa: E402

from chatmem import ChatmemError  # noqa: E402


def attempt(tool, arguments, user):
    try:
        return memory.call_tool(tool, arguments, user=user)
    except ChatmemError as error:
        return f"refused: {error.code}"


def main():
    database = Path(tempfile.mkdtemp()) / "forum.db"
    app = create_app({"SQLALCHEMY_DATABASE_URI": f"sqlite:///{database}"})
    with app.app_context():
        db.create_all()  # the forum's tables (its own migration tool, in real life)
        memory.upgrade_db()  # chatmem's tables: flask chatmem db upgrade
        db.session.add_all(
            [User(id=1, username="alice", is_moderator=True), User(id=2, username="bob")]
        )
        db.session.add_all([Forum(id=2, name="News"), Forum(id=3, name="Chat")])
        db.session.add_all(
            [
                Topic(id=14, title="Release", forum_id=2, author_id=2),
                Topic(id=15, title="Hello", forum_id=3, author_id=2),
                Topic(id=16, title="Lunch", forum_id=3, author_id=1),
            ]
        )
        db.session.add_all(
            [Post(id=1, text="v2 is out", topic_id=14), Post(id=2, text="hi", topic_id=15)]
        )
        db.session.add(Post(id=3, text="pizza?", topic_id=16))
        db.session.commit()

    # Alice, a moderator, adds two guardrails on the Memory screen, in the dark theme.
    with app.test_client() as browser:
        browser.post("/login", data={"username": "alice", "password": "alice"})
        page = browser.get("/chatmem/memory?theme=dark").get_data(as_text=True)
        print("Memory screen:", re.search(r"<title>(.*?)</title>", page, re.S)[1].strip())
        print("its theme stylesheet:", re.search(r'href="(/theme/[^"]+)"', page)[1])
        for target in ("label:forum:2", "label:topic:15"):
            browser.post(
                "/chatmem/memory/guidance",
                data={
                    "csrf_token": re.search(r'name="csrf_token" value="([^"]+)"', page)[1],
                    "type": "guardrail",
                    "text": f"Agents leave {target[6:]} alone.",
                    "target": target,
                    "severity": "block",
                },
            )

    with app.app_context():
        bob = db.session.get(User, 2)
        print("edit a post in forum 2:", attempt("edit-post", {"post_id": 1, "text": "v3"}, bob))
        print(
            "move topic 15 into forum 2:",
            attempt("move-topic", {"topic_id": 15, "forum_id": 2}, bob),
        )
        print(
            "edit a post in forum 3:", attempt("edit-post", {"post_id": 3, "text": "pasta?"}, bob)
        )
        print("edit a post in topic 15:", attempt("edit-post", {"post_id": 2, "text": "hey"}, bob))
        db.session.delete(db.session.get(Post, 2))
        db.session.delete(db.session.get(Topic, 15))
        db.session.commit()
        print("upkeep after topic 15 was deleted:", memory.upkeep())


if __name__ == "__main__":
    main()
