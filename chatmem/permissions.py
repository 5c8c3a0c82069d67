"""Who a user is and what they may do: the host's user hooks, and the checks built on them.

The host tells chatmem about its users through five hooks (registered with
the decorators on `ChatMemory`); every route, the dispatcher and the CLI ask
this one object, never the hooks directly.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from flask import current_app

from .identity import HostUser, user_id_of, user_name_of
from .memory.erasure import ERASED_ACTOR, ERASED_NAME
from .memory.guidance import CLI_ACTOR_PREFIX, IMPORTED_ACTOR_PREFIX

__all__ = ["HostUser", "Permissions", "user_id_of", "user_name_of"]


def _listed_capabilities(user: HostUser, capability: str) -> bool:
    """Without a host checker, a user has what its `capabilities` attribute lists."""
    return capability in (getattr(user, "capabilities", None) or ())


class Permissions:
    """Capability and licence checks, and finding users, through the host's hooks."""

    def __init__(self) -> None:
        self.capability_checker: Callable[[Any, str], bool] = _listed_capabilities
        self.license_checker: Callable[[], bool] | None = None
        self.user_loader: Callable[[str], Any] | None = None
        self.user_by_name: Callable[[str], Any] | None = None
        self.user_fingerprint: Callable[[Any], str] | None = None

    def can(self, user: HostUser, capability: str) -> bool:
        if user is None or getattr(user, "is_authenticated", True) is False:
            return False
        return bool(self.capability_checker(user, capability))

    def licensed(self, default: bool) -> bool:
        """The host's licence check, else `default` (CHATMEM_LICENSE_ACTIVE)."""
        if self.license_checker is not None:
            return bool(self.license_checker())
        return default

    def load_user(self, user_id: str) -> Any:
        if self.user_loader is not None:
            return self.user_loader(user_id)
        login_manager = getattr(current_app, "login_manager", None)
        loader = getattr(login_manager, "_user_callback", None)
        return loader(user_id) if loader else None

    def fingerprint_of(self, user: HostUser) -> str:
        """The user's fingerprint: the host's `user_fingerprint` hook, else its name."""
        if self.user_fingerprint is not None:
            return str(self.user_fingerprint(user))
        return user_name_of(user)

    def load_user_by_name(self, username: str) -> Any:
        if self.user_by_name is None:
            raise RuntimeError(
                "Register @memory.user_by_name so chatmem can find a user by username."
            )
        return self.user_by_name(username)

    def actor_name(self, actor_id: str | None) -> str:
        """Who an audit row names: a user's name, `cli:<login>` as is, or the bare id."""
        if not actor_id:
            return "unknown"
        if actor_id == ERASED_ACTOR:
            return ERASED_NAME
        if actor_id.startswith(CLI_ACTOR_PREFIX):
            return actor_id
        if actor_id.startswith(IMPORTED_ACTOR_PREFIX):
            return f"{actor_id.removeprefix(IMPORTED_ACTOR_PREFIX)} (on the exporting site)"
        user = self.load_user(actor_id)
        return user_name_of(user) if user is not None else f"user #{actor_id}"
