"""chatmem's Python API: the object every route, command and host talks to.

`ChatMemory` (extension.py) is this plus the Flask wiring: blueprints, the
CLI and the background sweeper. The routes and commands type against
`MemoryCore` and reach it with `current_memory()`, so nothing below the
extension imports it back. Per-app state (settings, the dispatcher, the
revision cache) lives in ``app.extensions["chatmem"]``.
"""

from __future__ import annotations

import time
from datetime import datetime
from types import SimpleNamespace
from typing import Any, cast

from flask import current_app
from flask_sqlalchemy import SQLAlchemy

from . import state as _app_state
from .dispatch import Dispatcher
from .errors import NotFound
from .hooks import HostHooks
from .identity import HostUser
from .memory import audit as _audit  # noqa: F401 - seals audit events as they are written
from .memory import block as _block
from .memory import costs as _costs
from .memory import erasure as _erasure
from .memory import held as _held
from .memory import screening as _screening
from .memory import sessions as _sessions
from .memory import switches as _switches
from .memory import tools as _memory_tools
from .memory.guardrails.dry_run import DryRun
from .memory.guardrails.dry_run import dry_run as _dry_run
from .memory.models import Base
from .memory.recall import search as _search  # noqa: F401 - create_all builds the recall indexes too
from .memory.recall.ranked import RankedGuidance
from .memory.recall.recall_page import Ordered
from .memory.services import MemoryServices
from .permissions import user_id_of, user_name_of
from .settings import Settings
from .state import AppState
from .tools import CallContext, Tool
from .workers import notices as _notices
from .workers import sweep as _sweep
from .workers.housekeeping import Housekeeping


def current_memory() -> MemoryCore:
    """The ChatMemory of the current app (routes and commands)."""
    state: AppState = current_app.extensions["chatmem"]
    if not isinstance(state.memory, MemoryCore):
        raise RuntimeError("chatmem's state on this app was not built by a ChatMemory.")
    return state.memory


