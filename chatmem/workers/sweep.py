"""The upkeep sweep's steps, wired to the host: targets gone, review dates due.

The rules are in `memory/staleness.py`; this module gives them what the host
lets the sweep check (registered tools, post ids, post types, labels).
"""

from __future__ import annotations

import logging
from datetime import datetime
from typing import TYPE_CHECKING

from ..memory import staleness

if TYPE_CHECKING:
    from sqlalchemy.orm import Session as OrmSession

    from ..hooks import HostHooks

log = logging.getLogger("chatmem.upkeep")


def resolvers(hooks: HostHooks) -> staleness.Resolvers:
    """What the host lets the sweep check: registered tools, post ids, post types, labels."""
    names = frozenset(t.name.lower() for t in hooks.registry.tools())
    types = None
    if hooks.post_types_hook is not None:
        types = frozenset(str(t).lower() for t in hooks.post_types_hook())
    return staleness.Resolvers(names, hooks.post_type_resolver_hook, types, hooks.label_exists_hook)


def run(
    db: OrmSession,
    hooks: HostHooks,
    *,
    server_name: str,
    review: bool,
    now: datetime | None = None,
) -> staleness.Upkeep:
    """The upkeep sweep steps: targets gone (back to Pending when `review`), review dates due."""
    try:
        found = resolvers(hooks)
    except Exception:
        log.exception("the post_types hook failed; post_type targets not checked this time")
        db.rollback()
        found = staleness.Resolvers(
            frozenset(t.name.lower() for t in hooks.registry.tools()),
            label_exists=hooks.label_exists_hook,
        )
    done = staleness.check_targets(db, found, server_name, review=review, now=now)
    done.review_due = staleness.review_due(db, now=now)
    return done
