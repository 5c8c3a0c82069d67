"""Export and import: `flask chatmem export` / `import` and the screen's Export
and Import, one versioned JSON format (chatmem/schemas/memory-export.v1.json)
that keeps provenance and the audit trail; import is all or nothing, dedups
by folded text, never overwrites, and defaults to pending.
"""

from __future__ import annotations

import copy
import getpass
import io
import json
from collections.abc import Iterator
from datetime import date
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from jsonschema import Draft202012Validator
from sqlalchemy import select

from chatmem import InvalidParams
from chatmem.http.screen.reads import history
from chatmem.memory import guidance, staleness, transfer
from chatmem.memory.models import (
    GUIDANCE_TYPES,
    SEVERITIES,
    STATUSES,
    Guidance,
    GuidanceEvent,
    utcnow,
)
from tests.conftest import dispose
from tests.hostapp import USERS, create_host_app
from tests.screen_helpers import JSON, SCREEN, login, propose, state, token

ACTOR = f"cli:{getpass.getuser()}"


def cli(app: Flask, *args: str) -> Any:
    return app.test_cli_runner().invoke(args=["chatmem", *args])


def seed(app: Flask) -> dict[str, int]:
    """A site a while in: every status and severity, edits, a reason, a review date."""
    with app.app_context():
        memory = app.extensions["test_host"]["memory"]
        db = memory.db
        pending = propose(memory, "Prices include VAT.", severity="info")
        proposed = {"type": "guardrail", "target": "post_id:42", "severity": "block"}
        active = propose(memory, "Never edit the checkout page.", **proposed)
        guidance.edit(db.session(), active, {"text": "Never edit the cart page."}, actor_id="1")
        guidance.approve(db.session(), active, actor_id="1")
        staleness.set_review_after(
            db.session(), db.session.get(Guidance, active), date(2027, 3, 1), actor_id="1"
        )
        db.session.commit()
        held = {"type": "guardrail", "target": "post_id:7", "severity": "ask", "scope": "sale"}
        ask = propose(memory, "Ask before touching the sale banner.", **held)
        guidance.approve(db.session(), ask, actor_id="1")
        rejected = propose(memory, "Use Comic Sans for headings.", type="convention")
        guidance.reject(db.session(), rejected, actor_id="1", reason="House style says no.")
        by_hand = guidance.admin_add(
            db.session(),
            {
                "type": "instruction",
                "text": "Write titles in sentence case.",
                "title": "Titles",
                "severity": "warn",
            },
            actor_id="1",
        ).id
        guidance.set_enabled(db.session(), by_hand, False, actor_id="1")
        trashed = guidance.admin_add(
            db.session(), {"type": "fact", "text": "Old fact."}, actor_id="1"
        ).id
        guidance.trash(db.session(), trashed, actor_id="1")
        db.session.remove()
    return {
        "pending": pending,
        "active": active,
        "ask": ask,
        "rejected": rejected,
        "by_hand": by_hand,
        "trash": trashed,
    }


@pytest.fixture
def fresh(tmp_path: Path, database_url: str) -> Iterator[Any]:
    """Makes a second, empty site: a new SQLite file, or on PostgreSQL the
    same database emptied (so call it after the first site's export)."""
    made: list[Flask] = []

    def make() -> Flask:
        url = database_url if database_url.startswith("postgresql") else None
        made.append(create_host_app(url or f"sqlite:///{tmp_path / 'fresh.db'}"))
        return made[-1]

    yield make
    for app in made:
        dispose(app)


def without_ids(document: dict[str, Any]) -> dict[str, Any]:
    stripped = copy.deepcopy(document)
    for entry in stripped["entries"]:
        del entry["id"]
    return stripped


def test_export_is_valid_v1_with_provenance_and_the_audit_trail(app: Flask) -> None:
    ids = seed(app)
    result = cli(app, "export")
    assert result.exit_code == 0, result.stderr
    assert result.stderr == "Exported 6 entries.\n"
    document = json.loads(result.stdout)
    Draft202012Validator(transfer.schema()).validate(document)
    assert (document["format"], document["version"]) == ("chatmem-memory-export", 1)
    assert document["actors"] == {"1": "admin", "2": "editor"}
    active = next(e for e in document["entries"] if e["id"] == ids["active"])
    assert active["text"] == "Never edit the cart page."
    assert (active["origin"], active["created_by"], active["approved_by"]) == ("agent", "2", "1")
    assert active["session_id"] and active["approved_at"].endswith("Z")
    assert active["review_after"] == "2027-03-01"
    assert [e["action"] for e in active["events"]] == ["propose", "edit", "approve", "review_date"]
    assert active["events"][1]["detail"]["text"] == [
        "Never edit the checkout page.",
        "Never edit the cart page.",
    ]
    rejected = next(e for e in document["entries"] if e["id"] == ids["rejected"])
    assert rejected["events"][-1]["detail"] == {"reason": "House style says no."}
    only = json.loads(cli(app, "export", "--status", "rejected", "--status", "trash").stdout)
    assert sorted(e["status"] for e in only["entries"]) == ["rejected", "trash"]


