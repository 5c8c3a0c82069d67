"""Find every shell command the project documents, exactly as it is written.

Sources:

- Markdown (`README.md`, `docs/**/*.md`): each fenced block, with its language
  and the `<!-- commands: ... -->` annotation right before it, if any;
- `examples/*.py` and `examples/*/tour.py`: the reST literal blocks (`::`
  then indented lines) of each module docstring: that is where an example
  says how to run it;
- the demo's own pages, rendered by the app (not read from the templates):
  each `<pre>` of the login, chat and Connect pages, and the commands in
  backticks of the chat's help notice.

An annotation holds `;`-separated directives, `name: value` or a bare name:

    <!-- commands: running: flask --app yourapp run; assumes: SECRET_KEY -->

- `running: CMD`: the text assumes the server CMD is running (the runner
  starts it first, as it would start a documented server command);
- `assumes: VAR ...`: the text assumes these variables are set in the shell;
- `continues`: the block goes on from the block before it in the same file
  (same folder, variables and database: that block runs first);
- `not in the suite: WHY`: the block cannot run inside the suite (say why).
"""

from __future__ import annotations

import ast
import re
import tempfile
import textwrap
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

from markdown_it import MarkdownIt

ROOT = Path(__file__).resolve().parent.parent
SHELL = frozenset({"bash", "sh", "shell", "console"})
# Languages that hold no commands; any other fence language is unclassified.
NOT_COMMANDS = frozenset({"python", "json", "toml", "ini", "text", "html", "yaml"})
_ANNOTATION = re.compile(r"^\s*<!--\s*commands:\s*(?P<body>.*?)\s*-->\s*$", re.DOTALL)


@dataclass(frozen=True)
class Block:
    """One documented block, as written, with where it came from."""

    source: str  # "README.md", "examples/minimal_app.py", "demo /connect as editor"
    line: int
    section: str
    lang: str
    text: str
    directives: dict[str, str] = field(default_factory=dict)
    previous: Block | None = None  # the block a `continues` block goes on from
    ordinal: int = 1  # the how-manieth block of its section

    @property
    def id(self) -> str:
        """`README.md#rest-api`, `README.md#migrations-2`: stable while the text moves."""
        suffix = f"-{self.ordinal}" if self.ordinal > 1 else ""
        return f"{self.source}#{self.section}{suffix}"

    @property
    def is_shell(self) -> bool:
        return self.lang in SHELL

    def commands(self) -> list[str]:
        """Logical command lines: continuations joined, comments and blank lines left out."""
        lines = self.text.splitlines()
        if self.lang == "console":  # only the lines after a `$ ` prompt are commands
            lines = [line[2:] for line in lines if line.startswith("$ ")]
        commands: list[str] = []
        pending = ""
        for line in lines:
            if not pending and (not line.strip() or line.lstrip().startswith("#")):
                continue
            pending += line
            if line.endswith("\\"):
                pending += "\n"
                continue
            commands.append(pending)
            pending = ""
        if pending:
            commands.append(pending)
        return commands


def parse_directives(body: str) -> dict[str, str]:
    directives: dict[str, str] = {}
    for part in body.split(";"):
        name, _, value = part.partition(":")
        if name.strip():
            directives[name.strip().lower()] = value.strip()
    return directives


def _source(path: Path) -> str:
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else path.name


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "top"


# -- Markdown -------------------------------------------------------------------


def markdown_blocks(path: Path) -> list[Block]:
    source = _source(path)
    tokens = MarkdownIt("commonmark").parse(path.read_text())
    blocks: list[Block] = []
    section = "top"
    for index, token in enumerate(tokens):
        if token.type == "heading_open":
            section = _slug(tokens[index + 1].content)
        if token.type != "fence" or token.map is None:
            continue
        before = tokens[index - 1] if index else None
        html_before = before is not None and before.type == "html_block"
        match = _ANNOTATION.match(before.content) if before and html_before else None
        directives = parse_directives(match["body"]) if match else {}
        blocks.append(
            Block(
                source=source,
                line=token.map[0] + 1,
                section=section,
                lang=token.info.strip().split(" ")[0].lower(),
                text=token.content,
                directives=directives,
                previous=blocks[-1] if "continues" in directives and blocks else None,
                ordinal=1 + sum(b.section == section for b in blocks),
            )
        )
    return blocks


def markdown_files() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("**/*.md"))]


# -- examples/ -------------------------------------------------------------------


