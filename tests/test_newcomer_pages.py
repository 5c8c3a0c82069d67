"""Every page a curator opens, with one item of every kind present, answers 200
(the Upkeep page answered 500 whenever anything waited: the demo's layout
shadowed one of its variables), and no layout template sets a name a page is given.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from flask import Flask

import chatmem
from tests.newcomer_world import seed_every_kind

MEMORY = "/chatmem/memory"


@pytest.fixture
def world(demo_app: Flask) -> dict[str, Any]:
    return seed_every_kind(demo_app)


def screen_pages(world: dict[str, Any]) -> list[str]:
    tabs = ("pending", "waiting", "active", "rejected", "trash", "history", "tokens")
    entries = (world["pending"], world["rejected"], world["versioned"], world["trashed"])
    entries += (world["hand_added"],)
    return [
        "/chat",
        "/connect",
        MEMORY,
        *(f"{MEMORY}?tab={tab}" for tab in tabs),
        f"{MEMORY}/upkeep",
        f"{MEMORY}/sessions/{world['session']}",
        *(f"{MEMORY}/guidance/{entry}" for entry in entries),
        *(f"{MEMORY}/guidance/{entry}/hits" for entry in entries),
    ]


def test_every_page_answers_200_while_items_wait(world: dict[str, Any]) -> None:
    admin = world["admin"]
    badge = admin.client.get("/chat").get_data(as_text=True)
    assert 'aria-label="2 pending"' in badge, "a proposal and a held call wait"
    failed = {}
    for url in screen_pages(world):
        response = admin.client.get(url)
        if response.status_code != 200:
            failed[url] = response.status_code
    editor = world["editor"]
    for url in (f"/chat/{world['chat']}", f"/chat/{world['waiting_chat']}", "/connect"):
        if (status := editor.client.get(url).status_code) != 200:
            failed[url] = status
    assert failed == {}


def test_upkeep_names_how_long_the_oldest_item_has_waited(world: dict[str, Any]) -> None:
    page = world["admin"].client.get(f"{MEMORY}/upkeep").get_data(as_text=True)
    for card in ("Target gone", "Review dates", "Unused"):
        assert f'{card} <span class="cm-count">1</span>' in page, "every list has an entry"
    oldest = re.search(r'<dd data-figure="oldest">(.*?)</dd>', page, re.S)
    assert oldest is not None
    assert "under a minute" in oldest[1] and "since" in oldest[1]
    assert "the oldest for under a minute" in page, "the badge's tooltip still says it"


# -- names a layout sets must not be names a page is given ----------------------

TEMPLATES = [
    Path(chatmem.__file__).parent / "templates",
    Path(chatmem.__file__).parent / "demo" / "templates",
]
SET = re.compile(r"{%-?\s*set\s+(\w+)\s*=")
RENDER = re.compile(r"render_template\(\s*\"([^\"]+)\"(.*?)\n    \)", re.S)
KEYWORD = re.compile(r"^\s*(\w+)=", re.M)


def layouts() -> dict[str, set[str]]:
    """Templates that others extend, and the names each one sets outside a macro."""
    found: dict[str, set[str]] = {}
    for folder in TEMPLATES:
        for path in folder.rglob("*.html"):
            text = path.read_text()
            if "{% block" in text and "{% extends" not in text or path.name == "base.html":
                outside_macros = re.sub(r"{%-? macro.*?endmacro -?%}", "", text, flags=re.S)
                found[str(path.relative_to(folder))] = set(SET.findall(outside_macros))
    return found


def page_variables() -> set[str]:
    """Every keyword a view passes to render_template, and every context-processor name."""
    names: set[str] = set()
    for path in Path(chatmem.__file__).parent.rglob("*.py"):
        source = path.read_text()
        for _template, arguments in RENDER.findall(source):
            names.update(KEYWORD.findall(arguments))
    return names


def test_no_layout_sets_a_name_a_page_is_given() -> None:
    given = page_variables()
    assert {"oldest", "entry", "cost"} <= given, "the scan finds the views' keywords"
    clashes = {
        layout: sorted(names & given) for layout, names in layouts().items() if names & given
    }
    assert clashes == {}


def test_no_page_is_given_a_name_a_template_helper_has(demo_app: Flask) -> None:
    """A view's keyword silently hides the helper of that name on every layout it extends."""
    with demo_app.test_request_context("/chat"):
        helpers: set[str] = set()
        for processors in demo_app.template_context_processors.values():
            for processor in processors:
                helpers.update(processor())
    assert {"chatmem_oldest_pending", "pending_count", "curator_notices"} <= helpers
    assert sorted(page_variables() & helpers) == []
    clashes = {
        layout: sorted(names & helpers) for layout, names in layouts().items() if names & helpers
    }
    assert clashes == {}


def test_the_history_page_names_the_version_its_list_ends_with(world: dict[str, Any]) -> None:
    """Proposed, approved, edited: version 2 of its text (the record's counter says 3)."""
    page = world["admin"].client.get(f"{MEMORY}/guidance/{world['versioned']}")
    html = re.sub(r"\s+", " ", page.get_data(as_text=True))
    assert f'<span class="cm-k">Entry</span> #{world["versioned"]}, version 2</li>' in html
    assert html.count('class="cm-version"') == 2
    assert 'data-version="2"> <h3 class="cm-subhead">Version 2 · Edited' in html


def test_a_hand_added_entry_names_its_author_once(world: dict[str, Any]) -> None:
    admin = world["admin"].client
    listed = re.sub(r"\s+", " ", admin.get(f"{MEMORY}?tab=active").get_data(as_text=True))
    assert "<li>added by hand by admin</li>" in listed
    assert "admin (admin)" not in listed and "(admin)</span>" not in listed
    entry = world["hand_added"]
    history = re.sub(r"\s+", " ", admin.get(f"{MEMORY}/guidance/{entry}").get_data(as_text=True))
    assert '<span class="cm-k">Added</span> by hand by admin, ' in history
    assert "admin (admin)" not in history


def test_the_import_field_is_named_for_importing(world: dict[str, Any]) -> None:
    """Its label (and so its accessible name) said "Export file"."""
    page = world["admin"].client.get(f"{MEMORY}?tab=active").get_data(as_text=True)
    form = page.split('aria-label="Import guidance"', 1)[1].split("</form>", 1)[0]
    label = re.search(r'<label class="cm-field">\s*<span>(.*?)</span>\s*<input type="file"', form)
    assert label is not None
    assert label[1] == "File to import (a chatmem export, JSON, up to 5 MB)"


def test_connect_shows_the_token_command_as_a_person_types_it(world: dict[str, Any]) -> None:
    import sys

    page = world["editor"].client.get("/connect").get_data(as_text=True)
    assert "<pre>flask --app 'chatmem.demo:create_app()' chatmem token create editor</pre>" in page
    assert str(Path(sys.executable).parent) not in page, "not the server's virtualenv path"
