"""The `ChatMemory` Flask extension: host hooks, per-app state, Python API."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, TypeVar

from flask import Flask, current_app
from flask_sqlalchemy import SQLAlchemy

from . import config as _config
from . import upkeep as _upkeep
from .errors import ApprovalRequired, BlockedByMemory
from .memory import block as _block
from .memory import costs as _costs
from .memory import guidance as _guidance
from .memory import held as _held
from .memory import jobs as _jobs
from .memory import screening as _screening
from .memory import search as _search  # noqa: F401 - create_all builds the recall indexes too
from .memory import settings as _settings
from .memory import tools as _memory_tools
from .memory.dry_run import DryRun
from .memory.dry_run import dry_run as _dry_run
from .memory.guardrails import GuardrailIndex
from .memory.models import Base, guidance_record
from .memory.recall_page import Ordered
from .memory.sessions import end as _end_session
from .memory.sessions import idle_ids as _idle_ids
from .memory.sessions import start as _start_session
from .text import for_agents_record
from .tools import CallContext, Tool, ToolRegistry

if TYPE_CHECKING:
    from .background import BackgroundSweeper

log = logging.getLogger("chatmem")
F = TypeVar("F", bound=Callable[..., Any])


@dataclass
class _Cache:
    """What one process derives from the guidance at one revision."""

    revision: int = -1
    block: _block.Block = _block.EMPTY
    guardrails: GuardrailIndex = field(default_factory=GuardrailIndex)
    # What a topic-less `recall` pages through as guidance, in recall's order.
    approved: Ordered[dict[str, Any]] = field(default_factory=lambda: Ordered((), ()))
    # API tokens seen valid at this revision (token hash -> KnownToken); see tokens.py.
    tokens: dict[str, Any] = field(default_factory=dict)
    # Active guidance indexed for screening proposals; built on first use.
    screening: _screening.ActiveIndex | None = None


@dataclass
class _AppState:
    memory: ChatMemory
    cache: _Cache = field(default_factory=_Cache)
    lock: threading.Lock = field(default_factory=threading.Lock)
    sweeper: BackgroundSweeper | None = None
    # The newest screening index, so the next revision's rebuild reuses its entries.
    screening: _screening.ActiveIndex | None = None
    # Entries this process marked as found by `recall` (id -> when); see staleness.py.
    recalled: dict[int, datetime] = field(default_factory=dict)


def user_id_of(user: Any) -> str:
    """The host's id for a user, as text (flask-login's `get_id` if present)."""
    get_id = getattr(user, "get_id", None)
    return str(get_id() if callable(get_id) else user.id)


def user_name_of(user: Any) -> str:
    for attr in ("username", "name", "email"):
        value = getattr(user, attr, None)
        if value:
            return str(value)
    return user_id_of(user)


def actor_name(memory: ChatMemory, actor_id: str | None) -> str:
    """Who an audit row names: a user's name, `cli:<login>` as is, or the bare id."""
    from .memory.guidance import CLI_ACTOR_PREFIX

    if not actor_id:
        return "unknown"
    if actor_id.startswith(CLI_ACTOR_PREFIX):
        return actor_id
    user = memory.load_user(actor_id)
    return user_name_of(user) if user is not None else f"user #{actor_id}"


def _default_capability_checker(user: Any, capability: str) -> bool:
    """Without a host checker, a user has what its `capabilities` attribute lists."""
    return capability in (getattr(user, "capabilities", None) or ())


