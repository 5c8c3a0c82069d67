"""chatmem inside a factory-style host with Flask-Migrate (tests/hosts/microblog).

The host runs its own `flask db init/migrate/upgrade` as it always does; none
of it may propose to touch chatmem's tables, in either setup order, and the
host's pages, forms, error pages and commands behave as without chatmem.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from flask import Flask, render_template_string
from flask.testing import FlaskClient
from sqlalchemy import text

from chatmem import migrate as chatmem_migrate
from tests.hosts.microblog.app.extensions import db
from tests.hosts.microblog.testing import (
    close_apps,
    empty_database,
    flask,
    invoke,
    logging_kept,
    make_app,
    tables,
)

# Flask-Migrate's own env.py template still tries Flask-SQLAlchemy's old
# `get_engine()` first: the host's file, not chatmem's business.
pytestmark = pytest.mark.filterwarnings("ignore:'get_engine' is deprecated:DeprecationWarning")


@pytest.fixture
def url(tmp_path: Path) -> Iterator[str]:
    with empty_database(tmp_path) as url:
        yield url
    close_apps()


def host_revision(app: Flask, migrations: Path) -> str:
    """`flask db init` + `flask db migrate`: the text of the file autogenerate wrote."""
    flask(app, "db", "init", "-d", str(migrations))
    said = flask(app, "db", "migrate", "-d", str(migrations), "-m", "users and posts")
    assert "Detected added table 'user'" in said
    assert "chatmem" not in said, "not even a 'Detected removed table' line"
    (written,) = (migrations / "versions").glob("*.py")
    return written.read_text()


@pytest.mark.parametrize("chatmem_first", [False, True], ids=["migrate-first", "chatmem-first"])
def test_host_autogenerate_never_proposes_chatmem_tables(
    url: str, tmp_path: Path, chatmem_first: bool
) -> None:
    app = make_app(url, chatmem_first=chatmem_first)
    flask(app, "chatmem", "db", "upgrade")  # chatmem's tables are there, as in production
    assert {"chatmem_guidance", "chatmem_alembic_version"} <= tables(app)

    script = host_revision(app, tmp_path / "migrations")

    assert "op.create_table('user'" in script and "op.create_table('post'" in script
    assert "chatmem" not in script
    flask(app, "db", "upgrade", "-d", str(tmp_path / "migrations"))
    again = flask(app, "db", "migrate", "-d", str(tmp_path / "migrations"), "-m", "nothing")
    assert "No changes in schema detected." in again
    flask(app, "db", "check", "-d", str(tmp_path / "migrations"))  # exits 1 on a difference
    assert len(list((tmp_path / "migrations" / "versions").glob("*.py"))) == 1


def test_plain_alembic_env_comparing_db_metadata_leaves_chatmem_out(url: str) -> None:
    """An env.py of the host's own (or Flask-Alembic): it compares `db.metadata` too."""
    from alembic.autogenerate import compare_metadata
    from alembic.migration import MigrationContext

    app = make_app(url)
    flask(app, "chatmem", "db", "upgrade")
    with app.app_context():
        with db.engine.connect() as connection:
            diff = compare_metadata(MigrationContext.configure(connection), db.metadata)
        db.engine.dispose()
    added = {change[1].name for change in diff if change[0] == "add_table"}
    assert added == {"user", "post"}
    assert "chatmem" not in repr(diff)


HAND_WRITTEN_ENV = """
from alembic import context

from tests.hosts.microblog.app import create_app
from tests.hosts.microblog.app.extensions import db

app = create_app({"SQLALCHEMY_DATABASE_URI": context.config.get_main_option("sqlalchemy.url")})
with app.app_context():
    with db.engine.connect() as connection:
        context.configure(connection=connection, target_metadata=db.metadata)
        with context.begin_transaction():
            context.run_migrations()
    db.engine.dispose()
"""


def test_a_hand_written_alembic_env_leaves_chatmem_out(url: str, tmp_path: Path) -> None:
    """`alembic revision --autogenerate` and `alembic check` with an env.py of the host's own."""
    from alembic import command
    from alembic.config import Config

    flask(make_app(url), "chatmem", "db", "upgrade")
    config = Config(str(tmp_path / "alembic.ini"))
    config.set_main_option("script_location", str(tmp_path / "alembic"))
    config.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    with logging_kept():
        command.init(config, str(tmp_path / "alembic"))
        (tmp_path / "alembic" / "env.py").write_text(HAND_WRITTEN_ENV)
        command.revision(config, message="first", autogenerate=True)
        (written,) = (tmp_path / "alembic" / "versions").glob("*.py")
        script = written.read_text()
        command.upgrade(config, "head")
        command.check(config)  # raises if anything is left to do
    assert "op.create_table('user'" in script and "chatmem" not in script


