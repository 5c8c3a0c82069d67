"""What the Memory screen's pages read: filters, evidence, an entry's history.

Read-models of the screen, kept beside it rather than in the domain: they
shape rows for a page and change nothing.
"""
