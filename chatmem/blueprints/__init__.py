"""The extension's HTTP surfaces, each a blueprint under CHATMEM_URL_PREFIX."""

from __future__ import annotations

from flask import Blueprint, Flask


def register_blueprints(app: Flask) -> None:
    """Mount every chatmem blueprint on the app under the configured prefix."""
    prefix = str(app.config["CHATMEM_URL_PREFIX"]).rstrip("/")
    for blueprint, path in _mounts():
        app.register_blueprint(blueprint, url_prefix=prefix + path)
    from .http_errors import answer_routing_errors

    answer_routing_errors(app, prefix)


def _mounts() -> list[tuple[Blueprint, str]]:
    """(blueprint, path under the prefix): each HTTP surface adds itself here."""
    from .api import api
    from .mcp import mcp
    from .memory_screen import bp as memory_screen

    return [(api, "/api"), (mcp, "/mcp"), (memory_screen, "/memory")]
