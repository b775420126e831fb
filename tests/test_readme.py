"""The README's examples run as written."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_the_runner_example_runs(tmp_path):
    readme = (ROOT / "README.md").read_text()
    code = re.search(r"## The runner\n\n```python\n(.*?)```", readme, re.S).group(1)
    script = tmp_path / "example.py"
    script.write_text(code)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "LOVIA_MODEL": ""}
    done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True,
                          timeout=60, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["Your project is called **Atlas**.", "`(12 + 30) * 7 = 294`"]


def test_the_readme_opens_with_the_two_commands():
    lines = (ROOT / "README.md").read_text().splitlines()
    block = lines[lines.index("```sh") + 1:lines.index("```sh") + 3]
    assert block[0].endswith("pip install -e . && .venv/bin/lovia")
    assert block[1].endswith("pip install -e '.[test]' && .venv/bin/python -m pytest -q")
    ci = (ROOT / ".ci" / "run").read_text()
    assert ".venv/bin/python -m pytest -q" in ci


def test_the_readme_keys_table_covers_every_binding():
    from lovia.tui.screens.help import key_table

    readme = (ROOT / "README.md").read_text()
    table = readme[readme.index("### Keys"):readme.index("### Configuration")]
    for _, rows in key_table():
        for row in rows:
            for key in row.keys.split(" / "):
                if key in ("any letter", "tab", "shift+tab"):
                    continue
                assert f"`{key}`" in table, key


def test_the_readme_mcp_config_example_is_read_as_it_says(tmp_path):
    from lovia.tui.config import Config

    readme = (ROOT / "README.md").read_text()
    section = readme[readme.index("### MCP servers"):readme.index("### PostgreSQL")]
    example = section[section.index("```toml") + len("```toml"):section.index("```", section.index("```toml") + 7)]
    config = tmp_path / "config.toml"
    config.write_text(example)
    files, search = Config.load(config).mcp_servers
    assert (files.name, files.command, files.enabled) == ("files", "npx", True)
    assert files.args[-1] == "/home/me/notes" and dict(files.env) == {"NODE_ENV": "production"}
    assert (search.url, search.enabled, search.timeout) == ("http://127.0.0.1:8931/mcp", False, 120.0)
    assert dict(search.headers) == {"Authorization": "Bearer ${SEARCH_TOKEN}"}  # read from the environment later


# The README's places, as the help screen titles them (several README rows share a help group).
README_PLACES = {"anywhere": ("anywhere", "main screen"), "inspector": ("checkpoint inspector",),
                 "inspector, on a dangling call": ("checkpoint inspector",), "help": ("help screen",)}


def test_the_help_screen_lists_every_key_of_the_readme_table_in_its_place():
    import re

    from lovia.tui.screens.help import key_table

    in_help: dict[str, set[str]] = {}
    for title, rows in key_table():
        for row in rows:
            in_help.setdefault(title.lower(), set()).update(re.split(r" / |, ", row.keys))
    readme = (ROOT / "README.md").read_text()
    table = readme[readme.index("### Keys"):readme.index("### Configuration")]
    place = ""
    missing = []
    for line in table.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) < 3 or (set(cells[0]) <= {"-"} and cells[0]) or cells[0] == "where":
            continue
        place = cells[0].lower() or place
        shown = set().union(*(in_help.get(title, set()) for title in README_PLACES.get(place, (place,))))
        missing += [(place, key) for key in re.findall(r"`([^`]+)`", cells[1]) if key not in shown]
    assert not missing


def test_the_readme_names_the_schema_versions_doctor_reports():
    from lovia.stores._postgres_checkpoint import CHECKPOINT_SCHEMA as PG_CHECKPOINT
    from lovia.stores.postgres import SESSION_SCHEMA as PG_SESSION
    from lovia.stores.sqlite import CHECKPOINT_SCHEMA, SESSION_SCHEMA

    text = " ".join((ROOT / "README.md").read_text().split())
    assert (f"session {SESSION_SCHEMA.version} and checkpoint {CHECKPOINT_SCHEMA.version} in SQLite, session "
            f"{PG_SESSION.version} and checkpoint {PG_CHECKPOINT.version} in PostgreSQL") in text
