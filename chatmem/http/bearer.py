"""What the MCP endpoint and the REST routes share: bearer-only machine access.

Both surfaces authenticate with an API token in the `Authorization` header and
never with the host's session cookie, so a page on another site cannot ride a
logged-in admin's cookie into them; that is also why they are exempt from
the host's CSRF protection.
"""

from __future__ import annotations

from flask import Blueprint, request
from flask.sansio.app import App

from .. import inputs
from ..auth.admission import admit
from ..auth.token_check import Bearer
from ..core import current_memory
from ..errors import InvalidParams, PayloadTooLarge

AUTHORIZATION = "Authorization"
SESSION_KEY_MAX = 200
SESSION_HEADER = "X-Chatmem-Session"  # REST's optional grouping key


def bearer() -> Bearer:
    """The token's user, counted against the token's rate limit (Unauthorized, RateLimited).

    The state row is read here, once for the request: the token check keys
    its cache on the revision, and the tool call reuses it.
    """
    return admit(current_memory(), request.headers.get(AUTHORIZATION))


def read_body() -> bytes:
    """The request body, refusing one over CHATMEM_MAX_BODY_BYTES before reading it all."""
    limit = current_memory().settings.max_body_bytes
    too_large = PayloadTooLarge(
        f"The request body is larger than {limit} bytes.", details={"max_bytes": limit}
    )
    if request.content_length is not None and request.content_length > limit:
        raise too_large
    body = request.stream.read(limit + 1)
    if len(body) > limit:
        raise too_large
    return body


def session_key() -> str | None:
    """The REST client's `X-Chatmem-Session` grouping key, if it sent one."""
    key = request.headers.get(SESSION_HEADER)
    if key is None:
        return None
    key = inputs.check_text(key.strip(), field=SESSION_HEADER)
    if not key or len(key) > SESSION_KEY_MAX:
        raise InvalidParams(
            f"{SESSION_HEADER} must be 1-{SESSION_KEY_MAX} characters.",
            details={"field": SESSION_HEADER},
        )
    return key


def exempt_from_csrf(app: App, *blueprints: Blueprint) -> None:
    """Exempt bearer-only blueprints from Flask-WTF's CSRFProtect, if the host uses it.

    The host may set up CSRFProtect before or after chatmem: exempt now if it
    is there, and otherwise on each request (before CSRFProtect's own hook,
    which was registered later, runs).
    """

    def exempt() -> None:
        csrf = app.extensions.get("csrf")
        if csrf is not None and hasattr(csrf, "exempt"):
            for blueprint in blueprints:
                csrf.exempt(blueprint)

    exempt()
    app.before_request(exempt)
