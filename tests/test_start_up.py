"""What a `flask chatmem …` command or the demo costs to start (issue 25, point 12):
the provider SDKs, the MCP SDK and Alembic are imported only when used. Each
check runs a fresh interpreter, as a command does, and looks at `sys.modules`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from chatmem import migrate

pytestmark = pytest.mark.db_free  # its own SQLite files in tmp_path

ROOT = Path(__file__).resolve().parent.parent
LAZY = ("openai", "anthropic", "mcp", "alembic", "mako", "httpx")


def loaded_after(code: str, tmp_path: Path) -> set[str]:
    """Which of LAZY a fresh Python has imported after running `code`."""
    probe = f"{code}\nimport sys, json\nprint(json.dumps(sorted(set(sys.modules) & {set(LAZY)!r})))"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CHATMEM_", "DATABASE_URL"))}
    done = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env={**env, "PYTHONPATH": str(ROOT)},
    )
    assert done.returncode == 0, done.stderr
    return set(json.loads(done.stdout.splitlines()[-1]))


def test_importing_the_demo_loads_no_sdk_and_no_alembic(tmp_path: Path) -> None:
    assert loaded_after("import chatmem.demo", tmp_path) == set()


def test_a_second_start_on_a_migrated_database_skips_alembic(tmp_path: Path) -> None:
    start = (
        "from chatmem.demo import create_app\n"
        f"create_app({{'SQLALCHEMY_DATABASE_URI': 'sqlite:///{tmp_path}/demo.db', "
        f"'CHATMEM_PROVIDER': 'none'}}, instance_path={str(tmp_path / 'instance')!r})"
    )
    assert "alembic" in loaded_after(start, tmp_path), "the first start migrates"
    assert loaded_after(start, tmp_path) == set(), "at head: one SELECT, no Alembic"


def test_the_head_read_from_file_names_is_alembics() -> None:
    assert migrate.head() == migrate.HEAD


@pytest.mark.parametrize("stored", [None, "0009"])
def test_a_database_behind_head_is_still_upgraded(tmp_path: Path, stored: str | None) -> None:
    from sqlalchemy import create_engine, text

    engine = create_engine(f"sqlite:///{tmp_path}/behind.db")
    try:
        migrate.upgrade(engine)
        if stored:
            migrate.downgrade(engine, stored)
        else:
            migrate.downgrade(engine, "base")
        assert migrate.stored_revision(engine) == stored
        migrate.upgrade(engine)
        with engine.connect() as connection:
            rows = connection.execute(text("SELECT version_num FROM chatmem_alembic_version"))
            assert rows.scalars().all() == [migrate.HEAD]
    finally:
        engine.dispose()
