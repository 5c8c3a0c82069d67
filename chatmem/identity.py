"""Who a user is, to chatmem: the host's user object, read only through these two functions."""

from __future__ import annotations

from typing import Protocol


class HostUser(Protocol):
    """The host's user object, as chatmem sees it: opaque.

    chatmem reads a user only through `user_id_of` and `user_name_of` (the
    attributes Flask-Login's `UserMixin` has, each optional) and the host's
    hooks, so any object will do; mypy then refuses code here that would
    reach into one directly.
    """


def user_id_of(user: HostUser) -> str:
    """The host's id for a user, as text (flask-login's `get_id` if present)."""
    get_id = getattr(user, "get_id", None)
    return str(get_id() if callable(get_id) else getattr(user, "id"))  # noqa: B009 - opaque


def user_name_of(user: HostUser) -> str:
    for attr in ("username", "name", "email"):
        value = getattr(user, attr, None)
        if value:
            return str(value)
    return user_id_of(user)
