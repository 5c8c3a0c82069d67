"""Rejection memory: a curator rejects with a reason (screen, bulk, shell), the
Rejected tab shows who, when and why, and an agent re-proposing the same text
is told all three (`flag`) or refused with nothing stored (`refuse`).
"""

from __future__ import annotations

import getpass
from collections.abc import Iterator
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import func, select

from chatmem import InvalidParams
from chatmem.memory import guidance
from chatmem.memory.models import Guidance, Session
from tests.conftest import dispose
from tests.hostapp import USERS, create_host_app
from tests.screen_helpers import (
    JSON,
    SCREEN,
    entry,
    propose,
    state,
    token,
)


def rejected_on(app: Flask, entry_id: int) -> str:
    """The day the rejection was recorded (not today's: a run may cross midnight)."""
    with app.app_context():
        db = app.extensions["test_host"]["db"]
        day = f"{guidance.rejections(db.session(), [entry_id])[entry_id].at:%Y-%m-%d}"
        db.session.remove()
        return day


def seed(app: Flask, *texts: str) -> list[int]:
    with app.app_context():
        memory = app.extensions["test_host"]["memory"]
        ids = [propose(memory, text) for text in texts]
        memory.db.session.remove()
        return ids


def reject(client: FlaskClient, app: Flask, entry_id: int, reason: str | None, **kw: Any) -> Any:
    data = {"csrf_token": token(client), "version": str(entry(app, entry_id).version)}
    if reason is not None:
        data["reason"] = reason
    response = client.post(f"{SCREEN}/guidance/{entry_id}/reject", data=data, **kw)
    response.close()
    return response


def remember(app: Flask, text: str) -> dict[str, Any]:
    with app.app_context():
        memory = app.extensions["test_host"]["memory"]
        result: dict[str, Any] = memory.call_tool(
            "remember", {"type": "fact", "text": text}, user=USERS["editor"]
        )
        memory.db.session.remove()
        return result


def test_rejecting_with_a_reason_fills_the_rejected_tab(app: Flask, client: FlaskClient) -> None:
    first, second = seed(app, "Checkout is page 42.", "Use Comic Sans for headings.")
    assert reject(client, app, first, "  Checkout moved to page 7.  ").status_code == 303
    assert reject(client, app, second, "").status_code == 303

    html = client.get(f"{SCREEN}?tab=rejected").get_data(as_text=True)
    assert 'Rejected <span class="cm-count">2</span>' in html
    assert "Rejected by <strong>admin</strong>" in html
    assert '<q class="cm-reason-text">Checkout moved to page 7.</q>' in html
    assert "(no reason given)" in html
    assert "An agent proposing the same text again is flagged with this." in html
    # Newest rejection first, each with its history link.
    listed = html[html.index('<ol class="cm-list">') :]
    assert listed.index("Use Comic Sans") < listed.index("Checkout is page 42.")
    assert f'href="/chatmem/memory/guidance/{first}"' in html
    with app.app_context():
        db = app.extensions["test_host"]["db"]
        event = guidance.rejections(db.session(), [first])[first]
        assert (event.actor_id, event.detail) == ("1", {"reason": "Checkout moved to page 7."})
        assert guidance.rejections(db.session(), [second])[second].detail is None


def test_a_reproposal_is_flagged_with_when_who_and_why(app: Flask, client: FlaskClient) -> None:
    (first,) = seed(app, "Checkout is page 42.")
    reject(client, app, first, "Checkout moved to page 7.")
    day = rejected_on(app, first)

    again = remember(app, "checkout  IS page 42.")  # folded as for de-duplication
    assert again["status"] == "pending"
    assert again["flags"] == [
        {
            "code": "rejected_before",
            "reason": f"The same text was rejected on {day} by admin: Checkout moved to "
            f"page 7. (entry #{first}).",
            "entry_id": first,
        }
    ]
    pending = client.get(f"{SCREEN}?tab=pending").get_data(as_text=True)
    assert f"rejected on {day} by admin: Checkout moved to page 7." in pending
    assert "Approve anyway" in pending


@pytest.mark.parametrize(
    ("reason", "says"),
    [
        ("x" * 501, "reason is longer than 500 characters."),
        ("see AKIAIOSFODNN7EXAMPLE", "reason holds what looks like a secret (aws_access_key)"),
        ("fine\u200bprint", "reason holds invisible or control characters"),
    ],
)
def test_a_bad_reason_is_refused_and_changes_nothing(
    app: Flask, client: FlaskClient, reason: str, says: str
) -> None:
    (first,) = seed(app, "Checkout is page 42.")
    before = state(app)
    response = reject(client, app, first, reason, headers=JSON)
    assert response.status_code == 400
    assert response.json["error"]["code"] == "invalid_params"
    assert says in response.json["error"]["message"]
    assert state(app) == before


