"""Held calls of `ask` guardrails, state by state (SPEC §6; chatmem/memory/held.py).

What test_ask_severity.py leaves open: one call's identity (its hash), the
exact times a grant and a refusal last (at the second, with `now` given), what
each change of state writes (the request, the ledger row, the audit event),
the words a requester and a curator read, and the Waiting calls list's
helpers (count, page, rules, the call in words).
"""

from __future__ import annotations

import hashlib
from datetime import datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import select, update

from chatmem import ApprovalRequired, BlockedByMemory
from chatmem.errors import Conflict, NotFound
from chatmem.memory import held
from chatmem.memory.guardrails.index import Rule
from chatmem.memory.models import Guidance, GuidanceEvent, HeldCall, utcnow
from tests.hostapp import reconfigure
from tests.test_ask_severity import (
    ADMIN,
    CALL,
    EDITOR,
    ask,
    decide,
    held_call,
    ledger_rows,
    outcomes,
)

TITLE = "Ask before the header"
MINUTES = 30
SECOND = timedelta(seconds=1)


def at_second() -> datetime:
    """Now, to the second: stored and read back alike on SQLite and PostgreSQL."""
    return utcnow().replace(microsecond=0)


def gate(
    db: Any,
    rule_id: int,
    now: datetime,
    arguments: dict[str, Any] = CALL,
    user: Any = EDITOR,
) -> held.Verdict:
    """The dispatcher's step for a call an `ask` rule matched, at a given time."""
    return held.gate(
        db.session(),
        Rule(rule_id, TITLE, "post_id:3", "ask"),
        "update-post",
        arguments,
        arguments,
        held.Caller(str(user.id), user.username, None, "python"),
        grant_minutes=MINUTES,
        max_len=1000,
        now=now,
    )


def decide_at(
    db: Any, request_id: int, decision: str, now: datetime, note: str | None = None
) -> HeldCall:
    return held.decide(
        db.session(),
        request_id,
        decision,
        actor_id=str(ADMIN.id),
        actor_name="admin",
        note=note,
        grant_minutes=MINUTES,
        now=now,
    )


def stored(db: Any, request_id: int) -> HeldCall:
    db.session.expire_all()
    request = db.session.get(HeldCall, request_id)
    assert request is not None
    return request


def events(db: Any, rule_id: int) -> list[tuple[str, str | None, Any]]:
    db.session.expire_all()
    query = (
        select(GuidanceEvent)
        .where(GuidanceEvent.guidance_id == rule_id, GuidanceEvent.action != "admin_add")
        .order_by(GuidanceEvent.id)
    )
    return [(e.action, e.actor_id, e.detail) for e in db.session.scalars(query)]


def set_times(db: Any, request_id: int, **values: Any) -> None:
    """Move a request's timestamps (no sleeping) and commit."""
    db.session.execute(update(HeldCall).where(HeldCall.id == request_id).values(**values))
    db.session.commit()


def allowed_call(db: Any, rule_id: int, now: datetime, arguments: dict[str, Any] = CALL) -> int:
    """A call held at `now` and allowed at once: a grant until now + MINUTES."""
    verdict = gate(db, rule_id, now, arguments)
    db.session.commit()
    decide_at(db, verdict.request.id, "allow", now)
    return int(verdict.request.id)


# -- a call's identity ----------------------------------------------------------------------


def test_a_calls_hash_is_its_tool_in_lower_case_and_its_sorted_arguments() -> None:
    """Stable across releases: a grant stored by one version is used by the next."""
    canonical = '["update-post", {"post_id": 3, "title": "Soldes d\'été"}]'
    expected = hashlib.sha256(canonical.encode("utf-8")).hexdigest()
    assert held.call_hash("Update-Post", {"title": "Soldes d'été", "post_id": 3}) == expected
    assert held.call_hash("update-post", {"post_id": 3, "title": "Soldes d'été"}) == expected
    assert held.call_hash("update-post", {"post_id": 3, "title": "Soldes d'ete"}) != expected


