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
    "CHATMEM_RECALL_SESSIONS": (
        "own",
        "Whose session records `recall` returns: `own` (the caller's; a curator with "
        "manage_options sees everyone's) or `site` (everyone's, to anyone who may recall).",
    ),
    "CHATMEM_LEDGER_VALUE_MAX": (
        200,
        "Argument strings longer than this are cut in the change ledger.",
    ),
    "CHATMEM_LICENSE_ACTIVE": (
        True,
        "The licence state used when the host registers no `license_checker`.",
    ),
    **PROVIDER_DEFAULTS,
    "CHATMEM_MCP_ALLOWED_HOSTS": (
        None,
        "Host headers the MCP endpoint accepts (`host`, `host:port`, `host:*`, or `*`); "
        "None: localhost, 127.0.0.1 and [::1] on any port, plus SERVER_NAME.",
    ),
    "CHATMEM_MCP_ALLOWED_ORIGINS": (
        (),
        "Origins (`scheme://host[:port]`) allowed to call the MCP endpoint besides its own host.",
    ),
    "CHATMEM_MAX_BODY_BYTES": (
        1024 * 1024,
        "Largest request body the MCP endpoint and the REST routes read (413 above it).",
    ),
    "CHATMEM_RATE_LIMIT_PER_MINUTE": (
        120,
        "Requests one API token may make per minute over MCP and REST (429 above it); 0: no limit.",
    ),
    "CHATMEM_SUMMARY_INPUT_MAX": (
        12_000,
        "Characters of transcript and digest sent to the provider for one summary.",
    ),
    "CHATMEM_JOB_MAX_ATTEMPTS": (5, "Tries of one auto-summary job before it is given up."),
    "CHATMEM_JOB_BACKOFF_SECONDS": (
        30,
        "Wait before the first retry of a failed summary job; doubles with every try.",
    ),
    "CHATMEM_JOB_BACKOFF_MAX_SECONDS": (3600, "Longest wait between two tries of one job."),
    "CHATMEM_JOB_LEASE_SECONDS": (
        300,
        "A claimed job not finished within this time is claimed again (its worker died).",
    ),
    "CHATMEM_BACKGROUND_SWEEP_SECONDS": (
        0,
        "Seconds between in-process sweeps (idle sessions and due jobs); 0 turns it off.",
    ),
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


RECALL_SESSIONS = ("own", "site")


def apply_defaults(config: dict[str, Any]) -> None:
    for key, (default, _meaning) in DEFAULTS.items():
        config.setdefault(key, default)
    if config["CHATMEM_RECALL_SESSIONS"] not in RECALL_SESSIONS:
        # Fail at start-up: a typo here must not quietly share private records.
        raise ValueError(
            f"CHATMEM_RECALL_SESSIONS must be one of {', '.join(RECALL_SESSIONS)}, "
            f"not {config['CHATMEM_RECALL_SESSIONS']!r}."
        )


def read(config: Mapping[str, Any], key: str) -> Any:
    """A setting's value, falling back to its documented default."""
    return config.get(key, DEFAULTS[key][0])
