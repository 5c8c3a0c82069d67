"""Host migration files that would drop chatmem's tables, found before they run.

Autogenerate no longer writes them (`host_autogenerate`), but a file written
before chatmem kept its tables out of the comparison, or by hand, may still
sit in the host's `migrations/versions/` waiting for the next upgrade. The
doctor names such a file and `flask chatmem db upgrade --with-host` refuses
to run the host's upgrade while one is pending: no step of the documented
deploy loses the memory.

Flask-Migrate's script directory (`Migrate(directory=...)`) and Flask-Alembic's
(its `script_location` and every `version_locations` entry, plugins' too) are
read; other setups are checked by their own review.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

from flask import Flask
from sqlalchemy import Engine

if TYPE_CHECKING:
    from alembic.script import ScriptDirectory

#: `op.drop_table('chatmem_…')` as autogenerate writes it (any quote, any spacing).
_DROPS_CHATMEM = re.compile(r"""\bdrop_table\(\s*['"]chatmem_""")


def pending_drops(app: Flask, engine: Engine) -> list[str]:
    """The host's not-yet-applied revisions that drop a chatmem table: `rev (path)`.

    Needs an app context (Flask-Alembic reads its script directory from it).
    """
    found = _host_script(app, engine)
    if found is None:
        return []
    script, applied_heads = found
    applied = {
        revision.revision
        for head in applied_heads
        for revision in script.iterate_revisions(head, "base")
    }
    return [
        f"{revision.revision} ({revision.path})"
        for revision in script.walk_revisions()
        if revision.revision not in applied
        and revision.path
        and _DROPS_CHATMEM.search(_upgrade_part(Path(revision.path).read_text()))
    ]


def _host_script(app: Flask, engine: Engine) -> tuple[ScriptDirectory, tuple[str, ...]] | None:
    """The host tool's script directory and the heads its version table is at, or None."""
    from alembic.runtime.migration import MigrationContext
    from alembic.script import ScriptDirectory

    migrate = app.extensions.get("migrate")
    if migrate is not None:
        directory = Path(str(getattr(migrate, "directory", "") or ""))
        if not (directory / "env.py").is_file():
            return None
        with engine.connect() as connection:
            heads = MigrationContext.configure(connection).get_current_heads()
        return ScriptDirectory(str(directory)), tuple(heads)
    alembic = app.extensions.get("alembic")
    if alembic is not None:
        # Its own context: the host's version table and ALEMBIC_CONTEXT options.
        return alembic.script_directory, tuple(alembic.migration_context.get_current_heads())
    return None


def _upgrade_part(source: str) -> str:
    """The file's `upgrade()` only: its `downgrade()` may rightly drop what it created."""
    start = source.find("def upgrade(")
    end = source.find("def downgrade(", start + 1)
    return source[start:end] if start >= 0 and end > start else source[max(start, 0) :]
