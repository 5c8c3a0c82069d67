"""Every documented command runs, exactly as written, and does what its text says.

The blocks come from the files themselves (`tests/documented.py` finds them:
README.md, docs/**/*.md, the docstrings of examples/*.py, and the demo's
rendered pages), so a new command is a new test id without a new test. Each
command runs through bash as written, in a fresh folder with a fresh
database, and must exit 0; then a check fitting what it is (`RULES` below)
proves it did what the text around it says. A block or command the runner
cannot classify fails: nothing documented is skipped silently.

Where a block runs (`context_of`):

- **fresh**: it installs (`python3 -m venv`, `pip install`): a copy of the
  checkout's files with no virtualenv, as on a fresh machine (slow). The
  install blocks share that copy in document order: a later one goes on in
  the virtualenv the Quickstart made;
- **checkout**: it names the checkout's files (`examples/`, `tests.`): a copy
  of the checkout, its `.venv` the test suite's own;
- **app**: everything else, commands for the demo or for `yourapp.py` (the
  README's plug-in example, written into the folder): a fresh folder with the
  virtualenv active, `DATABASE_URL` naming the test database and the LLM
  SDKs' base URLs pointing at the local fake (`tests/fake_llm.py`).

Only app blocks touch the test database; the others are marked `db_free`,
and `bin/test` runs them on its SQLite pass only (so is an app block whose
commands only print their `--help`).

Nothing runs twice: a block that says word for word what an earlier one says
(`TWINS`) and a block another block `continues` (`CONTINUED`) pass under their
own id by naming the test that runs them; the continuing block's test runs the
block it continues first, with its server and its checks.
"""

from __future__ import annotations

import asyncio
import getpass
import importlib.util
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2
import pytest
from jsonschema import Draft202012Validator
from sqlalchemy import create_engine, text

from chatmem import migrate
from chatmem.memory import transfer
from tests.conftest import reset_demo_database
from tests.documented import NOT_COMMANDS, ROOT, Block, all_blocks, markdown_blocks
from tests.fake_llm import (
    CHAT,
    MESSAGES,
    PROVIDER_ENV,
    RESPONSES,
    FakeLLM,
    anthropic_text,
    chat_text,
    openai_text,
)
from tests.redis_store import REDIS_URL
from tests.servers import serving
from tests.shell_session import Ran, Server, Shell, ports_lock

BLOCKS = [b for b in all_blocks() if b.lang not in NOT_COMMANDS]
README_PLUG_IN = next(
    b.text
    for b in markdown_blocks(ROOT / "docs" / "integrate.md")
    if b.lang == "python" and b.section == "plug-chatmem-into-your-app"
)
VENV = Path(sys.prefix)

_INSTALLS = re.compile(r"\bpip3? install\b|-m venv\b")
_CHECKOUT_FILES = re.compile(r"(^|[\s'\"=])(\./)?(examples|tests|bin|\.ci)/|\btests\.\w")


def context_of(block: Block) -> str:
    commands = [c for b in _chain(block) for c in b.commands()]
    if "not in the suite" in block.directives:
        return "not in the suite"
    if any(_INSTALLS.search(c) for c in commands):
        return "fresh"
    if any(_CHECKOUT_FILES.search(c) for c in commands):
        return "checkout"
    return "app"


def _chain(block: Block) -> list[Block]:
    """The block, after the blocks it `continues`."""
    return [*(_chain(block.previous) if block.previous else []), block]


def _twins(blocks: list[Block]) -> dict[str, Block]:
    """Blocks that say exactly what an earlier block says (a page repeating the README)."""
    first: dict[tuple[str, ...], Block] = {}
    twins = {}
    for block in blocks:
        if not block.is_shell or block.directives or block.previous:
            continue
        key = tuple(block.commands())
        if key in first:
            twins[block.id] = first[key]
        else:
            first[key] = block
    return twins


TWINS = _twins(BLOCKS)


def _continued(blocks: list[Block]) -> dict[str, Block]:
    """Blocks a later block `continues`, and that block: its test runs them first.

    The continuing block's run starts with the block it continues, all its commands
    with their checks, in the same folder, shell and database, so a test of its own
    would only run the same commands a second time.
    """
    return {
        block.previous.id: block
        for block in blocks
        if block.is_shell and block.previous and context_of(block) != "not in the suite"
    }