@pytest.mark.parametrize(
    "chatmem_upgrade_first", [True, False], ids=["chatmem-host", "host-chatmem"]
)
def test_both_upgrades_in_either_order(
    url: str, tmp_path: Path, chatmem_upgrade_first: bool
) -> None:
    # The host's migration, written by autogenerate on a scratch database.
    scratch = make_app(f"sqlite:///{tmp_path / 'scratch.db'}")
    host_revision(scratch, tmp_path / "migrations")

    app = make_app(url)
    upgrades = [
        ("chatmem", "db", "upgrade"),
        ("db", "upgrade", "-d", str(tmp_path / "migrations")),
    ]
    for command in upgrades if chatmem_upgrade_first else upgrades[::-1]:
        flask(app, *command)

    names = tables(app)
    assert {"user", "post", "alembic_version", "chatmem_alembic_version"} <= names
    assert {"chatmem_state", "chatmem_guidance", "chatmem_ledger"} <= names
    with app.app_context():
        assert chatmem_migrate.current(db.engine) == chatmem_migrate.head()
        with db.engine.connect() as connection:
            assert connection.execute(text("SELECT version_num FROM alembic_version")).scalar()
        db.engine.dispose()
    flask(app, "db", "check", "-d", str(tmp_path / "migrations"))  # exits 1 on a difference


