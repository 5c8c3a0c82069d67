"""The bounded recall answer (SPEC §3): a page of guidance, the total, a cursor.

Through the real channels: REST with the Flask test client and MCP's
`tools/call` on the same app. Paging is checked on both of recall's guidance
paths: without a topic (the per-revision cache) and with one (the query).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import pytest
from flask import Flask
from jsonschema import Draft202012Validator
from sqlalchemy import insert

from chatmem.memory import fields, guidance, switches
from chatmem.memory import recall as recall_queries
from chatmem.memory.models import GUIDANCE_TYPES, Guidance, Session
from tests.hostapp import reconfigure
from tests.test_mcp_hot_path import call as mcp_call
from tests.test_recall_index import _record

REST = "/chatmem/api/tools/recall"
START = datetime(2026, 3, 1, 12, 0, 0)


@pytest.fixture
def client(app: Flask) -> Any:
    reconfigure(app, CHATMEM_RATE_LIMIT_PER_MINUTE=0)  # dozens of pages in a second
    return app.test_client()


@pytest.fixture
def token(make_token: Any) -> str:
    return str(make_token("editor"))


def rest(client: Any, token: str, arguments: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    response = client.post(REST, json=arguments, headers={"Authorization": f"Bearer {token}"})
    assert response.status_code in (200, 400), response.get_data(as_text=True)
    return response.status_code, dict(response.json)


def mcp(client: Any, token: str, arguments: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    """(200 or 400, the result or {"error": ...}) as REST answers, for one assertion style."""
    response = mcp_call(client, token, None, "recall", arguments)
    assert response.status_code == 200, response.get_data(as_text=True)
    result = response.json["result"]
    payload = dict(result["structuredContent"])
    if result["isError"]:
        assert list(payload) == ["error"], payload
        return 400, payload
    return 200, payload


CHANNELS = {"rest": rest, "mcp": mcp}


def seed(db: Any, count: int, *, word: str = "common") -> list[int]:
    """`count` active entries, inserted in one statement; ids in recall's expected order.

    Approval times repeat (every 7 entries share one) so the id tie-break is
    exercised; types and times are spread so no order falls out by accident.
    """
    rows = []
    for i in range(count):
        approved = START + timedelta(seconds=(i * 37) % (count // 7 + 1))
        rows.append(
            {
                "type": GUIDANCE_TYPES[(i * 3) % 4],
                "title": f"entry {i}",
                "text": f"{word} guidance number {i}",
                "text_key": fields.text_key(f"{word} guidance number {i}"),
                "status": "publish",
                "enabled": True,
                "origin": "admin",
                "created_at": START,
                "approved_at": approved,
                "updated_at": START,
                "version": 1,
            }
        )
    db.session.execute(insert(Guidance), rows)
    switches.bump_revision(db.session())  # as every guidance change does: caches see the new rows
    db.session.commit()
    stored = db.session.query(Guidance.id, Guidance.type, Guidance.approved_at).all()
    # SPEC §3: guardrails, facts, conventions, instructions; newest approval first.
    stored.sort(key=lambda r: (GUIDANCE_TYPES.index(r.type), -r.approved_at.timestamp(), -r.id))
    return [r.id for r in stored]


@pytest.mark.parametrize("name", CHANNELS)
def test_paging_through_5000_matches_misses_none_and_repeats_none(
    name: str, client: Any, token: str, db: Any
) -> None:
    expected = seed(db, 5000)
    channel = CHANNELS[name]

    def follow(arguments: dict[str, Any]) -> list[int]:
        ids: list[int] = []
        cursor: str | None = None
        while True:
            extra = {"cursor": cursor} if cursor else {}
            status, answer = channel(client, token, {**arguments, **extra})
            assert status == 200, answer
            assert answer["guidance_total"] == len(expected)
            assert len(answer["guidance"]) <= arguments["guidance_limit"]
            ids += [g["id"] for g in answer["guidance"]]
            cursor = answer["cursor"]
            if cursor is None:
                return ids

    # The cache (no topic) and the query (a topic every entry holds) page alike.
    assert follow({"guidance_limit": 500}) == expected
    assert follow({"guidance_limit": 500, "topic": "COMMON guidance"}) == expected
    # An uneven last page: 5000 = 13 * 383 + 21.
    assert follow({"guidance_limit": 383}) == expected


def test_the_default_page_is_50_in_priority_order(client: Any, token: str, db: Any) -> None:
    expected = seed(db, 120)
    for channel in CHANNELS.values():
        status, first = channel(client, token, {})
        assert status == 200
        assert [g["id"] for g in first["guidance"]] == expected[:50]
        assert first["guidance_total"] == 120 and first["cursor"]
        types = [g["type"] for g in first["guidance"]]
        assert types == sorted(types, key=GUIDANCE_TYPES.index)
        status, second = channel(client, token, {"cursor": first["cursor"]})
        assert [g["id"] for g in second["guidance"]] == expected[50:100]
        status, last = channel(client, token, {"cursor": second["cursor"]})
        assert [g["id"] for g in last["guidance"]] == expected[100:]
        assert last["cursor"] is None and last["guidance_total"] == 120


def test_a_type_filter_pages_its_own_entries(client: Any, token: str, db: Any) -> None:
    expected = seed(db, 400)
    facts = [i for i in expected if db.session.get(Guidance, i).type == "fact"]
    for channel in CHANNELS.values():
        for topic in (None, "guidance"):
            arguments: dict[str, Any] = {"type": "fact", "guidance_limit": 30}
            if topic:
                arguments["topic"] = topic
            seen: list[int] = []
            cursor = None
            while True:
                status, answer = channel(
                    client, token, {**arguments, **({"cursor": cursor} if cursor else {})}
                )
                assert answer["guidance_total"] == len(facts) == 100
                seen += [g["id"] for g in answer["guidance"]]
                if (cursor := answer["cursor"]) is None:
                    break
            assert seen == facts


def test_an_entry_approved_between_pages_repeats_nothing(
    client: Any, token: str, db: Any, admin: Any
) -> None:
    expected = seed(db, 60)
    _status, first = rest(client, token, {"guidance_limit": 20})
    # A newer approval goes before the cursor (newest first): this pass does not
    # see it, and nothing already seen comes again.
    guidance.admin_add(
        db.session(), {"type": "guardrail", "text": "brand new"}, actor_id=str(admin.id)
    )
    seen = [g["id"] for g in first["guidance"]]
    cursor = first["cursor"]
    while cursor:
        _status, answer = rest(client, token, {"guidance_limit": 20, "cursor": cursor})
        seen += [g["id"] for g in answer["guidance"]]
        cursor = answer["cursor"]
        assert answer["guidance_total"] == 61
    assert seen == expected


@pytest.mark.parametrize("arguments", [{}, {"type": "fact"}, {"topic": "GUIDANCE number"}])
def test_the_query_pages_in_recall_order_missing_and_repeating_nothing(
    db: Any, arguments: dict[str, Any]
) -> None:
    """The query path (recall with no per-revision cache, the reference the
    cache and the ranked index are held to) pages by its keyset condition:
    after a cursor come the later types, then older approvals of its type,
    then equal approvals of lower ids. The seed's approval times run out of
    id order and repeat, so a page that skipped older approvals, or took
    every lower id, would miss entries or repeat them."""
    expected = seed(db, 140)
    if arguments.get("type"):
        expected = [i for i in expected if db.session.get(Guidance, i).type == "fact"]
    seen: list[int] = []
    cursor = None
    for _page in range(len(expected) // 9 + 1):  # a wrong condition could page forever
        answer = recall_queries.recall(
            db.session(), guidance_limit=9, cursor=cursor, scan=True, **arguments
        )
        assert answer["guidance_total"] == len(expected)
        seen += [g["id"] for g in answer["guidance"]]
        if (cursor := answer["cursor"]) is None:
            break
    assert seen == expected


def test_the_query_counts_nothing_left_when_every_match_went_between_pages(db: Any) -> None:
    seed(db, 20)
    first = recall_queries.recall(db.session(), guidance_limit=9, scan=True)
    assert first["guidance_total"] == 20 and first["cursor"]
    db.session.query(Guidance).update({"enabled": False})
    db.session.commit()
    after = recall_queries.recall(db.session(), guidance_limit=9, cursor=first["cursor"], scan=True)
    assert (after["guidance"], after["guidance_total"], after["cursor"]) == ([], 0, None)


def test_sessions_are_the_newest_ten_unless_asked(db: Any) -> None:
    for number in range(12):
        _record(db, number, f"session {number}")
    db.session.commit()
    answer = recall_queries.recall(db.session())
    assert [s["summary"] for s in answer["sessions"]] == [f"session {n}" for n in range(11, 1, -1)]
    three = recall_queries.recall(db.session(), limit=3)
    assert [s["summary"] for s in three["sessions"]] == ["session 11", "session 10", "session 9"]


def test_a_session_record_as_recall_shows_it(db: Any) -> None:
    started = datetime(2026, 2, 1, 9, 0, 0)
    for number, (digest, changes) in enumerate([(None, 0), ("2 calls: 2 ok", 2)]):
        db.session.add(
            Session(
                id=f"r{number}",
                user_id="2",
                user_name="editor",
                channel="mcp",
                started_at=started,
                last_seen_at=started,
                recorded_at=started + timedelta(minutes=5 + number),
                summary="moved the docs",
                summary_auto=bool(number),
                digest=digest,
                change_count=changes,
            )
        )
    db.session.commit()
    shown = recall_queries.recall(db.session())["sessions"]
    common = {"user": "editor", "source": "mcp", "summary": "moved the docs"}
    assert shown == [
        {
            "id": "r1",
            "when": "2026-02-01T09:06:00Z",
            **common,
            "auto": True,
            "summary_by": "auto",
            "digest": "2 calls: 2 ok",
            "changes": 2,
        },
        {
            "id": "r0",
            "when": "2026-02-01T09:05:00Z",  # when it was recorded, not begun
            **common,
            "auto": False,
            "summary_by": "agent",
            "digest": "",
            "changes": 0,
        },
    ]


BAD_LIMITS = [
    ({"guidance_limit": 0}, "guidance_limit must be at least 1."),
    ({"guidance_limit": 501}, "guidance_limit must be at most 500."),
    ({"guidance_limit": "ten"}, "guidance_limit must be of type integer."),
    ({"guidance_limit": 2.5}, "guidance_limit must be of type integer."),
    ({"cursor": ""}, None),
    ({"cursor": 12}, None),
    ({"cursor": "x" * 201}, None),
]


@pytest.mark.parametrize("name", CHANNELS)
@pytest.mark.parametrize(("arguments", "message"), BAD_LIMITS)
def test_a_bad_guidance_limit_or_cursor_is_invalid_params(
    name: str, arguments: dict[str, Any], message: str | None, client: Any, token: str, db: Any
) -> None:
    seed(db, 3)
    status, answer = CHANNELS[name](client, token, arguments)
    assert status == 400
    error = answer["error"]
    assert error["code"] == "invalid_params"
    assert error["field"] == next(iter(arguments))
    if message:
        assert error["message"] == message


def _tampered(cursor: str) -> list[str]:
    flipped = [
        cursor[:i] + ("A" if cursor[i] != "A" else "B") + cursor[i + 1 :]
        for i in range(0, len(cursor), 5)
    ]
    return [*flipped, cursor[:-3], cursor + "AAAA", "garbage", "!!!!", "AAAA", "=" * 8, "é"]


@pytest.mark.parametrize("name", CHANNELS)
def test_a_tampered_or_foreign_cursor_is_refused(
    name: str, client: Any, token: str, db: Any
) -> None:
    seed(db, 80)
    channel = CHANNELS[name]
    _status, first = channel(client, token, {"topic": "common"})
    cursor = first["cursor"]
    _status, plain = channel(client, token, {"guidance_limit": 10})
    _status, facts = channel(client, token, {"type": "fact", "guidance_limit": 10})
    assert cursor and plain["cursor"] and facts["cursor"]
    refused = {
        "tampered": [
            channel(client, token, {"topic": "common", "cursor": c}) for c in _tampered(cursor)
        ],
        # A cursor names its query: another topic or type cannot use it.
        "foreign": [
            channel(client, token, {"topic": "guidance", "cursor": cursor}),
            channel(client, token, {"cursor": cursor}),
            channel(client, token, {"topic": "common", "type": "fact", "cursor": cursor}),
            # Without a topic too: a type's pages and all types' are apart.
            channel(client, token, {"type": "fact", "cursor": plain["cursor"]}),
            channel(client, token, {"cursor": facts["cursor"]}),
        ],
    }
    for kind, answers in refused.items():
        for status, answer in answers:
            assert status == 400, (kind, answer)
            assert answer["error"]["code"] == "invalid_params"
            assert answer["error"]["field"] == "cursor"
    assert "other filters" in refused["foreign"][0][1]["error"]["message"]
    # The genuine cursor still works, and the answer was never changed.
    status, second = channel(client, token, {"topic": "common", "cursor": cursor})
    assert status == 200 and second["guidance_total"] == 80


def test_the_openapi_document_describes_the_bounded_answer(
    client: Any, token: str, db: Any
) -> None:
    seed(db, 60)
    document = client.get("/chatmem/api/openapi.json", headers={"Authorization": f"Bearer {token}"})
    operation = document.json["paths"][REST]["post"]
    request = operation["requestBody"]["content"]["application/json"]["schema"]
    assert request["properties"]["guidance_limit"]["maximum"] == 500
    assert "cursor" in request["properties"]
    result = operation["responses"]["200"]["content"]["application/json"]["schema"]
    assert {"guidance_total", "cursor"} <= set(result["required"])
    _status, answer = rest(client, token, {})
    Draft202012Validator(result).validate(answer)
    _status, last = rest(client, token, {"cursor": answer["cursor"]})
    Draft202012Validator(result).validate(last)
    assert (len(last["guidance"]), last["guidance_total"], last["cursor"]) == (10, 60, None)
