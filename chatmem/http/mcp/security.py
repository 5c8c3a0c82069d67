"""The MCP endpoint's Host and Origin checks, against DNS rebinding (SPEC §5).

A page on another site, or a name re-pointed at this machine, must not reach
the endpoint through a user's browser: the Host must be one this site answers
to (CHATMEM_MCP_ALLOWED_HOSTS, else localhost and SERVER_NAME; 421 if not),
and an Origin, when sent, this site's own or a listed one
(CHATMEM_MCP_ALLOWED_ORIGINS; 403 if not). Kept apart from the transport as
the MCP SDK keeps `transport_security.py`.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from flask import request

from ...core import current_memory
from ...errors import ChatmemError

LOCAL_HOSTS = ("localhost", "127.0.0.1", "[::1]")


def _split_host(host: str) -> tuple[str, str]:
    host = host.strip().lower()
    if host.startswith("["):
        name, _, rest = host.partition("]")
        return name + "]", rest[1:] if rest.startswith(":") else ""
    name, _, port = host.partition(":")
    return name, port


def allowed_hosts() -> list[str]:
    configured = current_memory().settings.mcp.allowed_hosts
    if configured is None:
        from flask import current_app

        server_name = current_app.config.get("SERVER_NAME")  # Flask's own key, not chatmem's
        return [*LOCAL_HOSTS, *([server_name] if server_name else [])]
    return list(configured)  # already stripped, blanks dropped (settings.parsers.word_list)


def host_allowed(host: str, patterns: list[str]) -> bool:
    """`*` allows all; `name` or `name:*` any port of that host; `name:port` exactly."""
    name, port = _split_host(host)
    for pattern in patterns:
        if pattern == "*":
            return True
        want_name, want_port = _split_host(pattern)
        if want_name == name and want_port in ("", "*", port):
            return True
    return False


def origin_allowed(origin: str, host: str) -> bool:
    """Same host as the request, or listed in CHATMEM_MCP_ALLOWED_ORIGINS."""
    origin = origin.strip().rstrip("/").lower()
    parts = urlsplit(origin)
    if parts.scheme in ("http", "https") and parts.netloc and parts.netloc == host.lower():
        return True
    extra = current_memory().settings.mcp.allowed_origins
    return origin in {o.rstrip("/").lower() for o in extra}


def refused_request() -> ChatmemError | None:
    """Why this request's Host (421) or Origin (403) may not reach the endpoint, or None."""
    host = request.headers.get("Host", "")
    if not host_allowed(host, allowed_hosts()):
        return ChatmemError(
            f"Host {host!r} is not allowed; see CHATMEM_MCP_ALLOWED_HOSTS.",
            code="forbidden",
            status=421,
        )
    origin = request.headers.get("Origin")
    if origin is not None and not origin_allowed(origin, host):
        return ChatmemError(
            f"Origin {origin!r} may not call this endpoint; see CHATMEM_MCP_ALLOWED_ORIGINS.",
            code="forbidden",
            status=403,
        )
    return None
