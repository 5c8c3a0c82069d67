"""What encoding an MCP recall answer costs: chatmem's encoder against the standard library's.

    python bench/mcp_encoding.py [--database-url postgresql+psycopg://...] [--rounds N]

A real `recall` page (the test host, 600 approved entries that all hold
"invoice" among 1,000, 50 entries a page, 10 session records) is put in its
MCP envelope the way the endpoint does it: the result, with its text copy
inside (MCP asks for the JSON as text beside `structuredContent`), encoded
to the response body. The baseline is the same two encodings with the
standard library's `json.dumps`, as chatmem did before; calls alternate.
"""

from __future__ import annotations

import json
import random
from datetime import datetime, timedelta
from typing import Any

from common import arguments, compare, engine_name, line, migrated_app, us
from sqlalchemy import insert

from chatmem.http.mcp import encoding
from chatmem.memory import switches
from chatmem.memory.models import Guidance, Session
from tests.hostapp import USERS

ENTRIES = 1000
HOLDING = 600  # of them hold the topic
WORDS = [
    "header",
    "footer",
    "menu",
    "theme",
    "plugin",
    "cache",
    "deploy",
    "staging",
    "price",
    "product",
    "review",
    "order",
]


def seed(db: Any, rng: random.Random) -> None:
    start = datetime(2025, 1, 1)
    rows = [
        {
            "type": ("guardrail", "fact", "convention", "instruction")[i % 4],
            "title": f"entry {i} " + " ".join(rng.choices(WORDS, k=4)),
            "text": " ".join(rng.choices(WORDS, k=40)) + (" invoice" if i < HOLDING else ""),
            "text_key": f"{i:064d}",
            "status": "publish",
            "enabled": True,
            "origin": "agent",
            "created_at": start,
            "updated_at": start,
            "approved_at": start + timedelta(seconds=i),
            "version": 1,
        }
        for i in range(ENTRIES)
    ]
    db.session.execute(insert(Guidance), rows)
    records = [
        {
            "id": f"s{i:04d}",
            "user_id": str(USERS["editor"].id),
            "user_name": "editor",
            "channel": "mcp",
            "started_at": start + timedelta(minutes=i),
            "last_seen_at": start + timedelta(minutes=i),
            "ended_at": start + timedelta(minutes=i),
            "recorded_at": start + timedelta(minutes=i),
            "summary": " ".join(rng.choices(WORDS, k=30)) + " invoice",
            "summary_auto": False,
            "digest": "3 calls: 3 ok, 0 blocked, 0 failed.",
            "change_count": 3,
        }
        for i in range(100)
    ]
    db.session.execute(insert(Session), records)
    switches.bump_revision(db.session())
    db.session.commit()


def envelope(text: str, payload: dict[str, Any]) -> dict[str, Any]:
    result = {"content": [{"type": "text", "text": text}], "structuredContent": payload}
    return {"jsonrpc": "2.0", "id": 7, "result": {**result, "isError": False}}


def main() -> None:
    args = arguments(__doc__ or "")
    app = migrated_app(args.database_url)
    name = engine_name(app)
    with app.app_context():
        host = app.extensions["test_host"]
        seed(host["db"], random.Random(1))
        payload = host["memory"].call_tool(
            "recall", {"topic": "invoice", "limit": 50}, user=USERS["editor"]
        )
    assert len(payload["guidance"]) == 50 and payload["guidance_total"] == HOLDING, payload

    def standard_library() -> bytes:
        text = json.dumps(payload, ensure_ascii=False)
        return json.dumps(envelope(text, payload)).encode()

    def chatmem() -> bytes:
        return encoding.to_bytes(envelope(encoding.to_text(payload), payload))

    ours, theirs = json.loads(chatmem()), json.loads(standard_library())
    for sent in (ours, theirs):  # the text copy is the same JSON, spaced differently
        text = sent["result"]["content"][0]
        text["text"] = json.loads(text["text"])
    assert ours == theirs and ours["result"]["content"][0]["text"] == payload
    ratio, ours, theirs = compare(chatmem, standard_library, rounds=args.rounds, per_round=200)
    size = len(standard_library())
    line(
        f"mcp answer encoding [{name}]",
        f"{ratio:.2f}x",
        f"chatmem {us(ours)} vs the standard library {us(theirs)}, median of {args.rounds} "
        f"x 200 alternated; a recall page of 50 entries and 10 records, {size:,} bytes as sent",
    )


if __name__ == "__main__":
    main()
