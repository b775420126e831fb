"""The lovia command: clear errors and exit code 2 on bad input, before the UI starts."""

from __future__ import annotations

import asyncio
import hashlib
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lovia import SQLiteSession, UserMessage, __version__
from lovia.cli import build_app, build_parser
from lovia.errors import UserError

ROOT = Path(__file__).resolve().parents[1]


def lovia(*args: str, tmp_path: Path, env: dict | None = None,
          stdout: int = subprocess.PIPE) -> subprocess.CompletedProcess:
    """``lovia ARGS`` in a process of its own, on a config and a data directory of ``tmp_path``."""
    environment = {name: value for name, value in os.environ.items() if name != "LOVIA_MODEL"}
    environment.update({"PYTHONPATH": str(ROOT), "LOVIA_CONFIG": str(tmp_path / "config.toml"),
                        "LOVIA_DATA_DIR": str(tmp_path / "data"), **(env or {})})
    return subprocess.run([sys.executable, "-m", "lovia.cli", *args], stdout=stdout, stderr=subprocess.PIPE,
                          text=True, timeout=60, env=environment, stdin=subprocess.DEVNULL)


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_version(tmp_path):
    done = lovia("--version", tmp_path=tmp_path)
    assert done.returncode == 0 and done.stdout.strip() == f"lovia {__version__}"


def test_a_foreign_file_is_refused_and_left_alone(tmp_path):
    path = tmp_path / "notes.db"
    path.write_text("not a database\n")
    before = digest(path)
    done = lovia("--db", str(path), tmp_path=tmp_path)
    assert done.returncode == 2
    assert "not a SQLite database" in done.stderr and "Point lovia at another file" in done.stderr
    assert digest(path) == before


def test_a_newer_schema_is_refused(tmp_path):
    path = tmp_path / "lovia.db"

    async def make():
        async with SQLiteSession(path) as session:
            await session.append("u1", [UserMessage(text="x")])

    asyncio.run(make())
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE lovia_schema SET version = 99")
    before = digest(path)
    done = lovia("--db", str(path), tmp_path=tmp_path)
    assert done.returncode == 2 and "Upgrade lovia" in done.stderr
    assert digest(path) == before


def test_a_corrupt_database_is_refused_read_only_and_left_byte_identical(tmp_path):
    path = tmp_path / "lovia.db"

    async def make():
        async with SQLiteSession(path) as session:
            for i in range(60):
                await session.append("u1", [UserMessage(text=f"private words {i} " + "z" * 300)])

    asyncio.run(make())
    data = bytearray(path.read_bytes())
    middle = len(data) // 4096 // 2 * 4096
    data[middle:middle + 4096] = bytes(4096)  # a zeroed page in the middle of the conversation
    path.write_bytes(bytes(data))
    before = digest(path)
    done = lovia("--db", str(path), tmp_path=tmp_path)
    assert done.returncode == 2, done.stderr
    assert "is corrupt" in done.stderr and "Restore it from a backup" in done.stderr
    assert "private words" not in done.stderr
    assert digest(path) == before
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("lovia.db")) == ["lovia.db"]


def test_a_dangling_symlink_is_refused_and_its_target_not_created(tmp_path):
    link = tmp_path / "lovia.db"
    link.symlink_to(tmp_path / "elsewhere.db")
    done = lovia("--db", str(link), tmp_path=tmp_path)
    assert done.returncode == 2, done.stderr
    assert "symlink" in done.stderr and "does not exist" in done.stderr
    assert not (tmp_path / "elsewhere.db").exists()


def test_an_unwritable_place_is_a_clear_error(tmp_path):
    done = lovia("--db", str(tmp_path / "missing" / "dir" / "lovia.db"), tmp_path=tmp_path)
    assert done.returncode == 2 and "does not exist" in done.stderr


