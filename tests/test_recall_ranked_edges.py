"""Ranked recall at its edges: what the first full mutation runs of
`ranking` and `ranked` showed no test reached (test_recall_ranked.py has the
answers to ordinary questions).

Targets named by their words, the phrase found in a title or a text alone,
scores of entries that hold none of the question's terms, a page that ends
exactly at its limit, paging from one tier into the next, each language's
stop words and stems, and a revision's index built from the last one's.
"""

from __future__ import annotations

from typing import Any

from chatmem.memory import recall as recall_queries
from chatmem.memory.recall.ranked import RankedGuidance
from chatmem.memory.recall.ranking import Analyzer, RankedIndex, words
from tests.test_recall_ranked import ask, seed


def whys(answer: dict[str, Any]) -> dict[str, str]:
    """The answer's entries by title, each with why it matched."""
    return {g["title"]: g["match"]["why"] for g in answer["guidance"]}


def test_a_target_is_named_by_all_the_words_of_its_value(memory: Any, db: Any) -> None:
    seed(
        db,
        [
            ("bare", "guardrail", "bare", "Never bulk delete.", "bulk_delete"),
            ("post", "guardrail", "post", "Leave the home page alone.", "post_id:4"),
            ("id", "guardrail", "id", "Leave the shop page alone.", " ID :7"),
            ("label", "guardrail", "label", "John's drafts stay drafts.", "label:author:john"),
        ],
    )
    # A bare target is a tool; a post id is named with the word "post".
    assert whys(ask(memory, "may I bulk delete?")) == {"bare": "target"}
    assert whys(ask(memory, "can I edit post 4?"))["post"] == "target"
    assert whys(ask(memory, "can I edit post 7?"))["id"] == "target"
    assert "target" not in whys(ask(memory, "what is 4 or 7?")).values()
    # A label's value is everything after the key, its kind included.
    assert "target" not in whys(ask(memory, "what may john do?")).values()
    assert whys(ask(memory, "may author john publish?"))["label"] == "target"


def test_a_named_or_phrase_entry_holding_no_term_scores_zero(memory: Any, db: Any) -> None:
    seed(
        db,
        [
            ("named", "guardrail", "named", "Never touch the home page.", "post_id:4"),
            ("phrase", "fact", "phrase", "Not to be confused with the shop.", None),
        ],
    )
    [named] = [g for g in ask(memory, "post 4")["guidance"] if g["title"] == "named"]
    assert named["match"] == {"rank": 1, "why": "target", "score": 0.0, "terms": []}
    # Stop words only: no term at all, but the phrase as written is held.
    [phrase] = ask(memory, "to be")["guidance"]
    assert phrase["match"] == {"rank": 1, "why": "phrase", "score": 0.0, "terms": []}


def test_the_phrase_is_found_in_a_title_or_a_text_and_after_named_guardrails(
    memory: Any, db: Any
) -> None:
    seed(
        db,
        [
            ("title", "fact", "Edit Post 4 Carefully", "It is the home page.", None),
            ("text", "fact", "Home", "Whoever may EDIT POST 4 checks the menu.", None),
            ("named", "guardrail", "named", "Ask before you edit post 4.", "post_id:4"),
        ],
    )
    assert whys(ask(memory, "edit post 4")) == {
        "named": "target",
        "Edit Post 4 Carefully": "phrase",
        "Home": "phrase",
    }


def test_a_topic_holding_the_title_separator_matches_no_phrase(memory: Any, db: Any) -> None:
    """Title and text are kept apart by NUL: a topic holding one could otherwise
    match the end of a title and the start of a text as one phrase."""
    seed(db, [("split", "fact", "alpha", "beta gamma", None)])
    ranked = memory.ranked_guidance(memory.snapshot())
    answer = recall_queries.recall(db.session(), topic="alpha\x00beta", ranked=ranked)
    assert whys(answer) == {"alpha": "terms"}


