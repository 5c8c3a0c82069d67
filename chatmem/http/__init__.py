"""The extension's HTTP surfaces, each a blueprint under CHATMEM_URL_PREFIX."""

from __future__ import annotations

from flask import Blueprint, Flask, Response

from ..errors import ChatmemError


def register_blueprints(app: Flask, url_prefix: str) -> None:
    """Mount every chatmem blueprint on the app under the configured prefix."""
    prefix = url_prefix.rstrip("/")
    for blueprint, path in _mounts():
        app.register_blueprint(blueprint, url_prefix=prefix + path)
    from .errors import answer_routing_errors, http_error
    from .mcp.transport import refusal
    from .screen.access import wants_json

    def screen(error: ChatmemError) -> Response | None:
        # Pages stay the host's: only a script that asked for JSON gets JSON.
        return http_error(error) if wants_json() else None

    answer_routing_errors(
        app, {f"{prefix}/api": http_error, f"{prefix}/mcp": refusal, f"{prefix}/memory": screen}
    )


def _mounts() -> list[tuple[Blueprint, str]]:
    """(blueprint, path under the prefix): each HTTP surface adds itself here."""
    from .mcp.transport import mcp
    from .rest import api
    from .screen import bp as memory_screen

    return [(api, "/api"), (mcp, "/mcp"), (memory_screen, "/memory")]
