"""Where lovia keeps its files, the user's config file, and what the app remembers.

- data: ``<user data dir>/lovia.db`` (platformdirs), holding sessions and checkpoints;
- config: ``<user config dir>/config.toml``, written by the user, read only:
  ``model = "ollama:qwen2.5"``, ``base_url = "http://127.0.0.1:8080/v1"``, ``theme = "lovia-light"``,
  and a ``[keys]`` table that moves actions to other keys (:mod:`lovia.tui.keymap`);
  ``trash_days = 30`` is how long a deleted session stays in the trash (f8) before it is purged;
  ``model_timeout = 120`` is how many seconds a model server may send nothing before the
  request fails (a local model reading a long prompt on a CPU may need more);
  ``max_turns = 25`` is how many model turns a run may take (each but the last calls tools);
  ``db = "~/team.db"`` or ``db = "postgresql://bob@db.internal/lovia"`` is where sessions and
  checkpoints live instead of ``lovia.db`` (``--db`` wins; a relative path is taken from the
  config file's directory; see :mod:`lovia.db_location`);
  ``[mcp.servers.NAME]`` tables are MCP servers whose tools the model is offered (:mod:`lovia.mcp`):
  ``command``, ``args`` and ``env`` for one lovia starts, or ``url`` for a streamable-HTTP one, and
  ``enabled = false`` to leave one off unless ``--mcp NAME`` asks for it;
- state: ``<user data dir>/state.json``, what the app remembers (the last theme), so the
  user's config file is never rewritten.
The API key is never read from or written to any file: it comes from the environment.
"""

from __future__ import annotations

import json
import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import platformdirs

from lovia._files import make_private_dirs, replace_file_privately, safe_file_name
from lovia._wording import toml_kind
from lovia.db_location import DbLocation, parse_db_location
from lovia.errors import UserError
from lovia.models.base import DEFAULT_MODEL_TIMEOUT
from lovia.runtime.runner import DEFAULT_MAX_TURNS
from lovia.tui.keymap import parse_keys

if TYPE_CHECKING:
    from lovia.mcp import MCPServer

APP_NAME = "lovia"
CONFIG_KEYS = {"trash_days", "model", "base_url", "model_timeout", "max_turns", "theme", "keys", "db", "mcp"}
MCP_SERVER_KEYS = {"command", "args", "env", "url", "headers", "enabled", "timeout"}
ENVIRONMENT_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
"""``${NAME}`` in an MCP server's ``env`` or ``headers`` value: taken from lovia's environment at start."""


def data_dir() -> Path:
    return Path(os.environ.get("LOVIA_DATA_DIR") or platformdirs.user_data_dir(APP_NAME))


_TEXT_EXAMPLES = {"model": '"ollama:qwen2.5"', "base_url": '"http://127.0.0.1:8080/v1"', "theme": '"lovia-light"',
                  "db": '"~/team.db"'}
"""The config file's text settings, each with an example of its form for an error that names it."""


def _not_text(key: str, value: object, path: Path) -> UserError:
    """The error for a text setting given another kind of value (the value is not quoted: it may be a secret)."""
    example = _TEXT_EXAMPLES.get(key, '"..."')
    return UserError(f"{key} in {path} must be text in quotes, e.g. {key} = {example}; it is {toml_kind(value)}")


def config_path() -> Path:
    return Path(os.environ.get("LOVIA_CONFIG") or Path(platformdirs.user_config_dir(APP_NAME)) / "config.toml")


def default_db_path() -> Path:
    return data_dir() / "lovia.db"


