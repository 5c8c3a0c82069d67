"""chatmem inside a small Flask-Alembic host (the forum-style setup of issue 26).

Flask-Alembic runs autogenerate in-process from its own migration context,
not from an env.py: its `revision` and `check` must still leave chatmem's
tables out, whichever of the two extensions is set up first, and
`flask chatmem db upgrade --with-host` runs its upgrade (and refuses a
pending host file that would drop the memory).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import Result
from flask import Flask
from flask_alembic import Alembic
from flask_sqlalchemy import SQLAlchemy
from sqlalchemy import Integer, String, inspect
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from chatmem import ChatMemory
from chatmem import migrate as chatmem_migrate
from tests.hosts.microblog.testing import empty_database, invoke


class Base(DeclarativeBase):
    pass


db = SQLAlchemy(model_class=Base)


class Topic(db.Model):  # type: ignore[name-defined,misc]
    __tablename__ = "topic"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    title: Mapped[str] = mapped_column(String(100))


_apps: list[Flask] = []


def forum(url: str, migrations: Path, *, chatmem_first: bool) -> Flask:
    app = Flask("forum")
    app.config.update(
        SQLALCHEMY_DATABASE_URI=url,
        SECRET_KEY="a forum secret key of some length",
        ALEMBIC={"script_location": str(migrations)},
    )
    db.init_app(app)
    alembic, memory = Alembic(), ChatMemory(db=db)
    for extension in (memory, alembic) if chatmem_first else (alembic, memory):
        extension.init_app(app)
    _apps.append(app)
    return app


@pytest.fixture
def url(tmp_path: Path) -> Iterator[str]:
    with empty_database(tmp_path) as url:
        yield url
        while _apps:  # close the pools before the database goes
            with _apps.pop().app_context():
                db.engine.dispose()


def run(app: Flask, *args: str) -> Result:
    """`flask ARGS`. A shell's `flask` (FlaskGroup) pushes an app context for every
    command, Flask-Alembic's too; the test runner pushes one only for AppGroup's."""
    with app.app_context():
        return invoke(app, *args)


def flask(app: Flask, *args: str) -> str:
    result = run(app, *args)
    assert result.exit_code == 0, (result.output, result.exception)
    return str(result.output)


def table_names(app: Flask) -> set[str]:
    with app.app_context():
        return set(inspect(db.engine).get_table_names())


@pytest.mark.parametrize("chatmem_first", [False, True], ids=["alembic-first", "chatmem-first"])
def test_revision_proposes_nothing_for_chatmem_and_with_host_upgrades_both(
    url: str, tmp_path: Path, chatmem_first: bool
) -> None:
    migrations = tmp_path / "migrations"
    app = forum(url, migrations, chatmem_first=chatmem_first)
    flask(app, "chatmem", "db", "upgrade")  # chatmem's tables are there, as in production

    flask(app, "db", "revision", "topics")
    (written,) = migrations.glob("*.py")  # Flask-Alembic keeps revisions in its script_location
    script = written.read_text()
    assert "op.create_table('topic'" in script
    assert "chatmem" not in script

    result = run(app, "chatmem", "db", "upgrade", "--with-host")
    assert result.exit_code == 0, result.output
    assert "host database is upgraded (Flask-Alembic)." in result.output
    assert f"chatmem database is at {chatmem_migrate.head()}." in result.output
    assert {"topic", "alembic_version", "chatmem_guidance"} <= table_names(app)
    flask(app, "db", "check")  # exits 1 on any difference, chatmem's tables included


def test_with_host_refuses_a_pending_file_that_drops_the_memory(url: str, tmp_path: Path) -> None:
    """A file written before chatmem's filter, or by hand, in Flask-Alembic's folder."""
    migrations = tmp_path / "migrations"
    app = forum(url, migrations, chatmem_first=False)
    flask(app, "chatmem", "db", "upgrade")
    flask(app, "db", "mkdir")
    dropping = migrations / "1_old_autogenerate.py"
    dropping.write_text(
        '"""old"""\nfrom alembic import op\n\nrevision = "1"\ndown_revision = None\n'
        "branch_labels = ('default',)\ndepends_on = None\n\n\n"
        "def upgrade():\n    op.drop_table('chatmem_guidance')\n\n\n"
        "def downgrade():\n    pass\n"
    )

    refused = run(app, "chatmem", "db", "upgrade", "--with-host")
    doctor = run(app, "chatmem", "doctor")

    assert refused.exit_code == 1
    assert f"Not upgrading: the host's migration 1 ({dropping}) drops chatmem's tables" in (
        refused.output
    )
    assert "chatmem_guidance" in table_names(app) and "alembic_version" not in table_names(app)
    assert doctor.exit_code == 1
    assert f"1 ({dropping}) drops chatmem's tables" in doctor.output