CONTINUED = _continued(BLOCKS)


def _continued_by(block: Block) -> Block:
    """The block whose test runs `block`: the last of the blocks that continue it."""
    while block.id in CONTINUED:
        block = CONTINUED[block.id]
    return block


_HELP = re.compile(r"\s--help\s*$")


def _touches_no_database(block: Block) -> bool:
    """Its commands only print their usage (`chatmem-demo --help`)."""
    return all(_HELP.search(c) for c in block.commands())


def _param(block: Block) -> Any:
    context = context_of(block) if block.is_shell else "unclassified"
    marks = []
    if context != "app" or _touches_no_database(block):
        marks.append(pytest.mark.db_free)
    run_elsewhere = block.id in TWINS or block.id in CONTINUED
    if context in ("app", "checkout", "fresh") and not run_elsewhere:
        marks.append(pytest.mark.slow)  # it spawns processes, often servers
    return pytest.param(block, id=block.id, marks=marks)


# -- the test ----------------------------------------------------------------------


@pytest.mark.parametrize("block", [_param(b) for b in BLOCKS])
def test_documented_block(block: Block, request: pytest.FixtureRequest, tmp_path: Path) -> None:
    if not block.is_shell:
        pytest.fail(
            f"{block.source} line {block.line}: a block of language {block.lang!r} the runner "
            "cannot classify; use a shell language (bash) for commands, or teach "
            "tests/documented.py the new language"
        )
    context = context_of(block)
    if context == "not in the suite":
        return _not_in_the_suite(block)
    if block.id in TWINS:  # the same commands, word for word, already run under that id
        assert TWINS[block.id].commands() == block.commands()
        return
    if block.id in CONTINUED:  # run first, with its checks, by the block that goes on from it
        assert block in _chain(_continued_by(block))
        return
    # Documented servers and the fake LLM listen on the ports the text names (5000,
    # 8000, 8080), so one such test runs at a time on this machine.
    with ports_lock(), Runner.open(context, request, tmp_path) as runner:
        runner.run_block(block)


def _not_in_the_suite(block: Block) -> None:
    """`bash bin/test` runs this suite, so it cannot run inside it: CI runs it instead."""
    assert block.directives["not in the suite"], "say why the block cannot run here"
    ci = (ROOT / ".ci" / "run").read_text()
    for command in block.commands():
        assert command in ci.splitlines(), f"`{command}` is not in the suite and not in .ci/run"


# -- the runner --------------------------------------------------------------------


