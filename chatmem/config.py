"""Every CHATMEM_* setting with its default and one line of meaning.

`init_app` applies these with `setdefault`, so the host's own values win.
The README's configuration table is checked against this dict by a test.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .providers import DEFAULTS as PROVIDER_DEFAULTS

DEFAULTS: dict[str, tuple[Any, str]] = {
    "CHATMEM_URL_PREFIX": (
        "/chatmem",
        "URL prefix of the Memory screen, the MCP endpoint and the REST routes.",
    ),
    "CHATMEM_SERVER_NAME": (
        "chatmem",
        "Server name: a tool's full name is `<server name>/<tool>`; also the MCP serverInfo name.",
    ),
    "CHATMEM_SESSION_IDLE_MINUTES": (30, "A session idle this long is ended by the sweep."),
    "CHATMEM_LEDGER_VALUE_MAX": (
        200,
        "Argument strings longer than this are cut in the change ledger.",
    ),
    "CHATMEM_LICENSE_ACTIVE": (
        True,
        "The licence state used when the host registers no `license_checker`.",
    ),
    **PROVIDER_DEFAULTS,
    "CHATMEM_UPGRADE_URL": (
        "",
        'Where the locked Memory screen\'s "Upgrade to Pro" link goes (http(s) or a path); '
        "empty hides the link.",
    ),
    "CHATMEM_SCREEN_CSP": (
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "form-action 'self'; frame-ancestors 'self'; base-uri 'none'; object-src 'none'",
        "Content-Security-Policy sent with the Memory screen's pages; empty sends none.",
    ),
}


def apply_defaults(config: dict[str, Any]) -> None:
    for key, (default, _meaning) in DEFAULTS.items():
        config.setdefault(key, default)


def read(config: Mapping[str, Any], key: str) -> Any:
    """A setting's value, falling back to its documented default."""
    return config.get(key, DEFAULTS[key][0])
