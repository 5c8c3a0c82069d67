"""Upkeep sweep steps: targets gone, review dates, unused entries (issue 15, point 3).

Each step runs through `memory.upkeep()` (what `flask chatmem sweep` and the
background sweeper call) against the test host's real tools, posts and post
types, and is checked for what a curator sees: the flag, the audit trail,
the entry back in Pending, the Upkeep page.
"""

from __future__ import annotations

import re
import threading
from datetime import date, timedelta
from typing import Any

from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import delete, func, select, update

from chatmem.memory.models import Guidance, GuidanceEvent, utcnow
from tests.hostapp import USERS, reconfigure, work
from tests.screen_helpers import JSON, SCREEN, entry, token


def add(app: Flask, text: str, target: str | None = None, **fields: Any) -> int:
    """An active entry written by the curator (the screen's Add form's domain call)."""
    from chatmem.memory import guidance

    values = {"type": "guardrail", "text": text, "severity": "block", **fields}
    if target is not None:
        values["target"] = target
    return work(app, lambda m, db: guidance.admin_add(db.session(), values, actor_id="1").id)


def events(app: Flask, entry_id: int, action: str) -> list[dict[str, Any]]:
    def read(memory: Any, db: Any) -> list[dict[str, Any]]:
        rows = db.session.scalars(
            select(GuidanceEvent).where(
                GuidanceEvent.guidance_id == entry_id, GuidanceEvent.action == action
            )
        )
        return [dict(row.detail or {}) for row in rows]

    return work(app, read)


def squash(html: str) -> str:
    return re.sub(r"\s+", " ", html)


TARGETS = {
    "no such tool": ("tool:delete-everything", "no tool is named delete-everything"),
    "bare slug gone": ("publish-post", "no tool is named publish-post"),
    "post gone": ("post_id:999", "post 999 is gone"),
    "type gone": ("post_type:landing", "no post has the type landing"),
}
LIVE = {
    "tool there": "update-post",
    "full name": "chatmem/create-user",
    "post there": "post_id:42",
    "type there": "post_type:page",
    "never matches": "colour:red",
}


def test_a_target_that_no_longer_resolves_is_flagged_once_and_stays_active(app: Flask) -> None:
    gone = {name: add(app, f"Rule {name}.", target) for name, (target, _) in TARGETS.items()}
    live = {name: add(app, f"Rule {name}.", target) for name, target in LIVE.items()}
    revision = work(app, lambda m, db: m.snapshot().revision)

    done = work(app, lambda m, db: m.upkeep())

    assert (done.flagged, done.cleared, done.to_review) == (len(TARGETS), 0, 0)
    for name, entry_id in gone.items():
        found = entry(app, entry_id)
        assert found.target_gone_at is not None, name
        assert found.status == "publish" and found.enabled, name  # flag mode: still active
        assert events(app, entry_id, "target_gone") == [{"note": TARGETS[name][1]}]
    for name, entry_id in live.items():
        assert entry(app, entry_id).target_gone_at is None, name
    # A flag changes nothing agents get: no revision bump.
    assert work(app, lambda m, db: m.snapshot().revision) == revision

    again = work(app, lambda m, db: m.upkeep())

    assert (again.flagged, again.cleared) == (0, 0)
    assert all(len(events(app, i, "target_gone")) == 1 for i in gone.values())


def test_a_post_deleted_later_is_flagged_and_a_fixed_target_is_cleared(app: Flask) -> None:
    entry_id = add(app, "Never touch the header.", "post_id:3")
    assert work(app, lambda m, db: m.upkeep()).flagged == 0

    def delete_post(memory: Any, db: Any) -> None:
        post = app.extensions["test_host"]["Post"]
        db.session.execute(delete(post).where(post.id == 3))
        db.session.commit()

    work(app, delete_post)
    assert work(app, lambda m, db: m.upkeep()).flagged == 1
    assert entry(app, entry_id).target_gone_at is not None

    def retarget(memory: Any, db: Any) -> None:
        from chatmem.memory import guidance

        guidance.edit(db.session(), entry_id, {"target": "post_type:header_footer"}, actor_id="1")

    work(app, retarget)
    # No post has that type any more either (post 3 was the only one).
    assert work(app, lambda m, db: m.upkeep()).cleared == 0
    work(app, lambda m, db: guidance_edit(db, entry_id, "post_id:42"))
    assert work(app, lambda m, db: m.upkeep()).cleared == 1
    assert entry(app, entry_id).target_gone_at is None
    assert events(app, entry_id, "target_back") == [{}]


