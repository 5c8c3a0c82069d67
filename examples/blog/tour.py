"""The blog example end to end: migrations, a tool call, a guardrail on an author, the screen.

`blog/` is a factory-style Flask app (blueprints, Flask-Migrate, Flask-Login,
Flask-WTF, a Bootstrap layout from a CDN) with chatmem plugged in. This
script builds it on a fresh SQLite file, runs both migrations, and shows
the glue at work. From the checkout::

    .venv/bin/python examples/blog/tour.py

To run the blog itself, from ``examples/blog``: ``flask --app blog db upgrade``,
``flask --app blog chatmem db upgrade``, then ``flask --app blog run``.
"""

import re
import sys
import tempfile
from pathlib import Path

from flask_migrate import upgrade

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from blog import create_app  # noqa: E402
from blog.extensions import db, memory  # noqa: E402
from blog.models import Post, User  # noqa: E402

from chatmem import ChatmemError  # noqa: E402


def token_of(html):
    return re.search(r'name="csrf_token" value="([^"]+)"', html)[1]


def main():
    database = Path(tempfile.mkdtemp()) / "blog.db"
    app = create_app({"SQLALCHEMY_DATABASE_URI": f"sqlite:///{database}"})
    with app.app_context():
        upgrade(directory=str(HERE / "migrations"))  # the blog's own tables: flask db upgrade
        memory.upgrade_db()  # chatmem's: flask chatmem db upgrade
        for name, admin in (("susan", True), ("john", False)):
            user = User(username=name, is_admin=admin)
            user.set_password(name)
            db.session.add(user)
        db.session.flush()
        db.session.add_all(
            [Post(id=1, title="Hello", author_id=1), Post(id=2, title="Hi", author_id=2)]
        )
        db.session.commit()
        susan, john = db.session.get(User, 1), db.session.get(User, 2)

        print(
            "john edits his post:",
            memory.call_tool("update-post", {"post_id": 2, "title": "Hi!"}, user=john),
        )
        try:
            memory.call_tool("update-post", {"post_id": 1, "title": "Mine now"}, user=john)
        except ChatmemError as error:
            print(f"john edits susan's post: refused: {error.code}: {error.message}")

    # Susan, the curator, adds a guardrail on the Memory screen, as her browser would.
    with app.test_client() as browser:
        csrf = token_of(browser.get("/login").get_data(as_text=True))
        browser.post("/login", data={"username": "susan", "password": "susan", "csrf_token": csrf})
        screen = browser.get("/chatmem/memory")
        page = screen.get_data(as_text=True)
        print("Memory screen:", re.search(r"<title>(.*?)</title>", page, re.S)[1].strip())
        csp = screen.headers["Content-Security-Policy"]
        print("its style-src:", next(d for d in csp.split("; ") if d.startswith("style-src")))
        added = browser.post(
            "/chatmem/memory/guidance",
            data={
                "csrf_token": token_of(page),
                "type": "guardrail",
                "text": "Agents never edit Susan's posts.",
                "target": "label:author:susan",
                "severity": "block",
            },
            headers={"Accept": "application/json"},
        )
        print("guardrail:", added.json["entry"]["target"], added.json["entry"]["status"])

    with app.app_context():
        susan = db.session.get(User, 1)
        try:
            memory.call_tool("update-post", {"post_id": 1, "title": "Sale!"}, user=susan)
        except ChatmemError as error:
            print(f"an agent edits susan's post: refused: {error.code}")
        print("dry run:", memory.dry_run("label:author:susan").summary())


if __name__ == "__main__":
    main()