@dataclass
class Runner:
    context: str
    shell: Shell
    fake: FakeLLM
    request: pytest.FixtureRequest
    database_url: str | None = None

    @classmethod
    @contextmanager
    def open(cls, context: str, request: pytest.FixtureRequest, tmp: Path) -> Iterator[Runner]:
        env = _clean_environ()
        scratch = tmp / "scratch"
        scratch.mkdir()
        with FakeLLM() as fake:
            if context == "fresh":
                folder: Path = request.getfixturevalue("fresh_checkout")
                env["PATH"] = os.pathsep.join(
                    p for p in env["PATH"].split(os.pathsep) if Path(p) != VENV / "bin"
                )
                yield cls(context, Shell(folder, env, scratch), fake, request)
                return
            _activate(env)
            if context == "checkout":
                folder = tmp / "checkout"
                copy_checkout(folder)
                (folder / ".venv").symlink_to(VENV)
                # The copy's own package, as `pip install -e .` in it would give: the
                # suite's virtualenv may have been installed from another checkout.
                env["PYTHONPATH"] = str(folder)
                yield cls(context, Shell(folder, env, scratch), fake, request)
                return
            database_url: str = request.getfixturevalue("database_url")
            reset_demo_database(database_url)
            folder = tmp / "app"
            folder.mkdir()
            (folder / ".venv").symlink_to(VENV)
            (folder / "yourapp.py").write_text(README_PLUG_IN)
            env["DATABASE_URL"] = database_url
            env["DEMO_INSTANCE_PATH"] = str(folder / "instance")
            env["OPENAI_BASE_URL"] = fake.openai_base_url
            env["ANTHROPIC_BASE_URL"] = fake.anthropic_base_url
            yield cls(context, Shell(folder, env, scratch), fake, request, database_url)

    def run_block(self, block: Block) -> None:
        venv = self.shell.cwd / ".venv"
        if self.context == "fresh" and not venv.exists() and "-m venv" not in block.text:
            pytest.fail(f"{block.id} installs into the Quickstart's virtualenv: run it too")
        if block.previous is not None:
            self.run_block(block.previous)
        for name in block.directives.get("assumes", "").replace(",", " ").split():
            assert name in ASSUMED, f"{block.id} assumes {name}: give it a value in ASSUMED"
            self.shell.env[name] = ASSUMED[name]
        with ExitStack() as stack:
            if "running" in block.directives:
                command = block.directives["running"]
                rule = classify(command)
                assert rule.serves, f"`running: {command}` names no server command"
                stack.enter_context(self.shell.serving(command, rule.serves(command)))
            for command in block.commands():
                self.run_command(command)

    def run_command(self, command: str) -> None:
        rule = classify(command)
        long = self.context == "fresh"  # a first install downloads and builds
        if rule.serves is None:
            ran = self.shell.run(command, timeout=600 if long else 180)
            assert ran.returncode == 0, ran.explain()
            rule.check(self, command, ran)
            return
        url = rule.serves(command)
        with (
            self._fake_on_documented_port(command),
            self.shell.serving(command, url, 600 if long else 90) as server,
        ):
            rule.check(self, command, server)

    @contextmanager
    def _fake_on_documented_port(self, command: str) -> Iterator[None]:
        """When a command names an LLM's URL (`http://127.0.0.1:8080/v1`), the fake is there."""
        env = effective_env(command, self.shell.env)
        ports = {
            int(match[1])
            for name in ("OPENAI_BASE_URL", "ANTHROPIC_BASE_URL")
            if (match := re.match(r"http://127\.0\.0\.1:(\d+)", env.get(name, "")))
        } - {int(self.fake.url.rsplit(":", 1)[1])}
        if not ports:
            yield
            return
        assert len(ports) == 1, f"`{command}` names two LLM servers"
        usual = self.fake
        with FakeLLM(port=ports.pop()) as self.fake:
            try:
                yield
            finally:
                self.fake = usual

    # helpers the checks share

    def sql(self, query: str) -> list[Any]:
        assert self.database_url, "only app blocks have a database"
        engine = create_engine(self.database_url)
        try:
            with engine.connect() as connection:
                return list(connection.execute(text(query)))
        finally:
            engine.dispose()


# -- environment -------------------------------------------------------------------

# What the runner puts in the shell for a block annotated `assumes: NAME`.
ASSUMED = {
    "SECRET_KEY": "documented-commands-secret",
    "OPENAI_API_KEY": "sk-from-the-environment",
    "ANTHROPIC_API_KEY": "sk-ant-from-the-environment",
    "CHATMEM_RATELIMIT_STORAGE_URI": REDIS_URL,
}


def _clean_environ() -> dict[str, str]:
    """This process's environment without anything that would configure the app."""
    drop = {"DATABASE_URL", "SECRET_KEY", "VIRTUAL_ENV", "PYTHONPATH", *PROVIDER_ENV}
    return {
        k: v
        for k, v in os.environ.items()
        if k not in drop and not k.startswith(("CHATMEM_", "DEMO_", "FLASK_"))
    }


def _activate(env: dict[str, str]) -> None:
    """What `. .venv/bin/activate` does: the suite's virtualenv first on PATH."""
    env["VIRTUAL_ENV"] = str(VENV)
    env["PATH"] = f"{VENV / 'bin'}{os.pathsep}{env['PATH']}"


def words_of(command: str) -> list[str]:
    """The words bash sees in a command line (continuation lines joined)."""
    return shlex.split(command.replace("\\\n", " "), comments=True)


