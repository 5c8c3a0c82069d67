"""The targets: each module scored, and the focused tests that state its contract."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

#: The checkout: bin/mutation/ sits two levels under it.
ROOT = Path(__file__).resolve().parent.parent.parent


@dataclass(frozen=True)
class Target:
    path: str
    #: The focused tests: the files that state this module's contract.
    tests: tuple[str, ...]
    #: mutmut function names to score (mangled: `x_name`, `xǁClassǁname`); None: all.
    functions: tuple[str, ...] | None = None


#: What the dispatcher and the tools' rules are pinned by: the one path's tests,
#: plus the input rules and the ask step's grants where they are used.
DISPATCH_TESTS = (
    "tests/test_tools.py",
    "tests/test_dispatch.py",
    "tests/test_ask_severity.py",
    "tests/test_ask_channels.py",
    "tests/test_ledger.py",
    "tests/test_guardrails.py",
    "tests/test_module_switch.py",
)
TOKEN_TESTS = (
    "tests/test_tokens.py",
    "tests/test_token_cap.py",
    "tests/test_token_binding.py",
    "tests/test_token_auth.py",
    "tests/test_token_lists.py",
    # Making, listing and revoking in the browser: the Connect page, the tokens tab.
    "tests/test_connect_tokens.py",
    "tests/test_memory_screen_tokens.py",
    # The per-user mint lock and the list's order on PostgreSQL; the check's cache at its bound.
    "tests/test_token_rules.py",
    "tests/test_token_check_rules.py",
)
#: The ask severity: holding, deciding, granting, on every channel and under races.
ASK_TESTS = (
    "tests/test_ask_severity.py",
    "tests/test_ask_channels.py",
    "tests/test_ask_race.py",
    "tests/test_held.py",
    "tests/test_mcp_tasks.py",  # a request withdrawn when its MCP task is cancelled
)

GUARDRAIL_TESTS = ("tests/test_guardrails.py", "tests/test_target_labels.py")
#: An entry's life and what its fields may hold: one contract, the same tests.
GUIDANCE_TESTS = (
    "tests/test_guidance.py",
    "tests/test_separation_of_duties.py",
    "tests/test_entry_history.py",
    "tests/test_rejection_memory.py",
    "tests/test_guidance_lifecycle.py",
    "tests/test_guidance_fields.py",
)
REDACTION_TESTS = (
    "tests/test_text.py",
    "tests/test_redaction.py",
    "tests/test_secret_corpus_pins.py",
    "tests/test_secret_keys.py",
    "tests/test_secret_shapes.py",
    # The shapes' edges that surviving mutants showed no test reached.
    "tests/test_secret_shapes_edges_a.py",
    "tests/test_secret_shapes_edges_b.py",
    "tests/test_secret_shapes_edges_c.py",
    "tests/test_redaction_rules.py",
)

#: The one mapping of target -> module and focused tests. Modules move: the paths
#: are here only (the hand-made mutants and tests/MUTANTS.md name the target or
#: the module's path, and `resolve` accepts either).
RANKED_TESTS = (
    "tests/test_recall_ranked.py",
    "tests/test_recall_page.py",
    # Targets, tiers, scripts and languages at their edges.
    "tests/test_recall_ranked_edges.py",
)

TARGETS = {
    # The one path: lookup, switch, authorize, session, guard, run, ledger.
    "dispatch": Target("chatmem/dispatch.py", DISPATCH_TESTS),
    # Tools as data, the registry, canonical arguments, validation, the text rules, messages.
    "tools": Target("chatmem/tools.py", DISPATCH_TESTS),
    # The guardrails package: parsing a target, the one matcher, the compiled index.
    # Label targets are matched there too: their tests are the labels hook's.
    "guardrail_targets": Target("chatmem/memory/guardrails/targets.py", GUARDRAIL_TESTS),
    # `tool:` targets and `chatmem/<name>` calls name a tool the same way.
    "tool_names": Target("chatmem/tool_names.py", (*GUARDRAIL_TESTS, "tests/test_tools.py")),
    "guardrail_matching": Target("chatmem/memory/guardrails/matching.py", GUARDRAIL_TESTS),
    "guardrails": Target("chatmem/memory/guardrails/index.py", GUARDRAIL_TESTS),
    "block": Target("chatmem/memory/block.py", ("tests/test_block.py",)),
    # Recording and the digest; the secret rules (redact, redact_text) are scored elsewhere.
    "ledger": Target(
        "chatmem/memory/ledger.py",
        # Hit counting and the ask outcomes' digest lines are pinned where they are used.
        (
            "tests/test_ledger.py",
            "tests/test_dispatch.py",
            "tests/test_guardrail_hits.py",
            "tests/test_ask_severity.py",
        ),
        ("x_record", "x_entries", "x_digest", "x_describe"),
    ),
    # The text rules of the trust issue: invisible text and lookalike letters; the field check.
    "text": Target("chatmem/text/invisible.py", ("tests/test_text.py",)),
    "text_rules": Target("chatmem/text/rules.py", ("tests/test_text.py",)),
    # The one redaction step (structured arguments, prose), its secret shapes and key names.
    "redaction": Target("chatmem/text/redaction.py", REDACTION_TESTS),
    "secret_shapes": Target("chatmem/text/secret_shapes.py", REDACTION_TESTS),
    "secret_keys": Target("chatmem/text/secret_keys.py", REDACTION_TESTS),
    # API tokens: making (the per-user cap), listing, expiry, revocation.
    "tokens": Target("chatmem/auth/tokens.py", TOKEN_TESTS),
    # The token check: hashing, expiry, binding to the user, the cache.
    "token_check": Target("chatmem/auth/token_check.py", TOKEN_TESTS),
    # What the MCP endpoint and the REST routes share: the bearer check, body and session key.
    "bearer": Target(
        "chatmem/http/bearer.py", ("tests/test_rest_api.py", "tests/test_token_auth.py")
    ),
    # Which session a keyed call (a stateless MCP token's, a REST key's) lands in, and that
    # use keeps it open: the look-up, the one kept from the request's first read, the rule.
    "sessions": Target(
        "chatmem/memory/sessions.py",
        (
            "tests/test_mcp_stateless_sessions.py",
            "tests/test_dispatch.py",
            "tests/test_rest_api.py",
        ),
        functions=("x_find_open", "x_remember_open", "x_for_client"),
    ),
    # The MCP request's state row read with the session it will use, before the token check.
    "mcp_sessions": Target(
        "chatmem/http/mcp/sessions.py",
        (
            "tests/test_mcp_stateless_sessions.py",
            "tests/test_mcp_hot_path.py",
            "tests/test_freshness.py",
            "tests/test_mcp_transport.py",
        ),
        functions=("x__read_keeping_state", "x_prefetch", "x_prefetch_keyed"),
    ),
    # Proposals wait for approval; an edit names the version it read (stale edits refused).
    "guidance": Target("chatmem/memory/guidance.py", GUIDANCE_TESTS),
    # What an entry's fields may hold (the schema, limits, text rules), its title and key.
    "fields": Target("chatmem/memory/fields.py", GUIDANCE_TESTS),
    # What recall returns: published guidance, and a private session's notes only to its owner.
    "recall": Target(
        "chatmem/memory/recall/__init__.py",
        (
            "tests/test_recall_privacy.py",
            "tests/test_recall_index.py",
            "tests/test_recall_topic_index.py",
            "tests/test_recall_page.py",
        ),
    ),
    # Ranked recall: words and stems, BM25, the answer's tiers, order and cursor.
    "ranking": Target("chatmem/memory/recall/ranking.py", RANKED_TESTS),
    "ranked": Target("chatmem/memory/recall/ranked.py", RANKED_TESTS),
    "records": Target(
        "chatmem/memory/recall/records.py",
        (
            *RANKED_TESTS,
            "tests/test_recall_index.py",
            "tests/test_recall_privacy.py",
            "tests/test_records_revision.py",
        ),
    ),
    # The database's count of session-record changes: its triggers, on both engines.
    "records_revision": Target(
        "chatmem/memory/recall/records_revision.py",
        ("tests/test_records_revision.py", "tests/test_migrations.py"),
    ),
    # The state a request reads once per transaction (again after a bump or a commit).
    "switches": Target(
        "chatmem/memory/switches.py",
        (
            "tests/test_records_revision.py",
            "tests/test_freshness.py",
            "tests/test_mcp_hot_path.py",
            "tests/test_module_switch.py",
        ),
        functions=("x_read", "x_snapshot_of", "x_current", "x_keep"),
    ),
    # The revision cache and the guardrail check that fails closed when a host hook raises.
    "revision": Target(
        "chatmem/revision.py",
        (
            "tests/test_guardrails.py",
            "tests/test_target_labels.py",
            "tests/test_block.py",
            # The screening index each revision rebuilds from the last one.
            "tests/test_screening.py",
            # The block's revision each conversation records (the Cost card).
            "tests/test_costs.py",
            # The approved entries in recall's order, and the ranked index built from them.
            *RANKED_TESTS,
            # Each revision's ranked index reuses the last one's analysis of untouched entries.
            "tests/test_revision_rules.py",
            # An entry whose target changed is held out of the block and recall in review mode.
            "tests/test_target_changed.py",
        ),
    ),
    # Held calls of `ask` guardrails: holding, deciding, the grant that lets one run.
    "held": Target("chatmem/memory/held.py", ASK_TESTS),
    # Untrusted input: JSON bodies, sizes, depth, numbers, repeated and yes/no fields.
    "inputs": Target(
        "chatmem/inputs.py",
        (
            "tests/test_inputs.py",
            "tests/test_input_rules.py",
            "tests/test_malformed_input.py",
            "tests/test_boolean_fields.py",
            "tests/test_json_errors.py",
            "tests/test_rest_api.py",
        ),
    ),
    # What a JSON Schema error says: the field, and the rule in a few words.
    "json_schema": Target(
        "chatmem/json_schema.py",
        ("tests/test_malformed_input.py", "tests/test_json_errors.py", "tests/test_tools.py"),
    ),
    # The one door: the token, then the token's and the user's budgets.
    "admission": Target(
        "chatmem/auth/admission.py", ("tests/test_rate_limits.py", "tests/test_token_auth.py")
    ),
    # The audit trail's seals: written under a lock per trail, verified, reseal after erasure.
    "audit": Target(
        "chatmem/memory/audit.py",
        (
            "tests/test_audit.py",
            "tests/test_audit_postgres.py",
            "tests/test_erasure.py",
            "tests/test_transfer.py",
        ),
    ),
    # MCP tasks: a held call's task, run once when allowed, its caller's alone.
    "tasks": Target(
        "chatmem/memory/tasks.py", ("tests/test_mcp_tasks.py", "tests/test_tasks_domain.py")
    ),
    # Job claims: a leased, fenced compare-and-set; a dead worker's job taken again, then given up.
    "claims": Target(
        "chatmem/workers/claims.py",
        (
            "tests/test_job_claims.py",
            "tests/test_summary_jobs.py",
            "tests/test_pre_review.py",
            "tests/test_notify.py",
        ),
    ),
    # Memory change notifications: told once, of what changed, to whom may read it.
    "subscriptions": Target(
        "chatmem/http/mcp/subscriptions.py",
        (
            "tests/test_mcp_subscriptions.py",
            "tests/test_mcp_subscriptions_edges.py",
            "tests/test_mcp_subscriptions_client.py",
        ),
    ),
}


def resolve(name: str) -> str:
    if name in TARGETS:
        return name
    for key, target in TARGETS.items():
        if name in (target.path, target.path.removeprefix("chatmem/")):
            return key
    sys.exit(f"unknown target {name!r}: choose from {', '.join(TARGETS)}")
