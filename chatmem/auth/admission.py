"""The one door for requests, whichever channel they use: who it is, then its budget.

MCP, the REST routes and a host's own token API (the demo's chat API) admit
a bearer request with `admit`: the token is checked (SPEC §9), then charged.
A host's own JSON API called with its session cookie (the demo's chat page)
charges the signed-in user with `admit_signed_in`.

The budget is the *user's*: `CHATMEM_RATE_LIMIT_PER_MINUTE` counts every
request of one user, over all of that user's tokens, every channel and
their signed-in page, so minting a second token (or opening the chat page)
does not buy a second budget. Inside it each token may have a smaller budget
of its own, `CHATMEM_RATE_LIMIT_PER_TOKEN_PER_MINUTE` (0, the default: none,
a token may spend its user's whole budget), so one busy script cannot starve
the user's other tokens. A token refused with 429 on REST is refused on MCP
and on the chat API too, instead of finding a channel that forgot to count.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import ratelimit
from .token_check import Bearer, authenticate

if TYPE_CHECKING:
    from ..core import MemoryCore


def admit(memory: MemoryCore, authorization: str | None) -> Bearer:
    """The token's user, counted against the token's and the user's budgets (Unauthorized,
    RateLimited)."""
    from ..permissions import user_id_of

    who = authenticate(memory, authorization)
    # The token's own budget first: a call it refuses is not spent from the user's.
    ratelimit.charge("token", who.token_id, _per_token(memory))
    ratelimit.charge("user", user_id_of(who.user), _per_user(memory))
    return who


def admit_signed_in(memory: MemoryCore, user_id: str) -> None:
    """Count a request by a host's signed-in user against that user's budget (RateLimited)."""
    ratelimit.charge("user", user_id, _per_user(memory))


def _per_user(memory: MemoryCore) -> int:
    return memory.settings.rate.per_minute


def _per_token(memory: MemoryCore) -> int:
    """The token's own budget; 0 (none) also when the user's budget is off."""
    user = _per_user(memory)
    token = memory.settings.rate.per_token_per_minute
    return min(token, user) if user else 0
