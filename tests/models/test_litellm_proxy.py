"""OpenAIChatModel and the Runner against a real third-party OpenAI-compatible server: the LiteLLM proxy.

The proxy runs as a subprocess on a free port of 127.0.0.1, with ``litellm_proxy/config.yaml``;
its one model provider is the scripted handler in ``litellm_proxy/lovia_handler.py``, which
records every request as the proxy passed it on. Nothing leaves 127.0.0.1: the proxy reads its
cost map from the package (``LITELLM_LOCAL_MODEL_COST_MAP``) and its telemetry is off.

The proxy lives in a venv of its own (``litellm[proxy]`` pins ``rich<14``, which would hold
Textual back in ours): ``LOVIA_LITELLM`` names its ``litellm`` command, else the one in the
checkout's ``.venv-litellm`` (where ``.ci/run`` puts it), else ``litellm`` on ``PATH``. Without it
the tests skip, saying how to install it, except in CI (``CI=true``), where they fail instead.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from lovia import (
    BUILTIN_TOOLS,
    Agent,
    CheckpointOptions,
    ModelError,
    Runner,
    SQLiteCheckpointer,
    SQLiteSession,
    ToolCall,
    ToolResult,
)
from lovia.models import ModelRequest, OpenAIChatModel

HERE = Path(__file__).parent / "litellm_proxy"
LITELLM_VENV = Path(__file__).resolve().parents[2] / ".venv-litellm"
# The handler uses LiteLLM's streaming chunk types, so the version is pinned (here and in .ci/run).
INSTALL = (f"python3 -m venv {LITELLM_VENV} && {LITELLM_VENV}/bin/pip install 'litellm[proxy]==1.108.7'")
READY_WITHIN_SECONDS = 180  # a bound on waiting for start-up on a busy machine, not a measurement


@dataclass
class Proxy:
    base_url: str
    key: str
    record: Path
    log: Path

    def requests(self) -> list[dict[str, Any]]:
        """Every request the scripted handler got, in order."""
        if not self.record.exists():
            return []
        return [json.loads(line) for line in self.record.read_text().splitlines()]

    def model(self, name: str, **kwargs: Any) -> OpenAIChatModel:
        return OpenAIChatModel(name, base_url=self.base_url, api_key=self.key, retries=0, timeout=60, **kwargs)


def _litellm_command() -> str:
    bundled = LITELLM_VENV / "bin" / "litellm"
    command = os.environ.get("LOVIA_LITELLM") or (str(bundled) if bundled.exists() else shutil.which("litellm"))
    if command and os.access(command, os.X_OK):
        return command
    reason = f"the LiteLLM proxy is not installed; to run these tests: {INSTALL}"
    if os.environ.get("CI") == "true":
        pytest.fail(f"{reason} (CI must run them: .ci/run installs it and sets LOVIA_LITELLM)")
    pytest.skip(reason)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _wait_until_ready(process: subprocess.Popen[bytes], url: str, log: Path) -> None:
    deadline = time.monotonic() + READY_WITHIN_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"the LiteLLM proxy exited with {process.returncode} while starting:\n"
                        f"{log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(url, timeout=5) as answer:
                if answer.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.25)
    pytest.fail(f"the LiteLLM proxy did not answer {url} within {READY_WITHIN_SECONDS}s:\n{log.read_text()[-3000:]}")


@pytest.fixture(scope="module")
def proxy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Proxy]:
    command = _litellm_command()
    workdir = tmp_path_factory.mktemp("litellm")
    # The handler sits beside the config, where the proxy looks for it; the checkout stays untouched.
    for name in ("config.yaml", "lovia_handler.py"):
        shutil.copy(HERE / name, workdir / name)
    port, key = _free_port(), f"sk-lovia-test-{secrets.token_hex(16)}"
    record, log = workdir / "requests.jsonl", workdir / "proxy.log"
    env = {**os.environ, "LITELLM_MASTER_KEY": key, "LITELLM_LOCAL_MODEL_COST_MAP": "True",
           "LITELLM_TELEMETRY": "False", "LOVIA_TEST_RECORD": str(record)}
    with log.open("wb") as output:
        process = subprocess.Popen(
            [command, "--config", str(workdir / "config.yaml"), "--host", "127.0.0.1", "--port", str(port)],
            cwd=workdir, env=env, stdout=output, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True,  # its own process group: stopped with every worker it starts
        )
    try:
        _wait_until_ready(process, f"http://127.0.0.1:{port}/health/liveliness", log)
        yield Proxy(f"http://127.0.0.1:{port}/v1", key, record, log)
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def _assistant_messages(request: dict[str, Any]) -> list[dict[str, Any]]:
    return [m for m in request["messages"] if m["role"] == "assistant"]


async def test_a_run_with_a_tool_call_then_a_second_run_in_the_session(proxy, tmp_path):
    session, checkpointer = SQLiteSession(tmp_path / "c.db"), SQLiteCheckpointer(tmp_path / "c.db")
    agent = Agent(name="bot", model=proxy.model("lovia-tools"), tools=BUILTIN_TOOLS)
    seen = len(proxy.requests())
    first = await Runner.run(agent, "what is 6*7?", session=session, session_id="u1",
                             checkpoint=CheckpointOptions(checkpointer, "run-1"))
    assert first.final_output == "The answer is 42."
    assert [r.output for r in first.new_entries if isinstance(r, ToolResult)] == ["6*7 = 42"]
    assert (await checkpointer.load("run-1")).head.status == "completed"
    assert first.usage.known  # the proxy reports usage when asked with stream_options

    second = await Runner.run(agent, "and once more?", session=session, session_id="u1",
                              checkpoint=CheckpointOptions(checkpointer, "run-2"))
    assert second.final_output == "The answer is 42."
    requests = proxy.requests()[seen:]
    assert len(requests) == 4
    assert requests[0]["optional_params"]["tool_choice"] == "auto"
    assert "calculate" in [t["function"]["name"] for t in requests[0]["optional_params"]["tools"]]
    # The second run sent the first run's tool call back: with content "", never null.
    history = _assistant_messages(requests[2])
    assert [m.get("content", "absent") for m in history] == ["", "The answer is 42."]
    assert history[0]["tool_calls"][0]["function"] == {"name": "calculate", "arguments": '{"expression": "6*7"}'}
    await session.close()
    await checkpointer.close()


async def test_a_call_cut_off_by_the_token_limit(proxy, tmp_path):
    session = SQLiteSession(tmp_path / "c.db")
    agent = Agent(name="bot", model=proxy.model("lovia-cut"), tools=BUILTIN_TOOLS)
    seen = len(proxy.requests())
    result = await Runner.run(agent, "what is 12*12?", session=session, session_id="u1")
    (cut,) = [e for e in result.new_entries if isinstance(e, ToolCall)]
    assert cut.arguments == '{"expression": "12*' and cut.finish_reason == "length"
    (refusal,) = [e for e in result.new_entries if isinstance(e, ToolResult)]
    assert refusal.is_error and "cut off at the model's output token limit" in refusal.output
    assert result.final_output == "The answer is 42."

    await Runner.run(agent, "again", session=session, session_id="u1")
    requests = proxy.requests()[seen:]
    resent = [call["function"]["arguments"] for request in requests[1:] for m in _assistant_messages(request)
              for call in m.get("tool_calls") or ()]
    assert resent and set(resent) == {"{}"}  # never the unparseable text
    stored = [e.arguments for e in await session.load("u1") if isinstance(e, ToolCall)]
    assert stored[0] == '{"expression": "12*'  # the stored entry keeps what the model wrote
    await session.close()


async def test_error_bodies_of_the_proxy_are_shown(proxy):
    request = ModelRequest("", [], ())
    wrong_path = OpenAIChatModel("lovia-tools", base_url=proxy.base_url.replace("/v1", "/nowhere"),
                                 api_key=proxy.key, retries=0, timeout=60)
    with pytest.raises(ModelError) as caught:  # FastAPI's own {"detail": "Not Found"}
        [chunk async for chunk in wrong_path.stream(request)]
    assert "404" in str(caught.value) and "Not Found" in str(caught.value)

    with pytest.raises(ModelError) as caught:
        [chunk async for chunk in proxy.model("lovia-traceback").stream(request)]
    assert "answered 500" in str(caught.value) and "the scripted model crashed" in str(caught.value)
    assert proxy.key not in str(caught.value)
