"""A per-token rate limit that holds across worker processes.

A fixed one-minute window counted in the database: one upsert per request
(`INSERT ... ON CONFLICT DO UPDATE ... RETURNING`), atomic on SQLite and
PostgreSQL alike, so N gunicorn workers share one budget per token. An
in-process counter would give each worker its own budget, multiplying the
limit by the number of workers.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from sqlalchemy import delete
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert

from ..errors import RateLimited
from ..memory.models import RateCounter

if TYPE_CHECKING:
    from flask_sqlalchemy import SQLAlchemy

WINDOW_SECONDS = 60


def hit(db: SQLAlchemy, token_id: int, limit: int, *, now: float | None = None) -> None:
    """Count one call for this token; RateLimited (with retry_after) past the limit."""
    if limit <= 0:
        return
    now = time.time() if now is None else now
    window = int(now // WINDOW_SECONDS)
    insert = pg_insert if db.engine.dialect.name == "postgresql" else sqlite_insert
    statement = (
        insert(RateCounter)
        .values(token_id=token_id, window=window, count=1)
        .on_conflict_do_update(
            index_elements=[RateCounter.token_id, RateCounter.window],
            set_={"count": RateCounter.count + 1},
        )
        .returning(RateCounter.count)
    )
    count = int(db.session.execute(statement).scalar_one())
    if count == 1:
        # First call of a new window: drop this token's old windows.
        db.session.execute(
            delete(RateCounter).where(RateCounter.token_id == token_id, RateCounter.window < window)
        )
    db.session.commit()
    if count > limit:
        retry_after = max(1, int((window + 1) * WINDOW_SECONDS - now + 0.999))
        raise RateLimited(
            f"Too many calls with this token: at most {limit} a minute. "
            f"Try again in {retry_after} s.",
            details={"retry_after": retry_after},
        )
