"""First run: create the tables and seed the demo's users and posts.

Several gunicorn workers may boot at once against one fresh database; one of
them does the work while the others wait and then find it done: on
PostgreSQL a transaction-scoped advisory lock, on a SQLite file an exclusive
lock on a file beside it (SQLite's own locks do not cover creating tables).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

from sqlalchemy import Connection, Engine, func, inspect, select, text
from sqlalchemy.orm import Session

from .extensions import Base, db, memory
from .models import Post, User

_LOCK_KEY = 0x63686D64  # "chmd": any constant unique to this app will do

USERS = (
    ("admin", "manage_options edit_posts"),
    ("editor", "edit_posts"),
    ("viewer", ""),
)
POSTS = (
    ("Welcome to the demo", "post", "This site is run by an AI assistant with a project memory."),
    ("Spring release notes", "post", "Faster checkout, a new search box and fewer bugs."),
    ("About us", "page", "We are a small shop that sells hand-made notebooks."),
    ("Checkout", "page", "Review your basket and pay."),
    ("Site header", "header_footer", "Logo · Shop · About · Basket"),
    ("Site footer", "header_footer", "© The notebook shop · Privacy · Terms"),
)


def setup_database(*, seed: bool = True) -> None:
    """Create missing tables and, on an empty database, the demo content. Idempotent."""
    with _sqlite_file_lock(db.engine):
        _setup(seed)


def _setup(seed: bool) -> None:
    # chatmem's tables through its migrations (their own advisory lock on PostgreSQL).
    memory.upgrade_db()
    with db.engine.begin() as connection:
        if connection.dialect.name == "postgresql":
            connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _LOCK_KEY})
        Base.metadata.create_all(connection)
        _add_missing_columns(connection)
        if seed:
            with Session(bind=connection) as session:
                if not session.scalar(select(func.count()).select_from(User)):
                    _seed(session)
                    session.flush()


def _add_missing_columns(connection: Connection) -> None:
    """A demo database made before a column existed gets it (create_all adds tables only)."""
    have = {column["name"] for column in inspect(connection).get_columns("demo_user")}
    if "session_nonce" not in have:
        # Empty for existing users: their cookies keep working until they log out.
        connection.execute(
            text("ALTER TABLE demo_user ADD COLUMN session_nonce VARCHAR(64) DEFAULT '' NOT NULL")
        )


def _seed(session: Session) -> None:
    for username, capabilities in USERS:
        user = User(username=username, capability_names=capabilities)
        user.set_password(username)  # demo only: the README says so
        session.add(user)
    session.add_all(Post(title=t, post_type=k, content=c) for t, k, c in POSTS)


@contextlib.contextmanager
def _sqlite_file_lock(engine: Engine) -> Iterator[None]:
    """One process at a time sets up a SQLite file; elsewhere (or without fcntl), a no-op."""
    path = engine.url.database if engine.dialect.name == "sqlite" else None
    try:
        import fcntl
    except ImportError:  # Windows: one process at a time is the user's business there
        fcntl = None  # type: ignore[assignment]  # no fcntl off POSIX
    if not path or path == ":memory:" or fcntl is None:
        yield
        return
    with Path(f"{path}.setup-lock").open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
