"""Where lovia keeps its files, the user's config file, and what the app remembers.

- data: ``<user data dir>/lovia.db`` (platformdirs), holding sessions and checkpoints;
- config: ``<user config dir>/config.toml``, written by the user, read only:
  ``model = "ollama:qwen2.5"``, ``base_url = "http://127.0.0.1:8080/v1"``, ``theme = "lovia-light"``,
  and a ``[keys]`` table that moves actions to other keys (:mod:`lovia.tui.keymap`);
  ``trash_days = 30`` is how long a deleted session stays in the trash (f8) before it is purged;
  ``db = "~/team.db"`` or ``db = "postgresql://bob@db.internal/lovia"`` is where sessions and
  checkpoints live instead of ``lovia.db`` (``--db`` wins; a relative path is taken from the
  config file's directory; see :mod:`lovia.db_location`);
- state: ``<user data dir>/state.json``, what the app remembers (the last theme), so the
  user's config file is never rewritten.
The API key is never read from or written to any file: it comes from the environment.
"""

from __future__ import annotations

import json
import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import platformdirs

from lovia._files import make_private_dirs, replace_file_privately
from lovia.db_location import DbLocation, parse_db_location
from lovia.errors import UserError
from lovia.tui.keymap import parse_keys

APP_NAME = "lovia"
CONFIG_KEYS = {"trash_days", "model", "base_url", "theme", "keys", "db"}


def data_dir() -> Path:
    return Path(os.environ.get("LOVIA_DATA_DIR") or platformdirs.user_data_dir(APP_NAME))


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
    keys: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """The ``[keys]`` table, validated by :func:`lovia.tui.keymap.parse_keys`: action name -> keys."""
    db: DbLocation | None = None
    """Where sessions and checkpoints live (``None``: :func:`default_db_path`); ``--db`` wins over it."""

    @classmethod
    def load(cls, path: Path | None = None) -> Config:
        path = path or config_path()
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return cls()
        except (OSError, UnicodeDecodeError) as exc:
            raise UserError(f"cannot read the config file {path}: {exc}") from None
        except tomllib.TOMLDecodeError as exc:
            raise UserError(f"the config file {path} is not valid TOML ({exc}); fix or remove it") from None
        unknown = sorted(set(data) - CONFIG_KEYS)
        if unknown:
            raise UserError(f"the config file {path} has unknown keys {', '.join(unknown)}; "
                            f"lovia reads {', '.join(sorted(CONFIG_KEYS))}")
        keys = parse_keys(data.pop("keys"), str(path)) if "keys" in data else {}
        trash_days = data.pop("trash_days", cls.trash_days)
        if isinstance(trash_days, bool) or not isinstance(trash_days, (int, float)) or not 0 <= trash_days < 1e6:
            raise UserError(f"trash_days in {path} must be a number of days, 0 or more (e.g. trash_days = 30), "
                            f"got {trash_days!r}")
        for key, value in data.items():
            if not isinstance(value, str):
                raise UserError(f"{key} in {path} must be a string, got {type(value).__name__}")
        db = data.pop("db", None)
        location = parse_db_location(db, source=f"db in {path}", relative_to=path.parent) if db is not None else None
        return cls(trash_days=float(trash_days), **data, keys=keys, db=location)


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