def effective_env(command: str, env: dict[str, str]) -> dict[str, str]:
    """The environment a command line runs its program with: the shell's plus `A=b` prefixes."""
    merged = dict(env)
    for word in words_of(command):
        name, equals, value = word.partition("=")
        if not equals or not re.fullmatch(r"[A-Z_][A-Z0-9_]*", name):
            break
        merged[name] = value
    return merged


def flag(command: str, *names: str, default: str | None = None) -> str | None:
    words = words_of(command)
    for index, word in enumerate(words):
        for name in names:
            if word == name and index + 1 < len(words):
                return words[index + 1]
            if word.startswith(name + "="):
                return word.split("=", 1)[1]
    return default


def copy_checkout(folder: Path) -> None:
    """The checkout's files as a fresh clone has them (tracked and new, never ignored)."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        source = ROOT / name
        if source.is_file():
            target = folder / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)


@pytest.fixture(scope="module")
def fresh_checkout(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One copy of the checkout for the blocks that install, in document order."""
    folder = tmp_path_factory.mktemp("fresh") / "chatmem"
    copy_checkout(folder)
    return folder


# -- classifying commands ----------------------------------------------------------

Check = Callable[[Runner, str, Any], None]


@dataclass(frozen=True)
class Rule:
    name: str
    pattern: re.Pattern[str]
    check: Check
    serves: Callable[[str], str] | None = None  # the URL a long-running command serves


def classify(command: str) -> Rule:
    for rule in RULES:
        if rule.pattern.search(command):
            return rule
    raise AssertionError(
        f"The runner cannot classify `{command}`: add a rule to RULES in "
        "tests/test_documented_commands.py that runs it and checks what the text says."
    )


def _demo_url(command: str) -> str:
    host = flag(command, "--host", default="127.0.0.1")
    return f"http://{host}:{flag(command, '--port', default='5000')}"


def _gunicorn_url(command: str) -> str:
    return "http://" + (flag(command, "-b", "--bind") or "127.0.0.1:8000")


def _flask_run_url(command: str) -> str:
    host = flag(command, "--host", "-h", default="127.0.0.1")
    return f"http://{host}:{flag(command, '--port', '-p', default='5000')}"


def app_of(command: str) -> str:
    if "yourapp" in command:
        return "yourapp"
    if "chatmem.demo" in command or "chatmem-demo" in command:
        return "demo"
    if "tests.wsgi_host" in command:
        return "wsgi"
    raise AssertionError(f"which app does `{command}` use?")


# -- checks: what each kind of command must have done -----------------------------


def check_help(runner: Runner, command: str, ran: Ran) -> None:
    assert ran.stdout.startswith("usage: "), ran.explain()


def check_pip(runner: Runner, command: str, ran: Ran) -> None:
    """The packages it names are installed in the checkout's own virtualenv."""
    python = runner.shell.cwd / ".venv" / "bin" / "python"
    imports = {"gunicorn": "gunicorn", "postgres": "psycopg", "-e": "chatmem"}
    wanted = [module for word, module in imports.items() if word in command]
    probe = subprocess.run([python, "-c", f"import {', '.join(wanted)}"], capture_output=True)
    assert probe.returncode == 0, probe.stderr.decode()


def check_export(runner: Runner, command: str, ran: Ran) -> None:
    for name in re.findall(r"\b([A-Z_][A-Z0-9_]*)=", command.split(" ", 1)[1]):
        assert runner.shell.env.get(name), f"`{command}` left {name} empty"
    if "token create" in command:
        name = re.match(r"export (\w+)=", command)[1]  # type: ignore[index]
        user = re.search(r"token create (\w+)", command)[1]  # type: ignore[index]
        check_token_works(runner, command, runner.shell.env[name], user)


def check_token_create(runner: Runner, command: str, ran: Ran) -> None:
    token = ran.stdout.strip().splitlines()[-1]
    user = re.search(r"token create (\w+)", command)[1]  # type: ignore[index]
    check_token_works(runner, command, token, user)


