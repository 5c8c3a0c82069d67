"""English stop words: the list PostgreSQL's `english` text search configuration uses.

Copied from PostgreSQL 15's `tsearch_data/english.stop` (itself the Snowball
project's English list; PostgreSQL Licence), so a question is cut into the
same words on SQLite as `to_tsvector('english', ...)` keeps on PostgreSQL.
Other languages keep every word: BM25's inverse document frequency already
makes a word found in most entries count for little.
"""

_LISTED = """
i me my myself we our ours ourselves you your yours yourself yourselves he him his
himself she her hers herself it its itself they them their theirs themselves what which
who whom this that these those am is are was were be been being have has had having do
does did doing a an the and but if or because as until while of at by for with about
against between into through during before after above below to from up down in out on
off over under again further then once here there when where why how all any both each
few more most other some such no nor not only own same so than too very s t can will
just don should now
"""
ENGLISH = frozenset(_LISTED.split())