def test_a_value_json_cannot_write_is_hashed_as_its_text() -> None:
    when = datetime(2026, 1, 2, 3, 4, 5)
    assert held.call_hash("schedule", {"at": when}) == held.call_hash(
        "schedule", {"at": "2026-01-02 03:04:05"}
    )


def test_the_same_arguments_in_another_order_use_the_grant(memory: Any, db: Any) -> None:
    ask(db)
    request_id = held_call(memory, {"post_id": 3, "title": "Sale!"})
    decide(db, request_id, "allow")
    result = memory.call_tool("update-post", {"title": "Sale!", "post_id": 3}, user=EDITOR)
    assert result["title"] == "Sale!"
    assert stored(db, request_id).state == "used"


# -- holding ------------------------------------------------------------------------------


def test_a_held_request_stores_the_caller_the_rule_and_the_time(db: Any) -> None:
    rule = ask(db)
    now = at_second() - timedelta(minutes=5)
    verdict = gate(db, rule, now)
    db.session.commit()
    assert not verdict.run and isinstance(verdict.error, ApprovalRequired)
    request = stored(db, verdict.request.id)
    assert (
        request.tool,
        request.arguments,
        request.call_hash,
        request.user_id,
        request.user_name,
        request.session_id,
        request.channel,
        request.guidance_id,
        request.state,
        request.created_at,
    ) == (
        "update-post",
        CALL,
        held.call_hash("update-post", CALL),
        "2",
        "editor",
        None,
        "python",
        rule,
        "waiting",
        now,
    )
    assert events(db, rule) == [
        ("call_held", "2", {"request_id": request.id, "tool": "update-post"})
    ]


def test_asking_again_while_waiting_answers_with_the_same_request(db: Any) -> None:
    rule = ask(db)
    now = at_second()
    first = gate(db, rule, now)
    again = gate(db, rule, now + SECOND)
    assert again.request.id == first.request.id and not again.run
    assert isinstance(again.error, ApprovalRequired)
    assert again.error.message == first.error.message
    assert again.error.message.endswith(f"within {MINUTES} minutes.")
    assert again.error.details["request_id"] == first.request.id


def test_a_curator_is_told_of_a_held_call_once(memory: Any, db: Any) -> None:
    rule = ask(db)
    seen: list[dict[str, Any]] = []
    memory.on_waiting_call(seen.append)
    request_id = held_call(memory)
    assert held_call(memory) == request_id
    assert [(n["event"], n["id"], n["tool"], n["guidance_id"], n["user"]) for n in seen] == [
        ("waiting_call", request_id, "update-post", rule, "editor")
    ]


def test_holding_writes_only_to_the_callers_transaction(db: Any) -> None:
    """The gate never commits: a rolled-back call leaves no request and no expiry."""
    rule = ask(db)
    now = at_second()
    past = now - timedelta(hours=2)
    grant = allowed_call(db, rule, past)
    gate(db, rule, now)  # expires the grant, refuses the call
    gate(db, rule, now, {"post_id": 3, "title": "Other"})  # a new request
    db.session.rollback()
    assert stored(db, grant).state == "allowed"
    assert db.session.scalars(select(HeldCall.id)).all() == [grant]


def test_the_latest_request_for_a_call_is_the_one_that_counts(memory: Any, db: Any) -> None:
    """Long after a denial the call is held anew; asking again names that new request."""
    ask(db)
    denied = held_call(memory)
    decide(db, denied, "deny")
    set_times(db, denied, decided_at=utcnow() - timedelta(minutes=MINUTES + 1))
    again = held_call(memory)
    assert again != denied
    assert held_call(memory) == again
    assert len(db.session.scalars(select(HeldCall.id)).all()) == 2


# -- the grant: used once, until its time ----------------------------------------------------


def test_a_grant_runs_once_and_records_who_ran_it_and_when(db: Any) -> None:
    rule = ask(db)
    now = at_second()
    request_id = allowed_call(db, rule, now - timedelta(minutes=10))
    verdict = gate(db, rule, now)
    db.session.commit()
    assert verdict.run and verdict.error is None and verdict.request.id == request_id
    request = stored(db, request_id)
    assert (request.state, request.used_at) == ("used", now)
    assert events(db, rule)[-1] == (
        "call_run",
        "2",
        {"request_id": request_id, "tool": "update-post"},
    )


