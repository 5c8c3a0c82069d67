"""Where mutants run: scratch copies of the project under `.mutate/`, and their database."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from .targets import ROOT

WORK = ROOT / ".mutate"
RUN_TIMEOUT = 300  # seconds; a mutant that hangs its tests this long counts as killed


def scratch_copy(dest: Path, mutmut_settings: str = "") -> None:
    """A copy of the package and tests; `mutmut_settings` join `[tool.mutmut]`."""
    shutil.rmtree(dest, ignore_errors=True)
    dest.mkdir(parents=True)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    # docs/: tests read the reference (the text rules' table of secret kinds).
    for name in ("chatmem", "tests", "docs"):
        shutil.copytree(ROOT / name, dest / name, ignore=ignore)
    shutil.copy2(ROOT / "README.md", dest / "README.md")
    pyproject = (ROOT / "pyproject.toml").read_text()
    header = "[tool.mutmut]\n"
    assert header in pyproject, "pyproject.toml has no [tool.mutmut] table"
    (dest / "pyproject.toml").write_text(pyproject.replace(header, header + mutmut_settings, 1))


#: `--postgres URL`: the focused tests run on PostgreSQL, one database per runner.
POSTGRES_URL = ""


def pytest_env(slot: int = 0) -> dict[str, str]:
    """SQLite (each test its own file, so mutants run side by side), or with `--postgres`
    runner `slot`'s own database (the tests reset its tables); no stale bytecode."""
    database = slot_database(slot) if POSTGRES_URL else ""
    return {**os.environ, "CHATMEM_TEST_DATABASE_URL": database, "PYTHONDONTWRITEBYTECODE": "1"}


def slot_database(slot: int) -> str:
    """`<database>_mutate<slot>` on the `--postgres` server, made on first use."""
    from sqlalchemy import create_engine, make_url, text

    url = make_url(POSTGRES_URL)
    name = f"{url.database}_mutate{slot}"
    engine = create_engine(url.set(database="postgres"), isolation_level="AUTOCOMMIT")
    with engine.connect() as connection:
        known = connection.execute(
            text("SELECT 1 FROM pg_database WHERE datname = :name"), {"name": name}
        ).first()
        if known is None:
            connection.execute(text(f'CREATE DATABASE "{name}"'))
    engine.dispose()
    return url.set(database=name).render_as_string(hide_password=False)


def toml_list(values: tuple[str, ...] | list[str]) -> str:
    return json.dumps(list(values))


@contextmanager
def chdir(path: Path) -> Iterator[None]:
    before = Path.cwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(before)


def copies(name: str) -> list[Path]:
    """Two scratch copies, checked to be what their tests import."""
    made = []
    for slot in range(2):
        copy = WORK / f"{name}-copy-{slot}"
        scratch_copy(copy)
        imported = subprocess.run(
            [sys.executable, "-c", "import chatmem; print(chatmem.__file__)"],
            cwd=copy,
            env=pytest_env(slot),
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        assert imported.startswith(str(copy)), f"the tests would import {imported}, not the copy"
        made.append(copy)
    return made