def test_round_trip_keeps_every_field_and_severity(app: Flask, fresh: Any, tmp_path: Path) -> None:
    """Export, import with their status, export: the same document, except what the
    import itself says: new ids, approval by the importer, and its own event."""
    seed(app)
    exported = json.loads(cli(app, "export").stdout)
    assert {e["severity"] for e in exported["entries"]} == {"info", "warn", "ask", "block", None}
    dispose(app)
    path = tmp_path / "memory.json"
    path.write_text(json.dumps(exported))
    fresh = fresh()
    started = f"{utcnow():%Y-%m-%dT%H:%M:%S}"
    result = cli(fresh, "import", str(path), "--keep-status")
    assert result.exit_code == 0, result.stderr
    assert result.stdout == "Imported 6 entries (with their status). New: #1, #2, #3, #4, #5, #6.\n"
    again = json.loads(cli(fresh, "export").stdout)
    assert again["actors"][ACTOR] == ACTOR
    (there,) = (e["approved_at"] for e in exported["entries"] if e["target"] == "post_id:42")
    for before, after in zip(exported["entries"], again["entries"], strict=True):
        event = after["events"].pop()
        assert (event["action"], event["actor_id"]) == ("import", ACTOR)
        assert event["at"] >= started
        assert event["detail"]["source"] == exported["server_name"]
        assert event["detail"]["status"] == before["status"]
        if before["approved_at"] is not None:  # the other site's approval: history only
            assert event["detail"]["approved_by"] == before["approved_by"]
            assert event["detail"]["approver"] == exported["actors"][before["approved_by"]]
            assert event["detail"]["approved_at"] == before["approved_at"]
        approved_here = "publish" in (before["status"], before["status_before_trash"])
        if approved_here:
            assert after["approved_by"] == ACTOR and after["approved_at"] >= started
        else:
            assert (after["approved_by"], after["approved_at"]) == (None, None)
        for name in ("id", "approved_by", "approved_at"):
            del before[name], after[name]
        # The other site's user ids would name this site's users: the copy names them by
        # the names the file gave, never by a local id.
        before["created_by"] = foreign(exported, before["created_by"])
        for event in before["events"]:
            event["actor_id"] = foreign(exported, event["actor_id"])
        # The trail is sealed again here, over the names the copy keeps (audit.py).
        for event in (*before["events"], *after["events"]):
            assert len(event.pop("seal")) == 64
        assert after == before
    with fresh.app_context():
        memory = fresh.extensions["test_host"]["memory"]
        block = memory.block().text
        assert "Never edit the cart page." in block, "an active copy is live"
        assert "Ask before touching the sale banner." in block
        site = memory.db.session.scalars(
            select(GuidanceEvent).where(GuidanceEvent.guidance_id.is_(None))
        ).all()
        assert [(e.action, e.actor_id, e.detail["imported"]) for e in site] == [
            ("import", ACTOR, [1, 2, 3, 4, 5, 6])
        ]
        rule = memory.db.session.scalar(
            select(Guidance.id).where(Guidance.text == "Never edit the cart page.")
        )
    # The copy's history page tells its whole story; its session stayed on the other site.
    with fresh.test_client() as client:
        login(client, "admin")
        page = client.get(f"{SCREEN}/guidance/{rule}").get_data(as_text=True)
    assert "(not on this site)" in page
    assert "<del>checkout </del><ins>cart </ins>" in page
    assert "<strong>Approved</strong> by admin" in page
    assert f"approved there by admin on {there[:10]}" in page


def foreign(document: dict[str, Any], actor: str | None) -> str | None:
    if actor is None or actor.startswith("cli:"):
        return actor
    return f"imported:{document['actors'][actor]}"


def test_an_imported_trail_never_names_a_local_user_by_the_other_sites_id(app: Flask) -> None:
    """User #2 there is not user #2 here: the history page names the file's users as its."""
    seed(app)
    document = json.loads(cli(app, "export", "--status", "publish").stdout)
    entry = document["entries"][0]
    entry.update(text="Imported from the other shop.", title="Other shop", created_by="2")
    entry["events"] = [dict(entry["events"][0], actor_id="2")]
    document["entries"] = [entry]
    document["actors"] = {**document["actors"], "2": "mallory"}
    with app.app_context():
        db = app.extensions["test_host"]["db"]
        (new,) = transfer.import_document(db.session(), document, actor_id="1").imported
        copy_ = db.session.get(Guidance, new)
        assert copy_.created_by == "imported:mallory"
        assert guidance.events(db.session(), new)[0].actor_id == "imported:mallory"
        db.session.commit()
    with app.test_client() as client:
        login(client, "admin")
        page = client.get(f"{SCREEN}/guidance/{new}").get_data(as_text=True)
    assert "mallory (on the exporting site)" in page
    assert "by editor" not in page, "user #2 of this site never touched it"