def test_a_grant_runs_until_its_last_second_and_not_at_it(db: Any) -> None:
    rule = ask(db)
    start = at_second() - timedelta(hours=1)
    first = allowed_call(db, rule, start)
    ends = start + timedelta(minutes=MINUTES)
    assert gate(db, rule, ends - SECOND).run
    db.session.commit()

    second = allowed_call(db, rule, start)
    verdict = gate(db, rule, ends)
    db.session.commit()
    assert isinstance(verdict.error, BlockedByMemory)
    assert verdict.request.id == second != first
    assert stored(db, second).state == "expired"


def test_the_call_after_a_denial_is_refused_for_one_grant_period(db: Any) -> None:
    rule = ask(db)
    start = at_second() - timedelta(hours=2)
    request_id = gate(db, rule, start).request.id
    db.session.commit()
    decide_at(db, request_id, "deny", start)
    ends = start + timedelta(minutes=MINUTES)
    refused = gate(db, rule, ends - SECOND)
    assert isinstance(refused.error, BlockedByMemory) and refused.request.id == request_id
    again = gate(db, rule, ends)
    assert isinstance(again.error, ApprovalRequired) and again.request.id != request_id


def test_the_call_after_an_unused_grant_is_refused_from_its_expiry(db: Any) -> None:
    """The period runs from when the grant expired, not from when it was allowed."""
    rule = ask(db)
    start = at_second() - timedelta(hours=3)
    request_id = allowed_call(db, rule, start)
    expired = start + timedelta(minutes=MINUTES)
    ends = expired + timedelta(minutes=MINUTES)
    assert held.expire_due(db.session(), now=expired) == 1
    refused = gate(db, rule, ends - SECOND)
    assert isinstance(refused.error, BlockedByMemory) and refused.request.id == request_id
    again = gate(db, rule, ends)
    assert isinstance(again.error, ApprovalRequired) and again.request.id != request_id


def test_a_call_expires_only_its_own_grant(db: Any) -> None:
    rule = ask(db)
    now = at_second()
    past = now - timedelta(hours=2)
    mine = allowed_call(db, rule, past)
    other = allowed_call(db, rule, past, {"post_id": 3, "title": "Other"})
    gate(db, rule, now)
    db.session.commit()
    assert (stored(db, mine).state, stored(db, other).state) == ("expired", "allowed")
    assert outcomes(db).count("expired") == 1


# -- the words a requester reads ------------------------------------------------------------


def test_a_refusal_after_a_denial_says_who_denied_it_and_why(memory: Any, db: Any) -> None:
    rule = ask(db)
    request_id = held_call(memory)
    decide(db, request_id, "deny", note="not during the sale")
    with pytest.raises(BlockedByMemory) as caught:
        memory.call_tool("update-post", CALL, user=EDITOR)
    assert caught.value.message == (
        f"update-post was refused by project memory guardrail #{rule} ({TITLE}): "
        f"request #{request_id} for this call was denied: a curator denied it "
        "(not during the sale)."
    )


def test_a_refusal_after_a_denial_without_a_note_says_only_that(memory: Any, db: Any) -> None:
    rule = ask(db)
    request_id = held_call(memory)
    decide(db, request_id, "deny")
    with pytest.raises(BlockedByMemory) as caught:
        memory.call_tool("update-post", CALL, user=EDITOR)
    assert caught.value.message == (
        f"update-post was refused by project memory guardrail #{rule} ({TITLE}): "
        f"request #{request_id} for this call was denied: a curator denied it."
    )


