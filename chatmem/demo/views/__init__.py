"""The demo's routes: one blueprint, split by what they serve.

`blueprint` has the blueprint and what holds for every route (no token opens
a page, the navigation), `errors` the error answers (`{"error": {...}}` with
chatmem's stable codes on the chat API, a page elsewhere; never a stack
trace), `signin` signing in and out, `pages` the chat and Connect pages,
`chat_api` the chat JSON API the page itself uses.
"""

from . import chat_api as _chat_api  # noqa: F401 - registers the chat API
from . import pages as _pages  # noqa: F401 - registers the pages
from . import signin as _signin  # noqa: F401 - registers signing in and out
from .blueprint import bp
from .errors import http_exception, server_error, throttle_down

__all__ = ["bp", "http_exception", "server_error", "throttle_down"]