def check_token_works(runner: Runner, command: str, token: str, user: str) -> None:
    """The token authenticates as `user` over REST and MCP on the running app.

    A `--read-only` token sees only that user's read-only tools.
    """
    assert re.fullmatch(r"cm_[\w-]{40,}", token), token
    with running_app(runner, app_of(command)) as (url, expected_tools):
        tools_of_user = expected_tools(user, read_only="--read-only" in command.split())
        headers = {"Authorization": f"Bearer {token}"}
        listed = httpx2.get(f"{url}/chatmem/api/tools", headers=headers)
        assert listed.status_code == 200, listed.text
        assert {t["name"] for t in listed.json()["tools"]} == tools_of_user
        assert httpx2.get(f"{url}/chatmem/api/tools").status_code == 401, "and none without it"
        assert set(asyncio.run(_mcp_tool_names(url, token))) == tools_of_user


async def _mcp_tool_names(url: str, token: str) -> list[str]:
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    headers = {"Authorization": f"Bearer {token}"}
    async with httpx2.AsyncClient(headers=headers) as http:
        transport = streamable_http_client(f"{url}/chatmem/mcp", http_client=http)
        async with Client(transport) as client:
            return [tool.name for tool in (await client.list_tools()).tools]


@contextmanager
def running_app(runner: Runner, app: str) -> Iterator[tuple[str, Callable[[str], set[str]]]]:
    """The app a command addressed, served over real HTTP on the same database.

    Yields its URL and `tools(username)`: the tools that user's capabilities
    allow, worked out from the host's own users and the app's tool registry.
    """
    monkeypatch = runner.request.getfixturevalue("monkeypatch")
    monkeypatch.setenv("DATABASE_URL", str(runner.database_url))
    if app == "demo":
        from chatmem.demo import create_app
        from chatmem.demo.seed import USERS

        flask_app = create_app(instance_path=str(runner.shell.cwd / "instance"))
        capabilities = {name: set(caps.split()) for name, caps in USERS}
    else:
        module = _load_yourapp(runner.shell.cwd / "yourapp.py", monkeypatch)
        flask_app = module.create_app()
        capabilities = {name: set(u.capabilities) for name, u in module.USERS.items()}
    registry = flask_app.extensions["chatmem"].memory.registry

    def tools(username: str, *, read_only: bool = False) -> set[str]:
        return {
            t.name
            for t in registry.tools()
            if t.capability in capabilities[username] and (t.read_only or not read_only)
        }

    try:
        with serving(flask_app) as url:
            yield url, tools
    finally:
        with flask_app.app_context():
            flask_app.extensions["sqlalchemy"].engine.dispose()


def _load_yourapp(path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """Import the plug-in example from its file, under a name of its own."""
    name = f"yourapp_{abs(hash(path))}"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, name, module)
    spec.loader.exec_module(module)
    return module


def check_token_list(runner: Runner, command: str, ran: Ran) -> None:
    """One line per token (never the token itself), all of them the named user's."""
    named = re.search(r"token list (\w+)", command)
    owner = re.escape(named[1]) if named else r"\S+"
    lines = ran.stdout.splitlines()
    assert lines and lines != ["No tokens."], ran.explain()
    for line in lines:
        assert re.match(rf"#\d+  {owner}  .*cm_\S+…", line), line


def check_db_upgrade(runner: Runner, command: str, ran: Ran) -> None:
    assert ran.stdout.strip() == f"chatmem database is at {migrate.head()}.", ran.explain()
    if runner.database_url:
        assert runner.sql("SELECT version_num FROM chatmem_alembic_version") == [(migrate.head(),)]


def check_doctor(runner: Runner, command: str, ran: Ran) -> None:
    assert ran.stdout.rstrip().endswith("No problems found."), ran.explain()
    assert not re.search(r"^problem ", ran.stdout, re.M), ran.explain()


def check_db_current(runner: Runner, command: str, ran: Ran) -> None:
    head = migrate.head()
    assert ran.stdout.splitlines() == [f"current: {head}", f"head: {head}"], ran.explain()


