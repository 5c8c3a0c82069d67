"""Export and import guidance as a versioned JSON document
(`chatmem/schemas/memory-export.v1.json`), with its provenance and audit trail.

- `document`: the format, its schema and the checks an import makes first;
- `export`: the document of the entries asked for, with their trails;
- `importing`: a checked document's new entries, all or nothing.

The Memory screen's Export and Import and `flask chatmem export`/`import`
use the names below.
"""

from __future__ import annotations

from .document import FORMAT, MAX_DEPTH, SCHEMA_FILE, UPLOAD_MAX_BYTES, VERSION, parse, schema
from .export import export_document
from .importing import Result, Screen, import_document, summary

__all__ = [
    "FORMAT",
    "MAX_DEPTH",
    "SCHEMA_FILE",
    "UPLOAD_MAX_BYTES",
    "VERSION",
    "Result",
    "Screen",
    "export_document",
    "import_document",
    "parse",
    "schema",
    "summary",
]