def test_bulk_reject_gives_every_entry_the_reason(app: Flask, client: FlaskClient) -> None:
    ids = seed(app, "Checkout is page 42.", "Prices exclude VAT.")
    form = {
        "csrf_token": token(client),
        "action": "reject",
        "id": [str(i) for i in ids],
        **{f"version-{i}": str(entry(app, i).version) for i in ids},
    }
    before = state(app)
    refused = client.post(f"{SCREEN}/bulk", data={**form, "reason": "a\u202eb"}, headers=JSON)
    assert refused.status_code == 400 and state(app) == before, "a bad reason rejects nothing"
    done = client.post(f"{SCREEN}/bulk", data={**form, "reason": "Both wrong."}, headers=JSON)
    assert done.json == {"ok": True, "done": ids, "failed": []}
    with app.app_context():
        events = guidance.rejections(app.extensions["test_host"]["db"].session(), ids)
        assert [guidance.reason_of(events[i]) for i in ids] == ["Both wrong.", "Both wrong."]
    html = client.get(f"{SCREEN}?tab=rejected").get_data(as_text=True)
    assert html.count("Both wrong.") == 2


def test_the_shell_rejects_with_a_reason(app: Flask) -> None:
    (first,) = seed(app, "Checkout is page 42.")
    runner = app.test_cli_runner()
    result = runner.invoke(
        args=["chatmem", "guidance", "reject", str(first), "--reason", "Moved to page 7."]
    )
    assert result.exit_code == 0, result.output
    assert result.output.endswith(f"#{first} rejected.\n")
    shown = runner.invoke(args=["chatmem", "guidance", "show", str(first)]).output
    assert shown.splitlines()[-1].endswith(
        f"reject  by cli:{getpass.getuser()}  (reason: Moved to page 7.)"
    )
    flag = remember(app, "Checkout is page 42.")["flags"][0]["reason"]
    assert f"by cli:{getpass.getuser()}: Moved to page 7." in flag
    bad = runner.invoke(args=["chatmem", "guidance", "reject", "1", "--reason", "x" * 501])
    assert bad.exit_code == 1 and "reason is longer than 500 characters." in bad.output


@pytest.fixture
def refusing(database_url: str) -> Iterator[Flask]:
    app = create_host_app(database_url, CHATMEM_REJECTED_REPROPOSALS="refuse")
    yield app
    dispose(app)


def counts(app: Flask) -> tuple[int, int]:
    with app.app_context():
        db = app.extensions["test_host"]["db"]
        entries = db.session.scalar(select(func.count()).select_from(Guidance))
        summaries = db.session.scalar(
            select(func.count()).select_from(Session).where(Session.summary.is_not(None))
        )
        db.session.remove()
        return int(entries or 0), int(summaries or 0)


def test_refuse_answers_invalid_params_and_stores_nothing(refusing: Flask) -> None:
    app = refusing
    (first,) = seed(app, "Checkout is page 42.")
    with app.app_context():
        guidance.reject(
            app.extensions["test_host"]["db"].session(),
            first,
            actor_id="1",
            reason="Moved to page 7.",
        )
    day = rejected_on(app, first)
    before = counts(app)
    with pytest.raises(InvalidParams) as caught:
        remember(app, "CHECKOUT is page 42.")
    assert caught.value.code == "invalid_params"
    assert caught.value.message == (
        f"The same text was rejected on {day} by admin: Moved to page 7. (entry #{first}). "
        "A curator rejected this text; it was not proposed again."
    )
    assert counts(app) == before

    with app.app_context():
        memory = app.extensions["test_host"]["memory"]
        with pytest.raises(InvalidParams):
            memory.call_tool(
                "save-session-summary",
                {
                    "summary": "Fixed the footer.",
                    "takeaways": [
                        {"type": "fact", "text": "Footer lives in post 9."},
                        {"type": "fact", "text": "Checkout is page 42."},
                    ],
                },
                user=USERS["editor"],
            )
        memory.db.session.remove()
    assert counts(app) == before, "neither the other takeaway nor the summary was stored"
    # Text nobody rejected still goes through.
    assert remember(app, "Footer lives in post 9.")["status"] == "pending"


def test_a_reason_is_shown_as_text_never_markup(app: Flask, client: FlaskClient) -> None:
    (first,) = seed(app, "Checkout is page 42.")
    reject(client, app, first, '<img src=x onerror="alert(1)"> wrong page')
    html = client.get(f"{SCREEN}?tab=rejected").get_data(as_text=True)
    assert "&lt;img src=x onerror=&#34;alert(1)&#34;&gt; wrong page" in html
    assert "<img src=x" not in html
    remember(app, "Checkout is page 42.")
    pending = client.get(f"{SCREEN}?tab=pending").get_data(as_text=True)
    assert "by admin: &lt;img src=x" in pending and "<img src=x" not in pending


def test_refuse_is_the_same_over_rest(refusing: Flask) -> None:
    """One path for every channel: REST answers 400 invalid_params, and stores nothing."""
    from chatmem.auth import tokens

    app = refusing
    (first,) = seed(app, "Checkout is page 42.")
    with app.app_context():
        memory = app.extensions["test_host"]["memory"]
        guidance.reject(memory.db.session(), first, actor_id="1", reason="Moved.")
        plain = tokens.issue(memory, USERS["editor"], name="rest")[1]
        memory.db.session.remove()
    day = rejected_on(app, first)
    before = counts(app)
    with app.test_client() as rest:
        response = rest.post(
            "/chatmem/api/tools/remember",
            json={"type": "fact", "text": "Checkout is page 42."},
            headers={"Authorization": f"Bearer {plain}"},
        )
    assert response.status_code == 400
    error = response.json["error"]
    assert error["code"] == "invalid_params"
    assert error["message"].startswith(f"The same text was rejected on {day} by admin: Moved.")
    assert error["flags"][0]["code"] == "rejected_before"
    assert counts(app) == before