def check_db_downgrade(runner: Runner, command: str, ran: Ran) -> None:
    """One step back by default, else to the revision named (`base`: no tables)."""
    from alembic.script import ScriptDirectory

    words = words_of(command)
    named = words[words.index("downgrade") + 1 :]
    if named:
        expected = named[0]
    else:
        previous = ScriptDirectory(migrate.SCRIPT_LOCATION).get_revision(migrate.head())
        expected = str(previous.down_revision or "base")
    assert ran.stdout.strip() == f"chatmem database is at {expected}.", ran.explain()
    if runner.database_url and expected != "base":
        assert runner.sql("SELECT version_num FROM chatmem_alembic_version") == [(expected,)]


def check_db_revision(runner: Runner, command: str, ran: Ran) -> None:
    message = flag(command, "-m", "--message") or ""
    slug = re.sub(r"\W+", "_", message.lower()).strip("_")
    written = list((runner.shell.cwd / "chatmem/migrations/versions").glob(f"*{slug}*.py"))
    assert len(written) == 1, ran.explain()
    assert f"down_revision: str | None = {migrate.head()!r}" in written[0].read_text()


def check_sweep(runner: Runner, command: str, ran: Ran) -> None:
    assert re.match(r"Ended \d+ idle sessions?\.\nSummary jobs: \d+ run: ", ran.stdout), (
        ran.explain()
    )


def check_guidance(runner: Runner, command: str, ran: Ran) -> None:
    verb = re.search(r"guidance (\w+)", command)[1]  # type: ignore[index]
    if verb == "list":
        lines = ran.stdout.splitlines()
        row = re.compile(r"(#\d+  \w+  \w+  v\d+  |No \w+ guidance\.)")
        assert lines and all(row.match(line) for line in lines), ran.explain()
        return
    entry_id = int(re.search(rf"guidance {verb} (\d+)", command)[1])  # type: ignore[index]
    assert ran.stdout.splitlines()[0 if verb == "show" else 1].startswith(f"#{entry_id}  ")
    if verb == "show":
        return
    status = {"approve": "publish", "reject": "rejected", "trash": "trash"}[verb]
    assert runner.sql(f"SELECT status FROM chatmem_guidance WHERE id = {entry_id}") == [(status,)]
    actor = runner.sql(
        "SELECT actor_id FROM chatmem_guidance_event "
        f"WHERE guidance_id = {entry_id} ORDER BY id DESC LIMIT 1"
    )
    assert actor == [(f"cli:{getpass.getuser()}",)]


def check_memory_export(runner: Runner, command: str, ran: Ran) -> None:
    """The file it wrote is a valid v1 export holding every entry (of the statuses asked)."""
    target = re.search(r">\s*(\S+)", command)[1]  # type: ignore[index]
    document = json.loads((runner.shell.cwd / target).read_text())
    Draft202012Validator(transfer.schema()).validate(document)
    statuses = re.findall(r"--status\s+(\w+)", command)
    where = f" WHERE status IN ({', '.join(repr(s) for s in statuses)})" if statuses else ""
    count = runner.sql(f"SELECT count(*) FROM chatmem_guidance{where}")[0][0]
    assert len(document["entries"]) == count, ran.explain()
    assert f"Exported {count} entr" in ran.stderr, ran.explain()


def check_memory_import(runner: Runner, command: str, ran: Ran) -> None:
    """Every entry of the file is either imported or reported as already here."""
    source = re.search(r"chatmem import\s+(\S+)", command)[1]  # type: ignore[index]
    entries = json.loads((runner.shell.cwd / source).read_text())["entries"]
    imported = re.match(r"Imported (\d+) entr", ran.stdout)
    assert imported, ran.explain()
    skipped = ran.stdout.count("\nSkipped entry ")
    assert int(imported[1]) + skipped == len(entries), ran.explain()


def check_curl(runner: Runner, command: str, ran: Ran) -> None:
    """The answer is what the REST section says: the tool list, or the tool's result."""
    answer = json.loads(ran.stdout)
    assert "error" not in answer, answer
    path = re.search(r"http://[^/\s]+(/\S*)", command)[1]  # type: ignore[index]
    if path.endswith("/api/tools"):
        assert {"recall", "remember"} <= {tool["name"] for tool in answer["tools"]}
    elif "/api/tools/remember" in path:
        assert answer["status"] in ("pending", "publish") and answer["id"] >= 1
    elif "/api/tools/" in path:
        assert isinstance(answer, dict)
    elif path.endswith("/api/openapi.json"):
        assert answer["openapi"].startswith("3.1")
    else:
        raise AssertionError(f"what should `{command}` answer? teach check_curl")