@dataclass(frozen=True)
class Config:
    """The user's config file, validated."""

    model: str | None = None
    base_url: str | None = None
    theme: str | None = None
    trash_days: float = 30.0
    """How long a deleted session stays in the trash before it is purged (0: at the next listing)."""
    model_timeout: float = DEFAULT_MODEL_TIMEOUT
    """Seconds a model server may send nothing (before its first chunk, or between two) before the request fails."""
    max_turns: int = DEFAULT_MAX_TURNS
    """How many model turns a run may take before it fails (a model calling tools in a loop)."""
    keys: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """The ``[keys]`` table, validated by :func:`lovia.tui.keymap.parse_keys`: action name -> keys."""
    db: DbLocation | None = None
    """Where sessions and checkpoints live (``None``: :func:`default_db_path`); ``--db`` wins over it."""
    mcp_servers: tuple[MCPServerSettings, ...] = ()
    """The ``[mcp.servers.NAME]`` tables, in the file's order."""

    @classmethod
    def load(cls, path: Path | None = None) -> Config:
        path = path or config_path()
        data = _read_config(path)
        if data is None:
            return cls()
        unknown = sorted(set(data) - CONFIG_KEYS)
        if unknown:
            # Under an unknown table too ([openai] api_key = ...): the value is never quoted.
            secret = any(_names_a_secret(key) or (isinstance(data[key], dict) and any(map(_names_a_secret, data[key])))
                         for key in unknown)
            hint = ". An API key is not read from the file: set LOVIA_API_KEY or OPENAI_API_KEY in the environment" \
                if secret else ""
            raise UserError(f"the config file {path} has {_unknown_keys(unknown)}; lovia reads "
                            f"{', '.join(sorted(CONFIG_KEYS))}{hint}")
        keys = parse_keys(data.pop("keys"), str(path)) if "keys" in data else {}
        mcp_servers = parse_mcp_servers(data.pop("mcp"), path) if "mcp" in data else ()
        trash_days = data.pop("trash_days", cls.trash_days)
        if isinstance(trash_days, bool) or not isinstance(trash_days, (int, float)) or not 0 <= trash_days < 1e6:
            raise UserError(f"trash_days in {path} must be a number of days from 0 to 999,999 (e.g. trash_days "
                            f"= 30; 0 keeps them until the next listing), got {trash_days!r}")
        model_timeout = data.pop("model_timeout", cls.model_timeout)
        if isinstance(model_timeout, bool) or not isinstance(model_timeout, (int, float)) \
                or not 1 <= model_timeout <= 86400:
            raise UserError(f"model_timeout in {path} must be the seconds a model server may send nothing, from 1 "
                            f"to 86,400 (e.g. model_timeout = 600), got {model_timeout!r}")
        max_turns = data.pop("max_turns", cls.max_turns)
        if isinstance(max_turns, bool) or not isinstance(max_turns, int) or not 1 <= max_turns <= 10_000:
            raise UserError(f"max_turns in {path} must be how many model turns a run may take, from 1 to 10,000 "
                            f"(e.g. max_turns = 50), got {max_turns!r}")
        for key, value in data.items():
            if not isinstance(value, str):
                raise _not_text(key, value, path)
        location = _db_in(data.pop("db", None), path)
        return cls(trash_days=float(trash_days), model_timeout=float(model_timeout), max_turns=max_turns, **data,
                   keys=keys, db=location, mcp_servers=mcp_servers)

    @classmethod
    def load_db(cls, path: Path | None = None) -> DbLocation | None:
        """Only the config file's ``db``: what ``lovia doctor`` and ``lovia export`` need, so that a
        mistake elsewhere in the file (a ``[keys]`` typo) does not stop the tools that check and save
        the data. The file must still be readable TOML."""
        path = path or config_path()
        data = _read_config(path)
        return _db_in(data.get("db"), path) if data is not None else None


def _read_config(path: Path) -> dict[str, Any] | None:
    """The config file's table; ``None`` when there is no file."""
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"cannot read the config file {path}: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise UserError(f"the config file {path} is not valid TOML ({exc}); fix or remove it") from None


def _db_in(db: object, path: Path) -> DbLocation | None:
    if db is None:
        return None
    if not isinstance(db, str):
        raise _not_text("db", db, path)
    return parse_db_location(db, source=f"db in {path}", relative_to=path.parent)


@dataclass(frozen=True)
class MCPServerSettings:
    """One ``[mcp.servers.NAME]`` table: a server the app may offer the model (see :mod:`lovia.mcp`)."""

    name: str
    command: str | None = None
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict, repr=False)  # may hold secrets: never shown
    url: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict, repr=False)  # may hold secrets: never shown
    enabled: bool = True
    """Offered in every session unless switched off there; ``false``: only with ``--mcp NAME``."""
    timeout: float = 60.0
    """Seconds one call may take."""
    source: str = ""
    """Where the table is, for errors: ``[mcp.servers.NAME] in PATH``."""

    def server(self, log_dir: Path) -> MCPServer:
        """A fresh, unstarted server; a stdio server's messages go to ``log_dir/mcp-NAME.log``.

        ``${NAME}`` in ``env`` and ``headers`` values is taken from the environment now (so a
        server left out by ``--mcp`` or ``--no-mcp`` needs none of its variables); a variable that
        is not set is a :class:`UserError` naming it.
        """
        from lovia.mcp import MCPServer

        env = _from_environment(self.env, "env", self.source)
        headers = _from_environment(self.headers, "headers", self.source)
        return MCPServer(self.name, command=self.command, args=self.args, env=env or None, url=self.url,
                         headers=headers or None, call_timeout=self.timeout,
                         log=log_dir / f"mcp-{safe_file_name(self.name)}.log")


