"""Words that retire or exempt a rule, and that name what a guardrail guards: data for `retraction`.

The cheapest attack on a guardrail is a fact saying it no longer holds, in
any language the curator may not read. `retraction` flags a proposal that
names what an active guardrail guards and retires or exempts it; these lists
are the words it reads for both, kept apart from the rest of the phrasebook
because they describe rules and site entries, not orders to the reader.

Written and folded as the phrasebook's phrases are (see `phrasebook` and
`phrasing`): a word ending in ``*`` is a stem.
"""

from __future__ import annotations

# Said of a rule, these retire it; said of anything guarded, they undo the guard.
RETIRED = [
    "no longer",
    "not any more",
    "not anymore",
    "any more",
    "anymore",
    "retired",
    "lifted",
    "removed",
    "revoked",
    "rescinded",
    "withdrawn",
    "obsolete",
    "outdated",
    "deprecated",
    "suspended",
    "paused",
    "cancelled",
    "canceled",
    "abolished",
    "void",
    "does not apply",
    "do not apply",
    "not apply",
    "n est plus",
    "ne s applique plus",
    "n est plus valable",
    "abrogé*",
    "nicht mehr",
    "gilt nicht mehr",
    "aufgehoben",
    "ya no",
    "no aplica",
    "derogad*",
    "já não",
    "não é mais",
    "revogad*",
    "non è più",
    "non vale più",
    "revocat*",
    "już nie",
    "nie jest już",
    "nie obowiązuje",
    "niet langer",
    "niet meer",
    "больше не",
    "уже не",
    "отменен*",
    "artık değil",
    "kaldırıldı",
    "δεν ισχύει",
    "لم يعد",
]
# Only with a guarded thing named: "post 5 can be edited freely", "is exempt".
EXEMPTED = [
    "exempt*",
    "exception",
    "is fine",
    "are fine",
    "is ok",
    "is okay",
    "are ok",
    "allowed again",
    "is allowed",
    "are allowed",
    "can be edited",
    "may be edited",
    "freely",
    "ignore it",
]

# Words that name an entry of the site by its number ("post 5", "Beitrag 5").
ENTRY_WORDS = [
    "post*",
    "page*",
    "entry",
    "article*",
    "id",
    "item",
    "beitrag*",
    "seite",
    "artikel",
    "entrada",
    "página",
    "pagina",
    "articolo",
    "wpis*",
    "strona",
    "bericht",
    "запись",
    "пост",
    "yazı",
    "gönderi",
]
# Words for parts of a site that other languages name differently ("header").
SITE_PARTS = {
    "header": ["header", "en tête", "cabecera", "cabeçalho", "intestazione", "nagłówk*"],
    "footer": ["footer", "pied de page", "pie de página", "rodapé", "piè di pagina", "stopka"],
}
# A rule, said to be retired without naming which one.
RULE_WORDS = ["rule*", "guardrail*", "règle*", "regel*", "regla*", "regra*", "regola*", "zasad*"]
