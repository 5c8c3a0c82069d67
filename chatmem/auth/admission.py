"""The one door for requests, whichever channel they use: who it is, then its budget.

MCP, the REST routes and a host's own token API (the demo's chat API) admit
a bearer request with `admit`: the token is checked (SPEC §9), then charged
to its per-minute budget. One budget per token across every channel: a
token refused with 429 on REST is refused on MCP and on the chat API too,
instead of finding a channel that forgot to count. A host's own JSON API
called with its session cookie (the demo's chat page) charges the signed-in
user with `admit_signed_in`, so the cookie is no way around the limit
either. Both spend `CHATMEM_RATE_LIMIT_PER_MINUTE` through `ratelimit`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import ratelimit
from .tokens import Bearer, authenticate

if TYPE_CHECKING:
    from ..core import MemoryCore


def admit(memory: MemoryCore, authorization: str | None) -> Bearer:
    """The token's user, counted against the token's rate limit (Unauthorized, RateLimited)."""
    who = authenticate(memory, authorization)
    ratelimit.charge("token", who.token_id, _per_minute(memory))
    return who


def admit_signed_in(memory: MemoryCore, user_id: str) -> None:
    """Count a request by a host's signed-in user against that user's budget (RateLimited)."""
    ratelimit.charge("user", user_id, _per_minute(memory))


def _per_minute(memory: MemoryCore) -> int:
    return int(memory.config("CHATMEM_RATE_LIMIT_PER_MINUTE"))
