"""How redaction's cost grows with the text: ten times the text should cost about ten times.

The key pass walks back from every place a key word occurs to where its key
starts. Walked afresh each time, a long run of key words (`keykeykey…`, a
minified bundle, a hex dump) costs the square of its length: 24,000
characters took 11.6 s before issue 27's fix. Each figure is the time for ten
times the text over the time for the text, in one process; linear is ~10×,
quadratic ~100×.

    .venv/bin/python bench/redaction_growth.py
"""

from __future__ import annotations

from common import compare, line, ms

from chatmem.text.redaction import redact

TEXTS = {
    "a run of key words": lambda n: "key" * (n // 3) + "=abc",
    "prose with keys": lambda n: ("the api key and the password token rotate; " * n)[:n],
}


def main() -> None:
    for name, make in TEXTS.items():
        small, large = make(3_000), make(30_000)
        ratio, large_s, small_s = compare(
            lambda large=large: redact(large),
            lambda small=small: redact(small),
            rounds=3,
            per_round=5,
        )
        line(
            f"redact, {name}, 30,000 vs 3,000 characters",
            f"{ratio:.1f}×",
            f"{ms(large_s)} vs {ms(small_s)}",
            "≈ 10× (linear)",
        )


if __name__ == "__main__":
    main()
