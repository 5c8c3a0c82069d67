"""What redacting one call's arguments costs on the ledger path, and what it finds.

Every non-read-only tool call is redacted before its ledger row is written,
so the redaction step must cost little next to what the ledger already
does (serialise the arguments to JSON). Three candidates, on the same
arguments, in one process:

- chatmem's step, `ledger.safe_arguments` (chatmem/text's secret shapes and key
  names, then hidden characters made visible and long values cut);
- detect-secrets' ad-hoc API, `scan_line`, with its default plugins and filters;
- detect-secrets' plugins called directly, without filters or the two entropy
  plugins (the cheapest way to use it).

Each figure is a ratio against `json.dumps` of the same arguments; one more
puts chatmem's step against a whole ledgered `call_tool` (validation, the
tool, the ledger row, the commit) on SQLite. The coverage lines count how
many shapes of tests/secret_corpus.py each one removes, and how many of the
ordinary texts there it changes (false positives).

    .venv/bin/pip install detect-secrets && .venv/bin/python bench/redaction.py
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from common import arguments, compare, line, migrated_app, us

from chatmem.memory.ledger import safe_arguments
from tests.hostapp import USERS
from tests.secret_corpus import ORDINARY, SECRETS, planted

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
LEAKY_CALL = {**ORDINARY_CALL, "content": PROSE + " " + planted(SECRETS[0])}


def detect_secrets_redactors() -> dict[str, Callable[[str], str]]:
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
    from detect_secrets.core.scan import scan_line
    from detect_secrets.settings import default_settings

    def by_scan_line(value: str) -> str:
        with default_settings():
            for found in scan_line(value):
                if found.secret_value:
                    value = value.replace(found.secret_value, "[redacted]")
        return value

    entropy = ("Base64 High Entropy String", "Hex High Entropy String")
    mapping = get_mapping_from_secret_type_to_class()
    plugins = [cls() for name, cls in mapping.items() if name not in entropy]

    def by_plugins(value: str) -> str:
        for plugin in plugins:
            for found in plugin.analyze_line(filename="ledger", line=value, line_number=0):
                if found.secret_value:
                    value = value.replace(found.secret_value, "[redacted]")
        return value

    return {"detect-secrets scan_line": by_scan_line, "detect-secrets plugins": by_plugins}


def walk(redact_string: Callable[[str], str], value: Any) -> Any:
    """Apply a string redactor to every string in the arguments, as the ledger does."""
    if isinstance(value, dict):
        return {k: walk(redact_string, v) for k, v in value.items()}
    if isinstance(value, list):
        return [walk(redact_string, v) for v in value]
    return redact_string(value) if isinstance(value, str) else value


def main() -> None:
    options = arguments(__doc__ or "")
    candidates: dict[str, Callable[[dict[str, Any]], Any]] = {
        "chatmem ledger.safe_arguments": lambda args: safe_arguments(args, 200),
    }
    for name, redact_string in detect_secrets_redactors().items():
        candidates[name] = lambda args, r=redact_string: walk(r, args)
    for label, call in (("ordinary call", ORDINARY_CALL), ("call with a key", LEAKY_CALL)):
        for name, redact in candidates.items():
            ratio, measured, baseline = compare(
                lambda redact=redact, call=call: redact(call),
                lambda call=call: json.dumps(call),
                rounds=options.rounds,
                per_round=200,
            )
            line(
                f"redaction, {label}: {name}",
                f"{ratio:.1f}x",
                f"{us(measured)} vs json.dumps of the same arguments {us(baseline)}; "
                f"median of {options.rounds} rounds x 200 calls",
            )
    ledgered_call(options.rounds)
    for name, redact in candidates.items():
        caught = [p for p in SECRETS if p.secret not in json.dumps(redact({"v": planted(p)}))]
        missed = sorted({p.kind for p in SECRETS} - {p.kind for p in caught})
        changed = sum(redact({"v": text}) != {"v": text} for text in ORDINARY)
        line(
            f"redaction coverage: {name}",
            f"{len(caught)}/{len(SECRETS)} caught, "
            f"{changed}/{len(ORDINARY)} ordinary texts changed",
            f"tests/secret_corpus.py; missed kinds: {', '.join(missed) or '-'}",
        )


def ledgered_call(rounds: int) -> None:
    """chatmem's redaction next to the whole write it is part of."""
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
        "redaction, share of a ledgered call [sqlite]",
        f"{ratio:.2f}x",
        f"ledger.safe_arguments {us(measured)} vs the whole call_tool that ledgers it "
        f"{us(baseline)}; median of {rounds} rounds x 100 calls",
    )


if __name__ == "__main__":
    main()
