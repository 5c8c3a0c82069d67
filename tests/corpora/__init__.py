"""Outside corpora, each with its source: see fetch.py."""