@pytest.mark.parametrize("args, config, message", [
    (["--model", "gpt-4"], "", "--model: cannot read model 'gpt-4'"),
    ([], 'model = "gpt-4"', "model in {config}: cannot read model 'gpt-4'"),
    (["--theme", "neon"], "", "--theme: unknown theme 'neon'"),
    ([], 'theme = "neon"', "theme in {config}: unknown theme 'neon'"),
    ([], "trash_days = 1e9", "must be a number of days from 0 to 999,999"),
    ([], "model_timeout = 0", "model_timeout in {config} must be the seconds a model server may send nothing"),
    ([], 'model_timeout = "long"', "model_timeout in {config} must be the seconds"),
    ([], "max_turns = 0", "max_turns in {config} must be how many model turns a run may take, from 1 to 10,000"),
    ([], "max_turns = 2.5", "max_turns in {config} must be how many model turns"),
    ([], "model = [1", "is not valid TOML"),
    # The kind a value is, as the file names it, and an example of the form wanted (it said "got int").
    ([], "base_url = 8080", 'base_url in {config} must be text in quotes, e.g. base_url = "http://127.0.0.1:8080/v1"; '
                            "it is a number"),
    ([], "theme = true", "theme in {config} must be text in quotes, e.g. theme = \"lovia-light\"; it is true or false"),
    ([], "db = { path = 'x' }", 'db in {config} must be text in quotes, e.g. db = "~/team.db"; it is a table'),
    ([], 'colour = "red"', "has an unknown key colour; lovia reads base_url, db"),
    ([], 'colour = "red"\nsize = 2', "has unknown keys colour, size; lovia reads"),
    # Refused, but not said where a key goes instead.
    ([], 'api_key = "sk-in-the-file"', "has an unknown key api_key; lovia reads base_url, db, keys, max_turns, mcp, "
                                       "model, model_timeout, theme, trash_days. An API key is not read from the "
                                       "file: set LOVIA_API_KEY or OPENAI_API_KEY in the environment"),
    ([], '[openai]\napi_key = "sk-in-the-file"', "has an unknown key openai; lovia reads base_url, db, keys, "
                                                 "max_turns, mcp, model, model_timeout, theme, trash_days. An API key "
                                                 "is not read from the file"),
    (["--agent", "no_such_module:agent"], "", "cannot import 'no_such_module'"),
    (["--agent", "json:dumps"], "", "is not a lovia Agent"),
    (["--agent", "nocolon"], "", "MODULE:ATTR"),
    ([], '[mcp.servers.files]\nargs = ["x"]', "[mcp.servers.files] in"),
    ([], '[mcp.servers.files]\ncommand = "x"\nurl = "http://h/mcp"', "needs either command"),
    ([], '[mcp.servers.files]\ncommand = "x"\nargs = "--root ~"', "args in [mcp.servers.files]"),
    ([], '[mcp.servers.files]\ncommand = "x"\nenv = { TOKEN = 7 }', "env in [mcp.servers.files]"),
    ([], '[mcp.servers.files]\ncommand = "x"\nautostart = true', "has an unknown key autostart; it reads"),
    ([], '[mcp.servers.web]\nurl = "ws://h"', "must start with http:// or https://"),
    ([], '[mcp.servers.web]\nurl = "http://h/mcp"\nenabled = "no"', "enabled in [mcp.servers.web]"),
    ([], '[mcp.servers.web]\nurl = "http://h/mcp"\ntimeout = 0', "timeout in [mcp.servers.web]"),
    ([], '[mcp]\nfiles = 1', "holds only [mcp.servers.NAME] tables"),
    (["--mcp", "git"], "", "has no [mcp.servers.git]; its servers: none"),
    (["--mcp", "git", "--no-mcp"], "", "not allowed with argument"),
    # Taken, then every request failed ("Request URL is missing an 'http://' or 'https://' protocol").
    ([], 'model = "openai:x"\nbase_url = "not a url"', "base_url in {config}: the base URL is not an http://"),
    (["--model", "openai:x", "--base-url", "127.0.0.1:8080/v1"], "", "--base-url: the base URL is not an http://"),
])
def test_bad_options_and_config_are_clear_errors(tmp_path, args, config, message):
    (tmp_path / "config.toml").write_text(config)
    done = lovia(*args, tmp_path=tmp_path)
    assert done.returncode == 2, done.stderr
    assert message.format(config=tmp_path / "config.toml") in done.stderr


def test_a_key_in_the_config_file_is_never_quoted(tmp_path):
    (tmp_path / "config.toml").write_text('openai_api_key = "sk-in-the-file-0123456789"\n')
    done = lovia(tmp_path=tmp_path)
    assert done.returncode == 2 and "has an unknown key openai_api_key;" in done.stderr
    assert "An API key is not read from the file: set LOVIA_API_KEY" in done.stderr
    assert "sk-in-the-file" not in done.stderr + done.stdout


def test_a_bad_model_in_the_environment_is_named_there(tmp_path):
    done = lovia(tmp_path=tmp_path, env={"LOVIA_MODEL": "x"})
    assert done.returncode == 2 and "LOVIA_MODEL: cannot read model 'x'" in done.stderr