def example_blocks(path: Path) -> list[Block]:
    """The literal blocks of the module docstring; none is an unclassified block."""
    source = _source(path)
    text = path.read_text()
    docstring = ast.get_docstring(ast.parse(text), clean=True) or ""
    start = text.index(docstring.splitlines()[0]) if docstring else 0
    first_line = text[:start].count("\n") + 1
    blocks = []
    lines = docstring.splitlines()
    for index, line in enumerate(lines):
        if not line.rstrip().endswith("::"):
            continue
        body: list[str] = []
        for following in lines[index + 1 :]:
            if following.strip() and not following.startswith((" ", "\t")):
                break
            body.append(following)
        literal = textwrap.dedent("\n".join(body)).strip("\n") + "\n"
        line_number, ordinal = first_line + index + 1, len(blocks) + 1
        blocks.append(Block(source, line_number, "docstring", "bash", literal, ordinal=ordinal))
    if not blocks:  # an example must say how to run it
        blocks.append(Block(source, 1, "docstring", "", "(no literal block says how to run it)"))
    return blocks


def example_files() -> list[Path]:
    """Each example module, and each example app's `tour.py` (examples/blog/tour.py)."""
    examples = ROOT / "examples"
    return sorted([*examples.glob("*.py"), *examples.glob("*/tour.py")])


# -- the demo's pages -------------------------------------------------------------

DEMO_PAGES = ("/login", "/chat", "/connect")
_BACKTICKS = re.compile(r"`([^`]+)`")


class _Pre(HTMLParser):
    """The text of each <pre>, with its `data-lang` (shell when there is none)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.blocks: list[tuple[str, str]] = []
        self._lang: str | None = None
        self._text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "pre":
            self._lang = dict(attrs).get("data-lang") or "bash"
            self._text = []

    def handle_endtag(self, tag: str) -> None:
        if tag == "pre" and self._lang is not None:
            self.blocks.append((self._lang, "".join(self._text)))
            self._lang = None

    def handle_data(self, data: str) -> None:
        if self._lang is not None:
            self._text.append(data)


def page_blocks() -> list[Block]:
    """Render the demo's pages as each seeded user sees them and take their commands."""
    from chatmem.demo import create_app
    from chatmem.demo.seed import USERS

    with tempfile.TemporaryDirectory() as folder:
        app = create_app(
            {
                "SQLALCHEMY_DATABASE_URI": f"sqlite:///{folder}/pages.db",
                "SECRET_KEY": "pages",
                "TESTING": True,
                "WTF_CSRF_ENABLED": False,
                "CHATMEM_PROVIDER": "none",
            },
            instance_path=folder,
        )
        try:
            blocks = _render(app, [None, *(name for name, _caps in USERS)])
        finally:
            with app.app_context():
                app.extensions["sqlalchemy"].engine.dispose()
    return blocks


def _render(app: Any, users: list[str | None]) -> list[Block]:
    blocks: list[Block] = []
    for user in users:
        client = app.test_client()
        who = f"as {user}" if user else "signed out"
        if user:
            client.post("/login", data={"username": user, "password": user})
        for page in DEMO_PAGES if user else ("/login",):
            answer = client.get(page)
            assert answer.status_code == 200, f"{page} {who}: {answer.status_code}"
            parser = _Pre()
            parser.feed(answer.get_data(as_text=True))
            for number, (lang, text) in enumerate(parser.blocks, 1):
                blocks.append(
                    Block(f"demo {page} {who}", number, "page", lang, text + "\n", ordinal=number)
                )
        if user == "editor":  # the chat's own help, as a user without a provider meets it
            page = client.get("/chat").get_data(as_text=True)
            csrf = {"X-CSRFToken": re.search(r'name="csrf-token" content="([^"]+)"', page)[1]}
            conversation = client.post("/chat/api/conversations", headers=csrf).get_json()["id"]
            messages = client.post(
                f"/chat/api/conversations/{conversation}/messages",
                json={"content": "hello"},
                headers=csrf,
            ).get_json()["messages"]
            notice = next(m["content"] for m in messages if m["role"] == "notice")
            for number, command in enumerate(_BACKTICKS.findall(notice), 1):
                blocks.append(
                    Block("demo chat", number, "help", "bash", command + "\n", ordinal=number)
                )
    return blocks


def all_blocks() -> list[Block]:
    blocks = [b for path in markdown_files() for b in markdown_blocks(path)]
    blocks += [b for path in example_files() for b in example_blocks(path)]
    blocks += page_blocks()
    return blocks
