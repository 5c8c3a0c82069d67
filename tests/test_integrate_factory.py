"""docs/integrate.md's "In an application factory with Flask-Migrate", run as printed.

Its `extensions.py` and factory, with the "Host tools" block as the glue
module, become a package in a temp folder; the models and the blueprint are
this test's own (the docs leave them to the host). Then the commands the
section names run as shell commands: the host's `db init`/`db migrate`, the
one deploy command, and a second `db migrate` that must find nothing.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.documented import ROOT, markdown_blocks
from tests.hosts.microblog.testing import empty_database
from tests.test_example_blog_migrations import run_flask

SECTION = "in-an-application-factory-with-flask-migrate"
DOC = ROOT / "docs" / "integrate.md"

pytestmark = pytest.mark.slow

MODELS = '''"""The test's own models (the docs leave them to the host)."""
from flask_login import UserMixin

from .extensions import db, login


class User(UserMixin, db.Model):
    id = db.Column(db.Integer, primary_key=True)
    username = db.Column(db.String(64), unique=True)


class Post(db.Model):
    id = db.Column(db.Integer, primary_key=True)
    title = db.Column(db.String(140))
    author_id = db.Column(db.Integer, db.ForeignKey("user.id"))


@login.user_loader
def load_user(user_id):
    return db.session.get(User, int(user_id))
'''
MAIN = """from flask import Blueprint

bp = Blueprint("main", __name__)
"""


def documented_package(folder: Path) -> Path:
    blocks = {b.text.splitlines()[0]: b.text for b in markdown_blocks(DOC) if b.section == SECTION}
    (tool,) = [b.text for b in markdown_blocks(DOC) if b.section == "host-tools"]
    package = folder / "factory_app"
    package.mkdir()
    (package / "extensions.py").write_text(blocks["# yourapp/extensions.py"])
    (package / "__init__.py").write_text(blocks["# yourapp/__init__.py"])
    (package / "models.py").write_text(MODELS)
    (package / "main.py").write_text(MAIN)
    (package / "chatmem_glue.py").write_text(
        "from .extensions import db, memory\nfrom .models import Post\n\n" + tool
    )
    return package


def test_the_documented_factory_migrates_both_and_proposes_nothing_for_chatmem(
    tmp_path: Path,
) -> None:
    package = documented_package(tmp_path)  # its Migrate() uses ./migrations, here tmp_path's

    def flask(*args: str) -> str:
        return run_flask(tmp_path, url, *args, app=package.name)

    with empty_database(tmp_path) as url:
        flask("db", "init")
        first = flask("db", "migrate", "-m", "first")
        deployed = flask("chatmem", "db", "upgrade", "--with-host")
        again = flask("db", "migrate", "-m", "again")

    assert "Detected added table 'post'" in first and "chatmem" not in first
    assert "host database is upgraded (Flask-Migrate)." in deployed
    assert "No changes in schema detected." in again and "chatmem" not in again