def _args(tmp_path, *argv):
    return build_parser().parse_args(["--db", str(tmp_path / "lovia.db"), *argv])


def test_the_app_is_built_on_the_offline_default(tmp_path, monkeypatch):
    monkeypatch.setenv("LOVIA_CONFIG", str(tmp_path / "none.toml"))
    monkeypatch.setenv("LOVIA_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("LOVIA_MODEL", raising=False)
    app = build_app(_args(tmp_path))
    assert app.model_label == "demo (offline)"
    assert app.backend.agent.name == "assistant"
    assert {t.name for t in app.backend.agent.tools} == {"current_time", "calculate", "wait"}
    assert (tmp_path / "lovia.db").exists()


def test_model_and_key_come_from_flags_env_and_config_and_the_key_is_never_shown(tmp_path, monkeypatch):
    monkeypatch.setenv("LOVIA_CONFIG", str(tmp_path / "config.toml"))
    monkeypatch.setenv("LOVIA_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("LOVIA_MODEL", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret-123")
    (tmp_path / "config.toml").write_text('model = "ollama:qwen2.5"\ntheme = "lovia-light"\n')
    app = build_app(_args(tmp_path))
    assert app.model_label == "ollama:qwen2.5" and app._default_theme == "lovia-light"
    monkeypatch.setenv("LOVIA_MODEL", "openai:gpt-4.1-mini")
    app = build_app(_args(tmp_path))
    assert app.model_label == "openai:gpt-4.1-mini"
    app = build_app(_args(tmp_path, "--model", "demo", "--theme", "lovia-high-contrast"))
    assert app.model_label == "demo (offline)" and app._initial_theme == "lovia-high-contrast"
    assert "sk-secret" not in repr(app.backend.agent.model) and "sk-secret" not in app.model_label


def test_your_own_agent(tmp_path, monkeypatch):
    (tmp_path / "my_agents.py").write_text(
        "from lovia import Agent\nsupport = Agent(name='support', instructions='Help.')\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LOVIA_CONFIG", str(tmp_path / "none.toml"))
    monkeypatch.setenv("LOVIA_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("LOVIA_MODEL", raising=False)
    app = build_app(_args(tmp_path, "--agent", "my_agents:support"))
    assert app.backend.agent.name == "support" and app.model_label == "agent support · demo (offline)"


def test_start_up_reads_an_existing_file_through_one_integrity_check(tmp_path, monkeypatch):
    # Each check reads the whole file (and, in rollback-journal mode, keeps writers of other
    # processes waiting meanwhile): from `lovia` starting to the app's stores in use, one pass.
    monkeypatch.setenv("LOVIA_CONFIG", str(tmp_path / "none.toml"))
    monkeypatch.setenv("LOVIA_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("LOVIA_MODEL", raising=False)
    path = tmp_path / "lovia.db"

    async def make():
        async with SQLiteSession(path, wal=True) as session:
            await session.append("u1", [UserMessage(text="hello")])

    asyncio.run(make())
    checks: list[str] = []
    connect = sqlite3.connect

    def traced_connect(*args, **kwargs):  # SQLite reports each statement it runs
        conn = connect(*args, **kwargs)
        conn.set_trace_callback(lambda sql: checks.append(sql) if "_check" in sql.lower() else None)
        return conn

    monkeypatch.setattr(sqlite3, "connect", traced_connect)
    app = build_app(_args(tmp_path))

    async def use_the_app_stores():  # what the app does once its UI runs
        await app.backend.session.list_sessions()
        await app.backend.checkpointer.list_runs()
        await app.backend.close()

    asyncio.run(use_the_app_stores())
    assert len(checks) == 1, checks
    assert "integrity_check" in checks[0]


def test_the_hosted_openai_api_without_a_key_is_refused_at_start(tmp_path):
    env = {"OPENAI_API_KEY": "", "LOVIA_API_KEY": "", "LOVIA_BASE_URL": "", "OPENAI_BASE_URL": ""}
    done = lovia("--model", "openai:gpt-4.1-mini", tmp_path=tmp_path, env=env)
    assert done.returncode == 2, done.stderr
    assert "needs an API key" in done.stderr and "OPENAI_API_KEY" in done.stderr and "--base-url" in done.stderr
    assert not (tmp_path / "data" / "lovia.db").exists()  # refused before anything was opened


@pytest.mark.parametrize("argv, env", [
    (["--model", "openai:gpt-4.1-mini"], {"OPENAI_API_KEY": "sk-secret-123"}),
    (["--model", "openai:gpt-4.1-mini"], {"LOVIA_API_KEY": "sk-secret-123"}),
    (["--model", "openai:qwen2.5", "--base-url", "http://127.0.0.1:8080/v1"], {}),  # llama.cpp, vLLM...
    (["--model", "openai:qwen2.5"], {"LOVIA_BASE_URL": "http://127.0.0.1:8000/v1"}),
    (["--model", "ollama:qwen2.5"], {}),
])
def test_a_key_or_a_local_server_is_enough(tmp_path, monkeypatch, argv, env):
    monkeypatch.setenv("LOVIA_CONFIG", str(tmp_path / "none.toml"))
    monkeypatch.setenv("LOVIA_DATA_DIR", str(tmp_path / "data"))
    for name in ("LOVIA_MODEL", "LOVIA_BASE_URL", "LOVIA_API_KEY", "OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    app = build_app(_args(tmp_path, *argv))
    assert app.model_label == argv[1]


def test_a_local_server_from_the_config_file_needs_no_key(tmp_path, monkeypatch):
    monkeypatch.setenv("LOVIA_CONFIG", str(tmp_path / "config.toml"))
    monkeypatch.setenv("LOVIA_DATA_DIR", str(tmp_path / "data"))
    for name in ("LOVIA_MODEL", "LOVIA_BASE_URL", "LOVIA_API_KEY", "OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    (tmp_path / "config.toml").write_text('model = "openai:local"\nbase_url = "http://127.0.0.1:8080/v1"\n')
    assert build_app(_args(tmp_path)).model_label == "openai:local"
    (tmp_path / "config.toml").write_text('model = "openai:gpt-4.1-mini"\n')
    with pytest.raises(UserError, match="needs an API key"):
        build_app(_args(tmp_path))


def test_the_model_timeout_of_the_config_file_is_the_models(tmp_path, monkeypatch):
    """A local model reading a long prompt on a CPU may send nothing for minutes: the 120 s the
    client waited could not be changed. The server here sends nothing for 3 s."""
    from lovia.errors import ModelError
    from lovia.models import ModelRequest
    from tests.models.sse_server import SSEServer

    monkeypatch.setenv("LOVIA_CONFIG", str(tmp_path / "config.toml"))
    monkeypatch.setenv("LOVIA_DATA_DIR", str(tmp_path / "data"))
    for name in ("LOVIA_MODEL", "LOVIA_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    with SSEServer() as server:
        (tmp_path / "config.toml").write_text(f'model = "openai:busy"\nbase_url = "{server.base_url}"\n'
                                              "model_timeout = 1\n")
        model = build_app(_args(tmp_path)).backend.agent.model  # opens the stores in a loop of its own

        async def ask() -> None:
            async for _ in model.stream(ModelRequest("", [UserMessage(text="hi")], [], "assistant")):
                pass

        started = time.monotonic()
        with pytest.raises(ModelError, match=r"no reply for 1 s"):
            asyncio.run(ask())
        assert time.monotonic() - started < 2.5 and len(server.requests) == 1


def test_max_turns_of_the_config_file_bounds_the_app_s_runs(tmp_path, monkeypatch):
    """The error of a model that called tools every turn said "raise max_turns", and nothing in the
    app could: the 25 turns were fixed."""
    from lovia.errors import MaxTurnsExceeded
    from lovia.models import ScriptedModel, ScriptedTurn, call

    monkeypatch.setenv("LOVIA_CONFIG", str(tmp_path / "config.toml"))
    monkeypatch.setenv("LOVIA_DATA_DIR", str(tmp_path / "data"))
    for name in ("LOVIA_MODEL", "LOVIA_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    (tmp_path / "config.toml").write_text("max_turns = 3\n")
    backend = build_app(_args(tmp_path)).backend
    assert backend.max_turns == 3
    backend.agent.model = ScriptedModel([ScriptedTurn(tool_calls=[call("current_time")])] * 5)

    async def run() -> None:
        started = await backend.send("s", "loop")
        async for _ in started.stream:
            pass

    with pytest.raises(MaxTurnsExceeded, match=r"^reached max_turns=3 without a final answer"):
        asyncio.run(run())


def test_the_model_timeout_reaches_the_models_your_own_agents_name(tmp_path, monkeypatch):
    """An ``--agent`` whose agents name their models as strings had them resolved by the runner,
    with the default 120 s: the config file's ``model_timeout`` did not reach them."""
    from lovia.errors import ModelError
    from lovia.models import ModelRequest
    from tests.models.sse_server import SSEServer

    (tmp_path / "my_agents.py").write_text(
        "from lovia import Agent\n"
        "billing = Agent(name='billing', model='openai:busy')\n"
        "triage = Agent(name='triage', model='openai:busy', handoffs=[billing])\n")
    monkeypatch.delitem(sys.modules, "my_agents", raising=False)  # another test's module of that name
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LOVIA_CONFIG", str(tmp_path / "config.toml"))
    monkeypatch.setenv("LOVIA_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("LOVIA_MODEL", raising=False)
    (tmp_path / "config.toml").write_text("model_timeout = 1\n")
    with SSEServer() as server:
        monkeypatch.setenv("LOVIA_BASE_URL", server.base_url)
        agent = build_app(_args(tmp_path, "--agent", "my_agents:triage")).backend.agent

        async def ask(model) -> None:
            async for _ in model.stream(ModelRequest("", [UserMessage(text="hi")], [], "assistant")):
                pass

        for model in (agent.model, agent.handoffs[0].model):
            started = time.monotonic()
            with pytest.raises(ModelError, match=r"no reply for 1 s"):
                asyncio.run(ask(model))
            assert time.monotonic() - started < 2.5
    (tmp_path / "my_agents.py").write_text(
        "from lovia import Agent\ntriage = Agent(name='triage', model='gpt-4o')\n")
    sys.modules.pop("my_agents", None)
    with pytest.raises(UserError, match=r"--agent: the model of agent 'triage': cannot read model 'gpt-4o'"):
        build_app(_args(tmp_path, "--agent", "my_agents:triage"))


def test_the_theme_flag_wins_then_the_last_pick_then_the_config_file(tmp_path, monkeypatch):
    monkeypatch.setenv("LOVIA_CONFIG", str(tmp_path / "config.toml"))
    monkeypatch.setenv("LOVIA_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("LOVIA_MODEL", raising=False)
    (tmp_path / "config.toml").write_text('theme = "lovia-light"\n')

    def theme_shown(*argv: str) -> str:
        app = build_app(_args(tmp_path, *argv))

        async def run() -> str:
            async with app.run_test(size=(100, 30)) as pilot:
                await pilot.pause()
                return app.theme

        return asyncio.run(run())

    assert theme_shown() == "lovia-light"  # nothing picked yet: the config file's
    (tmp_path / "data").mkdir(exist_ok=True)
    (tmp_path / "data" / "state.json").write_text('{"theme": "lovia-high-contrast"}')  # picked with ctrl+t
    assert theme_shown() == "lovia-high-contrast"
    assert theme_shown("--theme", "lovia-dark") == "lovia-dark"
    (tmp_path / "config.toml").write_text('theme = "neon"\n')
    with pytest.raises(UserError, match="unknown theme 'neon'"):
        build_app(_args(tmp_path))


def test_a_base_url_is_checked_only_for_a_model_that_talks_to_one(tmp_path, monkeypatch):
    monkeypatch.setenv("LOVIA_CONFIG", str(tmp_path / "config.toml"))
    monkeypatch.setenv("LOVIA_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("LOVIA_BASE_URL", "left over from another tool")
    assert build_app(_args(tmp_path, "--model", "demo")).model_label == "demo (offline)"
    with pytest.raises(UserError, match="LOVIA_BASE_URL: the base URL is not an http://"):
        build_app(_args(tmp_path, "--model", "openai:local"))


@pytest.mark.parametrize("command", [["doctor"], ["keys"]])
def test_a_reader_gone_before_a_command_writes_ends_it_quietly(tmp_path, command):
    """A new user's trial: ``lovia doctor | true`` and ``lovia keys | head -2`` ended on a
    BrokenPipeError traceback (``lovia export`` already ended quietly, with exit code 1)."""
    asyncio.run(_one_session(tmp_path / "lovia.db"))
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before anything is written: every write fails
    try:
        done = lovia(*command, *(["--db", str(tmp_path / "lovia.db")] if command == ["doctor"] else []),
                     tmp_path=tmp_path, stdout=write_end)
    finally:
        os.close(write_end)
    assert "Traceback" not in done.stderr and "Exception ignored" not in done.stderr, done.stderr
    assert done.returncode == 1


async def _one_session(path: Path) -> None:
    async with SQLiteSession(path) as store:
        await store.append("s-1", [UserMessage(text="hello")], run_id="r1")
