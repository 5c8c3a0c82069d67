"""Guardrails (SPEC §6): the one place a tool call is matched against a target.

- `targets`: parsing a target, and the canonical spelling of ids, labels and tool slugs;
- `matching`: the one matcher (does this call hit a guardrail) and the refusal it gives;
- `index`: the compiled index of the active guardrails, built per revision;
- `dry_run`: what a target would have refused in the recent ledger, by the same matcher.
"""
