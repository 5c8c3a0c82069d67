"""The Connect page in a real headless Chromium: make a token, copy the MCP
client configuration with the page's button, and use exactly what was copied
against the live server's MCP endpoint; then revoke it on the page and see the
endpoint refuse it. Saves docs/screenshots/connect.png when
CHATMEM_SCREENSHOTS=docs/screenshots."""

from __future__ import annotations

import json
import os
import re
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from flask import Flask

from tests.servers import serving

pytestmark = [pytest.mark.browser, pytest.mark.slow]


@pytest.fixture
def live_url(demo_app: Flask) -> Iterator[str]:
    with serving(demo_app) as url:
        yield url


def mcp_tools(server: dict[str, Any]) -> tuple[int, list[str]]:
    """`tools/list` over real HTTP with the URL and headers of a pasted client config."""
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}})
    request = urllib.request.Request(
        server["url"],
        data=body.encode(),
        method="POST",
        headers={
            **server["headers"],
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
        },
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            result = json.loads(answer.read())["result"]
            return answer.status, sorted(tool["name"] for tool in result["tools"])
    except urllib.error.HTTPError as error:
        return error.code, []


def test_make_a_token_copy_the_config_and_connect(
    demo_app: Flask, live_url: str, browser: Any, tmp_path: Path
) -> None:
    from playwright.sync_api import expect

    context = browser.new_context(viewport={"width": 1280, "height": 1000})
    context.grant_permissions(["clipboard-read", "clipboard-write"], origin=live_url)
    errors: list[str] = []
    try:
        page = context.new_page()
        page.set_default_timeout(10_000)
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(f"{live_url}/login?next=/connect")
        page.get_by_label("Username").fill("editor")
        page.get_by_label("Password").fill("editor")
        page.get_by_role("button", name="Log in").click()
        page.wait_for_url(f"{live_url}/connect")

        page.get_by_label("Name").fill("desktop agent")
        page.get_by_label("Expires in days").fill("7")
        page.get_by_role("button", name="Create token").click()
        new_token = page.locator("#new-token")
        expect(new_token).to_have_text(re.compile(r"^cm_[A-Za-z0-9_-]{43}$"))
        plain = new_token.inner_text()
        expect(page.get_by_text("cannot be shown again")).to_be_visible()

        page.get_by_role("button", name="Copy Claude Code config").click()
        expect(page.get_by_role("button", name="Copied")).to_be_visible()
        copied = page.evaluate("navigator.clipboard.readText()")
        server = json.loads(copied)["mcpServers"]["chatmem"]
        assert server["url"] == f"{live_url}/chatmem/mcp"
        assert server["headers"] == {"Authorization": f"Bearer {plain}"}

        status, tools = mcp_tools(server)
        assert status == 200 and "recall" in tools and "update-post" in tools

        # On a phone the token, the table and the configurations wrap or scroll in place.
        page.set_viewport_size({"width": 375, "height": 800})
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
        page.set_viewport_size({"width": 1280, "height": 1000})

        folder = Path(os.environ.get("CHATMEM_SCREENSHOTS") or tmp_path)
        folder.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(folder / "connect.png"), full_page=True)

        # Reloading shows the token by its prefix only; revoking it stops it at once.
        page.goto(f"{live_url}/connect")
        expect(page.locator("#new-token")).to_have_count(0)
        assert plain not in page.content()
        row = page.locator("table.tokens tbody tr", has_text="desktop agent")
        expect(row).to_contain_text(plain[:10] + "…")
        expect(row).to_contain_text("active")
        row.get_by_role("button", name="Revoke").click()
        expect(page.get_by_role("status")).to_contain_text("it no longer works")
        expect(row).to_contain_text("revoked")
        assert mcp_tools(server)[0] == 401
        assert errors == []
    finally:
        context.close()