class MemoryCore(HostHooks, Housekeeping):
    def __init__(self, *, db: SQLAlchemy) -> None:
        if not isinstance(db, SQLAlchemy):
            raise TypeError("ChatMemory needs db=<your flask_sqlalchemy.SQLAlchemy instance>.")
        super().__init__()
        self.db = db
        # The memory tools' collaborators are this object's own methods, which
        # find the current app themselves: one set serves every app.
        services = MemoryServices(
            session=db.session,
            can=self.can,
            snapshot=self.snapshot,
            approved_guidance=self.approved_guidance,
            ranked_guidance=self.ranked_guidance,
            recalled_marks=self.recalled_marks,
            screen=self.screen,
        )
        _memory_tools.register(self.registry, services)

    # -- state --------------------------------------------------------------

    def _state(self) -> AppState:
        try:
            state: AppState = current_app.extensions["chatmem"]
        except (KeyError, RuntimeError):
            raise RuntimeError(
                "chatmem is not initialised on this app: did you call memory.init_app(app), "
                "and are you inside an app context?"
            ) from None
        if state.memory is not self:
            raise RuntimeError("This app was initialised with a different ChatMemory object.")
        return state

    @property
    def settings(self) -> Settings:
        """The app's CHATMEM_* settings, as read (and checked) by init_app."""
        return self._state().settings

    def _build_state(self, settings: Settings) -> AppState:
        return _app_state.build(self, self.db, settings)

    @property
    def server_name(self) -> str:
        return self.settings.server_name

    @property
    def dispatcher(self) -> Dispatcher:
        return self._state().dispatcher

    def upgrade_db(self, revision: str = "head") -> None:
        """Run chatmem's migrations on the app's engine (what `flask chatmem db upgrade` does)."""
        from .migrate import upgrade

        self._state()
        self.db.session.remove()  # no open transaction may hold the tables
        upgrade(self.db.engine, revision)

    def create_all(self) -> None:
        """Create chatmem's tables (tests and quick starts; production uses migrations)."""
        self._state()
        Base.metadata.create_all(self.db.engine)
        _switches.ensure_state_row(self.db.session())
        self.db.session.commit()

    def snapshot(self) -> _switches.Snapshot:
        """The revision and switches: once per transaction of a request (`switches.current`)."""
        return _switches.current(self.db.session(), _app_state.request_store())

    def set_setting(self, name: str, value: bool, *, actor: Any) -> _switches.Snapshot:
        return _switches.set_setting(self.db.session(), name, value, actor_id=user_id_of(actor))

    def memory_age(self) -> float:
        """Seconds since the memory last changed, as this process saw it (never more)."""
        return time.monotonic() - self._state().cache.at(self.snapshot()).seen_at

    def approved_guidance(self, snapshot: _switches.Snapshot) -> Ordered[dict[str, Any]]:
        """Active guidance as `recall` shows it, in its order, at this revision.

        Every change to active guidance bumps the revision in the same
        transaction, so this is exactly what the query would return. Shared,
        not copied: `recall` copies only the page it sends.
        """
        return self._state().cache.at(snapshot).approved

    def ranked_guidance(self, snapshot: _switches.Snapshot) -> RankedGuidance:
        """The same entries indexed for questions (`recall(topic=...)`), at this revision."""
        return self._state().cache.ranked(snapshot)

    def screen(
        self,
        fields: dict[str, Any],
        *,
        entry_id: int | None = None,
        snapshot: _switches.Snapshot | None = None,
    ) -> list[_screening.Flag]:
        """Poisoning flags for a proposal (or an edit of entry `entry_id`), fresh."""
        index = self._state().cache.screening(snapshot or self.snapshot())
        return _screening.screen(
            self.db.session(), fields, index, entry_id=entry_id, name_of=self.permissions.actor_name
        )

    def screening_index(self, snapshot: _switches.Snapshot) -> _screening.ActiveIndex:
        """Active guidance indexed for screening at this revision (built on first use)."""
        return self._state().cache.screening(snapshot)

    def screen_entries(self, entries: list[Any]) -> dict[int, list[_screening.Flag]]:
        """Poisoning flags for stored proposals (the pending tab), fresh."""
        index = self._state().cache.screening(self.snapshot())
        return _screening.screen_entries(
            self.db.session(), entries, index, self.permissions.actor_name
        )

    def recalled_marks(self) -> dict[int, datetime]:
        """This process's note of which entries `recall` found lately (see staleness.py)."""
        return self._state().recalled

    def known_tokens(self, snapshot: _switches.Snapshot) -> dict[str, Any]:
        """This worker's valid API tokens at this revision (revoking one bumps it)."""
        return self._state().cache.at(snapshot).tokens

    # -- permissions (the host's hooks, see permissions.py) -------------------

    def can(self, user: HostUser, capability: str) -> bool:
        return self.permissions.can(user, capability)

    def licensed(self) -> bool:
        return self.permissions.licensed(self.settings.license_active)

    def load_user(self, user_id: str) -> Any:
        return self.permissions.load_user(user_id)

    def fingerprint_of(self, user: HostUser) -> str:
        return self.permissions.fingerprint_of(user)

    def load_user_by_name(self, username: str) -> Any:
        return self.permissions.load_user_by_name(username)

    # -- injection and enforcement -------------------------------------------

    def block(self) -> _block.Block:
        """The current block with what the cap left out ('' text when none)."""
        snapshot = self.snapshot()
        if not snapshot.memory_enabled:
            return _block.EMPTY
        return self._state().cache.at(snapshot).block

    def pending_count(self) -> int:
        """Proposals waiting for review plus calls waiting for approval: the badge number."""
        return _costs.pending_count(self.db.session())

    def system_context(self) -> str:
        """The `## Project memory` block for a new conversation, or ''."""
        return self.block().text

    def dry_run(
        self, target: str, *, days: int | None = None, limit: int = 20, severity: str = "block"
    ) -> DryRun:
        """What a `block` (or `ask`) guardrail with this target would have refused (held) lately.

        Read-only: the calls in the last `days` days (default
        CHATMEM_DRY_RUN_DAYS) of the change ledger that the enforcement
        matcher refuses with this target, counted, and the newest `limit`.
        """
        return _dry_run(
            self.db.session(),
            target,
            server_name=self.server_name,
            resolve_post_type=self._post_type_resolver,
            resolve_labels=self._target_labels,
            label_reads=self._label_reads,
            days=days or self.settings.dry_run_days,
            limit=limit,
            severity="ask" if severity == "ask" else "block",
        )

    def held_call(self, request_id: Any) -> dict[str, Any] | None:
        """A held call's state, for a host's "Waiting for approval" card (read-only).

        `state` is waiting, allowed, denied, expired or used; a grant past its
        time reads as expired. None for an unknown id.
        """
        return _held.state_of(self.db.session(), request_id)

    # -- the Python channel -------------------------------------------------

    def context_for(
        self, user: HostUser, *, channel: str, session_id: str | None = None
    ) -> CallContext:
        state = self._state()
        return CallContext(
            user=user,
            user_id=user_id_of(user) if user is not None else "",
            user_name=user_name_of(user) if user is not None else "",
            channel=channel,
            settings=state.settings,
            session_id=session_id,
        )

    def call_tool(
        self,
        name: str,
        arguments: Any,
        *,
        user: HostUser,
        session_id: str | None = None,
        session_key: str | None = None,
        channel: str = "python",
        read_only: bool = False,
    ) -> dict[str, Any]:
        """Run a tool through the one dispatch path; raises ChatmemError.

        `read_only=True` (a read-only token's calls) refuses any tool that is
        not read-only with `forbidden`. `session_key` is a client's own name for
        its session (see `sessions.for_client`), used when no `session_id` is given.
        """
        dispatcher = self._state().dispatcher
        context = self.context_for(user, channel=channel, session_id=session_id or None)
        context.session_key = session_key
        context.read_only = read_only
        try:
            return dispatcher.call(name, arguments, context)
        finally:
            # What the call committed: a held call raises after its commit.
            _notices.fire(self.db.session(), self)

    def visible_tools(self, user: HostUser, *, read_only: bool = False) -> list[Tool]:
        """The tools this caller may call now: what tools/list, REST and the chat offer."""
        enabled = self.snapshot().memory_enabled
        return self.registry.visible_to(
            user, self.permissions, memory_enabled=enabled, read_only=read_only
        )

    def start_session(
        self,
        user: HostUser,
        channel: str,
        *,
        external_key: str | None = None,
        block: _block.Block | None = None,
    ) -> str:
        """Start a session and return its id ('' when memory is switched off).

        `block`: the `memory.block()` this conversation starts with; the
        session records its revision and entries (the screen's session page,
        the Cost card).
        """
        self._state()
        if not self.snapshot().memory_enabled:
            return ""
        session = _sessions.start(
            self.db.session(),
            user_id=user_id_of(user),
            user_name=user_name_of(user),
            channel=channel,
            external_key=external_key,
            commit=block is None,
        )
        if block is not None:
            _costs.record_block(
                self.db.session(),
                session,
                revision=block.revision,
                included=block.included,
                chars=block.length,
            )
            self.db.session.commit()
        return session.id

    def note_prompt_tokens(self, session_id: str, input_tokens: int) -> None:
        """The provider's input-token count of a conversation's first prompt (the Cost card)."""
        if session_id:
            _costs.note_prompt_tokens(self.db.session(), session_id, int(input_tokens))
            self.db.session.commit()

    def oldest_pending(self) -> datetime | None:
        """Since when the oldest proposal or held call has waited (the badge's tooltip)."""
        return _costs.oldest_pending(self.db.session())

    def person_named(self, username: str) -> HostUser:
        """The host's user of this name, or, for an account the host already deleted,
        the one chatmem's records name so; NotFound when neither does."""
        user = self.load_user_by_name(username)
        if user is not None:
            return cast(HostUser, user)
        ids = _erasure.recorded_ids(self.db.session(), username)
        if len(ids) != 1:
            found = f"give {username!r} to {len(ids)} user ids" if ids else "hold no such user"
            raise NotFound(
                f"No user named {username!r} here, and chatmem's records {found}.",
                details={"field": "username"},
            )
        return cast(HostUser, SimpleNamespace(id=ids[0], username=username))

    def erase_user(self, user: HostUser, *, actor_id: str | None = None) -> dict[str, int]:
        """Remove or anonymise all chatmem holds about one person (memory/erasure.py):
        the rows changed, by table. One transaction; running it again changes nothing."""
        return _erasure.erase_user(
            self.db.session(), user_id_of(user), user_name_of(user), actor_id=actor_id
        )

    def end_session(self, session_id: str, transcript: str | None = None) -> None:
        """End a session: digest it and queue an auto-summary if that is on."""
        self._state()
        if session_id and self.snapshot().memory_enabled:
            _sessions.end(self.db.session(), session_id, transcript=transcript)

    def upkeep(self, *, now: datetime | None = None) -> Any:
        """Sweep steps for active guidance: targets gone, review dates reached (staleness.py)."""
        review = self.settings.stale_targets == "review"
        return _sweep.run(
            self.db.session(), self, server_name=self.server_name, review=review, now=now
        )

    def target_changed(self, label: str) -> list[int]:
        """Something changed outside chatmem (a person edited post 4 in your admin).

        `label` is what changed, as a target names it: `post_id:4` (or
        `id:4`) or `label:topic:14`. Every active entry that targets it or
        names it in its text is marked "target changed since approval", as a
        successful call would mark it, recording "changed outside chatmem".
        Returns the ids it marked, and commits the database session when it
        marks any. A label that is not text, is empty, or names no such
        target raises `InvalidParams` (`details.field == "label"`) and changes nothing.
        """
        return self._state().changes.outside(label, self.snapshot())
