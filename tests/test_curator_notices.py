"""The demo's "waiting for you" notices: gone once their item was decided, and
each one dismissable by a curator (a CSRF-checked POST), by nobody else."""

from __future__ import annotations

import re
from typing import Any

import pytest
from flask import Flask

from chatmem.demo.extensions import db
from chatmem.demo.notices import CuratorNotice
from tests.demo_client import DemoClient
from tests.newcomer_world import remember, seed_every_kind

MEMORY = "/chatmem/memory"
NOTICE = re.compile(r'action="/notices/(\d+)/dismiss">.*?</form>', re.S)


def shown(client: DemoClient) -> dict[int, str]:
    """The notices on the admin's chat page: id -> their text."""
    page = client.client.get("/chat").get_data(as_text=True)
    return {
        int(found[1]): re.sub(r"<[^>]+>|\s+", " ", found[0]).strip()
        for found in NOTICE.finditer(page)
    }


def pending_label(world: dict[str, Any]) -> str:
    return f"Proposal #{world['pending']} (fact)"


@pytest.fixture
def world(demo_app: Flask) -> dict[str, Any]:
    return seed_every_kind(demo_app)


def test_a_notice_goes_once_its_item_was_decided(demo_app: Flask, world: dict[str, Any]) -> None:
    admin = world["admin"]
    before = " | ".join(shown(admin).values())
    # A notice names its item neutrally, never by the agent's words (the webhook's label).
    assert f"New proposal from editor: {pending_label(world)}" in before
    assert "editor’s call to update-post waits for approval" in before
    # Decided items' notices (rejected, approved earlier) are not shown at all.
    assert "The shop closes on Sundays." not in before and "Shipping" not in before

    request_id = world["held"]["result"]["error"]["request_id"]
    denied = admin.client.post(f"{MEMORY}/held/{request_id}/deny", data={"csrf_token": admin.csrf})
    assert denied.status_code == 303
    after = " | ".join(shown(admin).values())
    assert "call to update-post" not in after, "the denied call's notice went"
    assert pending_label(world) in after, "the proposal still waits, its notice stays"

    with demo_app.app_context():
        version = db.session.execute(
            db.text("select version from chatmem_guidance where id = :id"),
            {"id": world["pending"]},
        ).scalar()
    approved = admin.client.post(
        f"{MEMORY}/guidance/{world['pending']}/approve",
        data={"csrf_token": admin.csrf, "version": version},
    )
    assert approved.status_code == 303
    # A new proposal keeps the badge (and the notices strip) on the page.
    remember(world["editor"], world["chat"] + 1, "Refunds take ten days.")
    texts = list(shown(admin).values())
    assert len(texts) == 1 and "New proposal from editor: Proposal #" in texts[0], texts
    assert pending_label(world) not in texts[0], "the approved proposal's notice went"


def test_a_curator_dismisses_a_notice_and_the_item_still_waits(
    demo_app: Flask, world: dict[str, Any]
) -> None:
    admin = world["admin"]
    notices = shown(admin)
    [proposal] = [i for i, text in notices.items() if pending_label(world) in text]
    page = admin.client.get("/chat").get_data(as_text=True)
    assert f'aria-label="Dismiss: New proposal from editor: {pending_label(world)}"' in page

    response = admin.client.post(
        f"/notices/{proposal}/dismiss",
        data={"csrf_token": admin.csrf, "next": f"{MEMORY}?tab=active"},
    )
    assert response.status_code == 303
    assert response.headers["Location"] == f"{MEMORY}?tab=active"
    assert proposal not in shown(admin) and len(shown(admin)) == 1
    pending = admin.client.get(f"{MEMORY}?tab=pending").get_data(as_text=True)
    assert f'id="entry-{world["pending"]}"' in pending, "dismissing is not reviewing"

    again = admin.client.post(f"/notices/{proposal}/dismiss", data={"csrf_token": admin.csrf})
    assert again.status_code == 404
    assert "dismissed already" in again.get_data(as_text=True)


def test_a_dismiss_without_its_token_or_by_a_non_curator_changes_nothing(
    demo_app: Flask, world: dict[str, Any]
) -> None:
    admin, editor = world["admin"], world["editor"]
    [first, *_] = shown(admin)
    no_token = admin.client.post(f"/notices/{first}/dismiss", data={})
    assert no_token.status_code == 400
    assert "security token" in no_token.get_data(as_text=True)
    not_curator = editor.client.post(f"/notices/{first}/dismiss", data={"csrf_token": editor.csrf})
    assert not_curator.status_code == 403
    token = admin.client.post(
        f"/notices/{first}/dismiss",
        data={"csrf_token": admin.csrf},
        headers={"Authorization": "Bearer cm_anything"},
    )
    assert token.status_code == 401, "a page action takes the sign-in, never a token"
    outside = admin.client.post(
        f"/notices/{first}/dismiss", data={"csrf_token": admin.csrf, "next": "//evil.example"}
    )
    assert outside.status_code == 303 and outside.headers["Location"] == "/chat"
    with demo_app.app_context():
        assert db.session.get(CuratorNotice, first) is None, "only the last, good request"