def guidance_edit(db: Any, entry_id: int, target: str) -> None:
    from chatmem.memory import guidance

    guidance.edit(db.session(), entry_id, {"target": target}, actor_id="1")


def test_review_mode_sends_it_back_to_pending_with_a_note(app: Flask, client: FlaskClient) -> None:
    reconfigure(app, CHATMEM_STALE_TARGETS="review")
    entry_id = add(app, "Ask before publishing posts.", "tool:publish-post", severity="ask")
    kept = add(app, "Never change the checkout page.", "post_id:42")
    before = entry(app, entry_id)
    in_block = work(app, lambda m, db: m.block().included)
    assert entry_id in in_block

    done = work(app, lambda m, db: m.upkeep())

    assert (done.flagged, done.to_review) == (1, 1)
    moved = entry(app, entry_id)
    assert moved.status == "pending" and moved.version == before.version + 1
    assert entry(app, kept).status == "publish"
    assert entry_id not in work(app, lambda m, db: m.block().included)
    (note,) = events(app, entry_id, "stale_review")
    assert note == {
        "status": "pending",
        "was": "publish",
        "note": "target gone: no tool is named publish-post",
    }
    # The curator sees it in Pending, flagged, with the note in its history.
    pending = squash(client.get(f"{SCREEN}?tab=pending").get_data(as_text=True))
    assert f'id="entry-{entry_id}"' in pending and "target gone" in pending
    page = squash(client.get(f"{SCREEN}/guidance/{entry_id}").get_data(as_text=True))
    assert "Back to Pending (target gone)" in page
    assert "target gone: no tool is named publish-post" in page

    # Approved again as it is: the curator has seen the flag, the sweep leaves it active.
    response = client.post(
        f"{SCREEN}/guidance/{entry_id}/approve",
        data={"csrf_token": token(client), "version": str(moved.version)},
        headers=JSON,
    )
    assert response.status_code == 200, response.json
    assert work(app, lambda m, db: m.upkeep()).to_review == 0
    assert entry(app, entry_id).status == "publish"


def test_two_sweeps_at_once_make_each_change_once(app: Flask, second_worker: Flask) -> None:
    reconfigure(app, CHATMEM_STALE_TARGETS="review")
    reconfigure(second_worker, CHATMEM_STALE_TARGETS="review")
    ids = [add(app, f"Rule {n}.", f"tool:gone-{n}") for n in range(6)]
    dated = [add(app, f"Fact {n}.", None, type="fact", severity=None) for n in range(4)]

    def date_them(memory: Any, db: Any) -> None:
        db.session.execute(
            update(Guidance).where(Guidance.id.in_(dated)).values(review_after=date(2020, 1, 1))
        )
        db.session.commit()

    work(app, date_them)
    revision = work(app, lambda m, db: m.snapshot().revision)
    start = threading.Barrier(2)
    results: list[Any] = []
    errors: list[BaseException] = []

    def sweep(worker: Flask) -> None:
        try:
            start.wait(timeout=30)
            results.append(work(worker, lambda m, db: m.upkeep()))
        except BaseException as error:  # reported below, not lost in the thread
            errors.append(error)

    threads = [threading.Thread(target=sweep, args=(w,)) for w in (app, second_worker)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)

    assert errors == []
    assert sum(r.flagged for r in results) == len(ids)
    assert sum(r.to_review for r in results) == len(ids)
    assert sum(r.review_due for r in results) == len(dated)
    for entry_id in ids:
        assert len(events(app, entry_id, "target_gone")) == 1
        assert len(events(app, entry_id, "stale_review")) == 1
    for entry_id in dated:
        assert len(events(app, entry_id, "review_due")) == 1
        assert entry(app, entry_id).status == "pending"
    moved = len(ids) + len(dated)
    assert work(app, lambda m, db: m.snapshot().revision) == revision + moved


