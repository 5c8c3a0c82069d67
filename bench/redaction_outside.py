"""The redaction step's cost per ledger write, now against before issue 24, in one run.

Issue 24 widened the redaction step (then chatmem/redaction.py, now
chatmem/text/) from ~20 shapes to the families of the outside corpus
(tests/corpora/secrets: Kingfisher's rule examples and our own shapes).
This prints what that costs where it runs most, a ledger write
(`ledger.safe_arguments`: redact, make visible, cut), as a ratio against the
redactor as it was before, kept in bench/redaction_before_24.py (the module's
text at commit 3359fbe) and measured in the same process, interleaved call by call.
Then one long transcript through `redact`, the share of a whole ledgered
`call_tool` on SQLite, and both redactors' two rates on the corpus.

    .venv/bin/python tests/corpora/fetch.py && .venv/bin/python bench/redaction_outside.py
"""

from __future__ import annotations

import types
from typing import Any

from common import arguments, compare, line, migrated_app, us
from redaction_before_24 import old_redactor

from chatmem import text
from chatmem.memory.ledger import safe_arguments
from chatmem.text import redact
from tests.corpora.secrets import benign, leaked, true_shapes
from tests.hostapp import USERS

PROSE = (
    "Spring sale: every product in the garden range is 20% off until the end of "
    "April. The banner on the home page links to the sale page; the checkout page "
    "(page 42) shows the discount once the code is applied. "
) * 4
ORDINARY_CALL = {
    "post_id": 7,
    "title": "Spring sale on the garden range",
    "content": PROSE,
    "status": "publish",
    "tags": ["sale", "spring", "garden"],
}
LEAKY_CALL = {
    **ORDINARY_CALL,
    "content": PROSE + " export SHOP_SIGNING_KEY=b5Xq9Lr2Wz7Nd4Tf8Hk1Mp6Vc3",
}
TRANSCRIPT = "\n".join(
    f"user: update post {i} with the spring banner\nassistant: done, post {i} now links to "
    f"https://shop.example.com/sale?ref=banner-{i} (order #{100000 + i})"
    for i in range(200)
)


def old_safe_arguments(old: types.ModuleType, value: Any, max_len: int = 200) -> Any:
    """ledger.safe_arguments with the old redactor: the same finish step."""

    def shown(item: str) -> str:
        item = text.visible(item)
        return f"{item[:max_len]}… [+{len(item) - max_len} chars]" if len(item) > max_len else item

    return old.redact_value(value, finish=shown)


def main() -> None:
    options = arguments(__doc__ or "")
    old = old_redactor()
    for label, call in (("ordinary call", ORDINARY_CALL), ("call with a key", LEAKY_CALL)):
        ratio, measured, baseline = compare(
            lambda call=call: safe_arguments(call, 200),
            lambda call=call: old_safe_arguments(old, call),
            rounds=options.rounds,
            per_round=200,
        )
        line(
            f"ledger write redaction, {label}: now vs before issue 24",
            f"{ratio:.2f}x",
            f"ledger.safe_arguments {us(measured)} vs the old rules {us(baseline)}; "
            f"median of {options.rounds} rounds x 200 calls",
        )
    ratio, measured, baseline = compare(
        lambda: redact(TRANSCRIPT),
        lambda: old.redact(TRANSCRIPT),
        rounds=options.rounds,
        per_round=20,
    )
    line(
        "transcript redaction (200 turns, no secret): now vs before issue 24",
        f"{ratio:.2f}x",
        f"redact {us(measured)} vs the old rules {us(baseline)}; {len(TRANSCRIPT)} characters",
    )
    ledgered_call(options.rounds)
    shapes, benigns = true_shapes(), benign()
    for name, redactor in (("now", redact), ("before issue 24", old.redact)):
        caught = sum(not leaked(redactor, s) for s in shapes)
        touched = sum(redactor(s.text) != s.text for s in benigns)
        line(
            f"secrets corpus, {name}",
            f"{caught / len(shapes):.1%} of {len(shapes)} true shapes redacted, "
            f"{touched / len(benigns):.1%} of {len(benigns)} benign touched",
            "tests/corpora/secrets (Kingfisher's examples and ours)",
        )


def ledgered_call(rounds: int) -> None:
    """The redaction step next to the whole write it is part of."""
    app = migrated_app(None)
    memory = app.extensions["test_host"]["memory"]
    memory.tool(name="save-page", description="Bench.", input_schema={"type": "object"})(
        lambda **page: {"saved": True}
    )
    with app.app_context():
        session_id = memory.start_session(USERS["editor"], "python")
        ratio, measured, baseline = compare(
            lambda: safe_arguments(ORDINARY_CALL, 200),
            lambda: memory.call_tool(
                "save-page", ORDINARY_CALL, user=USERS["editor"], session_id=session_id
            ),
            rounds=rounds,
            per_round=100,
        )
    line(
        "ledger write redaction, share of a ledgered call [sqlite]",
        f"{ratio:.2f}x",
        f"ledger.safe_arguments {us(measured)} vs the whole call_tool that ledgers it "
        f"{us(baseline)}; median of {rounds} rounds x 100 calls",
    )


if __name__ == "__main__":
    main()