def parse_mcp_servers(table: object, path: Path) -> tuple[MCPServerSettings, ...]:
    """The ``[mcp.servers.NAME]`` tables of the config file at ``path``, checked; errors say which and how to fix."""
    example = '[mcp.servers.files]\ncommand = "npx"\nargs = ["-y", "@modelcontextprotocol/server-filesystem", "~"]'
    if not isinstance(table, dict) or set(table) - {"servers"}:
        raise UserError(f"the [mcp] table in {path} holds only [mcp.servers.NAME] tables, e.g.\n{example}")
    servers = table.get("servers", {})
    if not isinstance(servers, dict):
        raise UserError(f"mcp.servers in {path} must be tables, one per server, e.g.\n{example}")
    found = []
    for name, settings in servers.items():
        where = f"[mcp.servers.{name}] in {path}"
        if not isinstance(settings, dict):
            raise UserError(f"{where} must be a table with a command or a url, e.g.\n{example}")
        unknown = sorted(set(settings) - MCP_SERVER_KEYS)
        if unknown:
            raise UserError(f"{where} has {_unknown_keys(unknown)}; it reads {', '.join(sorted(MCP_SERVER_KEYS))}")
        command, url = settings.get("command"), settings.get("url")
        if (command is None) == (url is None):
            raise UserError(f"{where} needs either command (a server lovia starts) or url (a streamable-HTTP "
                            "server), not both and not neither")
        for key in ("command", "url"):
            if key in settings and not (isinstance(settings[key], str) and settings[key].strip()):
                raise UserError(f"{key} in {where} must be a non-empty string")
        if url is not None and not url.startswith(("http://", "https://")):
            raise UserError(f"url in {where} must start with http:// or https://")
        args = settings.get("args", [])
        if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
            raise UserError(f"args in {where} must be a list of strings, e.g. args = [\"--root\", \"~/notes\"]")
        env = _secret_table(settings, "env", where, 'env = { API_TOKEN = "${MY_TOKEN}" }')
        headers = _secret_table(settings, "headers", where, 'headers = { Authorization = "Bearer ${MY_TOKEN}" }')
        if headers and url is None:
            raise UserError(f"headers in {where} go with a url; a server lovia starts (command) takes env instead")
        enabled = settings.get("enabled", True)
        if not isinstance(enabled, bool):
            raise UserError(f"enabled in {where} must be true or false")
        timeout = settings.get("timeout", 60.0)
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not 0 < timeout <= 86400:
            raise UserError(f"timeout in {where} must be the seconds one call may take, e.g. timeout = 60")
        found.append(MCPServerSettings(name, command, tuple(args), env, url, headers, enabled, float(timeout), where))
    return tuple(found)


def _secret_table(settings: Mapping[str, Any], key: str, where: str, example: str) -> dict[str, str]:
    """``settings[key]`` (``env`` or ``headers``), checked to be a table of strings.

    Its values may be secrets: an error names the key, never a value.
    """
    table = settings.get(key, {})
    if not isinstance(table, dict) or not all(isinstance(v, str) for v in table.values()):
        raise UserError(f"{key} in {where} must be a table of strings, e.g. {example}")
    return dict(table)


def _from_environment(table: Mapping[str, str], key: str, where: str) -> dict[str, str]:
    """``table``'s values with each ``${NAME}`` replaced by the environment's ``NAME``; an unset one is an error."""

    def value_of(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in os.environ:
            raise UserError(f"{key} in {where} uses ${{{name}}}, which is not set in the environment: set it "
                            "before starting lovia, or leave the server out (--mcp NAME for the others, or --no-mcp)")
        return os.environ[name]

    return {name: ENVIRONMENT_VARIABLE.sub(value_of, value) for name, value in table.items()}


class RememberedState:
    """Small facts the app remembers between runs, in ``state.json``; losing them loses nothing.

    The file is replaced atomically and is 0600, its new directories 0700, whatever the umask.
    """

    def __init__(self, path: Path | None = None) -> None:
        self.path = path or data_dir() / "state.json"

    def load(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def remember(self, **values: Any) -> None:
        data = self.load()
        data.update(values)
        try:
            make_private_dirs(self.path.parent)
            replace_file_privately(self.path, json.dumps(data, indent=2))
        except OSError:
            pass  # remembering is a convenience: never fail the app over it


def _unknown_keys(unknown: list[str]) -> str:
    """``an unknown key colour`` or ``unknown keys colour, size``."""
    return f"an unknown key {unknown[0]}" if len(unknown) == 1 else f"unknown keys {', '.join(unknown)}"


def _names_a_secret(key: str) -> bool:
    """Whether a config key looks meant for an API key or token (``api_key``, ``openai_api_key``, ``token``)."""
    words = set(key.lower().replace("-", "_").split("_"))
    # ``key`` alone is more likely ``keys`` mistyped than a secret.
    return bool(words & {"apikey", "token", "secret", "password"}) or ("key" in words and len(words) > 1)
