"""The Memory screen inside a Bootstrap-style host layout (tests/hosts/cdn_layout), in Chromium.

The host's stylesheet comes from a second origin, as a CDN's would, and its
layout has an inline `<style>` and `<script>` marked with `csp_nonce()`. With
the CDN listed in CHATMEM_SCREEN_*_SOURCES, the host's nav is styled, its
script runs and the browser reports no CSP violation; without the listing,
the same page's CDN stylesheet is refused (so the first check can fail).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.hostapp import reconfigure, work
from tests.hosts.cdn_layout import cdn, create_app
from tests.screen_helpers import SCREEN, propose
from tests.servers import serving

pytestmark = [pytest.mark.browser]

# Each violation the page reports, as the browser's own event (no console scraping).
WATCH_VIOLATIONS = """
window.__violations = [];
document.addEventListener("securitypolicyviolation", (e) => {
  window.__violations.push(e.violatedDirective + " " + e.blockedURI);
});
"""


@pytest.fixture
def host(database_url: str) -> Iterator[tuple[Any, str]]:
    with serving(cdn()) as cdn_url:
        app = create_app(database_url, cdn_url)
        work(app, lambda memory, db: propose(memory, "The shop closes at six."))
        with serving(app) as url:
            yield app, url
        with app.app_context():
            app.extensions["test_host"]["db"].engine.dispose()


def open_screen(browser: Any, url: str) -> tuple[Any, list[str]]:
    page = browser.new_page()
    console: list[str] = []
    page.on("console", lambda m: console.append(m.text) if m.type == "error" else None)
    page.add_init_script(WATCH_VIOLATIONS)
    page.goto(f"{url}/login")
    page.get_by_label("Username").fill("admin")
    page.get_by_label("Password").fill("admin")
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(f"{url}/")
    console.clear()  # the host's bare login page asked for a favicon: not the screen's
    page.goto(url + SCREEN)
    page.wait_for_load_state("load")
    return page, console


def style_of(page: Any, selector: str, prop: str) -> str:
    return str(page.eval_on_selector(selector, f"e => getComputedStyle(e).{prop}"))


def test_the_screen_sits_in_the_cdn_layout_with_no_csp_violation(
    host: tuple[Any, str], browser: Any
) -> None:
    _, url = host
    page, console = open_screen(browser, url)
    try:
        # chatmem's own page, inside the host's nav, with its own stylesheet and script.
        assert page.title() == "Pending review · Memory · Host"
        assert page.get_by_text("The shop closes at six.").first.is_visible()
        assert page.locator("#host-nav").get_by_text("Memory (1)").is_visible()
        assert style_of(page, "#host-nav", "backgroundColor") == "rgb(33, 37, 41)"  # the CDN's
        assert style_of(page, "#host-nav", "borderBottomColor") == "rgb(200, 0, 0)"  # inline
        assert page.get_attribute("#host-nav", "data-ready") == "yes"  # the inline script ran
        assert page.evaluate("window.__violations") == []
        assert console == []
    finally:
        page.close()


def test_without_the_cdn_listed_its_stylesheet_is_refused(
    host: tuple[Any, str], browser: Any
) -> None:
    app, url = host
    reconfigure(app, CHATMEM_SCREEN_STYLE_SOURCES=())
    page, _ = open_screen(browser, url)
    try:
        assert style_of(page, "#host-nav", "backgroundColor") != "rgb(33, 37, 41)"
        assert any(v.startswith("style-src") for v in page.evaluate("window.__violations"))
        # The nonce still lets the inline code in.
        assert style_of(page, "#host-nav", "borderBottomColor") == "rgb(200, 0, 0)"
        assert page.get_attribute("#host-nav", "data-ready") == "yes"
    finally:
        page.close()
