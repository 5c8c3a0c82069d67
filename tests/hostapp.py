"""A small host app for the tests: the way a real product plugs chatmem in.

Users live in a plain dict (the host's business, not chatmem's); posts are a
host table on the host's own `db`. The tools are the ones SPEC §12 names.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from flask import Flask, redirect, render_template_string, request, url_for
from flask_login import LoginManager, login_user, logout_user
from flask_sqlalchemy import SQLAlchemy
from sqlalchemy import String, select
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from chatmem import ChatMemory, NotFound


@dataclass
class User:
    id: int
    username: str
    capabilities: set[str] = field(default_factory=set)
    is_authenticated: bool = True
    is_active: bool = True
    is_anonymous: bool = False

    def get_id(self) -> str:
        return str(self.id)


USERS = {
    "admin": User(1, "admin", {"manage_options", "edit_posts"}),
    "editor": User(2, "editor", {"edit_posts"}),
    "viewer": User(3, "viewer", set()),
}


LOGIN_PAGE = """<!doctype html><title>Log in</title>
<form method="post"><input name="username" aria-label="Username">
<input name="password" type="password" aria-label="Password">
<button type="submit">Log in</button></form>"""


def create_host_app(database_url: str, *, seed: bool = True, **config: Any) -> Flask:
    """A host app; `seed=False` makes a second 'worker' on an existing database."""

    class Base(DeclarativeBase):
        pass

    db = SQLAlchemy(model_class=Base)

    class Post(db.Model):  # type: ignore[name-defined]
        __tablename__ = "host_post"
        id: Mapped[int] = mapped_column(primary_key=True)
        title: Mapped[str] = mapped_column(String(200))
        post_type: Mapped[str] = mapped_column(String(40))

    app = Flask("hostapp")
    app.config.update(
        SQLALCHEMY_DATABASE_URI=database_url,
        SECRET_KEY="test",
        TESTING=True,
        **config,
    )
    db.init_app(app)
    memory = ChatMemory(app, db=db)
    login_manager = LoginManager(app)
    login_manager.login_view = "login"
    app.extensions["test_host"] = {"db": db, "Post": Post, "memory": memory, "users": USERS}

    @login_manager.user_loader
    def load_user(user_id: str) -> User | None:
        return next((u for u in USERS.values() if str(u.id) == user_id), None)

    @memory.user_by_name
    def user_by_name(username: str) -> User | None:
        return USERS.get(username)

    @app.route("/login", methods=["GET", "POST"])
    def login() -> Any:
        """The host's own login (test host: the password is the username)."""
        if request.method == "POST":
            user = USERS.get(request.form.get("username", ""))
            if user and request.form.get("password") == user.username:
                login_user(user)
                target = request.args.get("next", "")
                return redirect(
                    target if target.startswith("/") and not target.startswith("//") else "/"
                )
        return render_template_string(LOGIN_PAGE)

    @app.route("/logout")
    def logout() -> Any:
        logout_user()
        return redirect(url_for("login"))

    @memory.post_type_resolver
    def post_type(post_id: Any) -> str | None:
        post = db.session.get(Post, int(post_id)) if str(post_id).isdigit() else None
        return post.post_type if post else None

    @memory.post_types
    def post_types() -> list[str]:
        return list(db.session.scalars(select(Post.post_type).distinct()))

    @memory.tool(
        name="get-post",
        description="Read one post.",
        input_schema={
            "type": "object",
            "properties": {"post_id": {"type": "integer"}},
            "required": ["post_id"],
        },
        read_only=True,
    )
    def get_post(post_id: int) -> dict[str, Any]:
        post = db.session.get(Post, post_id)
        if post is None:
            raise NotFound(f"No post {post_id}.")
        return {"id": post.id, "title": post.title, "post_type": post.post_type}

    @memory.tool(
        name="update-post",
        description="Change a post's title.",
        input_schema={
            "type": "object",
            "properties": {
                "post_id": {"type": "integer"},
                "title": {"type": "string", "maxLength": 200},
                "api_key": {"type": "string"},
            },
            "required": ["post_id", "title"],
        },
    )
    def update_post(post_id: int, title: str, api_key: str | None = None) -> dict[str, Any]:
        post = db.session.get(Post, post_id)
        if post is None:
            raise NotFound(f"No post {post_id}.")
        post.title = title
        return {"id": post.id, "title": post.title}

    @memory.tool(
        name="create-user",
        description="Create a user.",
        input_schema={
            "type": "object",
            "properties": {"username": {"type": "string"}, "password": {"type": "string"}},
            "required": ["username"],
        },
    )
    def create_user(username: str, password: str | None = None) -> dict[str, Any]:
        return {"created": username}

    @memory.tool(
        name="explode",
        description="A host tool with a bug.",
        input_schema={"type": "object", "properties": {}},
    )
    def explode() -> dict[str, Any]:
        raise RuntimeError("secret internal detail")

    if not seed:
        return app
    with app.app_context():
        try:
            _seed(db, memory, Post)
        except BaseException:
            # No fixture will dispose of an app it never got: close its
            # connections now (a pooled psycopg one, dropped open, warns).
            db.session.remove()
            db.engine.dispose()
            raise
    return app


def _seed(db: Any, memory: Any, post: Any) -> None:
    db.drop_all()
    from chatmem.memory.models import Base as ChatmemBase

    ChatmemBase.metadata.drop_all(db.engine)
    db.create_all()
    memory.create_all()
    db.session.add_all(
        [
            post(id=7, title="Hello", post_type="post"),
            post(id=42, title="Checkout", post_type="page"),
            post(id=3, title="Site header", post_type="header_footer"),
        ]
    )
    db.session.commit()


def reconfigure(app: Flask, **settings: Any) -> None:
    """Change CHATMEM_* settings of a running app (chatmem reads them once, at init_app)."""
    app.config.update(settings)
    with app.app_context():
        app.extensions["chatmem"].memory.reload_settings()


def work(app: Flask, step: Any) -> Any:
    """`step(memory, db)` inside the app, as one unit of work (its session removed after)."""
    with app.app_context():
        memory = app.extensions["test_host"]["memory"]
        try:
            return step(memory, memory.db)
        finally:
            memory.db.session.remove()