def test_import_defaults_to_pending_and_skips_text_already_here(app: Flask) -> None:
    ids = seed(app)
    document = json.loads(cli(app, "export", "--status", "publish").stdout)
    extra = copy.deepcopy(document["entries"][0])
    extra.update(id=99, text="Never  edit the BLOG page.", title="Blog freeze", events=[])
    twice = copy.deepcopy(extra) | {"id": 100, "text": "never edit the blog page."}
    document["entries"] += [extra, twice]
    with app.app_context():
        db = app.extensions["test_host"]["db"]
        result = transfer.import_document(db.session(), document, actor_id="1")
        assert result.skipped == [
            {"entry": 1, "id": ids["active"], "existing": ids["active"]},
            {"entry": 2, "id": ids["ask"], "existing": ids["ask"]},
            {"entry": 3, "id": ids["by_hand"], "existing": ids["by_hand"]},
            {"entry": 5, "id": 100, "existing": result.imported[0]},
        ]
        (new,) = result.imported
        entry = db.session.get(Guidance, new)
        assert (entry.status, entry.approved_by, entry.text) == (
            "pending",
            None,
            "Never  edit the BLOG page.",
        )
        trail = [(e.action, e.actor_id, e.detail) for e in guidance.events(db.session(), new)]
        assert trail[-1][:2] == ("import", "1")
        assert trail[-1][2] | {"approved_at": "then"} == {
            "status": "pending",
            "was": "publish",
            "source": document["server_name"],
            "approved_by": "1",
            "approver": "admin",
            "approved_at": "then",
            "actors": {"1": "admin", "2": "editor"},
        }
        assert history.describe(guidance.events(db.session(), new)[-1]) == (
            f"pending (was active); from {document['server_name']}; "
            f"approved there by admin on {extra['approved_at'][:10]}"
        )
        # The local active entry was not touched.
        assert (
            db.session.get(Guidance, ids["active"]).version == 4
        )  # proposed, edited, approved, dated


@pytest.mark.parametrize(
    ("change", "says"),
    [
        (lambda e: e.update(text="Key AKIAIOSFODNN7EXAMPLE works."), "text holds what looks like"),
        (lambda e: e.update(title="Fine\u200bprint"), "title holds invisible"),
        (lambda e: e.update(type="rumour"), "'rumour' is not one of"),
        (
            lambda e: e["events"].append(
                {
                    "action": "reject",
                    "actor_id": "1",
                    "at": "2026-01-01T00:00:00Z",
                    "detail": {"reason": "pw AKIAIOSFODNN7EXAMPLE"},
                }
            ),
            "reason holds what looks like a secret",
        ),
        (lambda e: e.update(created_at="yesterday"), "'yesterday' is not a UTC date and time"),
        (lambda e: e.update(review_after="next week"), "'next week' is not a day such as"),
        # The pattern's shape but no such day: refused by name all the same, not a 500.
        (lambda e: e.update(review_after="2026-02-30"), "review_after must be a date"),
    ],
)
def test_a_bad_entry_is_refused_by_name_and_nothing_is_written(
    app: Flask, change: Any, says: str, tmp_path: Path
) -> None:
    seed(app)
    document = json.loads(cli(app, "export").stdout)
    for entry in document["entries"]:
        entry["text"] += " (copy)"  # new text: every entry would be imported
    change(document["entries"][2])
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(document))
    before = state(app)
    result = cli(app, "import", str(path))
    assert result.exit_code == 1
    assert "entry 3 (#" in result.stderr and says in result.stderr, result.stderr
    assert "Nothing was imported." in result.stderr
    assert state(app) == before


