"""The host's autogenerate never proposes to drop (or touch) chatmem's tables.

chatmem's tables share the host's database but not its metadata
(`memory.models.Base`), so a host's `flask db migrate` (Flask-Migrate),
Flask-Alembic's `revision`/`check`, or a plain Alembic `env.py` comparing
`db.metadata` with the database would find them "removed" and write
`op.drop_table('chatmem_…')`: an upgrade on that file erases the memory.

Rather than asking every host for an `include_name` line (and getting it
forgotten once), chatmem adds one comparison function to Alembic's global
registry, the documented extension point every autogenerate reads, whichever
tool drives it and in whichever order it was set up: it runs after Alembic's
own table comparison and takes out every operation on a chatmem table. It is
registered when `ChatMemory` is made, so any process that builds the host app
(or just imports the module holding `ChatMemory(...)`) has it.

chatmem's own migrations compare `Base.metadata` and are left alone.
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import sys
import threading
from typing import Any

_lock = threading.Lock()
_installed = False


def owned_by_chatmem(table_name: str | None) -> bool:
    """chatmem's tables, its version table and its search objects (all `chatmem_…`)."""
    return bool(table_name) and str(table_name).startswith("chatmem_")


def include_name(name: str | None, type_: str, parent_names: Any) -> bool:
    """For a host that prefers the explicit line: `include_name=host_autogenerate.include_name`.

    Not needed once `ChatMemory` is imported; kept for an `env.py` that
    imports neither the host app nor the module that makes `ChatMemory`.
    """
    if type_ == "table":
        return not owned_by_chatmem(name)
    return not owned_by_chatmem(parent_names.get("table_name")) if parent_names else True


def install() -> None:
    """Register the filter with Alembic once per process, without importing Alembic.

    Importing Alembic costs a CLI start a second or more on a busy machine,
    and only an autogenerate needs the filter: when Alembic is not loaded
    yet, the filter is registered the moment it is (`_WhenAlembicLoads`).
    """
    with _lock:
        if _installed or any(isinstance(f, _WhenAlembicLoads) for f in sys.meta_path):
            return
        if "alembic" in sys.modules:
            _register()
        else:
            sys.meta_path.insert(0, _WhenAlembicLoads())


class _WhenAlembicLoads(importlib.abc.MetaPathFinder):
    """Finds nothing itself: it lets the real finder load `alembic`, then registers."""

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if fullname != "alembic":
            return None
        sys.meta_path.remove(self)  # once; and the look-up below must not find us again
        spec = importlib.util.find_spec(fullname)
        if spec is None or spec.loader is None:
            return spec
        run = spec.loader.exec_module

        def exec_module(module: Any) -> None:
            run(module)
            with _lock:
                _register()

        spec.loader.exec_module = exec_module  # type: ignore[method-assign]  # wrapping the loader's method is the point
        return spec


def _register() -> None:
    global _installed
    if _installed:
        return
    from alembic.autogenerate import comparators

    try:  # Alembic >= 1.18 orders comparison functions by priority
        from alembic.util import DispatchPriority, PriorityDispatchResult
    except ImportError:  # older: functions run in the order registered, after Alembic's
        comparators.dispatch_for("schema")(_drop_chatmem_ops)
    else:

        def first(*args: Any) -> Any:
            _skip_chatmem_names(*args)
            return PriorityDispatchResult.CONTINUE

        def last(*args: Any) -> Any:
            _drop_chatmem_ops(*args)
            return PriorityDispatchResult.CONTINUE

        comparators.dispatch_for("schema", priority=DispatchPriority.FIRST)(first)
        comparators.dispatch_for("schema", priority=DispatchPriority.LAST)(last)
    _installed = True


def _skip_chatmem_names(autogen_context: Any, upgrade_ops: Any, schemas: Any) -> None:
    """Before Alembic reflects: never look at chatmem's tables at all.

    Without it the comparison still comes out right (`_drop_chatmem_ops`),
    but Alembic first logs "Detected removed table 'chatmem_ledger'" for
    every table, which reads as if the next upgrade would drop it. The
    context's list of name filters is not public, so this is a courtesy
    and `_drop_chatmem_ops` stays the guarantee.
    """
    filters = getattr(autogen_context, "_name_filters", None)
    if (
        isinstance(filters, list)
        and include_name not in filters
        and not _compares_chatmem_models(autogen_context.metadata)
    ):
        filters.append(include_name)


def _drop_chatmem_ops(autogen_context: Any, upgrade_ops: Any, schemas: Any) -> None:
    if _compares_chatmem_models(autogen_context.metadata):
        return  # chatmem's own `db revision`: its tables are the point
    upgrade_ops.ops[:] = [
        op for op in upgrade_ops.ops if not owned_by_chatmem(getattr(op, "table_name", None))
    ]


def _compares_chatmem_models(metadata: Any) -> bool:
    from .memory.models import Base

    metadatas = metadata if isinstance(metadata, list | tuple) else [metadata]
    return any(m is Base.metadata for m in metadatas)