def test_a_refusal_after_an_unused_grant_says_it_expired(memory: Any, db: Any) -> None:
    rule = ask(db)
    request_id = held_call(memory)
    decide(db, request_id, "allow", note="quickly")
    set_times(db, request_id, expires_at=utcnow() - timedelta(minutes=1))
    with pytest.raises(BlockedByMemory) as caught:
        memory.call_tool("update-post", CALL, user=EDITOR)
    assert caught.value.message == (
        f"update-post was refused by project memory guardrail #{rule} ({TITLE}): "
        f"request #{request_id} for this call was expired: its approval expired unused."
    )
    assert caught.value.details == {
        "guidance_id": rule,
        "title": TITLE,
        "target": "post_id:3",
        "request_id": request_id,
        "state": "expired",
    }


# -- a curator's decision -------------------------------------------------------------------


def test_allow_once_grants_the_call_for_the_grant_period(db: Any) -> None:
    rule = ask(db)
    now = at_second()
    request_id = gate(db, rule, now).request.id
    db.session.commit()
    decided = decide_at(db, request_id, "allow", now, note="for the sale")
    assert (
        decided.state,
        decided.decided_at,
        decided.decided_by,
        decided.note,
        decided.expires_at,
    ) == ("allowed", now, "1", "for the sale", now + timedelta(minutes=MINUTES))
    db.session.rollback()  # decided is committed
    request = stored(db, request_id)
    assert (request.state, request.expires_at) == ("allowed", now + timedelta(minutes=MINUTES))
    assert events(db, rule)[-1] == (
        "call_allowed",
        "1",
        {"request_id": request_id, "note": "for the sale"},
    )


def test_a_decision_is_ledgered_in_the_requesters_session(memory: Any, db: Any) -> None:
    rule = ask(db)
    sid = memory.start_session(EDITOR, "rest")
    first = held_call(memory)
    with pytest.raises(ApprovalRequired) as caught:
        memory.call_tool(
            "update-post",
            {"post_id": 3, "title": "Other"},
            user=EDITOR,
            session_id=sid,
            channel="rest",
        )
    second = caught.value.details["request_id"]
    decide(db, second, "deny", note="not now")
    decide(db, first, "allow")
    assert ledger_rows(db)[-2:] == [
        (
            sid,
            "2",
            "rest",
            "update-post",
            {"post_id": 3, "title": "Other"},
            "denied",
            None,
            f"request #{second} denied by admin: not now",
            rule,
        ),
        (
            stored(db, first).session_id,
            "2",
            "python",
            "update-post",
            CALL,
            "allowed",
            None,
            f"request #{first} allowed once by admin",
            rule,
        ),
    ]


def test_a_decision_keeps_the_stored_arguments_as_they_are(memory: Any, ctx: Any, db: Any) -> None:
    """Not cut again: neither to the ledger's setting nor to any shorter default."""
    reconfigure(ctx, CHATMEM_LEDGER_VALUE_MAX=4)
    ask(db)
    decide(db, held_call(memory), "deny")
    shown = {"post_id": 3, "title": "Sale… [+1 chars]"}
    assert [row[4] for row in ledger_rows(db)] == [shown, shown]

    long = {"post_id": 3, "title": "S" * 300}  # held with room for it all
    request_id = gate(db, ask(db, title="Ask long"), at_second(), long).request.id
    db.session.commit()
    decide(db, request_id, "allow")
    assert ledger_rows(db)[-1][4] == long


def test_a_decision_and_a_run_return_the_request_as_it_now_stands(memory: Any, db: Any) -> None:
    """Even when the host read the request's card just before, in the same session."""
    rule = ask(db)
    request_id = held_call(memory)
    assert memory.held_call(request_id)["state"] == "waiting"
    decided = decide(db, request_id, "allow", note="ok")
    assert (decided.state, decided.note, decided.decided_by) == ("allowed", "ok", "1")
    assert memory.held_call(request_id)["state"] == "allowed"
    now = at_second()
    verdict = gate(db, rule, now)
    assert verdict.run and (verdict.request.state, verdict.request.used_at) == ("used", now)


def test_deny_records_the_decision_and_grants_nothing(db: Any) -> None:
    rule = ask(db)
    now = at_second()
    request_id = gate(db, rule, now).request.id
    db.session.commit()
    decided = decide_at(db, request_id, "deny", now)
    assert (decided.state, decided.decided_at, decided.decided_by, decided.expires_at) == (
        "denied",
        now,
        "1",
        None,
    )
    assert events(db, rule)[-1] == ("call_denied", "1", {"request_id": request_id, "note": None})


