"""Host migration files that would drop chatmem's tables, found before they run.

Autogenerate no longer writes them (`host_autogenerate`), but a file written
before chatmem kept its tables out of the comparison, or by hand, may still
sit in the host's `migrations/versions/` waiting for the next upgrade. The
doctor names such a file and `flask chatmem db upgrade --with-host` refuses
to run the host's upgrade while one is pending: no step of the documented
deploy loses the memory.

Only Flask-Migrate's script directory is read (`Migrate(directory=...)`);
other setups are checked by their own review.
"""

from __future__ import annotations

import re
from pathlib import Path

from flask import Flask
from sqlalchemy import Engine

#: `op.drop_table('chatmem_…')` as autogenerate writes it (any quote, any spacing).
_DROPS_CHATMEM = re.compile(r"""\bdrop_table\(\s*['"]chatmem_""")


def pending_drops(app: Flask, engine: Engine) -> list[str]:
    """The host's not-yet-applied revisions that drop a chatmem table: `rev (path)`."""
    from alembic.runtime.migration import MigrationContext
    from alembic.script import ScriptDirectory

    migrate = app.extensions.get("migrate")
    directory = Path(str(getattr(migrate, "directory", "") or ""))
    if migrate is None or not (directory / "env.py").is_file():
        return []
    script = ScriptDirectory(str(directory))
    with engine.connect() as connection:
        applied_heads = MigrationContext.configure(connection).get_current_heads()
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


def _upgrade_part(source: str) -> str:
    """The file's `upgrade()` only: its `downgrade()` may rightly drop what it created."""
    start = source.find("def upgrade(")
    end = source.find("def downgrade(", start + 1)
    return source[start:end] if start >= 0 and end > start else source[max(start, 0) :]
