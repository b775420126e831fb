"""A user adds an MCP server to the config file and a model behind a real OpenAI-compatible server uses it.

The app is built as the ``lovia`` command builds it (``build_app``: the config file's
``[mcp.servers.NAME]`` table, ``model`` and ``base_url``), the model is served by the LiteLLM
proxy (a third-party server from PyPI, its answers scripted by ``lovia_handler.py``), and the MCP
server is the SDK test server, started by the app on stdio.
"""

from __future__ import annotations

import asyncio
import json
import sys

from lovia import SQLiteSession, ToolResult
from lovia.cli import build_app, build_parser
from tests.mcp.servers import TOOL_SERVER
from tests.models.test_litellm_proxy import proxy  # noqa: F401  (the fixture)
from tests.tui.conftest import settle, type_and_send


def test_a_server_in_the_config_file_gives_a_real_model_its_tools(proxy, tmp_path, monkeypatch):  # noqa: F811
    config = tmp_path / "config.toml"
    config.write_text(f"""
model = "openai:lovia-mcp"
base_url = "{proxy.base_url}"

[mcp.servers.tools]
command = {json.dumps(sys.executable)}
args = [{json.dumps(str(TOOL_SERVER))}]
env = {{ LOVIA_TEST_MCP_CALLS = {json.dumps(str(tmp_path / "calls.jsonl"))} }}
""")
    monkeypatch.setenv("LOVIA_CONFIG", str(config))
    monkeypatch.setenv("LOVIA_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("LOVIA_API_KEY", proxy.key)
    monkeypatch.delenv("LOVIA_MODEL", raising=False)
    monkeypatch.delenv("LOVIA_BASE_URL", raising=False)
    seen = len(proxy.requests())
    app = build_app(build_parser().parse_args([]))  # as the lovia command does: its own event loop, then the app's

    async def chat() -> str:
        async with app.run_test(size=(80, 24)) as pilot:
            await settle(pilot)
            await type_and_send(pilot, "what is 2 + 40?")
            shown = "\n".join(view.copy_text() for view in app.screen.chat.transcript.views)
            assert "The server says 42." in shown
            return app.screen.chat.session_id

    session_id = asyncio.run(chat())
    request = proxy.requests()[seen]
    offered = {tool["function"]["name"]: tool["function"] for tool in request["optional_params"]["tools"]}
    assert {"add", "whoami", "record", "current_time"} <= set(offered)
    assert offered["add"]["parameters"]["required"] == ["a", "b"]
    async def stored() -> list:
        async with SQLiteSession(tmp_path / "data" / "lovia.db") as session:
            return await session.load(session_id)

    entries = asyncio.run(stored())
    assert [e.output for e in entries if isinstance(e, ToolResult)] == ["42"]
    assert (tmp_path / "data" / "mcp-tools.log").exists()  # the server's own messages, off the screen


def test_lovia_with_mcp_names_a_server_the_config_file_lacks(tmp_path, monkeypatch):
    import pytest

    from lovia.errors import UserError

    config = tmp_path / "config.toml"
    config.write_text('[mcp.servers.files]\ncommand = "true"\n')
    monkeypatch.setenv("LOVIA_CONFIG", str(config))
    monkeypatch.setenv("LOVIA_DATA_DIR", str(tmp_path / "data"))
    with pytest.raises(UserError, match=r"--mcp git: the config file .* has no \[mcp.servers.git\]; its servers: files"):
        build_app(build_parser().parse_args(["--mcp", "git"]))
    app = build_app(build_parser().parse_args(["--no-mcp"]))
    assert app.backend.mcp.servers == []
    app = build_app(build_parser().parse_args(["--mcp", "files"]))
    assert [s.name for s in app.backend.mcp.servers] == ["files"] and app.backend.mcp.is_on(None, "files")


def test_servers_in_the_config_file_without_the_sdk_say_how_to_install_it(tmp_path, monkeypatch):
    import importlib.util

    import pytest

    from lovia.errors import UserError

    config = tmp_path / "config.toml"
    config.write_text('[mcp.servers.files]\ncommand = "true"\n')
    monkeypatch.setenv("LOVIA_CONFIG", str(config))
    monkeypatch.setenv("LOVIA_DATA_DIR", str(tmp_path / "data"))
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "mcp" else real_find_spec(name, *a))
    # By the SDK's own name: a package named lovia on PyPI is another project.
    with pytest.raises(UserError, match=r"pip install 'mcp>=2.0,<3' \(lovia's mcp extra: pip install -e "
                                        r"'\.\[mcp\]' in lovia's checkout\) \(or start with --no-mcp\)"):
        build_app(build_parser().parse_args([]))
    assert build_app(build_parser().parse_args(["--no-mcp"])).backend.mcp.servers == []


def test_env_and_headers_take_variables_from_the_environment_when_the_server_is_made(tmp_path, monkeypatch):
    import pytest

    from lovia.errors import UserError
    from lovia.tui.config import Config

    config = tmp_path / "config.toml"
    config.write_text('[mcp.servers.web]\nurl = "http://127.0.0.1:1/mcp"\n'
                      'headers = { Authorization = "Bearer ${LOVIA_TEST_TOKEN}" }\n'
                      '[mcp.servers.files]\ncommand = "serve"\nenv = { KEY = "${LOVIA_TEST_KEY}-x" }\n')
    monkeypatch.setenv("LOVIA_CONFIG", str(config))
    monkeypatch.setenv("LOVIA_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("LOVIA_TEST_KEY", raising=False)
    monkeypatch.setenv("LOVIA_TEST_TOKEN", "token-value")
    web, files = Config.load(config).mcp_servers  # loading needs no variable: a server made does
    assert web.server(tmp_path).headers == {"Authorization": "Bearer token-value"}
    with pytest.raises(UserError, match=r"env in \[mcp.servers.files\] in .* uses \$\{LOVIA_TEST_KEY\}, which is not set"):
        build_app(build_parser().parse_args([]))
    app = build_app(build_parser().parse_args(["--mcp", "web"]))  # the server needing it left out
    assert [s.name for s in app.backend.mcp.servers] == ["web"]
    monkeypatch.setenv("LOVIA_TEST_KEY", "k")
    assert files.server(tmp_path).env == {"KEY": "k-x"}
    config.write_text('[mcp.servers.files]\ncommand = "serve"\nheaders = { A = "b" }\n')
    with pytest.raises(UserError, match="headers in .* go with a url"):
        Config.load(config)
