"""The Memory screen's Import in Chromium: the file field is found by the name a
screen reader announces ("Import file ...", issue 25 point 4), and an import
with "Keep their status" keeps a poisoned entry out of the block.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from flask import Flask

from tests.test_import_screening import BENIGN, POISON, document, row
from tests.test_memory_screen_browser import page, preview, see_flash

pytestmark = pytest.mark.browser
__all__ = ["page"]  # the signed-in page fixture, shared

LABEL = "File to import (a chatmem export, JSON, up to 5 MB)"


def test_the_import_field_is_named_for_what_it_takes(app: Flask, page: Any, tmp_path: Path) -> None:
    from playwright.sync_api import expect

    field = page.get_by_label(LABEL, exact=True)
    expect(field).to_have_attribute("type", "file")
    assert page.get_by_label("Export file", exact=False).count() == 0
    form = page.get_by_role("form", name="Import guidance")
    expect(form.get_by_role("checkbox")).to_have_accessible_name(
        "Keep their status (active entries pass the poisoning screen first and are "
        "approved by you; otherwise all wait in Pending review)"
    )
    file = tmp_path / "memory.json"
    file.write_text(json.dumps(document(row(1, BENIGN), row(2, POISON))))
    field.set_input_files(str(file))
    form.get_by_role("checkbox").check()
    form.get_by_role("button", name="Import", exact=True).click()
    see_flash(page, "Imported 2 entries (with their status).")
    see_flash(page, "The poisoning screen flagged 1: it waits in Pending review.")
    assert BENIGN in preview(page)
    assert POISON not in preview(page)