def test_deciding_an_unknown_request_is_not_found(db: Any) -> None:
    with pytest.raises(NotFound) as caught:
        decide(db, 999, "allow")
    assert caught.value.message == "No waiting call #999."
    assert caught.value.details == {"id": 999}


def test_a_second_decision_names_the_first_and_changes_nothing(memory: Any, db: Any) -> None:
    ask(db)
    request_id = held_call(memory)
    decide(db, request_id, "allow", note="first")
    with pytest.raises(Conflict) as caught:
        decide(db, request_id, "deny", note="second")
    assert caught.value.message == (
        f"Request #{request_id} was already allowed by someone else; reload the page."
    )
    assert caught.value.details == {"id": request_id, "state": "allowed"}
    request = stored(db, request_id)
    assert (request.state, request.note) == ("allowed", "first")
    assert outcomes(db) == ["held", "allowed"]


def test_a_request_whose_entry_is_gone_is_decided_without_an_audit_event(
    memory: Any, db: Any
) -> None:
    rule = ask(db)
    request_id = held_call(memory)
    set_times(db, request_id, guidance_id=None)
    assert decide(db, request_id, "deny").state == "denied"
    assert events(db, rule) == [
        ("call_held", "2", {"request_id": request_id, "tool": "update-post"})
    ]
    assert ledger_rows(db)[-1][5:] == (
        "denied",
        None,
        f"request #{request_id} denied by admin",
        None,
    )


# -- expiry ---------------------------------------------------------------------------------


def test_expire_due_expires_grants_at_their_time_and_counts_them(db: Any) -> None:
    rule = ask(db)
    start = at_second() - timedelta(hours=1)
    first = allowed_call(db, rule, start)
    second = allowed_call(db, rule, start, {"post_id": 3, "title": "Other"})
    ends = start + timedelta(minutes=MINUTES)
    assert held.expire_due(db.session(), now=ends - SECOND) == 0
    assert held.expire_due(db.session(), now=ends) == 2
    db.session.rollback()  # expire_due commits its own work
    assert [stored(db, i).state for i in (first, second)] == ["expired", "expired"]
    assert held.expire_due(db.session(), now=ends) == 0


def test_an_expired_grant_is_ledgered_and_audited(memory: Any, db: Any) -> None:
    rule = ask(db)
    request_id = held_call(memory)
    decide(db, request_id, "allow")
    set_times(db, request_id, expires_at=utcnow() - SECOND)
    assert held.expire_due(db.session()) == 1
    session_id = stored(db, request_id).session_id
    assert ledger_rows(db)[-1] == (
        session_id,
        "2",
        "python",
        "update-post",
        CALL,
        "expired",
        None,
        f"request #{request_id}: the approval expired unused",
        rule,
    )
    assert events(db, rule)[-1] == ("call_expired", None, {"request_id": request_id})


# -- a host's card ------------------------------------------------------------------------


def test_a_hosts_card_gives_the_grants_end_in_utc(memory: Any, db: Any) -> None:
    rule = ask(db)
    now = at_second()
    request_id = allowed_call(db, rule, now)
    ends = now + timedelta(minutes=MINUTES)
    assert memory.held_call(request_id) == {
        "id": request_id,
        "tool": "update-post",
        "user_id": "2",
        "state": "allowed",
        "note": None,
        "expires_at": f"{ends.isoformat()}Z",
    }


def test_reading_a_card_expires_only_that_grant(memory: Any, db: Any) -> None:
    rule = ask(db)
    past = at_second() - timedelta(hours=2)
    mine = allowed_call(db, rule, past)
    other = allowed_call(db, rule, past, {"post_id": 3, "title": "Other"})
    assert memory.held_call(mine)["state"] == "expired"
    assert stored(db, other).state == "allowed"
    assert memory.held_call(other)["state"] == "expired"
    assert outcomes(db).count("expired") == 2


