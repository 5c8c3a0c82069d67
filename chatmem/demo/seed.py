"""First run: create the tables and seed the demo's users and posts.

Several gunicorn workers may boot at once against one fresh PostgreSQL
database; a transaction-scoped advisory lock makes one of them do the work
while the others wait and then find it done.
"""

from __future__ import annotations

from sqlalchemy import func, select, text
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
    # chatmem's tables through its migrations (their own advisory lock on PostgreSQL).
    memory.upgrade_db()
    with db.engine.begin() as connection:
        if connection.dialect.name == "postgresql":
            connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _LOCK_KEY})
        Base.metadata.create_all(connection)
        if seed:
            with Session(bind=connection) as session:
                if not session.scalar(select(func.count()).select_from(User)):
                    _seed(session)
                    session.flush()


def _seed(session: Session) -> None:
    for username, capabilities in USERS:
        user = User(username=username, capability_names=capabilities)
        user.set_password(username)  # demo only: the README says so
        session.add(user)
    session.add_all(Post(title=t, post_type=k, content=c) for t, k, c in POSTS)
