"""A host whose layout is Bootstrap-style: a stylesheet from a CDN, inline script and style.

`cdn()` is the "CDN": a second origin (another port of 127.0.0.1) serving
`cdn/bootstrap-lite.css`, a few lines written for this test that stand in
for Bootstrap, so no network is needed. `create_app(database_url, cdn_url)`
is the test host with this layout; the Memory screen extends
`chatmem_layout.html` (CHATMEM_BASE_TEMPLATE), which extends the host's
`layout.html`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from flask import Flask, render_template
from jinja2 import FileSystemLoader

from tests.hostapp import create_host_app

HERE = Path(__file__).parent


def cdn() -> Flask:
    """The stand-in CDN: static files only, on its own origin."""
    return Flask("cdn", static_folder=str(HERE / "cdn"), static_url_path="")


def create_app(database_url: str, cdn_url: str, **config: Any) -> Flask:
    settings: dict[str, Any] = {
        "CDN_URL": cdn_url,
        "CHATMEM_BASE_TEMPLATE": "chatmem_layout.html",
        "CHATMEM_SCREEN_STYLE_SOURCES": cdn_url,
        "CHATMEM_SCREEN_SCRIPT_SOURCES": cdn_url,
        **config,
    }
    app = create_host_app(database_url, **settings)
    # The host's own templates folder, as `Flask(__name__)` would give it.
    app.jinja_loader = FileSystemLoader(str(HERE / "templates"))  # type: ignore[method-assign]
    app.add_url_rule("/", "home", lambda: render_template("home.html"))
    return app
