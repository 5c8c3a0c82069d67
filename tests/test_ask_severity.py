"""The `ask` severity (SPEC §6): a matching call is held for a curator, who
allows it once or denies it. Against the real host app and database: the
Python API, the Memory screen's routes, the ledger, the audit trail.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import select, update

from chatmem import ApprovalRequired, BlockedByMemory
from chatmem.memory import guidance, held
from chatmem.memory.models import Guidance, GuidanceEvent, HeldCall, LedgerEntry, utcnow
from tests.hostapp import USERS, reconfigure
from tests.screen_helpers import JSON, SCREEN, add_token_route, login, token

ADMIN, EDITOR = USERS["admin"], USERS["editor"]
CALL = {"post_id": 3, "title": "Sale!"}


def ask(db: Any, target: str = "post_id:3", title: str = "Ask before the header") -> int:
    entry = guidance.admin_add(
        db.session(),
        {
            "type": "guardrail",
            "title": title,
            "text": f"Ask {target}",
            "target": target,
            "severity": "ask",
        },
        actor_id=str(ADMIN.id),
    )
    return int(entry.id)


def held_call(memory: Any, arguments: dict[str, Any] = CALL, user: Any = EDITOR) -> int:
    with pytest.raises(ApprovalRequired) as caught:
        memory.call_tool("update-post", arguments, user=user)
    return int(caught.value.details["request_id"])


def decide(db: Any, request_id: int, decision: str, note: str | None = None) -> HeldCall:
    return held.decide(
        db.session(),
        request_id,
        decision,
        actor_id=str(ADMIN.id),
        actor_name="admin",
        note=note,
        grant_minutes=30,
    )


def outcomes(db: Any) -> list[str]:
    db.session.expire_all()
    return [r.outcome for r in db.session.scalars(select(LedgerEntry).order_by(LedgerEntry.id))]


@pytest.fixture
def post_title(app: Flask) -> Any:
    Post = app.extensions["test_host"]["Post"]

    def read(db: Any, post_id: int) -> str:
        db.session.expire_all()
        return str(db.session.get(Post, post_id).title)

    return read


# -- held, allowed, run once ---------------------------------------------------------


def test_an_ask_rule_holds_the_call_and_an_allowed_request_runs_exactly_once(
    memory: Any, db: Any, post_title: Any
) -> None:
    rule = ask(db)
    before = post_title(db, 3)
    with pytest.raises(ApprovalRequired) as caught:
        memory.call_tool("update-post", CALL, user=EDITOR)
    error = caught.value
    assert error.code == "approval_required"
    assert error.details["guidance_id"] == rule and error.details["tool"] == "update-post"
    assert "make exactly the same call again" in error.message
    request_id = error.details["request_id"]
    assert post_title(db, 3) == before  # held, not run
    request = db.session.get(HeldCall, request_id)
    assert (request.state, request.tool, request.user_id) == ("waiting", "update-post", "2")
    assert request.arguments == CALL and request.session_id

    decide(db, request_id, "allow", note="fine for the sale")
    result = memory.call_tool("update-post", {"post_id": "003", "title": "Sale!"}, user=EDITOR)
    assert result["title"] == "Sale!" and post_title(db, 3) == "Sale!"
    db.session.expire_all()
    assert db.session.get(HeldCall, request_id).state == "used"

    # The second identical call is held again: a new request.
    again = held_call(memory)
    assert again != request_id
    assert outcomes(db) == ["held", "allowed", "granted-run", "held"]
    # Hits count the holds, not the decision or the run.
    assert db.session.get(Guidance, rule).hits == 2
    actions = db.session.scalars(
        select(GuidanceEvent.action)
        .where(GuidanceEvent.guidance_id == rule)
        .order_by(GuidanceEvent.id)
    ).all()
    assert actions == ["admin_add", "call_held", "call_allowed", "call_run", "call_held"]


def test_the_same_call_while_waiting_names_the_same_request(memory: Any, db: Any) -> None:
    ask(db)
    first = held_call(memory)
    assert held_call(memory, {"post_id": 3, "title": "Sale!"}) == first
    assert db.session.scalar(select(HeldCall.id).where(HeldCall.id != first)) is None
    assert outcomes(db) == ["held", "held"]


def test_a_block_rule_listed_first_still_refuses(memory: Any, db: Any) -> None:
    guidance.admin_add(
        db.session(),
        {"type": "guardrail", "text": "Never", "target": "post_id:3", "severity": "block"},
        actor_id=str(ADMIN.id),
    )
    ask(db)
    with pytest.raises(BlockedByMemory):
        memory.call_tool("update-post", CALL, user=EDITOR)
    assert db.session.scalar(select(HeldCall.id)) is None


def test_other_calls_and_read_only_tools_are_not_held(memory: Any, db: Any) -> None:
    ask(db)
    assert memory.call_tool("update-post", {"post_id": 7, "title": "x"}, user=EDITOR)["id"] == 7
    assert memory.call_tool("get-post", {"post_id": 3}, user=EDITOR)["id"] == 3


LEDGER_FIELDS = (
    "session_id",
    "user_id",
    "channel",
    "tool",
    "arguments",
    "outcome",
    "error_code",
    "detail",
    "guidance_id",
)


def ledger_rows(db: Any) -> list[tuple[Any, ...]]:
    db.session.expire_all()
    entries = db.session.scalars(select(LedgerEntry).order_by(LedgerEntry.id))
    return [tuple(getattr(e, f) for f in LEDGER_FIELDS) for e in entries]


def test_a_held_call_is_told_stored_and_ledgered_with_its_caller(
    memory: Any, db: Any, ctx: Flask
) -> None:
    reconfigure(ctx, CHATMEM_ASK_GRANT_MINUTES=45, CHATMEM_LEDGER_VALUE_MAX=4)
    rule = ask(db)
    sid = memory.start_session(EDITOR, "rest")
    with pytest.raises(ApprovalRequired) as caught:
        memory.call_tool("update-post", CALL, user=EDITOR, session_id=sid, channel="rest")
    request_id = caught.value.details["request_id"]
    assert caught.value.details == {
        "request_id": request_id,
        "guidance_id": rule,
        "title": "Ask before the header",
        "target": "post_id:3",
        "tool": "update-post",
    }
    assert caught.value.message == (
        f"update-post is waiting for a person's approval: project memory guardrail #{rule} "
        f"(Ask before the header) asks a curator first. Request #{request_id} is on the "
        "Memory screen's Waiting calls list. Do not try another way: once it is allowed, "
        "make exactly the same call again (same tool, same arguments) within 45 minutes."
    )
    shown = {"post_id": 3, "title": "Sale… [+1 chars]"}
    request = db.session.get(HeldCall, request_id)
    assert (
        request.user_id,
        request.user_name,
        request.session_id,
        request.channel,
        request.guidance_id,
        request.arguments,
    ) == ("2", "editor", sid, "rest", rule, shown)
    held_detail = f"guidance #{rule}: Ask before the header (request #{request_id})"
    assert ledger_rows(db) == [
        (sid, "2", "rest", "update-post", shown, "held", "approval_required", held_detail, rule)
    ]

    decide(db, request_id, "allow")
    memory.call_tool("update-post", CALL, user=EDITOR, session_id=sid, channel="rest")
    assert ledger_rows(db)[-1] == (
        sid,
        "2",
        "rest",
        "update-post",
        shown,
        "granted-run",
        None,
        f"allowed once: request #{request_id}",
        rule,
    )


def test_a_refusal_after_a_denial_is_ledgered_with_its_request(memory: Any, db: Any) -> None:
    rule = ask(db)
    sid = memory.start_session(EDITOR, "python")
    request_id = held_call(memory)
    decide(db, request_id, "deny")
    with pytest.raises(BlockedByMemory) as caught:
        memory.call_tool("update-post", CALL, user=EDITOR, session_id=sid)
    assert caught.value.details == {
        "guidance_id": rule,
        "title": "Ask before the header",
        "target": "post_id:3",
        "request_id": request_id,
        "state": "denied",
    }
    assert ledger_rows(db)[-1] == (
        sid,
        "2",
        "python",
        "update-post",
        CALL,
        "blocked",
        "blocked_by_memory",
        f"guidance #{rule}: Ask before the header (request #{request_id})",
        rule,
    )


# -- deny, expiry, someone else's grant ---------------------------------------------------


def test_a_denied_request_is_refused_with_blocked_by_memory(
    memory: Any, db: Any, post_title: Any
) -> None:
    rule = ask(db)
    request_id = held_call(memory)
    decide(db, request_id, "deny", note="not during the sale")
    with pytest.raises(BlockedByMemory) as caught:
        memory.call_tool("update-post", CALL, user=EDITOR)
    assert caught.value.details["request_id"] == request_id
    assert "denied" in caught.value.message and "not during the sale" in caught.value.message
    assert post_title(db, 3) != "Sale!"
    assert outcomes(db) == ["held", "denied", "blocked"]
    events = db.session.scalars(
        select(GuidanceEvent).where(GuidanceEvent.guidance_id == rule).order_by(GuidanceEvent.id)
    ).all()
    assert [(e.action, e.actor_id) for e in events] == [
        ("admin_add", "1"),
        ("call_held", "2"),
        ("call_denied", "1"),
    ]
    assert events[-1].detail == {"request_id": request_id, "note": "not during the sale"}


def test_a_grant_expires_unused_and_the_call_is_then_refused(
    memory: Any, db: Any, post_title: Any
) -> None:
    ask(db)
    request_id = held_call(memory)
    decide(db, request_id, "allow")
    # Moved timestamps, no sleeping: the grant ran out a minute ago.
    db.session.execute(
        update(HeldCall)
        .where(HeldCall.id == request_id)
        .values(expires_at=utcnow() - timedelta(minutes=1))
    )
    db.session.commit()
    with pytest.raises(BlockedByMemory) as caught:
        memory.call_tool("update-post", CALL, user=EDITOR)
    assert "expired" in caught.value.message
    assert post_title(db, 3) != "Sale!"
    db.session.expire_all()
    assert db.session.get(HeldCall, request_id).state == "expired"
    assert outcomes(db) == ["held", "allowed", "expired", "blocked"]


def test_a_hosts_card_reads_the_held_call_as_it_stands(memory: Any, db: Any) -> None:
    ask(db)
    request_id = held_call(memory)
    card = memory.held_call(request_id)
    assert card == {
        "id": request_id,
        "tool": "update-post",
        "user_id": str(EDITOR.id),
        "state": "waiting",
        "note": None,
        "expires_at": None,
    }
    decide(db, request_id, "allow", note="once")
    allowed = memory.held_call(request_id)
    assert (allowed["state"], allowed["note"]) == ("allowed", "once")
    assert allowed["expires_at"].endswith("Z")
    db.session.execute(
        update(HeldCall)
        .where(HeldCall.id == request_id)
        .values(expires_at=utcnow() - timedelta(minutes=1))
    )
    db.session.commit()
    assert memory.held_call(request_id)["state"] == "expired"  # read as it stands, not as stored
    assert [memory.held_call(bad) for bad in (request_id + 1, str(request_id), True)] == [None] * 3


def test_long_after_a_denial_the_same_call_is_held_again(memory: Any, db: Any) -> None:
    ask(db)
    request_id = held_call(memory)
    decide(db, request_id, "deny")
    db.session.execute(
        update(HeldCall)
        .where(HeldCall.id == request_id)
        .values(decided_at=utcnow() - timedelta(minutes=31))
    )
    db.session.commit()
    assert held_call(memory) != request_id


def test_a_grant_is_for_that_user_and_those_arguments_only(
    memory: Any, db: Any, post_title: Any
) -> None:
    ask(db)
    request_id = held_call(memory)
    decide(db, request_id, "allow")
    # Other arguments: held as a request of their own, the grant untouched.
    other = held_call(memory, {"post_id": 3, "title": "Sale!!"})
    # Another user, same call: held too.
    admin_request = held_call(memory, CALL, user=ADMIN)
    assert len({request_id, other, admin_request}) == 3
    # A secret argument counts, though the ledger shows it redacted.
    with_key = held_call(memory, {**CALL, "api_key": "sk-proj-" + "a" * 40})
    assert with_key not in (request_id, other, admin_request)
    db.session.expire_all()
    assert db.session.get(HeldCall, request_id).state == "allowed"
    assert "sk-proj-aaaa" not in str(db.session.get(HeldCall, with_key).arguments)
    # The editor's exact call still runs on it.
    assert memory.call_tool("update-post", CALL, user=EDITOR)["title"] == "Sale!"


def test_a_failed_run_leaves_the_grant_for_a_retry(memory: Any, db: Any) -> None:
    ask(db, target="update-post")
    request_id = held_call(memory, {"post_id": 999, "title": "Nobody"})
    decide(db, request_id, "allow")
    with pytest.raises(Exception) as caught:
        memory.call_tool("update-post", {"post_id": 999, "title": "Nobody"}, user=EDITOR)
    assert getattr(caught.value, "code", "") == "not_found"
    db.session.expire_all()
    assert db.session.get(HeldCall, request_id).state == "allowed"


def test_expire_due_ledgers_an_unused_grant_for_the_digest(memory: Any, db: Any) -> None:
    ask(db)
    request_id = held_call(memory)
    decide(db, request_id, "allow")
    db.session.execute(
        update(HeldCall).where(HeldCall.id == request_id).values(expires_at=utcnow())
    )
    db.session.commit()
    assert held.expire_due(db.session()) == 1 and held.expire_due(db.session()) == 0
    session_id = db.session.get(HeldCall, request_id).session_id
    memory.end_session(session_id)
    from chatmem.memory.models import Session

    digest = db.session.get(Session, session_id).digest
    assert "1 held for approval, 1 allowed once, 1 expired" in digest
    assert "→ expired" in digest


# -- the session digest and the dry run -----------------------------------------------


def test_the_digest_tells_held_allowed_and_run(memory: Any, db: Any) -> None:
    ask(db)
    request_id = held_call(memory)
    session_id = db.session.get(HeldCall, request_id).session_id
    decide(db, request_id, "allow", note="ok")
    memory.call_tool("update-post", CALL, user=EDITOR, session_id=session_id)
    memory.end_session(session_id)
    from chatmem.memory.models import Session

    digest = db.session.get(Session, session_id).digest
    assert digest.splitlines()[0] == (
        "3 calls: 0 ok, 0 blocked, 0 failed, 1 held for approval, 1 allowed once, "
        "1 run after approval."
    )
    assert f"request #{request_id} allowed once by admin: ok" in digest
    assert "→ granted-run (allowed once" in digest


def test_the_dry_run_counts_what_an_ask_target_would_have_held(memory: Any, db: Any) -> None:
    memory.call_tool("update-post", CALL, user=EDITOR)
    memory.call_tool("update-post", {"post_id": 7, "title": "x"}, user=EDITOR)
    result = memory.dry_run("post_id:3", severity="ask")
    assert result.count == 1
    assert result.summary() == "would have held 1 call in the last 30 days"


def test_the_dry_run_counts_calls_not_a_curators_decisions(memory: Any, db: Any) -> None:
    """Held, allowed, run: two calls were made; "allowed" is a decision, not a third."""
    ask(db)
    decide(db, held_call(memory), "allow")
    memory.call_tool("update-post", CALL, user=EDITOR)
    assert outcomes(db) == ["held", "allowed", "granted-run"]
    result = memory.dry_run("post_id:3")
    assert result.count == 2
    assert [row.outcome for row in result.calls] == ["granted-run", "held"]


def test_recall_gives_curators_the_hits_of_ask_rules(memory: Any, db: Any) -> None:
    rule = ask(db)
    held_call(memory)
    records = memory.call_tool("recall", {}, user=ADMIN)["guidance"]
    [mine] = [r for r in records if r["id"] == rule]
    assert mine["severity"] == "ask" and mine["hits"] == 1


# -- the Memory screen ---------------------------------------------------------------------


def test_the_waiting_calls_tab_shows_the_call_in_words(app: Flask, client: FlaskClient) -> None:
    with app.app_context():
        memory = app.extensions["test_host"]["memory"]
        rule = ask(memory.db)
        request_id = held_call(memory, {"post_id": 3, "title": "Sale!"})
        memory.call_tool(
            "remember", {"type": "fact", "text": "The shop opens at nine."}, user=EDITOR
        )
    page = client.get(f"{SCREEN}?tab=waiting").get_data(as_text=True)
    assert "Waiting calls" in page
    assert f'id="held-{request_id}"' in page
    post_type = "page"  # the host's resolver names post 3's type
    with app.app_context():
        Post = app.extensions["test_host"]["Post"]
        post_type = app.extensions["test_host"]["db"].session.get(Post, 3).post_type
    assert (
        f"editor wants to run update-post on post 3 ({post_type}): title → &#39;Sale!&#39;" in page
    )
    assert f"guardrail #{rule}: Ask before the header" in page
    assert "Allow once" in page and "Deny" in page
    # The tab's count, and the badge: one waiting call plus one pending proposal.
    assert 'Waiting calls <span class="cm-count cm-count-hot">1</span>' in " ".join(page.split())
    with app.app_context():
        assert app.extensions["test_host"]["memory"].pending_count() == 2


def test_allow_once_from_the_screen_then_the_call_runs(app: Flask, client: FlaskClient) -> None:
    with app.app_context():
        memory = app.extensions["test_host"]["memory"]
        ask(memory.db)
        request_id = held_call(memory)
    response = client.post(
        f"{SCREEN}/held/{request_id}/allow",
        data={"csrf_token": token(client), "note": "for the sale"},
    )
    assert response.status_code == 303
    page = client.get(response.headers["Location"]).get_data(as_text=True)
    assert f"Allowed request #{request_id} once" in page
    assert "No calls are waiting." in page
    with app.app_context():
        memory = app.extensions["test_host"]["memory"]
        assert memory.call_tool("update-post", CALL, user=EDITOR)["title"] == "Sale!"
        request = memory.db.session.get(HeldCall, request_id)
        assert (request.state, request.note, request.decided_by) == ("used", "for the sale", "1")


def test_a_second_decision_is_a_conflict_and_changes_nothing(
    app: Flask, client: FlaskClient
) -> None:
    with app.app_context():
        memory = app.extensions["test_host"]["memory"]
        ask(memory.db)
        request_id = held_call(memory)
    csrf = token(client)
    first = client.post(f"{SCREEN}/held/{request_id}/deny", data={"csrf_token": csrf}, headers=JSON)
    assert first.status_code == 200 and first.json["request"]["state"] == "denied"
    again = client.post(
        f"{SCREEN}/held/{request_id}/allow", data={"csrf_token": csrf}, headers=JSON
    )
    assert again.status_code == 409
    assert again.json["error"]["code"] == "conflict"
    assert "already denied" in again.json["error"]["message"]
    with app.app_context():
        db = app.extensions["test_host"]["db"]
        assert db.session.get(HeldCall, request_id).state == "denied"
        assert outcomes(db) == ["held", "denied"]


@pytest.mark.parametrize(
    ("path", "data", "status", "code"),
    [
        ("/held/999/allow", {}, 404, "not_found"),
        ("/held/{id}/maybe", {}, 404, "not_found"),
        ("/held/{id}/allow", {"note": "x" * 501}, 400, "invalid_params"),
        ("/held/{id}/allow", {"note": "ok\u200b"}, 400, "invalid_params"),
    ],
)
def test_bad_decisions_get_a_clear_error_and_change_nothing(
    app: Flask, client: FlaskClient, path: str, data: dict[str, str], status: int, code: str
) -> None:
    with app.app_context():
        memory = app.extensions["test_host"]["memory"]
        ask(memory.db)
        request_id = held_call(memory)
    response = client.post(
        SCREEN + path.format(id=request_id),
        data={"csrf_token": token(client), **data},
        headers=JSON,
    )
    assert response.status_code == status
    assert response.json["error"]["code"] == code
    with app.app_context():
        db = app.extensions["test_host"]["db"]
        assert db.session.get(HeldCall, request_id).state == "waiting"
        assert outcomes(db) == ["held"]


def test_deciding_needs_csrf_and_the_manage_capability(app: Flask) -> None:
    add_token_route(app)
    with app.app_context():
        memory = app.extensions["test_host"]["memory"]
        ask(memory.db)
        request_id = held_call(memory)
    with app.test_client() as admin:
        login(admin, "admin")
        no_csrf = admin.post(f"{SCREEN}/held/{request_id}/allow", headers=JSON)
        assert no_csrf.status_code in (400, 403)
    with app.test_client() as editor:
        login(editor, "editor")
        refused = editor.post(
            f"{SCREEN}/held/{request_id}/allow",
            data={"csrf_token": token(editor)},
            headers=JSON,
        )
        assert refused.status_code == 403
    with app.app_context():
        db = app.extensions["test_host"]["db"]
        assert db.session.get(HeldCall, request_id).state == "waiting"


def test_the_add_form_accepts_ask_and_offers_it(app: Flask, client: FlaskClient) -> None:
    page = client.get(f"{SCREEN}?tab=active").get_data(as_text=True)
    assert '<option value="ask">ask</option>' in page
    response = client.post(
        f"{SCREEN}/guidance",
        data={
            "csrf_token": token(client),
            "type": "guardrail",
            "text": "Ask first",
            "target": "post_id:3",
            "severity": "ask",
        },
        headers=JSON,
    )
    assert response.status_code == 201 and response.json["entry"]["severity"] == "ask"
    page = client.get(f"{SCREEN}?tab=active").get_data(as_text=True)
    assert "Enforced: matching tool calls wait for your approval" in page
    dry = client.get(f"{SCREEN}/dry-run?target=post_id:3&severity=ask").json
    assert dry["summary"] == "matches nothing in the last 30 days"


def test_the_active_tab_counts_what_an_ask_rule_held(app: Flask, client: FlaskClient) -> None:
    with app.app_context():
        memory = app.extensions["test_host"]["memory"]
        rule = ask(memory.db)
        held_call(memory)
        held_call(memory, {"post_id": 3, "title": "Other"})
    page = " ".join(client.get(f"{SCREEN}?tab=active").get_data(as_text=True).split())
    assert "Held 2 calls, last" in page
    hits = client.get(f"{SCREEN}/guidance/{rule}/hits").get_data(as_text=True)
    assert "Calls held by “Ask before the header”" in hits
    assert hits.count("cm-outcome-held") == 2


def test_the_pending_tab_dry_runs_a_proposed_ask_rule(app: Flask, client: FlaskClient) -> None:
    with app.app_context():
        memory = app.extensions["test_host"]["memory"]
        memory.call_tool("update-post", CALL, user=EDITOR)
        memory.call_tool(
            "remember",
            {
                "type": "guardrail",
                "text": "Ask before the header",
                "target": "post_id:3",
                "severity": "ask",
            },
            user=EDITOR,
        )
    page = " ".join(client.get(f"{SCREEN}?tab=pending").get_data(as_text=True).split())
    assert "Dry run: would have held 1 call in the last 30 days" in page
