"""Provider calls per 100 ended sessions, Auto-summarize on (no paid call for nothing).

    python bench/provider_calls.py [--database-url postgresql+psycopg://...]

A realistic mix of 100 sessions, ended and summarised by the job runner
against the local fake provider (`tests/fake_llm.py`, OpenAI Responses API):

- 50 agent sessions that only read (`recall`, nothing written, no transcript);
- 30 agent sessions that changed the site (two host tool calls each);
- 20 chat sessions with a conversation transcript, no host tool call.

Prints the provider calls made and the jobs by status. A `digest_only` job
is a session that needed no summary: one provider call saved. The script
uses no name that is new, so it runs on older code too (the "before").
"""

from __future__ import annotations

import os
from collections import Counter

from common import arguments, engine_name, line, migrated_app
from sqlalchemy import select

from chatmem.memory.models import SummaryJob
from tests.fake_llm import RESPONSES, FakeLLM, openai_text
from tests.hostapp import USERS

SESSIONS = 100
TRANSCRIPT = "user: what does the checkout page say?\nassistant: It asks for the card."


def main() -> None:
    args = arguments(__doc__ or "")
    with FakeLLM() as fake:
        os.environ["OPENAI_API_KEY"] = "sk-bench-not-a-key"
        os.environ["OPENAI_BASE_URL"] = fake.openai_base_url
        app = migrated_app(args.database_url)
        app.config.update(
            CHATMEM_PROVIDER="openai", CHATMEM_MODEL="fake", CHATMEM_PROVIDER_MAX_RETRIES=0
        )
        name = engine_name(app)
        editor, admin = USERS["editor"], USERS["admin"]
        with app.app_context():
            memory = app.extensions["test_host"]["memory"]
            db = app.extensions["test_host"]["db"]
            memory.set_setting("auto_summarize", True, actor=admin)
            for i in range(SESSIONS):
                if i % 2 == 0:  # an agent that only looked things up
                    sid = memory.start_session(editor, "mcp")
                    memory.call_tool("recall", {"topic": "checkout"}, user=editor, session_id=sid)
                    memory.end_session(sid)
                elif i % 10 in (1, 3, 5):  # an agent that changed the site
                    sid = memory.start_session(editor, "mcp")
                    for username in ("ann", "bob"):
                        memory.call_tool(
                            "create-user", {"username": username}, user=editor, session_id=sid
                        )
                    memory.end_session(sid)
                else:  # a chat that only talked
                    sid = memory.start_session(editor, "chat")
                    memory.end_session(sid, transcript=TRANSCRIPT)
            for _ in range(SESSIONS):
                fake.enqueue(RESPONSES, 200, openai_text("A summary."))
            while memory.run_due_jobs(limit=50).claimed:
                pass
            statuses = Counter(db.session.scalars(select(SummaryJob.status)))
        calls = sum(1 for r in fake.requests if r.path == RESPONSES)
        line(
            f"provider calls per {SESSIONS} ended sessions [{name}]",
            str(calls),
            f"50 read-only agent sessions, 30 that changed the site, 20 chats; jobs by status: "
            f"{dict(sorted(statuses.items()))}",
        )


if __name__ == "__main__":
    main()
