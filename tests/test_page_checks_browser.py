"""Every page of the demo and the Memory screen, seeded with an item of every kind
and with long and unbroken content, at 375 px and at 1280 px, in the light and
the dark theme: each answers as it should, with no horizontal overflow, no table
cell narrower than its longest word, no console error, and no serious or
critical axe-core violation (axe-playwright-python runs axe in the same
Chromium; in the dark theme that includes colour contrast). The parts are in
tests/page_checks.py.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from axe_playwright_python.sync_playwright import Axe
from flask import Flask

from tests.page_checks import (
    MATRIX,
    MEMORY,
    Theme,
    Visit,
    pages,
    problems_on,
    seed_everything,
)
from tests.servers import serving
from tests.test_memory_screen_browser import _showcase, seed

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def screenshot_name(user: str, url: str, width: int, theme: Theme) -> str | None:
    """CHATMEM_SCREENSHOTS=docs/screenshots keeps the README's phone-sized pictures current."""
    if width != 375:
        return None
    if theme.name == "light" and user == "editor" and url.startswith("/chat/"):
        return "chat-mobile.png"
    if theme.name == "light" and user == "admin" and url.endswith("?tab=pending"):
        return "memory-mobile.png"
    if theme.name == "light" and user == "admin" and url.endswith("?tab=tokens"):
        return "memory-tokens-mobile.png"
    if theme.name == "dark" and user == "admin" and url.endswith("?tab=pending"):
        return "memory-mobile-dark.png"
    return None


@pytest.fixture
def seeded(demo_app: Flask) -> dict[str, Any]:
    return seed_everything(demo_app)


@pytest.fixture
def live_url(demo_app: Flask, seeded: dict[str, Any]) -> Iterator[str]:
    with serving(demo_app) as url:
        yield url


def log_in(page: Any, user: str) -> None:
    page.goto("/login")
    page.get_by_label("Username").fill(user)
    page.get_by_label("Password").fill(user)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url("**/chat**")


def test_every_page_fits_is_clean_and_passes_axe_at_each_width_and_theme(
    browser: Any, live_url: str, seeded: dict[str, Any]
) -> None:
    """One seeded app, one browser; a context per user, width and theme."""
    axe = Axe()
    problems: list[str] = []
    for theme, width in MATRIX:
        for user, visits in pages(seeded).items():
            context = browser.new_context(
                base_url=live_url,
                viewport={"width": width, "height": 900},
                color_scheme=theme.color_scheme,
            )
            context.set_default_timeout(15_000)
            page = context.new_page()
            try:
                if user:
                    log_in(page, user)
                for visit in visits:
                    where = f"{visit.url} as {user or 'visitor'}, {width} px, {theme.name}"
                    problems += [f"{where}: {p}" for p in problems_on(page, visit, axe)]
                    shot = screenshot_name(user, visit.url, width, theme)
                    if shot and os.environ.get("CHATMEM_SCREENSHOTS"):
                        folder = Path(os.environ["CHATMEM_SCREENSHOTS"])
                        page.screenshot(path=str(folder / shot), full_page=True)
            finally:
                context.close()
    assert problems == [], "\n".join(problems)


def test_the_screen_in_its_own_layout_is_clean_at_each_width_and_theme(
    browser: Any, app: Flask, live_server: str
) -> None:
    """A host that keeps chatmem's own layout (chatmem/base.html), not the demo's."""
    seed(app, _showcase)
    axe = Axe()
    problems: list[str] = []
    for theme, width in MATRIX:
        context = browser.new_context(
            base_url=live_server,
            viewport={"width": width, "height": 900},
            color_scheme=theme.color_scheme,
        )
        page = context.new_page()
        try:
            page.goto(f"{MEMORY}?tab=pending")
            page.get_by_label("Username").fill("admin")
            page.get_by_label("Password").fill("admin")
            page.get_by_role("button", name="Log in").click()
            page.wait_for_url(f"**{MEMORY}?tab=pending")
            for tab in ("pending", "active", "history", "tokens"):
                visit = Visit(f"{MEMORY}?tab={tab}")
                where = f"host {visit.url}, {width} px, {theme.name}"
                problems += [f"{where}: {p}" for p in problems_on(page, visit, axe)]
        finally:
            context.close()
    assert problems == [], "\n".join(problems)