def test_entries_without_a_title_are_scored_on_their_text_alone(memory: Any, db: Any) -> None:
    seed(
        db,
        [
            ("long", "fact", "", "deploy deploy " + "pad " * 9, None),
            ("short", "fact", "", "deploy", None),
        ],
    )
    # Their scores tie (length normalisation evens one mention in one word with
    # two in eleven), so recall's order decides: the newer approval first. A
    # title counted for every entry would tip the balance to the longer text.
    answer = ask(memory, "deploy")
    assert [g["text"] for g in answer["guidance"]] == ["deploy", "deploy deploy " + "pad " * 9]


def test_a_page_that_ends_at_its_limit_has_no_cursor(memory: Any, db: Any) -> None:
    seed(db, [(f"k{i}", "fact", f"note {i}", f"shipping note {i}", None) for i in range(5)])
    page = ask(memory, "shipping", guidance_limit=5)
    assert len(page["guidance"]) == 5 and page["cursor"] is None
    first = ask(memory, "shipping", guidance_limit=4)
    assert first["cursor"] is not None


def test_paging_runs_from_one_tier_into_the_next(memory: Any, db: Any) -> None:
    entries = [(f"p{i}", "fact", f"p{i}", f"the shipping note {i}", None) for i in range(5)]
    entries += [(f"t{i}", "fact", f"t{i}", f"shipping rules {i}", None) for i in range(5)]
    seed(db, entries)
    whole = ask(memory, "shipping note", guidance_limit=100)["guidance"]
    assert [g["match"]["why"] for g in whole] == ["phrase"] * 5 + ["terms"] * 5
    first = ask(memory, "shipping note", guidance_limit=3)
    second = ask(memory, "shipping note", guidance_limit=100, cursor=first["cursor"])
    assert [g["id"] for g in first["guidance"] + second["guidance"]] == [g["id"] for g in whole]


def test_each_language_has_its_own_stop_words_and_stems() -> None:
    # English drops "was" as a stop word; in German it is a word ("what").
    assert Analyzer().terms("Was kostet es") == ["kostet", "es"]
    assert Analyzer("german").terms("Was kostet es") == ["was", "kost", "es"]
    # "simple" (as PostgreSQL's configuration): words folded, kept whole, none dropped.
    assert Analyzer("simple").terms("Running the Deployments") == [
        "running",
        "the",
        "deployments",
    ]


def test_an_index_reuses_the_last_one_s_analysis_in_its_own_language_only() -> None:
    fields = [("", "envoyer les colis"), ("Colis", "chaque lundi")]
    english = RankedIndex.of(fields, Analyzer())
    RankedIndex._analyse.cache_clear()  # the process-wide memo forgets: only `english` has them
    again = RankedIndex.of(fields, Analyzer(), english)
    assert all(again.analysed[f] is english.analysed[f] for f in fields)
    french = RankedIndex.of(fields, Analyzer("french"), english)
    assert french.analysed == RankedIndex.of(fields, Analyzer("french")).analysed
    assert french.analysed != english.analysed


def test_a_revision_s_ranked_guidance_is_built_from_the_last_one(memory: Any, db: Any) -> None:
    seed(db, [("kept", "fact", "Wrap", "Gift wrap is free in December.", None)])
    approved = memory.approved_guidance(memory.snapshot())
    first = RankedGuidance.of(approved, Analyzer())
    RankedIndex._analyse.cache_clear()
    second = RankedGuidance.of(approved, Analyzer(), first)
    [field] = first.index.analysed
    assert second.index.analysed[field] is first.index.analysed[field]


def test_kana_hangul_and_rare_han_are_searched_character_by_character() -> None:
    """Scripts written without spaces between words: each character is a term."""
    assert words("ひらがなカタカナ") == list("ひらがなカタカナ")  # hiragana, katakana
    assert words("한국어") == ["한", "국", "어"]  # Hangul syllables
    assert words("㐀㐁 abc") == ["㐀", "㐁", "abc"]  # CJK Extension A
