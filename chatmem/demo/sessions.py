"""Browser sign-ins that end when they should: bound to the user, ended by logout.

Flask's session is a signed cookie: on its own it is valid for as long as the
secret key, whatever happens on the server. Two things are checked on every
request, as an API token's are (`chatmem.auth.token_check`):

- the cookie carries a *binding*, a hash of the user's id, the host's
  `user_fingerprint` for them (the demo's: their creation time) and their
  `session_nonce`. A deleted user's cookie does not open the account of
  someone later given the same id: that user's fingerprint differs.
- logging out draws a new `session_nonce` for the user, so every cookie
  made before, including one copied out of the browser, stops working. (This
  ends the user's sign-ins in every browser: the price of keeping sessions in
  a cookie rather than in a table.)

The session cookie is also `Secure` whenever the request came over HTTPS
(behind a proxy that terminates TLS, see `DEMO_TRUSTED_PROXIES`), and every
page carries a CSP that forbids framing (clickjacking) and inline script.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
from typing import Any

from flask import Flask, Response, request, session
from flask.sessions import SecureCookieSessionInterface

from chatmem.settings import SETTINGS

from .extensions import db, login_manager, memory
from .models import User, new_nonce
from .tools import load_user

log = logging.getLogger("chatmem.demo")

SESSION_KEY = "demo_binding"

#: The demo's pages: its own files only, no inline script or style, never framed.
PAGE_CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'; "
    "object-src 'none'"
)

#: The Memory screen is a demo page too: the library's policy, but never framed
#: (its default allows `'self'`, for a host that frames its own admin pages).
SCREEN_CSP = str(SETTINGS["CHATMEM_SCREEN_CSP"].default).replace(
    "frame-ancestors 'self'", "frame-ancestors 'none'"
)


def binding(user: User) -> str:
    """What a sign-in cookie holds of its user: changes with the user, and at logout."""
    fingerprint = memory.fingerprint_of(user)
    material = f"{user.id}\0{fingerprint}\0{user.session_nonce}".encode()
    return hashlib.sha256(b"chatmem-demo-session\0" + material).hexdigest()


def bind(user: User) -> None:
    """After `login_user`: tie this session to the user as they are now."""
    session[SESSION_KEY] = binding(user)


@login_manager.user_loader
def signed_in_user(user_id: str) -> User | None:
    """The session's user, only if the cookie was made for this user and not logged out."""
    user = load_user(user_id)
    held = session.get(SESSION_KEY)
    if user is None or not isinstance(held, str):
        return None
    try:
        expected = binding(user)
    except Exception:
        # A failing fingerprint hook fails closed, as it does for API tokens.
        log.exception("user_fingerprint failed; refusing the sign-in cookie")
        db.session.rollback()
        return None
    return user if hmac.compare_digest(held, expected) else None


def end(user: Any) -> None:
    """Logout: a new nonce, so no copy of any earlier cookie of this user works again."""
    if isinstance(user, User):
        user.session_nonce = new_nonce()
        db.session.commit()
    session.pop(SESSION_KEY, None)


class HttpsAwareSessionInterface(SecureCookieSessionInterface):
    """Flask's cookie session, `Secure` when the request is HTTPS (or when configured so)."""

    def get_cookie_secure(self, app: Flask) -> bool:
        return bool(app.config["SESSION_COOKIE_SECURE"]) or request.is_secure


def page_headers(response: Response) -> Response:
    """Every demo response: the CSP, unless a blueprint (the Memory screen) set its own."""
    if "Content-Security-Policy" not in response.headers:
        response.headers["Content-Security-Policy"] = PAGE_CSP
        response.headers.setdefault("X-Frame-Options", "DENY")
    response.headers.setdefault("X-Content-Type-Options", "nosniff")
    return response