def test_a_review_date_set_on_the_edit_form_sends_it_back_when_reached(
    app: Flask, client: FlaskClient
) -> None:
    entry_id = add(app, "The shop ships to the EU only.", None, type="fact", severity=None)
    found = entry(app, entry_id)
    when = (utcnow() + timedelta(days=10)).date()
    response = client.post(
        f"{SCREEN}/guidance/{entry_id}/edit",
        data={
            "csrf_token": token(client),
            "version": str(found.version),
            "type": "fact",
            "text": found.text,
            "review_after": when.isoformat(),
        },
        headers=JSON,
    )
    assert response.status_code == 200, response.json
    assert response.json["entry"]["review_after"] == when.isoformat()
    saved = entry(app, entry_id)
    assert saved.review_after == when and saved.version == found.version + 1
    assert events(app, entry_id, "review_date")[0]["note"] == f"review date set to {when}"
    active = squash(client.get(f"{SCREEN}?tab=active").get_data(as_text=True))
    assert f'Review on</span> <time datetime="{when}">' in active
    assert f'name="review_after" value="{when}"' in active

    # Not yet: a sweep the day before leaves it active.
    day_before = utcnow() + timedelta(days=9)
    assert work(app, lambda m, db: m.upkeep(now=day_before)).review_due == 0
    assert entry(app, entry_id).status == "publish"

    on_the_day = utcnow() + timedelta(days=10)
    assert work(app, lambda m, db: m.upkeep(now=on_the_day)).review_due == 1
    moved = entry(app, entry_id)
    assert (moved.status, moved.review_after) == ("pending", None)
    (event,) = events(app, entry_id, "review_due")
    assert event["note"] == f"review date {when} reached"
    assert work(app, lambda m, db: m.upkeep(now=on_the_day)).review_due == 0


def test_a_bad_review_date_is_refused_and_nothing_is_saved(app: Flask, client: FlaskClient) -> None:
    entry_id = add(app, "Prices include VAT.", None, type="fact", severity=None)
    found = entry(app, entry_id)
    for bad in ("next tuesday", "2026-02-30", "2026-13-01"):
        response = client.post(
            f"{SCREEN}/guidance/{entry_id}/edit",
            data={
                "csrf_token": token(client),
                "version": str(found.version),
                "type": "fact",
                "text": "Prices include VAT at 20%.",
                "review_after": bad,
            },
            headers=JSON,
        )
        assert response.status_code == 400, bad
        assert response.json["error"]["code"] == "invalid_params"
        assert response.json["error"]["field"] == "review_after"
        after = entry(app, entry_id)
        assert (after.text, after.version, after.review_after) == (found.text, found.version, None)


def test_unused_lists_entries_nobody_recalled_or_hit(app: Flask, client: FlaskClient) -> None:
    old = utcnow() - timedelta(days=120)
    recalled = add(app, "Invoices are numbered by year.", None, type="fact", severity=None)
    hit = add(app, "Never change the checkout page.", "post_id:42")
    idle = add(app, "The shop closes on Sundays.", None, type="fact", severity=None)
    fresh = add(app, "Returns take 30 days.", None, type="fact", severity=None)

    def age(memory: Any, db: Any) -> None:
        db.session.execute(
            update(Guidance)
            .where(Guidance.id.in_([recalled, hit, idle]))
            .values(approved_at=old, created_at=old)
        )
        db.session.commit()

    work(app, age)
    # Used: found by a topic search, and a call the guardrail refused.
    found = work(
        app, lambda m, db: m.call_tool("recall", {"topic": "invoices"}, user=USERS["editor"])
    )
    assert [g["id"] for g in found["guidance"]] == [recalled]
    refused = work(
        app,
        lambda m, db: _refused(m, "update-post", {"post_id": 42, "title": "x"}),
    )
    assert refused == "blocked_by_memory"
    # A plain recall (no topic) is the block's job, not a sign of use.
    work(app, lambda m, db: m.call_tool("recall", {}, user=USERS["editor"]))

    page = client.get(f"{SCREEN}/upkeep", headers=JSON).json
    assert page["unused"]["count"] == 1
    assert [e["id"] for e in page["unused"]["entries"]] == [idle]
    html = squash(client.get(f"{SCREEN}/upkeep").get_data(as_text=True))
    assert 'Unused <span class="cm-count">1</span>' in html
    assert "The shop closes on Sundays." in html and "Returns take 30 days." not in html
    assert fresh not in [e["id"] for e in page["unused"]["entries"]]

    # Shorter window: the recall marks it used today, so even 1 day keeps it off the list.
    reconfigure(app, CHATMEM_UNUSED_DAYS=1)
    ids = [e["id"] for e in client.get(f"{SCREEN}/upkeep", headers=JSON).json["unused"]["entries"]]
    assert recalled not in ids and hit not in ids and idle in ids


