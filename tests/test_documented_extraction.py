"""How the documented-commands test finds blocks: what it picks up, and what it refuses."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.documented import Block, _Pre, example_blocks, markdown_blocks
from tests.test_documented_commands import classify, context_of, effective_env, words_of

pytestmark = pytest.mark.db_free  # parses Markdown and HTML only

MARKDOWN = """# Title

Text with `inline code` that is not a block.

## Run it

```bash
# a comment line is not a command
export A=1   # a trailing comment stays
flask --app yourapp chatmem token create editor \\
  --name laptop
```

1. In a list:

   <!-- commands: running: flask --app yourapp run; assumes: SECRET_KEY -->
   ```sh
   curl -s http://127.0.0.1:5000/chatmem/api/tools
   ```

<!-- commands: continues -->
```console
$ flask --app yourapp chatmem sweep
Ended 0 idle sessions.
```

```python
print("not a command")
```

```
no language at all
```
"""


def test_markdown_blocks_keep_the_text_and_read_the_annotations(tmp_path: Path) -> None:
    path = tmp_path / "guide.md"
    path.write_text(MARKDOWN)
    blocks = markdown_blocks(path)
    assert [(b.id, b.lang) for b in blocks] == [
        ("guide.md#run-it", "bash"),
        ("guide.md#run-it-2", "sh"),
        ("guide.md#run-it-3", "console"),
        ("guide.md#run-it-4", "python"),
        ("guide.md#run-it-5", ""),
    ]
    first, listed, console = blocks[:3]
    assert first.commands() == [
        "export A=1   # a trailing comment stays",
        "flask --app yourapp chatmem token create editor \\\n  --name laptop",
    ]
    assert first.directives == {}
    assert listed.directives == {"running": "flask --app yourapp run", "assumes": "SECRET_KEY"}
    assert listed.commands() == ["curl -s http://127.0.0.1:5000/chatmem/api/tools"]
    assert console.commands() == ["flask --app yourapp chatmem sweep"], "only prompted lines"
    assert console.previous is listed, "`continues` runs the block before it first"
    assert [b.is_shell for b in blocks] == [True, True, True, False, False]


def test_an_example_says_how_to_run_it_in_a_literal_block(tmp_path: Path) -> None:
    runnable = tmp_path / "runnable.py"
    runnable.write_text('"""An example.\n\nRun it::\n\n    python runnable.py --fast\n"""\n')
    (block,) = example_blocks(runnable)
    assert block.commands() == ["python runnable.py --fast"]
    silent = tmp_path / "silent.py"
    silent.write_text('"""An example that does not say how to run it."""\n')
    (unclassified,) = example_blocks(silent)
    assert not unclassified.is_shell, "so the documented-commands test fails for it"


def test_page_blocks_are_the_pre_elements_with_their_language() -> None:
    parser = _Pre()
    parser.feed(
        "<p>x</p><pre>flask --app &#39;a:b()&#39; chatmem sweep</pre>"
        '<pre data-lang="json">{"a": 1}</pre>'
    )
    assert parser.blocks == [("bash", "flask --app 'a:b()' chatmem sweep"), ("json", '{"a": 1}')]


def test_a_command_nobody_taught_the_runner_fails_rather_than_passing() -> None:
    with pytest.raises(AssertionError, match="cannot classify `make deploy`"):
        classify("make deploy")
    assert classify("FLASK_APP=x flask chatmem sweep").name == "sweep"
    assert classify(".venv/bin/chatmem-demo --port 5001").serves is not None


def test_where_a_block_runs() -> None:
    def block(text: str, **directives: str) -> Block:
        return Block("x.md", 1, "s", "bash", text, directives)

    assert context_of(block("python3 -m venv .venv && .venv/bin/pip install -e .\n")) == "fresh"
    assert context_of(block(".venv/bin/python examples/minimal_app.py\n")) == "checkout"
    assert context_of(block("flask --app tests.wsgi_host:app chatmem db upgrade\n")) == "checkout"
    assert context_of(block("flask --app yourapp chatmem sweep\n")) == "app"
    assert context_of(block("bash bin/test\n", **{"not in the suite": "why"})) == (
        "not in the suite"
    )


def test_the_settings_a_command_line_runs_with() -> None:
    command = "A=1 B='two words' \\\n  C=3 chatmem-demo --model m D=4"
    assert words_of(command)[-3:] == ["--model", "m", "D=4"]
    env = effective_env(command, {"A": "0", "E": "5"})
    assert {k: env[k] for k in "ABCE"} == {"A": "1", "B": "two words", "C": "3", "E": "5"}
    assert "D" not in env, "only the words before the program set its environment"
