"""The Memory screen's Content-Security-Policy, widened just enough for the host's layout.

A host that puts the screen inside its own layout brings a CDN stylesheet,
a few inline scripts and fonts. chatmem's default policy would block them
all. Rather than loosening it to `'unsafe-inline'`, the host:

- lists its outside origins in `CHATMEM_SCREEN_SCRIPT_SOURCES`,
  `CHATMEM_SCREEN_STYLE_SOURCES` and `CHATMEM_SCREEN_FONT_SOURCES`;
- marks its inline `<script>` and `<style>` with `nonce="{{ csp_nonce() }}"`.

The nonce is made once per request, and only a request whose page asked for
it gets `'nonce-…'` in its policy: a host policy that relies on
`'unsafe-inline'` keeps working (a nonce would switch that off).

A host that already makes nonces (Flask-Talisman sets `request.csp_nonce`
and its own `csp_nonce()` template global) keeps its own: chatmem's global
is added only where none exists, and returns the request's nonce when there
is one, so the page and every header agree.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterable, Mapping
from typing import Any

from flask import Flask, g, has_request_context, request

#: The per-request nonce, once a template asked for it.
_NONCE = "_chatmem_csp_nonce"

#: (setting, directive) the host's extra sources go to.
EXTRA_SOURCES = (
    ("CHATMEM_SCREEN_SCRIPT_SOURCES", "script-src"),
    ("CHATMEM_SCREEN_STYLE_SOURCES", "style-src"),
    ("CHATMEM_SCREEN_FONT_SOURCES", "font-src"),
)
#: Directives the nonce is added to.
NONCED = ("script-src", "style-src")


def csp_nonce() -> str:
    """This request's nonce for `<script nonce="…">` and `<style nonce="…">` (a template global)."""
    if not has_request_context():
        return ""
    nonce = g.get(_NONCE)
    if nonce is None:
        nonce = getattr(request, "csp_nonce", None) or secrets.token_urlsafe(18)
        setattr(g, _NONCE, nonce)
    return str(nonce)


def install(app: Flask) -> None:
    """`csp_nonce()` for the host's templates, unless the host has one already."""
    if "csp_nonce" not in app.jinja_env.globals:
        app.add_template_global(csp_nonce)


def used_nonce() -> str | None:
    """The nonce this request's page used, if it used one."""
    return g.get(_NONCE) if has_request_context() else None


def source_list(value: str) -> tuple[str, ...]:
    """A setting's sources: spaces or commas between them; `;` would start a new directive.

    `https://cdn.example`, `'self'`, `data:`; never `'unsafe-inline'` or
    `'unsafe-eval'`, which would let agent-written text run as script.
    """
    sources = tuple(word for word in value.replace(",", " ").split() if word)
    for source in sources:
        if ";" in source or any(ord(ch) < 0x21 or ord(ch) == 0x7F for ch in source):
            raise ValueError("CSP sources separated by spaces or commas, with no ;")
        if source.lower() in ("'unsafe-inline'", "'unsafe-eval'", "'unsafe-hashes'"):
            raise ValueError(
                "CSP sources without 'unsafe-inline' or 'unsafe-eval' "
                '(mark inline code with nonce="{{ csp_nonce() }}" instead)'
            )
    return sources


def policy(base: str, settings: Mapping[str, Any], nonce: str | None) -> str:
    """`base` (CHATMEM_SCREEN_CSP) with the host's sources and the page's nonce added.

    A directive the base lacks starts from `default-src`'s sources, which
    is what the browser would have used for it.
    """
    directives = _parse(base)
    additions: dict[str, list[str]] = {}
    for key, directive in EXTRA_SOURCES:
        additions.setdefault(directive, []).extend(settings.get(key) or ())
    if nonce:
        for directive in NONCED:
            additions.setdefault(directive, []).append(f"'nonce-{nonce}'")
    for directive, sources in additions.items():
        if not sources:
            continue
        current = directives.get(directive)
        if current is None:
            current = directives[directive] = list(directives.get("default-src", ["'self'"]))
        _extend(current, sources)
    return "; ".join(" ".join([name, *sources]) for name, sources in directives.items())


def _parse(text: str) -> dict[str, list[str]]:
    directives: dict[str, list[str]] = {}
    for part in text.split(";"):
        words = part.split()
        if words and words[0].lower() not in directives:
            directives[words[0].lower()] = words[1:]
    return directives


def _extend(current: list[str], sources: Iterable[str]) -> None:
    if current == ["'none'"]:
        current.clear()
    for source in sources:
        if source not in current:
            current.append(source)