def test_the_wrong_file_is_refused(app: Flask, tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("not json")
    assert "The file is not JSON" in cli(app, "import", str(tmp_path / "notes.txt")).stderr
    (tmp_path / "v2.json").write_text(json.dumps({"format": "chatmem-memory-export", "version": 2}))
    refused = cli(app, "import", str(tmp_path / "v2.json")).stderr
    assert "Not a chatmem memory export (version 1)" in refused


def upload(client: FlaskClient, body: bytes, **form: str) -> Any:
    """POST the Import form; the answer's status and JSON (the response is closed)."""
    data: dict[str, Any] = {"csrf_token": token(client), "file": (io.BytesIO(body), "m.json")}
    with client.post(
        f"{SCREEN}/import",
        data=data | form,
        headers=JSON,
        content_type="multipart/form-data",
    ) as response:
        return SimpleNamespace(status_code=response.status_code, json=response.get_json())


def test_the_screen_exports_and_imports(app: Flask, client: FlaskClient) -> None:
    seed(app)
    page = client.get(SCREEN).get_data(as_text=True)
    assert 'action="/chatmem/memory/import" enctype="multipart/form-data"' in page
    response = client.get(f"{SCREEN}/export?status=publish")
    assert response.headers["Content-Disposition"].startswith(
        'attachment; filename="chatmem-memory-'
    )
    document = response.json
    assert {e["status"] for e in document["entries"]} == {"publish"}
    assert client.get(f"{SCREEN}/export?status=live", headers=JSON).status_code == 400
    document["entries"][0]["text"] = "Never edit the about page."
    done = upload(client, json.dumps(document).encode())
    assert done.status_code == 200 and len(done.json["imported"]) == 1
    assert len(done.json["skipped"]) == 2
    message = (
        "Imported 1 entry (pending). Skipped 2 whose text is already here. "
        "The poisoning screen flagged 1: it waits in Pending review. "
        "1 was changed after export (the trail no longer matches its seals): "
        "it waits in Pending review."
    )  # the same target as the cart rule here; its text was edited in the file
    assert [f["flags"] for f in done.json["flagged"]] == [["contradiction"]]
    assert [a["entry"] for a in done.json["altered"]] == [1]
    assert done.json["message"] == message


def test_the_screen_import_is_refused_without_csrf_a_file_or_over_the_limit(
    app: Flask, client: FlaskClient
) -> None:
    seed(app)
    body = client.get(f"{SCREEN}/export").data.replace(b"Prices", b"Costs")
    before = state(app)
    with client.post(
        f"{SCREEN}/import",
        data={"file": (io.BytesIO(body), "m.json")},
        content_type="multipart/form-data",
    ) as no_csrf:
        assert no_csrf.status_code in (400, 403)
    assert upload(client, b"", file="").status_code == 400
    # Encoded here, as a browser would: the test client would spool it to a file it never closes.
    boundary = "cm-boundary"
    head = (
        f'--{boundary}\r\nContent-Disposition: form-data; name="csrf_token"\r\n\r\n'
        f"{token(client)}\r\n--{boundary}\r\n"
        'Content-Disposition: form-data; name="file"; filename="m.json"\r\n\r\n'
    )
    big = head.encode() + b" " * transfer.UPLOAD_MAX_BYTES + f"\r\n--{boundary}--\r\n".encode()
    with client.post(
        f"{SCREEN}/import",
        data=big,
        headers=JSON,
        content_type=f"multipart/form-data; boundary={boundary}",
    ) as too_big:
        assert too_big.status_code == 413
        assert too_big.get_json()["error"]["code"] == "payload_too_large"
    assert state(app) == before
    with app.test_client() as editor:
        login(editor, "editor")
        assert editor.get(f"{SCREEN}/export").status_code == 403
    assert upload(client, body).status_code == 200, "the same file, with a token, works"
    assert USERS


def test_the_first_bad_entry_in_the_file_is_the_one_named(app: Flask) -> None:
    seed(app)
    document = json.loads(cli(app, "export").stdout)
    template = document["entries"][0]
    document["entries"] = [
        copy.deepcopy(template) | {"id": 100 + n, "text": f"Fact number {n}."} for n in range(12)
    ]
    document["entries"][10]["type"] = "rumour"
    document["entries"][1]["severity"] = "loud"
    with app.app_context(), pytest.raises(InvalidParams) as caught:
        transfer.import_document(
            app.extensions["test_host"]["db"].session(), document, actor_id="1"
        )
    assert caught.value.message.startswith(
        "Not a chatmem memory export (version 1): entry 2 (#101 “Prices include VAT.”), at severity"
    )
    assert caught.value.details == {
        "path": "entries/1/severity",
        "field": "entries/1/severity",
        "reason": "schema_enum",
    }


def test_the_schema_lists_what_the_models_store() -> None:
    """The shipped schema is a file: it must name every severity (it lacked `ask`),
    type and status the models know, or an export cannot be imported back."""
    entry = transfer.schema()["$defs"]["entry"]["properties"]
    assert entry["severity"]["enum"] == [*SEVERITIES, None]
    assert entry["type"]["enum"] == list(GUIDANCE_TYPES)
    assert entry["status"]["enum"] == list(STATUSES)
    assert entry["status_before_trash"]["enum"] == [s for s in STATUSES if s != "trash"] + [None]
