"""Guardrails: dispatch overhead of a write tool as the guardrail count grows.

    python bench/guardrails.py [--database-url postgresql+psycopg://...]

For 10, 1,000 and 10,000 active block guardrails (targets spread over
`tool:`, `post_id:` and `post_type:`, none matching), a no-op write tool
called through `memory.call_tool` (lookup, switch, validation, capability,
guardrails, run, ledger, commit) vs calling the function directly plus the
ledger insert and commit. Goal: flat in the number of guardrails.
"""

from __future__ import annotations

from datetime import datetime

from common import arguments, compare, engine_name, line, migrated_app, us
from sqlalchemy import delete, insert

from chatmem.memory import ledger, switches
from chatmem.memory.models import Guidance
from tests.hostapp import USERS

COUNTS = (10, 1_000, 10_000)


def main() -> None:
    args = arguments(__doc__ or "")
    app = migrated_app(args.database_url)
    name = engine_name(app)
    with app.app_context():
        host = app.extensions["test_host"]
        db, memory = host["db"], host["memory"]
        editor = USERS["editor"]

        def noop(post_id: int) -> dict[str, bool]:
            return {"ok": True}

        memory.tool(
            name="noop-write",
            description="A write tool that does nothing.",
            input_schema={
                "type": "object",
                "properties": {"post_id": {"type": "integer"}},
                "required": ["post_id"],
            },
        )(noop)
        session_id = memory.start_session(editor, "python")

        def direct() -> None:
            noop(post_id=5)
            ledger.record(
                db.session(),
                session_id=session_id,
                user_id="2",
                channel="python",
                tool="noop-write",
                arguments={"post_id": 5},
                outcome="ok",
            )
            db.session.commit()

        def dispatched() -> None:
            memory.call_tool("noop-write", {"post_id": 5}, user=editor, session_id=session_id)

        ratios = {}
        for count in COUNTS:
            db.session.execute(delete(Guidance))
            when = datetime(2026, 1, 1)
            kinds = ("tool:other-tool-{}", "post_id:{}", "post_type:kind{}")
            db.session.execute(
                insert(Guidance),
                [
                    {
                        "type": "guardrail",
                        "title": f"Rule {i}",
                        "text": f"Rule {i}",
                        "text_key": f"{i:064d}",
                        "status": "publish",
                        "enabled": True,
                        "origin": "admin",
                        "severity": "block",
                        "target": kinds[i % 3].format(1000 + i),
                        "created_at": when,
                        "updated_at": when,
                        "approved_at": when,
                        "version": 1,
                    }
                    for i in range(count)
                ],
            )
            switches.bump_revision(db.session())
            db.session.commit()
            dispatched()  # the one cold rebuild, outside the timing
            ratio, m, b = compare(dispatched, direct, rounds=args.rounds, per_round=100)
            ratios[count] = ratio
            line(
                f"guardrails {count:>6,} [{name}]",
                f"{ratio:.2f}x",
                f"call_tool {us(m)} vs direct call + ledger insert {us(b)}; "
                f"median of {args.rounds} rounds x 100 calls",
            )
        flat = ratios[COUNTS[-1]] / ratios[COUNTS[0]]
        line(
            f"guardrails flatness [{name}]",
            f"{flat:.2f}x",
            f"overhead ratio at {COUNTS[-1]:,} / at {COUNTS[0]:,} guardrails",
            "flat (~1.0x)",
        )
        db.session.remove()
        db.engine.dispose()


if __name__ == "__main__":
    main()
