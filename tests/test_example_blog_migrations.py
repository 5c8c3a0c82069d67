"""examples/blog run as its tour says: its own `flask db migrate` proposes nothing for chatmem.

The example's migrations folder is the host's, made by `flask db init/migrate`.
After both upgrades (the blog's and chatmem's), the blog's next autogenerate
must find no difference at all: chatmem's tables are left out with no line
in the blog's code. Each command is a new `flask` process, as in a shell.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.hosts.microblog.testing import empty_database

BLOG = Path(__file__).resolve().parents[1] / "examples" / "blog"
CHECKOUT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.slow


def run_flask(cwd: Path, url: str, *args: str, app: str = "blog") -> str:
    """`flask --app APP ARGS` in `cwd`; it must succeed. stdout and stderr together."""
    env = {
        **os.environ,
        "DATABASE_URL": url,
        "PYTHONPATH": str(CHECKOUT),  # this checkout's chatmem, not the venv's install
        "PYTHONWARNINGS": "ignore::DeprecationWarning",  # Flask-Migrate's env.py: get_engine()
    }
    done = subprocess.run(
        [sys.executable, "-m", "flask", "--app", app, *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    said = done.stdout + done.stderr
    assert done.returncode == 0, said
    return said


def test_blog_autogenerate_after_both_upgrades_proposes_nothing(tmp_path: Path) -> None:
    copy = tmp_path / "blog"
    shutil.copytree(BLOG, copy, ignore=shutil.ignore_patterns("__pycache__", "*.db"))
    versions = sorted(p.name for p in (copy / "migrations" / "versions").glob("*.py"))

    with empty_database(tmp_path) as url:
        run_flask(copy, url, "db", "upgrade")
        run_flask(copy, url, "chatmem", "db", "upgrade")
        said = run_flask(copy, url, "db", "migrate", "-m", "nothing to do")

    assert "No changes in schema detected." in said, said
    assert "chatmem" not in said, "not even a 'Detected removed table' line"
    assert sorted(p.name for p in (copy / "migrations" / "versions").glob("*.py")) == versions
