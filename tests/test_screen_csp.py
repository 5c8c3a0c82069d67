"""The screen's CSP as a host layout widens it, and the layout a themed host picks per request."""

from __future__ import annotations

import re
from typing import Any

import pytest
from flask import Flask, g
from jinja2 import DictLoader

from chatmem.csp import policy
from chatmem.settings import ConfigError
from tests.conftest import dispose
from tests.hostapp import create_host_app, reconfigure
from tests.screen_helpers import SCREEN, login

BASE = "default-src 'self'; script-src 'self'; style-src 'self'; object-src 'none'"
CDN = ("https://cdn.example",)


def test_the_host_sources_and_the_nonce_join_their_directives() -> None:
    settings = {"CHATMEM_SCREEN_SCRIPT_SOURCES": CDN, "CHATMEM_SCREEN_STYLE_SOURCES": CDN}
    assert policy(BASE, settings, "abc") == (
        "default-src 'self'; script-src 'self' https://cdn.example 'nonce-abc'; "
        "style-src 'self' https://cdn.example 'nonce-abc'; object-src 'none'"
    )


def test_a_directive_the_base_lacks_starts_from_default_src() -> None:
    fonts = {"CHATMEM_SCREEN_FONT_SOURCES": ("https://fonts.example",)}
    assert policy("default-src 'self'", fonts, None) == (
        "default-src 'self'; font-src 'self' https://fonts.example"
    )
    assert policy("default-src 'none'", fonts, None) == (
        "default-src 'none'; font-src https://fonts.example"
    )


def test_nothing_added_leaves_the_base_as_it_was() -> None:
    assert policy(BASE, {}, None) == BASE


def layout_host(database_url: str, **config: Any) -> Flask:
    app = create_host_app(database_url, **config)
    app.jinja_loader = DictLoader(  # type: ignore[method-assign]
        {
            "mine.html": '<script nonce="{{ csp_nonce() }}">1</script>'
            "<header>mine</header>{% block chatmem_content %}{% endblock %}",
            "_themes/dark/chatmem.html": "<header>dark theme</header>"
            "{% block chatmem_content %}{% endblock %}",
        }
    )
    return app


def screen(app: Flask) -> tuple[str, str]:
    with app.test_client() as client:
        login(client, "admin")
        response = client.get(SCREEN)
        assert response.status_code == 200
        html, csp = response.get_data(as_text=True), response.headers["Content-Security-Policy"]
    dispose(app)
    return html, csp


def test_a_page_that_uses_the_nonce_sends_it_and_one_that_does_not_sends_none(
    database_url: str,
) -> None:
    app = layout_host(database_url)
    html, csp = screen(app)
    assert "<header>" not in html  # chatmem's own layout: no nonce asked for
    assert "nonce-" not in csp
    reconfigure(app, CHATMEM_BASE_TEMPLATE="mine.html", CHATMEM_SCREEN_STYLE_SOURCES=CDN)
    html, csp = screen(app)
    [nonce] = re.findall(r'<script nonce="([^"]+)">', html)
    assert "<header>mine</header>" in html
    assert f"script-src 'self' 'nonce-{nonce}'" in csp
    assert f"style-src 'self' https://cdn.example 'nonce-{nonce}'" in csp
    _, again = screen(app)
    assert nonce not in again, "a nonce is good for one response only"


def test_a_themed_host_picks_the_layout_per_request(database_url: str) -> None:
    app = layout_host(database_url, CHATMEM_BASE_TEMPLATE="mine.html")
    memory = app.extensions["test_host"]["memory"]

    @app.before_request
    def pick_theme() -> None:
        g.theme = "dark"

    @memory.base_template
    def themed() -> str:
        return f"_themes/{g.theme}/chatmem.html"

    html, _ = screen(app)
    assert "<header>dark theme</header>" in html
    assert "<header>mine</header>" not in html


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("CHATMEM_SCREEN_SCRIPT_SOURCES", ["https://cdn.example", "'unsafe-eval'"]),
        ("CHATMEM_SCREEN_FONT_SOURCES", "https://x.example;img-src *"),
        ("CHATMEM_BASE_TEMPLATE", "/etc/passwd"),
    ],
)
def test_a_bad_layout_setting_fails_at_start_naming_it(
    database_url: str, key: str, value: Any
) -> None:
    with pytest.raises(ConfigError) as caught:
        create_host_app(database_url, seed=False, **{key: value})
    assert list(caught.value.errors) == [key]


def test_a_host_that_makes_its_own_nonces_keeps_them(database_url: str) -> None:
    """As Flask-Talisman does: a `csp_nonce` global of its own and `request.csp_nonce`."""
    from flask import request

    app = Flask("talisman_like")
    app.jinja_env.globals["csp_nonce"] = lambda: request.csp_nonce  # type: ignore[attr-defined]
    before = app.jinja_env.globals["csp_nonce"]
    host = layout_host(database_url, CHATMEM_BASE_TEMPLATE="mine.html")

    @host.before_request
    def make_nonce() -> None:
        request.csp_nonce = "host-made-nonce"  # type: ignore[attr-defined]

    html, csp = screen(host)
    assert '<script nonce="host-made-nonce">' in html
    assert "script-src 'self' 'nonce-host-made-nonce'" in csp
    from chatmem import csp as chatmem_csp

    chatmem_csp.install(app)
    assert app.jinja_env.globals["csp_nonce"] is before
