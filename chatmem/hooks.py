"""The host's hooks: how a chat app tells chatmem about its tools, users and pages.

Each is a decorator on `ChatMemory` (this is its base class). The checks
built on the user hooks live in `permissions.py`; the rest are read where
they are needed (the post type resolver by the guardrail check, the
transcript loader by the sweep, the notice hooks after a commit).
"""

from __future__ import annotations

import functools
import logging
import weakref
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar, cast

from flask import Flask

from .memory.guardrails.matching import LabelResolver
from .permissions import Permissions
from .tools import Tool, ToolRegistry

log = logging.getLogger("chatmem")
F = TypeVar("F", bound=Callable[..., Any])


def setupmethod(method: F) -> F:
    """A hook registered once an app has served a request is an error, as in Flask.

    Workers that already answered would run without it while later ones run
    with it: a guardrail's label resolver or a capability check must be the
    same for every request, so it is set up before the first.
    """

    @functools.wraps(method)
    def guarded(self: HostHooks, *args: Any, **kwargs: Any) -> Any:
        self._check_setup_finished(method.__name__)
        return method(self, *args, **kwargs)

    return cast(F, guarded)


class HostHooks:
    def __init__(self) -> None:
        self.registry = ToolRegistry()
        self.permissions = Permissions()
        self._post_type_resolver: Callable[[Any], str | None] | None = None
        self._transcript_loader: Callable[[str], str | None] | None = None
        self._conversation_url: Callable[[str], str | None] | None = None
        self._post_types: Callable[[], Any] | None = None
        self._base_template: Callable[[], Any] | None = None
        self._screen_context: Callable[[], Mapping[str, Any]] | None = None
        self._target_labels: LabelResolver | None = None
        # The arguments the labels depend on, when the host says (see target_labels).
        self._label_reads: tuple[str, ...] | None = None
        self._label_exists: Callable[[str], bool] | None = None
        #: event -> the host's hooks for it (`on_proposal`, `on_waiting_call`).
        self._notice_hooks: dict[str, list[Callable[[dict[str, Any]], Any]]] = {}
        #: The apps this object was initialised on (`init_app` adds them).
        self._apps: weakref.WeakSet[Flask] = weakref.WeakSet()

    def _check_setup_finished(self, name: str) -> None:
        if any(app._got_first_request for app in self._apps):
            raise AssertionError(
                f"memory.{name} was called after the app handled its first request. "
                "Register chatmem's hooks and tools before the app serves, as Flask "
                "requires of its own setup methods (routes, before_request)."
            )

    @setupmethod
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

    @setupmethod
    def capability_checker(self, func: Callable[[Any, str], bool]) -> Callable[[Any, str], bool]:
        self.permissions.capability_checker = func
        return func

    @setupmethod
    def license_checker(self, func: Callable[[], bool]) -> Callable[[], bool]:
        self.permissions.license_checker = func
        return func

    @setupmethod
    def user_loader(self, func: Callable[[str], Any]) -> Callable[[str], Any]:
        """`(user_id) -> user | None`: how API tokens and the CLI find a user."""
        self.permissions.user_loader = func
        return func

    @setupmethod
    def user_by_name(self, func: Callable[[str], Any]) -> Callable[[str], Any]:
        """`(username) -> user | None`: how `flask chatmem token create <username>` finds a user."""
        self.permissions.user_by_name = func
        return func

    @setupmethod
    def user_fingerprint(self, func: Callable[[Any], str]) -> Callable[[Any], str]:
        """`(user) -> str`: who a user is beyond its id, to bind API tokens to them.

        A token stops working when its user's fingerprint no longer matches the
        one it was made with, so a deleted user's id given to someone new does
        not hand them the token. Default: the user's name (`user_name_of`).
        """
        self.permissions.user_fingerprint = func
        return func

    @setupmethod
    def post_type_resolver(self, func: Callable[[Any], str | None]) -> Callable[[Any], str | None]:
        self._post_type_resolver = func
        return func

    @setupmethod
    def target_labels(
        self, func: LabelResolver | None = None, *, reads: Iterable[str] | None = None
    ) -> Any:
        """`(tool_name, arguments) -> iterable of labels`: everything a tool call touches.

        `arguments` are the call's canonical arguments (validated, whatever
        they are called). Return every label the call touches, `kind:value`
        as the host names its objects: `["author:john", "forum:2", "topic:14"]`.
        A guardrail targets any one of them as `label:author:john` (labels
        are compared in lower case, and `topic:014` is `topic:14`). Called
        only while a `label:` guardrail is active; if it raises, the call is
        refused (enforcement fails closed) and the error logged.

        `@memory.target_labels(reads=("topic_id", "post_id"))` says the labels
        depend on those arguments only: the hook is then given just them, and
        the dry run asks it once per distinct value instead of once per call.
        """
        names = None if reads is None else tuple(reads)

        def register(resolve: LabelResolver) -> LabelResolver:
            self._label_reads = names
            if names is None:
                self._target_labels = resolve
            else:

                def only_reads(tool_name: str, arguments: Mapping[str, Any]) -> Iterable[Any]:
                    return resolve(tool_name, {k: arguments[k] for k in names if k in arguments})

                self._target_labels = only_reads
            return resolve

        return register if func is None else register(func)

    @setupmethod
    def label_exists(self, func: Callable[[str], bool]) -> Callable[[str], bool]:
        """`(label) -> bool`: whether the object a label names still exists.

        The sweep flags a `label:` target whose label is gone "target gone"
        (`topic:14` after the topic was deleted); without this hook such
        targets are not checked. It is given the canonical label (`topic:14`).
        """
        self._label_exists = func
        return func

    @setupmethod
    def transcript_loader(self, func: Callable[[str], str | None]) -> Callable[[str], str | None]:
        """`(session_id) -> str | None`: the conversation text of a session the sweep ends.

        The sweep has no conversation at hand, so without this hook an idle
        session's auto-summary sees only its digest.
        """
        self._transcript_loader = func
        return func

    @setupmethod
    def conversation_url(self, func: Callable[[str], str | None]) -> Callable[[str], str | None]:
        """`(session_id) -> str | None`: where the host shows that session's conversation.

        The Memory screen's session page links to it. Return None for a
        session with no conversation page (an MCP client's, say).
        """
        self._conversation_url = func
        return func

    @setupmethod
    def post_types(self, func: Callable[[], Any]) -> Callable[[], Any]:
        """`() -> iterable of str`: every post type that exists now.

        The sweep flags a `post_type:` target naming none of them "target
        gone"; without this hook such targets are not checked.
        """
        self._post_types = func
        return func

    @setupmethod
    def base_template(self, func: Callable[[], Any]) -> Callable[[], Any]:
        """`() -> template name (or Jinja Template)`: the layout the Memory screen extends now.

        For a themed host whose layout depends on the request (Flask-Themes2's
        `_themes/<theme>/...`): called on every screen page, it wins over
        `CHATMEM_BASE_TEMPLATE`. The layout defines the `chatmem_head` and
        `chatmem_content` blocks.
        """
        self._base_template = func
        return func

    @setupmethod
    def screen_context(
        self, func: Callable[[], Mapping[str, Any]]
    ) -> Callable[[], Mapping[str, Any]]:
        """`() -> dict`: variables the host's layout needs on every Memory screen page.

        The screen renders with Flask's `render_template`, so what a host's
        own render helper adds to its pages is missing there; Flask-Themes2's
        `theme_static()`, for one, raises without `_theme` in the context.
        Return them here (`{"_theme": current_theme()}`). chatmem's own names
        win over these.
        """
        self._screen_context = func
        return func

    @setupmethod
    def on_proposal(self, func: Callable[[dict[str, Any]], Any]) -> Callable[[dict[str, Any]], Any]:
        """`(notice) -> None`: called after an agent's proposal is committed.

        `notice` names it (`id`, `type`, `title`, `status`, `user`, `at`),
        never its text. Called once the agent's call is over, outside its
        transaction; an exception is logged and never reaches the agent.
        """
        self._notice_hooks.setdefault("proposal", []).append(func)
        return func

    @setupmethod
    def on_waiting_call(
        self, func: Callable[[dict[str, Any]], Any]
    ) -> Callable[[dict[str, Any]], Any]:
        """`(notice) -> None`: called after an `ask` guardrail held a call (Waiting calls).

        `notice` has `id`, `tool`, `guidance_id`, `user`, `at`; never the
        call's arguments. Same rules as `on_proposal`.
        """
        self._notice_hooks.setdefault("waiting_call", []).append(func)
        return func

    # -- what the host registered, for the code that calls it -------------------

    @property
    def post_type_resolver_hook(self) -> Callable[[Any], str | None] | None:
        """The host's `post_type_resolver`, or None."""
        return self._post_type_resolver

    @property
    def post_types_hook(self) -> Callable[[], Any] | None:
        """The host's `post_types`, or None."""
        return self._post_types

    @property
    def target_labels_hook(self) -> LabelResolver | None:
        """The host's `target_labels` resolver (narrowed to its `reads`), or None."""
        return self._target_labels

    @property
    def label_exists_hook(self) -> Callable[[str], bool] | None:
        """The host's `label_exists`, or None."""
        return self._label_exists

    @property
    def base_template_hook(self) -> Callable[[], Any] | None:
        """The host's `base_template`, or None."""
        return self._base_template

    @property
    def screen_context_hook(self) -> Callable[[], Mapping[str, Any]] | None:
        """The host's `screen_context`, or None."""
        return self._screen_context

    def notice_hooks(self, event: str) -> tuple[Callable[[dict[str, Any]], Any], ...]:
        """The host's hooks for a notice event (`proposal`, `waiting_call`)."""
        return tuple(self._notice_hooks.get(event, ()))

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