@pytest.mark.parametrize(("width", "cards"), [(375, True), (1280, False)])
def test_a_token_table_is_cards_on_a_phone_and_a_table_on_a_desktop(
    browser: Any, demo_app: Flask, width: int, cards: bool
) -> None:
    """At 375 px each row is a card whose cells read "label value"; at 1280 px a table."""
    with serving(demo_app) as url:
        page = browser.new_page(base_url=url, viewport={"width": width, "height": 900})
        try:
            log_in(page, "admin")
            page.goto("/connect")
            page.get_by_label("Name").fill("laptop")
            page.get_by_role("button", name="Create token").click()
            page.wait_for_selector("table.tokens tbody tr")
            seen = page.evaluate(
                """() => {
                  const table = document.querySelector('table.tokens');
                  const cell = table.querySelector('tbody td');
                  return {
                    header: getComputedStyle(table.querySelector('thead')).display,
                    row: getComputedStyle(table.querySelector('tbody tr')).display,
                    label: getComputedStyle(cell, '::before').content,
                    text: cell.textContent.trim(),
                  };
                }"""
            )
        finally:
            page.close()
    assert seen["text"] == "laptop"
    if cards:
        assert seen == {"header": "none", "row": "block", "label": '"Name"', "text": "laptop"}
    else:
        assert seen["header"] == "table-header-group" and seen["row"] == "table-row", seen
        assert seen["label"] == "none", "no label beside a cell under its column header"


def test_the_check_catches_a_squeezed_cell_and_a_sideways_scroll(
    browser: Any, demo_app: Flask
) -> None:
    """The checks can fail: a header squeezed to a letter per line, a table wider than its box."""
    with serving(demo_app) as url:
        page = browser.new_page(base_url=url, viewport={"width": 375, "height": 700})
        try:
            page.goto("/login")
            # Styled through the CSSOM: a Content-Security-Policy may refuse style attributes.
            page.evaluate(
                """() => {
                  document.querySelector('main').insertAdjacentHTML('beforeend',
                    `<div class="table-wrap"><table><tr><th>Name</th><td></td></tr></table></div>`);
                  const [th, td] = document.querySelectorAll('.table-wrap th, .table-wrap td');
                  th.style.width = '1ch';
                  td.style.whiteSpace = 'nowrap';
                  td.textContent = 'wide '.repeat(200);
                }"""
            )
            found = problems_on_loaded(page)
        finally:
            page.close()
    assert any(p.startswith('squeezed cell: "Name"') and "over" in p for p in found), found
    assert any(p.startswith("scrolls sideways: table-wrap") for p in found), found


def problems_on_loaded(page: Any) -> list[str]:
    from tests.page_checks import SCROLLING_BOXES, SQUEEZED_CELLS, UNBREAKABLE_UP_TO

    return [f"scrolls sideways: {box}" for box in page.evaluate(SCROLLING_BOXES)] + [
        f"squeezed cell: {cell}" for cell in page.evaluate(SQUEEZED_CELLS, UNBREAKABLE_UP_TO)
    ]


@pytest.mark.parametrize(
    ("opt_out", "expected"), [(False, "dark"), (True, "light")], ids=["dark", "opted-out"]
)
def test_dark_mode_follows_the_system_unless_the_host_opts_out(
    browser: Any, demo_app: Flask, opt_out: bool, expected: str
) -> None:
    """prefers-color-scheme: dark turns both stylesheets dark; data-chatmem-theme="light"
    on <html> keeps them light."""
    with serving(demo_app) as url:
        context = browser.new_context(base_url=url, color_scheme="dark")
        page = context.new_page()
        try:
            log_in(page, "admin")
            backgrounds = {}
            for path in ("/connect", "/chatmem/memory"):
                page.goto(path)
                if opt_out:
                    page.evaluate("document.documentElement.dataset.chatmemTheme = 'light'")
                backgrounds[path] = page.evaluate(
                    """() => {
                      const colour = (e) => getComputedStyle(e).backgroundColor;
                      const page = [document.body, document.documentElement]
                        .map(colour).find((c) => c !== 'rgba(0, 0, 0, 0)');
                      return [page, colour(document.querySelector('.card, .cm-card'))];
                    }"""
                )
        finally:
            context.close()
    for path, colours in backgrounds.items():
        for colour in colours:
            channels = [int(c) for c in colour[colour.index("(") + 1 : -1].split(",")[:3]]
            shade = "dark" if sum(channels) < 3 * 100 else "light"
            assert shade == expected, f"{path}: {colour} is {shade}"