def test_a_card_for_something_not_an_id_is_none(memory: Any, db: Any) -> None:
    ask(db)
    request_id = held_call(memory)
    assert memory.held_call(request_id)["state"] == "waiting"
    assert [memory.held_call(bad) for bad in (float(request_id), None, True, [request_id])] == [
        None
    ] * 4


# -- the Waiting calls list -------------------------------------------------------------------


def test_the_waiting_count_counts_only_undecided_requests(memory: Any, db: Any) -> None:
    ask(db)
    assert held.waiting_count(db.session()) == 0
    first = held_call(memory)
    held_call(memory, {"post_id": 3, "title": "Other"})
    held_call(memory, {"post_id": 3, "title": "Third"})
    assert held.waiting_count(db.session()) == 3
    decide(db, first, "deny")
    assert held.waiting_count(db.session()) == 2


def test_the_waiting_list_is_oldest_first_a_page_at_a_time(memory: Any, db: Any) -> None:
    ask(db)
    ids = [held_call(memory, {"post_id": 3, "title": f"Title {n}"}) for n in range(4)]
    decide(db, ids[1], "allow")
    # A row rewritten since (moved on disk) still lists by age, not by its place.
    set_times(db, ids[0], created_at=utcnow())
    listed = [c.id for c in held.waiting(db.session(), offset=0, limit=10)]
    assert listed == [ids[0], ids[2], ids[3]]
    assert [c.id for c in held.waiting(db.session(), offset=1, limit=1)] == [ids[2]]


def test_the_rules_of_a_page_are_the_entries_that_held_its_calls(memory: Any, db: Any) -> None:
    rule = ask(db)
    other = ask(db, target="post_id:7", title="Ask before the footer")
    first = held_call(memory)
    second = held_call(memory, {"post_id": 7, "title": "Footer"})
    calls = [stored(db, first), stored(db, second)]
    rules = held.rules_of(db.session(), calls)
    assert {k: v.title for k, v in rules.items()} == {rule: TITLE, other: "Ask before the footer"}
    assert all(isinstance(v, Guidance) for v in rules.values())
    set_times(db, first, guidance_id=None)
    assert held.rules_of(db.session(), [stored(db, first)]) == {}
    assert held.rules_of(db.session(), []) == {}


# -- the call in words --------------------------------------------------------------------


def words(arguments: Any, resolve: Any = None, user_name: str = "editor") -> str:
    request = HeldCall(tool="update-post", arguments=arguments, user_name=user_name)
    return held.describe(request, resolve)


def test_the_call_in_words_names_the_post_and_its_type() -> None:
    assert words({"post_id": 5, "title": "Sale!"}, lambda post_id: f"page-{post_id}") == (
        "editor wants to run update-post on post 5 (page-5): title → 'Sale!'"
    )
    assert words({"id": 6, "title": "Sale!"}, lambda post_id: None) == (
        "editor wants to run update-post on post 6: title → 'Sale!'"
    )


def test_the_call_in_words_without_a_resolver_or_when_it_fails() -> None:
    def broken(post_id: Any) -> str:
        raise RuntimeError("the host is down")

    assert words({"post_id": 5}, broken) == "editor wants to run update-post on post 5"
    assert words({"post_id": 5}) == "editor wants to run update-post on post 5"


def test_the_call_in_words_without_a_post() -> None:
    assert words({"post_id": "", "id": None, "title": "Sale!"}, lambda post_id: "page") == (
        "editor wants to run update-post: title → 'Sale!'"
    )
    assert words({}) == "editor wants to run update-post"
    assert words(["not", "a", "dict"]) == "editor wants to run update-post"


def test_the_call_in_words_quotes_text_and_writes_other_values_as_json() -> None:
    arguments = {"id": 0, "title": "Été", "tags": ["été", 2], "draft": True, "parent": None}
    assert words(arguments, user_name="éditeur") == (
        "éditeur wants to run update-post on post 0: "
        "title → 'Été', tags → [\"été\", 2], draft → true, parent → null"
    )