EXPECTED_OUTPUT = {
    "examples/minimal_app.py": ("## Project memory", "refused: blocked_by_memory"),
    "examples/blog/tour.py": (
        "john edits susan's post: refused: forbidden",
        "Memory screen: Pending review · Memory · Blog",
        "style-src 'self' https://cdn.jsdelivr.net 'nonce-",
        "an agent edits susan's post: refused: blocked_by_memory",
        "dry run: would have refused 2 calls",
    ),
    "examples/forum/tour.py": (
        "Memory screen: Pending review · Memory · Forum (dark)",
        "edit a post in forum 2: refused: blocked_by_memory",
        "move topic 15 into forum 2: refused: blocked_by_memory",
        "edit a post in forum 3: {'post_id': 3}",
        "edit a post in topic 15: refused: blocked_by_memory",
        "upkeep after topic 15 was deleted: 1 target gone",
    ),
}


def check_script(runner: Runner, command: str, ran: Ran) -> None:
    assert ran.stdout.strip(), "an example says something"
    script = re.search(r"(\S+\.py)", command)[1]  # type: ignore[index]
    for expected in EXPECTED_OUTPUT.get(script, ()):
        assert expected in ran.stdout, ran.explain()


def check_server(runner: Runner, command: str, server: Server) -> None:
    """The app answers as the text says: its login works; a provider, if named, answers."""
    app = app_of(command)
    with httpx2.Client(base_url=server.url, timeout=30) as browser:
        if app == "yourapp":
            return _check_yourapp_pages(browser)
        _log_in(browser, "editor")
        assert browser.get("/chat").status_code == 200
    if "chatmem-demo" in command:
        output = server.output()
        assert f"open {server.url} and log in as admin/admin" in output, output
        assert "alembic.runtime.plugins" not in output
    env = effective_env(command, runner.shell.env)
    provider = flag(command, "--provider") or env.get("CHATMEM_PROVIDER", "none")
    if provider != "none":
        _check_provider_answers(runner, command, server, provider, env)


def _log_in(browser: httpx2.Client, user: str) -> str:
    """Log in through the form; returns the CSRF token for the JSON API."""
    page = browser.get("/login").text
    csrf = re.search(r'name="csrf_token"[^>]*value="([^"]+)"', page)[1]  # type: ignore[index]
    done = browser.post("/login", data={"username": user, "password": user, "csrf_token": csrf})
    assert done.status_code in (302, 303), done.text[:500]
    return csrf


def _check_yourapp_pages(browser: httpx2.Client) -> None:
    assert browser.get("/").headers["location"] == "/chatmem/memory"
    assert browser.get("/chatmem/memory").headers["location"].startswith("/login")
    _log_in(browser, "editor")
    assert browser.get("/chatmem/memory").status_code == 403, "an editor does not curate"
    browser.cookies.clear()
    _log_in(browser, "admin")
    screen = browser.get("/chatmem/memory")
    assert screen.status_code == 200 and "Pending review" in screen.text


