"""Print the poisoning screen's figures on this corpus: ``python -m tests.corpora.poison``.

Runs the screen's checks that need no database (`screening.check`: wording,
and comparison with `ACTIVE`, the site's active guidance) on every payload and
every ordinary text. tests/test_screening_outside.py measures the same through
the real `remember` tool on both databases. ``-v`` lists what was missed and
what was flagged wrongly.
"""

from __future__ import annotations

import sys
from collections import Counter
from dataclasses import dataclass

from chatmem.memory import screening

from . import ACTIVE, Ordinary, Payload, heldout, ordinary, payloads

SERVER = "chatmem"


def active_index() -> screening.ActiveIndex:
    """ACTIVE as the screen indexes published guidance, without a database."""
    return screening.ActiveIndex(
        [
            screening.Active(
                i,
                fields.get("title") or fields["text"].rstrip("."),
                screening.Content.of(fields["text"], fields.get("target"), SERVER),
                fields.get("target"),
                fields["type"],
            )
            for i, fields in enumerate(ACTIVE, start=1)
        ],
        SERVER,
    )


def fields_of(payload: Payload) -> dict[str, str]:
    fields = {"type": "fact", "text": payload.text}
    if payload.target:
        fields["target"] = payload.target
    return fields


@dataclass
class Figures:
    caught: list[tuple[Payload, list[screening.Flag]]]
    missed: list[Payload]
    flagged: list[tuple[Ordinary, list[screening.Flag]]]
    ordinary: int

    def rate(self, source: str | None = None) -> tuple[int, int]:
        def keep(p: Payload) -> bool:
            return source is None or (p.source == "ours") == (source == "ours")

        hit = sum(1 for p, _ in self.caught if keep(p))
        return hit, hit + sum(1 for p in self.missed if keep(p))


def measure(index: screening.ActiveIndex | None = None) -> Figures:
    index = index or active_index()
    caught, missed = [], []
    for payload in payloads():
        flags = screening.check(fields_of(payload), index)
        if flags:
            caught.append((payload, flags))
        else:
            missed.append(payload)
    texts = ordinary()
    flagged = []
    for text in texts:
        flags = screening.check({"type": "fact", "text": text.text}, index)
        if flags:
            flagged.append((text, flags))
    return Figures(caught, missed, flagged, len(texts))


def report(figures: Figures) -> str:
    lines = []
    for label, source in (("outside", "outside"), ("ours", "ours"), ("all", None)):
        hit, total = figures.rate(source)
        lines.append(f"payloads {label}: {hit}/{total} flagged ({hit / total:.1%})")
    langs = Counter(p.lang for p, _ in figures.caught) + Counter(p.lang for p in figures.missed)
    lines.append(f"languages: {len(langs)} ({' '.join(sorted(langs))})")
    codes = Counter(f.code for _, flags in figures.caught for f in flags)
    lines.append(f"flags by code: {dict(sorted(codes.items()))}")
    n = len(figures.flagged)
    lines.append(f"ordinary: {n}/{figures.ordinary} flagged ({n / figures.ordinary:.1%})")
    return "\n".join(lines)


def held_out(index: screening.ActiveIndex | None = None) -> tuple[int, int, int, int]:
    """(jailbreaks flagged, jailbreaks, benign flagged, benign) on heldout.py's sets."""
    index = index or active_index()
    attacks, harmless = heldout.jailbreaks(), heldout.benign()
    hit = sum(1 for p in attacks if screening.check(fields_of(p), index))
    wrong = sum(1 for p in harmless if screening.check(fields_of(p), index))
    return hit, len(attacks), wrong, len(harmless)


def main(argv: list[str]) -> None:
    figures = measure()
    print(report(figures))
    hit, total, wrong, harmless = held_out()
    print(
        f"held out (not read while tuning): jailbreaks {hit}/{total} flagged "
        f"({hit / total:.1%}); benign questions {wrong}/{harmless} flagged ({wrong / harmless:.1%})"
    )
    if "-v" in argv:
        for payload in figures.missed:
            print(f"missed [{payload.source} {payload.lang}] {payload.text[:120]!r}")
        for text, flags in figures.flagged:
            print(f"flagged [{text.lang}] {text.text!r}: {[f.code for f in flags]}")


if __name__ == "__main__":
    main(sys.argv[1:])
