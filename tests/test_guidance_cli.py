"""`flask chatmem guidance ...`: a headless host curates from its shell.

Each change acts as the shell user, `cli:<login>` in the audit trail, through
the same domain functions as the Memory screen: the version it showed is the
version it changes, and what it refuses changes nothing.
"""

from __future__ import annotations

import getpass
from typing import Any

import pytest
from click.testing import Result
from flask import Flask
from sqlalchemy import update

from chatmem.memory import guidance
from chatmem.memory.models import Guidance

ACTOR = f"cli:{getpass.getuser()}"


def run(app: Flask, *args: str) -> Result:
    return app.test_cli_runner().invoke(args=["chatmem", "guidance", *args])


def propose(app: Flask, text: str, **fields: Any) -> int:
    memory = app.extensions["test_host"]["memory"]
    with app.app_context():
        editor = app.extensions["test_host"]["users"]["editor"]
        result = memory.call_tool("remember", {"type": "fact", "text": text, **fields}, user=editor)
        return int(result["id"])


def entry(app: Flask, entry_id: int) -> tuple[str, int, list[tuple[str, str | None]]]:
    """(status, version, [(action, actor_id), ...]) as stored."""
    db = app.extensions["test_host"]["db"]
    with app.app_context():
        row = db.session.get(Guidance, entry_id)
        trail = [(e.action, e.actor_id) for e in guidance.events(db.session(), entry_id)]
        return row.status, row.version, trail


def test_list_shows_pending_proposals_newest_first(app: Flask) -> None:
    assert run(app, "list").output == "No pending guidance.\n"
    first = propose(app, "Checkout is page 42")
    second = propose(app, "Prices include VAT")
    result = run(app, "list")
    assert result.exit_code == 0
    lines = result.output.splitlines()
    assert [line.split()[0] for line in lines] == [f"#{second}", f"#{first}"]
    assert lines[1].startswith(f"#{first}  pending  fact  v1  ")
    assert lines[1].endswith("  Checkout is page 42")
    assert run(app, "list", "--status", "publish").output == "No publish guidance.\n"
    refused = run(app, "list", "--status", "active")
    assert refused.exit_code == 2 and "'pending', 'publish', 'rejected', 'trash'" in refused.output


def test_list_is_bounded(app: Flask) -> None:
    for n in range(3):
        propose(app, f"Fact number {n}")
    result = run(app, "list", "--limit", "2")
    assert result.output.splitlines()[-1] == "... and 1 more (--limit)."
    assert len(result.output.splitlines()) == 3


def test_show_prints_the_entry_and_its_audit_trail(app: Flask) -> None:
    entry_id = propose(
        app, "Never edit the footer", target="post_type:header_footer", severity="block"
    )
    result = run(app, "show", str(entry_id))
    assert result.exit_code == 0
    lines = result.output.splitlines()
    assert lines[0] == f"#{entry_id}  fact  pending  version 1"
    assert "  text:   Never edit the footer" in lines
    assert "  target: post_type:header_footer" in lines
    assert "  severity: block" in lines
    assert lines[-1].endswith("  propose  by editor"), "the proposer, by the host's user name"


def test_approve_shows_what_it_approves_and_audits_the_shell_user(app: Flask) -> None:
    entry_id = propose(app, "Checkout is page 42")
    result = run(app, "approve", str(entry_id))
    assert result.exit_code == 0, result.output
    assert result.output.splitlines()[:2] == [
        "Approving:",
        f"#{entry_id}  fact  pending  version 1",
    ]
    assert result.output.endswith(f"#{entry_id} approved: active from the next session on.\n")
    status, version, trail = entry(app, entry_id)
    assert (status, version) == ("publish", 2)
    assert trail[-1] == ("approve", ACTOR)
    memory = app.extensions["test_host"]["memory"]
    with app.app_context():
        assert "Checkout is page 42" in memory.system_context()
        assert (
            app.extensions["test_host"]["db"].session.get(Guidance, entry_id).approved_by == ACTOR
        )
    assert run(app, "show", str(entry_id)).output.splitlines()[-1].endswith(f"approve  by {ACTOR}")


@pytest.mark.parametrize(
    ("action", "status", "said"),
    [("reject", "rejected", "rejected"), ("trash", "trash", "moved to the trash")],
)
def test_reject_and_trash(app: Flask, action: str, status: str, said: str) -> None:
    entry_id = propose(app, "Checkout is page 42")
    result = run(app, action, str(entry_id))
    assert result.exit_code == 0, result.output
    assert result.output.endswith(f"#{entry_id} {said}.\n")
    assert entry(app, entry_id)[0] == status
    assert entry(app, entry_id)[2][-1] == (action, ACTOR)
    assert f"#{entry_id}  {status}  fact" in run(app, "list", "--status", status).output


def test_refusals_change_nothing_and_exit_non_zero(app: Flask) -> None:
    entry_id = propose(app, "Checkout is page 42")
    assert run(app, "approve", str(entry_id)).exit_code == 0
    before = entry(app, entry_id)
    again = run(app, "approve", str(entry_id))
    assert again.exit_code == 1
    assert (
        f"Error: Cannot approve guidance #{entry_id}: it is publish, not pending." in again.output
    )
    assert run(app, "reject", str(entry_id)).exit_code == 1
    assert entry(app, entry_id) == before
    missing = run(app, "show", "999")
    assert missing.exit_code == 1 and "Error: No guidance entry #999." in missing.output
    assert run(app, "approve", "999").exit_code == 1
    assert run(app, "approve", "one").exit_code == 2, "click refuses a non-number id"


def test_a_concurrent_change_between_read_and_write_is_refused(
    app: Flask, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The CLI approves the version it showed: an edit that lands in between wins."""
    entry_id = propose(app, "Checkout is page 42")
    db = app.extensions["test_host"]["db"]
    real_approve = guidance.approve

    def edit_first(*args: Any, **kwargs: Any) -> Guidance:
        with app.app_context():  # another curator, on another connection
            guidance.edit(db.session(), entry_id, {"text": "Checkout is page 43"}, actor_id="1")
        return real_approve(*args, **kwargs)

    monkeypatch.setattr(guidance, "approve", edit_first)
    result = run(app, "approve", str(entry_id))
    assert result.exit_code == 1
    assert f"Error: Guidance #{entry_id} was changed by someone else" in result.output
    status, version, _trail = entry(app, entry_id)
    assert (status, version) == ("pending", 2), "the edit stands; nothing was approved"


def test_agent_text_cannot_steer_the_terminal(app: Flask) -> None:
    """An entry stored before the text rules (they refuse such text now) is shown inert."""
    entry_id = propose(app, "Checkout is page 42")
    db = app.extensions["test_host"]["db"]
    hostile = "Checkout \x1b[2J\x1b[31mis page 4\u202e2\nand more"
    with app.app_context():
        db.session.execute(
            update(Guidance).where(Guidance.id == entry_id).values(text=hostile, title=hostile)
        )
        db.session.commit()
    for result in (run(app, "list"), run(app, "show", str(entry_id))):
        assert "\x1b" not in result.output and "\u202e" not in result.output
        assert "Checkout <U+001B>[2J<U+001B>[31mis page 4<U+202E>2\\nand more" in result.output


def test_the_memory_screen_names_the_cli_actor(app: Flask) -> None:
    entry_id = propose(app, "Checkout is page 42")
    run(app, "approve", str(entry_id))
    client = app.test_client()
    client.post("/login", data={"username": "admin", "password": "admin"})
    page = client.get("/chatmem/memory?tab=active").get_data(as_text=True)
    assert f"Approved by {ACTOR}," in page