class ChatMemory:
    """Project memory for a Flask chat app.

    ``ChatMemory(app, db=db)`` or ``memory = ChatMemory(db=db)`` then
    ``memory.init_app(app)``. Host tools and callbacks are registered with
    decorators on this object; per-app state lives in
    ``app.extensions["chatmem"]``.
    """

    def __init__(self, app: Flask | None = None, *, db: SQLAlchemy) -> None:
        if not isinstance(db, SQLAlchemy):
            raise TypeError("ChatMemory needs db=<your flask_sqlalchemy.SQLAlchemy instance>.")
        self.db = db
        self.registry = ToolRegistry()
        self._capability_checker: Callable[[Any, str], bool] = _default_capability_checker
        self._post_type_resolver: Callable[[Any], str | None] | None = None
        self._license_checker: Callable[[], bool] | None = None
        self._user_loader: Callable[[str], Any] | None = None
        self._user_by_name: Callable[[str], Any] | None = None
        self._transcript_loader: Callable[[str], str | None] | None = None
        self._conversation_url: Callable[[str], str | None] | None = None
        self._user_fingerprint: Callable[[Any], str] | None = None
        self._post_types: Callable[[], Any] | None = None
        #: event -> the host's hooks for it (`on_proposal`, `on_waiting_call`).
        self._notice_hooks: dict[str, list[Callable[[dict[str, Any]], Any]]] = {}
        _memory_tools.register(self.registry)
        if app is not None:
            self.init_app(app)

    def init_app(self, app: Flask) -> None:
        if "sqlalchemy" not in app.extensions:
            raise RuntimeError(
                "Flask-SQLAlchemy is not set up on this app: call db.init_app(app) "
                "before memory.init_app(app)."
            )
        _config.apply_defaults(app.config)
        app.extensions["chatmem"] = _AppState(memory=self)
        from .blueprints import register_blueprints
        from .cli import chatmem_cli

        register_blueprints(app)
        app.cli.add_command(chatmem_cli)
        _upkeep.install_session_events()
        if float(app.config["CHATMEM_BACKGROUND_SWEEP_SECONDS"]) > 0 and not app.testing:
            # Started on the first request, not here: a thread started before
            # gunicorn forks its workers (--preload) would not survive the fork,
            # and CLI commands should not start one at all.
            app.before_request(self._start_sweeper)

    # -- host hooks ---------------------------------------------------------

    def tool(
        self,
        *,
        name: str,
        description: str,
        input_schema: dict[str, Any],
        read_only: bool = False,
        output_schema: dict[str, Any] | None = None,
        capability: str = "edit_posts",
        title: str | None = None,
    ) -> Callable[[F], F]:
        """Register a host tool; it then runs through the same dispatch path."""

        def decorator(func: F) -> F:
            self.registry.register(
                Tool(
                    name=name,
                    description=description,
                    input_schema=input_schema,
                    func=func,
                    read_only=read_only,
                    output_schema=output_schema,
                    capability=capability,
                    title=title,
                )
            )
            return func

        return decorator

    def capability_checker(self, func: Callable[[Any, str], bool]) -> Callable[[Any, str], bool]:
        self._capability_checker = func
        return func

    def post_type_resolver(self, func: Callable[[Any], str | None]) -> Callable[[Any], str | None]:
        self._post_type_resolver = func
        return func

    def license_checker(self, func: Callable[[], bool]) -> Callable[[], bool]:
        self._license_checker = func
        return func

    def user_loader(self, func: Callable[[str], Any]) -> Callable[[str], Any]:
        """`(user_id) -> user | None`: how API tokens and the CLI find a user."""
        self._user_loader = func
        return func

    def user_by_name(self, func: Callable[[str], Any]) -> Callable[[str], Any]:
        """`(username) -> user | None`: how `flask chatmem token create <username>` finds a user."""
        self._user_by_name = func
        return func

    def user_fingerprint(self, func: Callable[[Any], str]) -> Callable[[Any], str]:
        """`(user) -> str`: who a user is beyond its id, to bind API tokens to them.

        A token stops working when its user's fingerprint no longer matches the
        one it was made with, so a deleted user's id given to someone new does
        not hand them the token. Default: the user's name (`user_name_of`).
        """
        self._user_fingerprint = func
        return func

    def transcript_loader(self, func: Callable[[str], str | None]) -> Callable[[str], str | None]:
        """`(session_id) -> str | None`: the conversation text of a session the sweep ends.

        The sweep has no conversation at hand, so without this hook an idle
        session's auto-summary sees only its digest.
        """
        self._transcript_loader = func
        return func

    def conversation_url(self, func: Callable[[str], str | None]) -> Callable[[str], str | None]:
        """`(session_id) -> str | None`: where the host shows that session's conversation.

        The Memory screen's session page links to it. Return None for a
        session with no conversation page (an MCP client's, say).
        """
        self._conversation_url = func
        return func

    def post_types(self, func: Callable[[], Any]) -> Callable[[], Any]:
        """`() -> iterable of str`: every post type that exists now.

        The sweep flags a `post_type:` target naming none of them "target
        gone"; without this hook such targets are not checked.
        """
        self._post_types = func
        return func

    def on_proposal(self, func: Callable[[dict[str, Any]], Any]) -> Callable[[dict[str, Any]], Any]:
        """`(notice) -> None`: called after an agent's proposal is committed.

        `notice` names it (`id`, `type`, `title`, `status`, `user`, `at`),
        never its text. Called once the agent's call is over, outside its
        transaction; an exception is logged and never reaches the agent.
        """
        self._notice_hooks.setdefault("proposal", []).append(func)
        return func

    def on_waiting_call(
        self, func: Callable[[dict[str, Any]], Any]
    ) -> Callable[[dict[str, Any]], Any]:
        """`(notice) -> None`: called after an `ask` guardrail held a call (Waiting calls).

        `notice` has `id`, `tool`, `guidance_id`, `user`, `at`; never the
        call's arguments. Same rules as `on_proposal`.
        """
        self._notice_hooks.setdefault("waiting_call", []).append(func)
        return func

    def url_of_conversation(self, session_id: str) -> str | None:
        """The host's link for a session's conversation, when it gives a safe one."""
        if self._conversation_url is None:
            return None
        try:
            url = self._conversation_url(session_id)
        except Exception:
            log.exception("conversation_url failed for session %s", session_id)
            return None
        # Only web or site-relative addresses: never javascript: in an href.
        if url and (url.startswith(("http://", "https://")) or url.startswith("/")):
            return None if url.startswith("//") else url
        return None

    # -- state --------------------------------------------------------------

    def _state(self) -> _AppState:
        try:
            state: _AppState = current_app.extensions["chatmem"]
        except (KeyError, RuntimeError):
            raise RuntimeError(
                "chatmem is not initialised on this app: did you call memory.init_app(app), "
                "and are you inside an app context?"
            ) from None
        if state.memory is not self:
            raise RuntimeError("This app was initialised with a different ChatMemory object.")
        return state

    def config(self, key: str) -> Any:
        self._state()
        return _config.read(current_app.config, key)

    @property
    def server_name(self) -> str:
        return str(self.config("CHATMEM_SERVER_NAME"))

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
        _settings.ensure_state_row(self.db)
        self.db.session.commit()

    def snapshot(self) -> _settings.Snapshot:
        """The revision and switches, read fresh from the database."""
        return _settings.read(self.db)

    def set_setting(self, name: str, value: bool, *, actor: Any) -> _settings.Snapshot:
        return _settings.set_setting(self.db, name, value, actor_id=user_id_of(actor))

    def _cache(self, snapshot: _settings.Snapshot) -> _Cache:
        """Block and guardrail index for this revision, rebuilt when it moved."""
        state = self._state()
        cache = state.cache
        if cache.revision == snapshot.revision:
            return cache
        with state.lock:
            if state.cache.revision != snapshot.revision:
                entries = _block.active_entries(self.db)
                state.cache = _Cache(
                    revision=snapshot.revision,
                    block=replace(_block.compose(entries), revision=snapshot.revision),
                    guardrails=GuardrailIndex.build(entries, self.server_name),
                    approved=Ordered.of(
                        entries,
                        lambda e: for_agents_record(guidance_record(e), _guidance.WRITTEN),
                    ),
                )
            return state.cache

    def approved_guidance(self, snapshot: _settings.Snapshot) -> Ordered[dict[str, Any]]:
        """Active guidance as `recall` shows it, in its order, at this revision.

        Every change to active guidance bumps the revision in the same
        transaction, so this is exactly what the query would return. Shared,
        not copied: `recall` copies only the page it sends.
        """
        return self._cache(snapshot).approved

    def screen(
        self,
        fields: dict[str, Any],
        *,
        entry_id: int | None = None,
        snapshot: _settings.Snapshot | None = None,
    ) -> list[_screening.Flag]:
        """Poisoning flags for a proposal (or an edit of entry `entry_id`), fresh."""
        index = self._screening(snapshot)
        return _screening.screen(
            self.db, fields, index, entry_id=entry_id, name_of=self._actor_name
        )

    def screen_entries(self, entries: list[Any]) -> dict[int, list[_screening.Flag]]:
        """Poisoning flags for stored proposals (the pending tab), fresh."""
        return _screening.screen_entries(self.db, entries, self._screening(), self._actor_name)

    def _actor_name(self, actor_id: str | None) -> str:
        return actor_name(self, actor_id)

    def _screening(self, snapshot: _settings.Snapshot | None = None) -> _screening.ActiveIndex:
        """Active guidance indexed for screening, at the current revision.

        Built on first use, not with the block: most revisions never screen.
        """
        cache = self._cache(snapshot or self.snapshot())
        if cache.screening is None:
            state = self._state()
            with state.lock:
                if cache.screening is None:
                    index = _screening.ActiveIndex.load(self.db, self.server_name, state.screening)
                    cache.screening = state.screening = index
        return cache.screening

    def known_tokens(self, snapshot: _settings.Snapshot) -> dict[str, Any]:
        """This worker's valid API tokens at this revision (revoking one bumps it)."""
        return self._cache(snapshot).tokens

    # -- permissions --------------------------------------------------------

    def can(self, user: Any, capability: str) -> bool:
        if user is None or getattr(user, "is_authenticated", True) is False:
            return False
        return bool(self._capability_checker(user, capability))

    def licensed(self) -> bool:
        if self._license_checker is not None:
            return bool(self._license_checker())
        return bool(self.config("CHATMEM_LICENSE_ACTIVE"))

    def load_user(self, user_id: str) -> Any:
        if self._user_loader is not None:
            return self._user_loader(user_id)
        login_manager = getattr(current_app, "login_manager", None)
        loader = getattr(login_manager, "_user_callback", None)
        return loader(user_id) if loader else None

    def fingerprint_of(self, user: Any) -> str:
        """The user's fingerprint: the host's `user_fingerprint` hook, else its name."""
        if self._user_fingerprint is not None:
            return str(self._user_fingerprint(user))
        return user_name_of(user)

    def load_user_by_name(self, username: str) -> Any:
        if self._user_by_name is None:
            raise RuntimeError(
                "Register @memory.user_by_name so chatmem can find a user by username."
            )
        return self._user_by_name(username)

    # -- injection and enforcement -------------------------------------------

    def block(self) -> _block.Block:
        """The current block with what the cap left out ('' text when none)."""
        snapshot = self.snapshot()
        if not snapshot.memory_enabled:
            return _block.EMPTY
        return self._cache(snapshot).block

    def pending_count(self) -> int:
        """Proposals waiting for review plus calls waiting for approval: the badge number."""
        from sqlalchemy import func, select

        from .memory.models import Guidance

        query = select(func.count()).select_from(Guidance).where(Guidance.status == "pending")
        return int(self.db.session.scalar(query) or 0) + _held.waiting_count(self.db)

    def system_context(self) -> str:
        """The `## Project memory` block for a new conversation, or ''."""
        return self.block().text

    def guardrail_for(
        self, tool_name: str, arguments: dict[str, Any], snapshot: _settings.Snapshot
    ) -> BlockedByMemory | ApprovalRequired | None:
        """The refusal for this call, or None when no active guardrail matches.

        `ApprovalRequired` (an `ask` rule matched) is not final: the dispatcher
        hands it to `memory.held.gate`, which holds the call, refuses it, or
        finds the grant that lets it run.
        """
        index = self._cache(snapshot).guardrails
        if not len(index):
            return None
        try:
            rule = index.match(tool_name, arguments, self._post_type_resolver)
        except Exception:
            # Fail closed: a guardrail on a post type we could not resolve.
            log.exception("post type resolver failed; refusing %s", tool_name)
            return BlockedByMemory(
                f"{tool_name} was refused: the post type could not be checked against the "
                "site's guardrails.",
                details={"guidance_id": None, "title": "post type check failed"},
            )
        if rule is None:
            return None
        if rule.severity == "ask":
            return ApprovalRequired(
                f"{tool_name} needs a curator's approval (guardrail #{rule.id}: {rule.title}).",
                details={"guidance_id": rule.id, "title": rule.title, "target": rule.target},
            )
        return BlockedByMemory(
            f"{tool_name} was refused by project memory guardrail #{rule.id}: {rule.title}",
            details={"guidance_id": rule.id, "title": rule.title, "target": rule.target},
        )

    def dry_run(
        self, target: str, *, days: int | None = None, limit: int = 20, severity: str = "block"
    ) -> DryRun:
        """What a `block` (or `ask`) guardrail with this target would have refused (held) lately.

        Read-only: the calls in the last `days` days (default
        CHATMEM_DRY_RUN_DAYS) of the change ledger that the enforcement
        matcher refuses with this target, counted, and the newest `limit`.
        """
        return _dry_run(
            self.db,
            target,
            server_name=self.server_name,
            resolve_post_type=self._post_type_resolver,
            days=days or self.config("CHATMEM_DRY_RUN_DAYS"),
            limit=limit,
            severity="ask" if severity == "ask" else "block",
        )

    def held_call(self, request_id: Any) -> dict[str, Any] | None:
        """A held call's state, for a host's "Waiting for approval" card (read-only).

        `state` is waiting, allowed, denied, expired or used; a grant past its
        time reads as expired. None for an unknown id.
        """
        if isinstance(request_id, bool) or not isinstance(request_id, int):
            return None
        _held.expire_due(self.db, where=(_held.HeldCall.id == request_id,))
        call = self.db.session.get(_held.HeldCall, request_id)
        if call is None:
            return None
        return {
            "id": call.id,
            "tool": call.tool,
            "user_id": call.user_id,
            "state": call.state,
            "note": call.note,
            "expires_at": f"{call.expires_at.isoformat()}Z" if call.expires_at else None,
        }

    # -- the Python channel -------------------------------------------------

    def context_for(self, user: Any, *, channel: str, session_id: str | None = None) -> CallContext:
        return CallContext(
            memory=self,
            user=user,
            user_id=user_id_of(user) if user is not None else "",
            user_name=user_name_of(user) if user is not None else "",
            channel=channel,
            session_id=session_id,
        )

    def call_tool(
        self,
        name: str,
        arguments: Any,
        *,
        user: Any,
        session_id: str | None = None,
        channel: str = "python",
        snapshot: _settings.Snapshot | None = None,
        read_only: bool = False,
    ) -> dict[str, Any]:
        """Run a tool through the one dispatch path; raises ChatmemError.

        `snapshot` is for the MCP and REST endpoints: the state row they read
        for this very request (to check its token), so the call need not read
        it again. Anything older would check the call against stale guardrails.
        `read_only=True` (a read-only token's calls) refuses any tool that is
        not read-only with `forbidden`.
        """
        self._state()
        context = self.context_for(user, channel=channel, session_id=session_id or None)
        context.snapshot = snapshot
        context.read_only = read_only
        try:
            return self.registry.call(name, arguments, context)
        finally:
            _upkeep.fire(self)  # what the call committed; a held call raised after its commit

    def visible_tools(
        self, user: Any, *, read_only: bool = False, snapshot: _settings.Snapshot | None = None
    ) -> list[Tool]:
        """The tools this caller may call now: what tools/list, REST and the chat offer.

        Memory tools are hidden while Memory is off; a read-only caller sees
        read-only tools only (the dispatcher refuses the others anyway).
        """
        enabled = (snapshot or self.snapshot()).memory_enabled
        return [
            t
            for t in self.registry.tools(include_memory=enabled)
            if self.can(user, t.capability) and (t.read_only or not read_only)
        ]

    def start_session(
        self,
        user: Any,
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
        session = _start_session(
            self.db,
            user_id=user_id_of(user),
            user_name=user_name_of(user),
            channel=channel,
            external_key=external_key,
            commit=block is None,
        )
        if block is not None:
            _costs.record_block(
                self.db,
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
            _costs.note_prompt_tokens(self.db, session_id, int(input_tokens))
            self.db.session.commit()

    def oldest_pending(self) -> datetime | None:
        """Since when the oldest proposal or held call has waited (the badge's tooltip)."""
        return _costs.oldest_pending(self.db)

    def end_session(self, session_id: str, transcript: str | None = None) -> None:
        """End a session: digest it and queue an auto-summary if that is on."""
        self._state()
        if session_id and self.snapshot().memory_enabled:
            _end_session(self.db, session_id, transcript=transcript)

    def sweep(self) -> int:
        """End idle sessions (with their transcripts, if the host can load them)."""
        minutes = float(self.config("CHATMEM_SESSION_IDLE_MINUTES"))
        # Grants past their time are ledgered first, so an ending session's digest has them.
        _held.expire_due(self.db)
        ids = _idle_ids(self.db, timedelta(minutes=minutes))
        for session_id in ids:
            _end_session(self.db, session_id, transcript=self._transcript_of(session_id))
        return len(ids)

    def upkeep(self, *, now: datetime | None = None) -> Any:
        """Sweep steps for active guidance: targets gone, review dates reached (staleness.py)."""
        self._state()
        return _upkeep.run(self, now=now)

    def deliver_notices(self, *, now: datetime | None = None) -> Any:
        """Send due webhook notices (CHATMEM_NOTIFY_WEBHOOK), retrying failures with back-off."""
        self._state()
        return _upkeep.deliver(self, now=now)

    def _transcript_of(self, session_id: str) -> str | None:
        if self._transcript_loader is None:
            return None
        try:
            return self._transcript_loader(session_id)
        except Exception:
            # A host bug must not stop the sweep: the digest alone still records it.
            log.exception("transcript_loader failed for session %s", session_id)
            self.db.session.rollback()
            return None

    # -- auto-summary jobs ----------------------------------------------------

    def job_policy(self) -> _jobs.Policy:
        return _jobs.Policy(
            lease=timedelta(seconds=float(self.config("CHATMEM_JOB_LEASE_SECONDS"))),
            max_attempts=int(self.config("CHATMEM_JOB_MAX_ATTEMPTS")),
            backoff=timedelta(seconds=float(self.config("CHATMEM_JOB_BACKOFF_SECONDS"))),
            backoff_max=timedelta(seconds=float(self.config("CHATMEM_JOB_BACKOFF_MAX_SECONDS"))),
            input_max=int(self.config("CHATMEM_SUMMARY_INPUT_MAX")),
        )

    def run_due_jobs(self, *, limit: int = 20, now: datetime | None = None) -> _jobs.Stats:
        """Run due auto-summary jobs: claim, ask the provider, store or schedule a retry.

        Commits the current database session first. Safe in several processes
        at once (claims are atomic). With Memory off nothing runs and jobs wait;
        with Auto-summarize off or provider ``none`` due jobs finish at once as
        digest only, without any provider call.
        """
        self._state()
        snapshot = self.snapshot()
        if not snapshot.memory_enabled:
            return _jobs.Stats()
        from .providers import provider_from_config

        digest_only = (
            not snapshot.auto_summarize
            or str(self.config("CHATMEM_PROVIDER")).strip().lower() == "none"
        )
        config = current_app.config
        factory = None if digest_only else (lambda: provider_from_config(config))
        return _jobs.run_due(self.db, factory, self.job_policy(), now=now, limit=limit)

    def _start_sweeper(self) -> None:
        state = self._state()
        if state.sweeper is not None:
            return
        with state.lock:
            if state.sweeper is None:
                from .background import BackgroundSweeper

                interval = float(self.config("CHATMEM_BACKGROUND_SWEEP_SECONDS"))
                state.sweeper = BackgroundSweeper(current_app._get_current_object(), interval)  # type: ignore[attr-defined]
                state.sweeper.start()

    def stop_background(self, timeout: float = 10.0) -> None:
        """Stop this app's background sweeper, if one was started."""
        state = self._state()
        sweeper, state.sweeper = state.sweeper, None
        if sweeper is not None:
            sweeper.stop(timeout)
