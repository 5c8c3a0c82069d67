"""The Memory screen's refusal page offers a way out that works: a signed-in
user without the capability is sent back to the site (every Memory page would
refuse them again), while a curator whose form went stale goes back to Memory."""

from __future__ import annotations

import re

from flask import Flask

from tests.demo_client import DemoClient
from tests.screen_helpers import SCREEN, login

BUTTON = re.compile(r'<a class="cm-button[^"]*" href="([^"]*)">([^<]+)</a>')


def test_a_user_without_the_capability_is_sent_back_to_the_site(demo_app: Flask) -> None:
    viewer = DemoClient(demo_app, "viewer").client
    for path in (SCREEN, f"{SCREEN}?tab=tokens", f"{SCREEN}/sessions/nope"):
        answer = viewer.get(path)
        assert answer.status_code == 403
        page = answer.get_data(as_text=True)
        assert BUTTON.findall(page) == [("/", "Back to the site")], path
        assert "ask one of them for access" in page
    # The way out leads to a page the viewer may use (the demo's chat).
    home = viewer.get("/", follow_redirects=True)
    assert home.status_code == 200 and home.request.path == "/chat"


def test_a_curator_refused_for_a_stale_form_goes_back_to_memory(app: Flask) -> None:
    admin = app.test_client()
    login(admin, "admin")
    answer = admin.post(f"{SCREEN}/settings", data={"name": "memory_enabled", "value": "false"})
    assert answer.status_code == 403
    page = answer.get_data(as_text=True)
    assert BUTTON.findall(page) == [(SCREEN, "Back to Memory")]