def test_one_deploy_command_upgrades_the_host_then_chatmem(
    url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`flask chatmem db upgrade --with-host`, from the folder holding `migrations/`."""
    monkeypatch.chdir(tmp_path)
    host_revision(make_app(f"sqlite:///{tmp_path / 'scratch.db'}"), Path("migrations"))
    app = make_app(url)

    result = invoke(app, "chatmem", "db", "upgrade", "--with-host")

    assert result.exit_code == 0, result.output
    assert result.stdout == f"chatmem database is at {chatmem_migrate.head()}.\n"
    assert "host database is upgraded (Flask-Migrate)." in result.stderr
    assert {"user", "post", "alembic_version", "chatmem_guidance"} <= tables(app)
    again = invoke(app, "chatmem", "db", "upgrade", "--with-host")
    assert again.exit_code == 0 and again.stdout == result.stdout


def csrf_token(page: str) -> str:
    match = re.search(r'name="csrf_token" type="hidden" value="([^"]+)"', page)
    assert match, page
    return match.group(1)


def sign_in(client: FlaskClient, username: str, password: str) -> None:
    token = csrf_token(client.get("/auth/login").get_data(as_text=True))
    answer = client.post(
        "/auth/login", data={"username": username, "password": password, "csrf_token": token}
    )
    assert answer.status_code == 302 and answer.headers["Location"] == "/index"


@pytest.fixture
def host_only(url: str) -> Flask:
    """The host's tables made by `db.create_all()`, chatmem's never: a test fixture's way."""
    app = make_app(url)
    with app.app_context():
        db.create_all()
    assert not any(name.startswith("chatmem_") for name in tables(app))
    assert "Added alice." in flask(app, "microblog", "add-user", "alice", "wonderland")
    return app


def test_host_pages_answer_with_chatmem_tables_missing(
    host_only: Flask, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="chatmem")
    with host_only.test_client() as client:
        sign_in(client, "alice", "wonderland")
        token = csrf_token(client.get("/index").get_data(as_text=True))
        posted = client.post("/index", data={"post": "hello", "csrf_token": token})
        assert posted.status_code == 302
        for _ in range(2):
            page = client.get("/index")
            assert page.status_code == 200
            html = page.get_data(as_text=True)
            # The badge renders nothing, the link stays; the footer's query runs
            # after the badge on the same session (on PostgreSQL: not aborted).
            assert 'href="/chatmem/memory"' in html and 'id="memory-badge"' not in html
            assert "alice says: hello" in html and "1 members" in html
    missing = [r for r in caplog.records if "chatmem's tables are missing" in r.getMessage()]
    assert len(missing) == 1, "logged once, not on every page"


def test_badge_counts_once_the_tables_are_made(host_only: Flask) -> None:
    with host_only.test_client() as client:
        sign_in(client, "alice", "wonderland")
        assert 'id="memory-badge"' not in client.get("/index").get_data(as_text=True)
        flask(host_only, "chatmem", "db", "upgrade")
        with host_only.app_context():
            memory = host_only.extensions["chatmem"].memory
            alice = memory.load_user_by_name("alice")
            memory.call_tool(
                "remember", {"type": "fact", "text": "Posts are 140 characters."}, user=alice
            )
        html = client.get("/index").get_data(as_text=True)
    assert '<span class="badge" id="memory-badge">1</span>' in html


def test_badge_with_the_database_down_renders_nothing(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    app = make_app(f"sqlite:///{tmp_path / 'no such folder' / 'down.db'}")
    caplog.set_level(logging.WARNING, logger="chatmem")
    template = "[{{ chatmem_pending_count() }}] [{{ chatmem_memory_url() }}]"
    with app.test_request_context("/"):
        assert render_template_string(template) == "[0] [/chatmem/memory]"
        assert render_template_string(template) == "[0] [/chatmem/memory]"
    logged = [r for r in caplog.records if "did not answer" in r.getMessage()]
    assert len(logged) == 1


def test_host_csrf_error_pages_and_cli_are_unchanged(url: str) -> None:
    app = make_app(url, TESTING=False)
    flask(app, "chatmem", "db", "upgrade")
    with app.app_context():
        db.create_all()
    flask(app, "microblog", "add-user", "alice", "wonderland")
    assert "add-user" in flask(app, "microblog", "--help")
    assert {"upgrade", "migrate", "init"} <= set(
        re.findall(r"^  (\w+)", flask(app, "db", "--help"), re.M)
    )
    with app.test_client() as client:
        sign_in(client, "alice", "wonderland")
        refused = client.post("/index", data={"post": "no token"})
        assert refused.status_code == 400 and "The CSRF token is missing." in refused.get_data(
            as_text=True
        )
        missing = client.get("/no-such-page")
        assert missing.status_code == 404
        assert "Microblog: File Not Found" in missing.get_data(as_text=True)
        broken = client.get("/boom")
        assert broken.status_code == 500
        assert "Microblog: An unexpected error has occurred" in broken.get_data(as_text=True)
        assert "alice says" not in client.get("/index").get_data(as_text=True)


def test_the_documented_fixture_gives_chatmem_its_tables(
    url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """integrate.md's fixture: `db.create_all()` then `memory.create_all()`."""
    app = make_app(url)
    with app.app_context():
        db.create_all()
        memory = app.extensions["chatmem"].memory
        memory.create_all()
    flask(app, "microblog", "add-user", "alice", "wonderland")
    with app.test_client() as client:
        sign_in(client, "alice", "wonderland")
        token = csrf_token(client.get("/index").get_data(as_text=True))
        client.post("/index", data={"post": "first", "csrf_token": token})
        with app.app_context():
            alice = memory.load_user_by_name("alice")
            edited = memory.call_tool("edit-post", {"post_id": 1, "body": "edited"}, user=alice)
            db.session.commit()
        assert edited == {"id": 1, "body": "edited"}
        assert "alice says: edited" in client.get("/index").get_data(as_text=True)
    assert not [r for r in caplog.records if r.name.startswith("chatmem")]


def test_a_pending_host_revision_that_drops_chatmem_tables_is_stopped(
    url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file written before chatmem filtered autogenerate (or by hand) never runs in the recipe."""
    monkeypatch.chdir(tmp_path)  # Migrate's default directory, "migrations", is relative
    app = make_app(url)
    flask(app, "chatmem", "db", "upgrade")
    host_revision(app, Path("migrations"))
    flask(app, "db", "upgrade")
    flask(app, "db", "revision", "-m", "old autogenerate")
    (old,) = Path("migrations/versions").glob("*old_autogenerate.py")
    source = old.read_text()
    old.write_text(
        re.sub(r"(def upgrade\(\):\n)", r"\1    op.drop_table('chatmem_ledger')\n", source, count=1)
    )
    revision = re.search(r"^revision = '(\w+)'", source, re.M)[1]  # type: ignore[index]

    told = invoke(app, "chatmem", "doctor")
    refused = invoke(app, "chatmem", "db", "upgrade", "--with-host")

    assert told.exit_code == 1
    assert f"problem host migrations  {revision} (" in told.output
    assert refused.exit_code == 1
    assert f"Not upgrading: the host's migration {revision} (" in refused.output
    assert "chatmem_ledger" in tables(app)
    old.write_text(source)  # the line deleted, as both messages say
    assert invoke(app, "chatmem", "db", "upgrade", "--with-host").exit_code == 0
    assert "chatmem_ledger" in tables(app)
    after = invoke(app, "chatmem", "doctor").output
    assert "problem host migrations" not in after
    assert "No pending host revision drops chatmem's tables." in after, "the check says it ran"
