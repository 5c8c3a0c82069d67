"""The one door for requests that carry an API token, whichever channel they use.

MCP, the REST routes and a host's own token API (the demo's chat API) all
admit a bearer request here: the token is checked (SPEC §9), then charged
to its per-minute budget. One budget per token across every channel: a
token refused with 429 on REST is refused on MCP and on the chat API too,
instead of finding a channel that forgot to count.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import ratelimit
from .tokens import Bearer, authenticate

if TYPE_CHECKING:
    from ..core import MemoryCore
    from ..memory.settings import Snapshot


def admit(
    memory: MemoryCore, authorization: str | None, snapshot: Snapshot | None = None
) -> Bearer:
    """The token's user, counted against the token's rate limit (Unauthorized, RateLimited)."""
    who = authenticate(memory, authorization, snapshot or memory.snapshot())
    ratelimit.hit(memory.db, who.token_id, int(memory.config("CHATMEM_RATE_LIMIT_PER_MINUTE")))
    return who