def _refused(memory: Any, tool: str, arguments: dict[str, Any]) -> str:
    from chatmem import ChatmemError

    try:
        memory.call_tool(tool, arguments, user=USERS["editor"])
    except ChatmemError as error:
        return error.code
    return "ok"


def test_recall_marks_use_once_a_day_and_never_bumps_the_version(app: Flask) -> None:
    entry_id = add(app, "Invoices are numbered by year.", None, type="fact", severity=None)
    version = entry(app, entry_id).version
    editor = USERS["editor"]
    work(app, lambda m, db: m.call_tool("recall", {"topic": "invoice"}, user=editor))
    first = entry(app, entry_id).last_recalled_at
    assert first is not None
    work(app, lambda m, db: m.call_tool("recall", {"topic": "numbered"}, user=editor))
    again = entry(app, entry_id)
    assert (again.last_recalled_at, again.version) == (first, version)


def test_the_upkeep_page_needs_a_curator(app: Flask) -> None:
    from tests.screen_helpers import login

    with app.test_client() as editor:
        login(editor, "editor")
        assert editor.get(f"{SCREEN}/upkeep").status_code == 403
    with app.test_client() as anonymous:
        assert anonymous.get(f"{SCREEN}/upkeep").status_code in (302, 401)


def test_the_sweep_command_reports_upkeep(app: Flask) -> None:
    add(app, "Never run the old importer.", "tool:old-importer")
    result = app.test_cli_runner().invoke(args=["chatmem", "sweep"])
    assert result.exit_code == 0, result.output
    assert "Upkeep: 1 target gone, 0 back, 0 back to Pending." in result.output
    count = work(
        app,
        lambda m, db: db.session.scalar(
            select(func.count()).where(Guidance.target_gone_at.is_not(None))
        ),
    )
    assert count == 1


def test_unused_says_entries_are_too_new_to_judge(app: Flask, client: FlaskClient) -> None:
    """Minutes old and never recalled is not "used in the last 90 days"."""
    add(app, "Returns take 30 days.", None, type="fact", severity=None)
    add(app, "Invoices are numbered by year.", None, type="fact", severity=None)
    html = squash(client.get(f"{SCREEN}/upkeep").get_data(as_text=True))
    assert "Every active entry was used" not in html
    assert "No entry older than 90 days went unused." in html
    assert (
        '<p class="cm-muted" data-figure="too-new">2 entries are too new to judge (active for '
        "less than 90 days); 2 of them have not been used yet.</p>" in html
    )
    work(app, lambda m, db: m.call_tool("recall", {"topic": "invoices"}, user=USERS["editor"]))
    unused = client.get(f"{SCREEN}/upkeep", headers=JSON).json["unused"]
    assert (unused["count"], unused["too_new"], unused["too_new_never_used"]) == (0, 2, 1)
    html = squash(client.get(f"{SCREEN}/upkeep").get_data(as_text=True))
    assert "2 entries are too new to judge (active for less than 90 days); 1 of them has" in html
