"""Print the two rates of chatmem's redactor on the secrets corpus.

    python -m tests.corpora.secrets [-v]

-v lists every true shape that leaks and every benign text that is changed.
"""

from __future__ import annotations

import sys
from collections import Counter

from chatmem.text import redact

from . import benign, leaked, outside, true_shapes


def rates(verbose: bool = False) -> tuple[float, float]:
    shapes, benigns = true_shapes(), benign()
    missed = [s for s in shapes if leaked(redact, s)]
    touched = [s for s in benigns if redact(s.text) != s.text]
    by_source = Counter(s.source.split(":")[0] for s in shapes)
    missed_by_source = Counter(s.source.split(":")[0] for s in missed)
    caught = 1 - len(missed) / len(shapes)
    false = len(touched) / len(benigns)
    skipped = outside()[1]
    for source, total in sorted(by_source.items()):
        print(f"true shapes from {source}: {total - missed_by_source[source]}/{total} redacted")
    print(f"true shapes redacted: {len(shapes) - len(missed)}/{len(shapes)} = {caught:.1%}")
    print(f"benign look-alikes touched: {len(touched)}/{len(benigns)} = {false:.1%}")
    print(f"kingfisher examples left out (pattern unreadable here, or too short): {len(skipped)}")
    if verbose:
        for s in missed:
            print(f"LEAK {s.source} {s.secret!r} in {s.text[:150]!r} -> {redact(s.text)[:150]!r}")
        for s in touched:
            print(f"TOUCHED {s.shape}: {s.text!r} -> {redact(s.text)!r}")
    return caught, false


if __name__ == "__main__":
    rates("-v" in sys.argv)