def _check_provider_answers(
    runner: Runner, command: str, server: Server, provider: str, env: dict[str, str]
) -> None:
    """A chat message reaches the fake through the real SDK; so does an auto-summary."""
    fake = runner.fake
    api = env.get("CHATMEM_OPENAI_API", "responses")
    path = MESSAGES if provider == "anthropic" else CHAT if api == "chat" else RESPONSES
    reply = {MESSAGES: anthropic_text, CHAT: chat_text, RESPONSES: openai_text}[path]
    fake.enqueue(path, body=reply("Hello from the model."))
    fake.enqueue(path, body=reply("The editor said hello; nothing changed."))
    with httpx2.Client(base_url=server.url, timeout=60) as editor:
        csrf = {"X-CSRFToken": _log_in(editor, "editor")}
        conversation = editor.post("/chat/api/conversations", headers=csrf).json()["id"]
        said = editor.post(
            f"/chat/api/conversations/{conversation}/messages",
            json={"content": "hello"},
            headers=csrf,
        ).json()["messages"]
        assert said[-1] == {**said[-1], "role": "assistant", "content": "Hello from the model."}
        with httpx2.Client(base_url=server.url, timeout=60) as admin:
            switch = admin.post(
                "/chatmem/memory/settings",
                json={"name": "auto_summarize", "value": True},
                headers={"X-CSRFToken": _log_in(admin, "admin")},
            )
            assert switch.status_code == 200, switch.text
        closed = editor.post(f"/chat/api/conversations/{conversation}/close", headers=csrf)
        assert closed.status_code == 200
    sweep = runner.shell.run(
        f"{_assignments(command)} flask --app 'chatmem.demo:create_app()' chatmem sweep"
    )
    assert "1 summarized" in sweep.stdout, sweep.explain()
    sent = fake.requests_to(path)
    assert len(sent) == 2
    model = flag(command, "--model") or env.get("CHATMEM_MODEL")
    default = "claude-haiku-4-5" if provider == "anthropic" else "gpt-6-luna"
    assert {r.body["model"] for r in sent} == {model or default}
    key = env["ANTHROPIC_API_KEY" if provider == "anthropic" else "OPENAI_API_KEY"]
    assert {r.headers["authorization"] for r in sent} == {f"Bearer {key}"}, "the key it was given"


def _assignments(command: str) -> str:
    """The `A=b` prefixes of a command line, to give a follow-up command the same settings."""
    words = []
    for word in words_of(command):
        if not re.match(r"[A-Z_][A-Z0-9_]*=", word):
            break
        words.append(shlex.quote(word))
    provider, model = flag(command, "--provider"), flag(command, "--model")
    words += [f"CHATMEM_PROVIDER={provider}"] if provider else []
    words += [f"CHATMEM_MODEL={shlex.quote(model)}"] if model else []
    return " ".join(words)


def _chatmem(subcommand: str) -> re.Pattern[str]:
    return re.compile(rf"\bchatmem {subcommand}\b")


RULES: list[Rule] = [
    Rule("help", re.compile(r"\s--help\b"), check_help),
    Rule("export", re.compile(r"^export\s"), check_export),
    Rule(
        "the demo server",
        re.compile(r"(^|[\s/])chatmem-demo(\s|$)"),
        check_server,
        serves=_demo_url,
    ),
    Rule("gunicorn", re.compile(r"(^|[\s/])gunicorn\s+-"), check_server, serves=_gunicorn_url),
    Rule(
        "flask run",
        re.compile(r"(^|[\s/])flask\s[^|;&]*\srun(\s|$)"),
        check_server,
        serves=_flask_run_url,
    ),
    Rule("pip install", re.compile(r"\bpip3? install\b"), check_pip),
    Rule("token create", _chatmem("token create"), check_token_create),
    Rule("token list", _chatmem("token list"), check_token_list),
    Rule("db upgrade", _chatmem("db upgrade"), check_db_upgrade),
    Rule("db current", _chatmem("db current"), check_db_current),
    Rule("doctor", _chatmem("doctor"), check_doctor),
    Rule("db downgrade", _chatmem("db downgrade"), check_db_downgrade),
    Rule("db revision", _chatmem("db revision"), check_db_revision),
    Rule("sweep", _chatmem("sweep"), check_sweep),
    Rule("guidance", _chatmem("guidance"), check_guidance),
    Rule("memory export", _chatmem("export"), check_memory_export),
    Rule("memory import", _chatmem("import"), check_memory_import),
    Rule("curl", re.compile(r"^curl\s"), check_curl),
    Rule("python script", re.compile(r"(^|[\s/])python3?\s+\S+\.py\b"), check_script),
]


# -- the blocks that run no commands ---------------------------------------------------


def test_json_and_python_blocks_parse() -> None:
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("**/*.md"))]:
        for block in markdown_blocks(path):
            if block.lang == "json":
                json.loads(block.text)
            elif block.lang == "python":
                compile(block.text, block.id, "exec")


def test_the_examples_folder_holds_the_readme_plug_in_example() -> None:
    assert (ROOT / "examples" / "yourapp.py").read_text() == README_PLUG_IN
