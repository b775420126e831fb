"""The ``lovia`` command: open the terminal UI on the user's data file."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from lovia import __version__
from lovia._files import safe_file_name
from lovia.agent import Agent, agent_graph
from lovia.builtin_tools import BUILTIN_TOOLS
from lovia.db_location import DbLocation, PostgresLocation, db_argument, postgres_store_classes
from lovia.errors import LoviaError, UserError
from lovia.mcp import SDK_INSTALL_HINT, sdk_installed

if TYPE_CHECKING:
    from lovia.checkpoint import Checkpointer
    from lovia.session import Session
    from lovia.tui.config import Config, RememberedState
    from lovia.tui.session_servers import SessionServers

DEFAULT_INSTRUCTIONS = (
    "You are lovia's assistant in a terminal. Be concise and use Markdown. You have tools: "
    "current_time, calculate and wait; use them when they help."
)


def build_parser() -> argparse.ArgumentParser:
    from lovia.themes import THEME_NAMES

    parser = argparse.ArgumentParser(
        prog="lovia",
        # The commands first, where a reader of the usage line looks for them (argparse's own
        # usage names the options only: export, doctor and keys were told in the last lines alone).
        usage="%(prog)s [options]\n"
              "       %(prog)s export SESSION_ID [--format md|jsonl] [--db PATH|URL] [-o FILE]\n"
              "       %(prog)s doctor [--db PATH|URL] [--quick] [--fix]\n"
              "       %(prog)s keys",
        description="Chat with an agent from the terminal; sessions and in-flight runs survive crashes. "
                    "With no options it opens your sessions on the offline demo model.",
        epilog="Environment: LOVIA_MODEL, LOVIA_BASE_URL, LOVIA_API_KEY or OPENAI_API_KEY, OLLAMA_HOST, "
               "LOVIA_CONFIG (the config file), LOVIA_DATA_DIR (where lovia.db lives), PGPASSWORD (or "
               "~/.pgpass) for a PostgreSQL URL without a password. "
               "lovia keys lists every action's name and key, for the config file's [keys] table. "
               "Commands: lovia export SESSION_ID [--format md|jsonl] [--db PATH|URL] [-o FILE] writes a session "
               "as Markdown or JSON lines. lovia doctor [--db PATH|URL] [--quick] [--fix] checks a database and "
               "says what to do.",
    )
    parser.add_argument("--version", action="version", version=f"lovia {__version__}")
    parser.add_argument("--db", type=db_argument, metavar="PATH|URL",
                        help="where sessions and checkpoints live: a SQLite file, or a PostgreSQL database as "
                             "postgresql://user@host/dbname (needs the postgres extra: pip install -e '.[postgres]'); "
                             "default: the "
                             "config file's db, else lovia.db in your user data directory")
    parser.add_argument("--agent", metavar="MODULE:ATTR", help="drive your own Agent, e.g. myproject.agents:support")
    parser.add_argument("--model", help="demo, openai:NAME or ollama:NAME (default: LOVIA_MODEL, the config file, "
                                        "else demo)")
    parser.add_argument("--base-url", help="an OpenAI-compatible endpoint, e.g. http://127.0.0.1:8080/v1")
    parser.add_argument("--theme", help=f"one of {', '.join(THEME_NAMES)} (or any Textual theme); remembered")
    mcp = parser.add_mutually_exclusive_group()
    mcp.add_argument("--mcp", action="append", metavar="NAME",
                     help="offer only this MCP server of the config file's [mcp.servers.NAME] tables (repeat for "
                          "more), even one with enabled = false; needs the mcp extra: pip install -e '.[mcp]'")
    mcp.add_argument("--no-mcp", action="store_true", help="offer no MCP server, whatever the config file says")
    return parser


def load_agent(spec: str) -> Agent:
    """Import ``module:attr`` (the current directory is importable) and check it is an Agent."""
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise UserError(f"--agent takes MODULE:ATTR, e.g. myproject.agents:support; got {spec!r}")
    sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise UserError(f"cannot import {module_name!r} for --agent: {exc}") from None
    agent = getattr(module, attr, None)
    if not isinstance(agent, Agent):
        raise UserError(f"{spec} is not a lovia Agent (found {type(agent).__name__})")
    return agent


async def open_stores(where: DbLocation) -> tuple[Session, Checkpointer]:
    """Open the app's two stores on ``where`` now, so that a database lovia must refuse is refused before the UI.

    A path: the SQLite stores. Opening validates the file before anything writes to it: a
    foreign file, a newer schema or a file failing SQLite's ``integrity_check`` raises a
    :class:`LoviaError` and is left as it was; a missing file is created and an older one
    migrated. The first store reads the whole file once for the check; the second, opened while
    the first holds the file, does not repeat it. The stores are then the app's own, used in the
    UI's event loop; on an error neither is left open.

    A :class:`~lovia.db_location.PostgresLocation`: the PostgreSQL stores (see
    :func:`open_postgres_stores`).
    """
    if isinstance(where, PostgresLocation):
        return await open_postgres_stores(where)
    from lovia.stores import SQLiteCheckpointer, SQLiteSession

    session, checkpointer = SQLiteSession(where, wal=True), SQLiteCheckpointer(where, wal=True)
    try:
        await session.open()
        await checkpointer.open()
    except BaseException:
        await checkpointer.close()
        await session.close()
        raise
    return session, checkpointer


async def open_postgres_stores(where: PostgresLocation) -> tuple[Session, Checkpointer]:
    """The PostgreSQL stores on ``where``, checked now: a server that is down, a wrong password, a database
    that does not exist or a newer schema raise a :class:`LoviaError` (naming the server without the
    password) before the UI, and nothing is written to the database.

    Both stores are opened here (which connects, and creates or migrates their tables under an
    advisory lock) and closed again; fresh, unopened stores on the same URL are returned. A
    connection pool belongs to the event loop that opened it, and the app runs in another one
    (the stores open themselves on first use there).
    """
    session_class, checkpointer_class = postgres_store_classes()
    session, checkpointer = session_class(where.url), checkpointer_class(where.url)
    try:
        await session.open()
        await checkpointer.open()
    finally:
        await checkpointer.close()
        await session.close()
    return session_class(where.url), checkpointer_class(where.url)


# ``lovia NAME ...`` runs a command instead of the app: NAME -> "module:function", imported only
# when used, the function taking the remaining arguments and returning the exit status.
COMMANDS: dict[str, str] = {
    "doctor": "lovia.doctor:main",
    "keys": "lovia.tui.keymap:main",
    "export": "lovia.export:main",
}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] in COMMANDS:
        module_name, _, function = COMMANDS[argv[0]].partition(":")
        command = getattr(importlib.import_module(module_name), function)
        try:
            status = command(argv[1:])
            sys.stdout.flush()  # a reader gone shows here, not in Python's own flush at exit
            return status
        except BrokenPipeError:
            # Whoever read standard output stopped early (``| head``, a pager quit): nothing more
            # can go there, and that is theirs to decide, not a failure to report with a traceback.
            # Exit code 1: not all was read. Standard output is pointed at /dev/null so that
            # Python's flush at exit does not complain again.
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return 1
    args = build_parser().parse_args(argv)
    try:
        app = build_app(args)
    except LoviaError as exc:
        print(f"lovia: {exc}", file=sys.stderr)
        return 2
    app.run()
    return app.return_code or 0


def first_given(*choices: tuple[str | None, str]) -> tuple[str, str]:
    """The first value given, with where it came from (a flag, a variable, the config file)."""
    for value, source in choices:
        if value:
            return value, source
    raise ValueError("no value given and no default")


def build_app(args: argparse.Namespace):
    from textual.theme import BUILTIN_THEMES

    from lovia._files import make_private_dirs
    from lovia.context import ContextPolicy, FileResultStore
    from lovia.models import URL_PROVIDERS, check_base_url, resolve_model
    from lovia.themes import THEME_NAMES
    from lovia.tui.app import LoviaApp
    from lovia.tui.backend import ChatBackend
    from lovia.tui.config import Config, RememberedState, config_path, data_dir, default_db_path

    config = Config.load()
    for theme, source in ((args.theme, "--theme"), (config.theme, f"theme in {config_path()}")):
        if theme and theme not in THEME_NAMES and theme not in BUILTIN_THEMES:
            raise UserError(f"{source}: unknown theme {theme!r}: use one of {', '.join(THEME_NAMES)} or a "
                            "Textual theme")
    model_spec, source = first_given((args.model, "--model"), (os.environ.get("LOVIA_MODEL"), "LOVIA_MODEL"),
                                     (config.model, f"model in {config_path()}"), ("demo", "the default"))
    base_url = None
    for given, where in ((args.base_url, "--base-url"), (os.environ.get("LOVIA_BASE_URL"), "LOVIA_BASE_URL"),
                         (config.base_url, f"base_url in {config_path()}")):
        if given:
            if model_spec.partition(":")[0] in URL_PROVIDERS:  # the demo model has no use for one
                try:
                    check_base_url(given)
                except UserError as exc:
                    raise UserError(f"{where}: {exc}") from None
            base_url = given
            break
    try:
        model = resolve_model(model_spec, base_url=base_url, timeout=config.model_timeout)
    except UserError as exc:
        raise UserError(f"{source}: {exc}") from None

    agent = load_agent(args.agent) if args.agent else Agent(
        name="assistant", instructions=DEFAULT_INSTRUCTIONS, tools=BUILTIN_TOOLS)
    if agent.model is None:
        agent.model = model
    try:
        members = list(agent_graph(agent).values())
    except LoviaError:  # two agents share a name: their first run says so
        members = [agent]
    for member in members:
        if isinstance(member.model, str):  # else the runner resolves it, without the config's model_timeout
            try:
                member.model = resolve_model(member.model, timeout=config.model_timeout)
            except UserError as exc:
                raise UserError(f"--agent: the model of agent {member.name!r}: {exc}") from None
    check_api_key(agent.model)
    label = agent.model if isinstance(agent.model, str) else agent.model.name
    label = f"{label} (offline)" if getattr(agent.model, "offline", False) else label
    if args.agent:
        label = f"agent {agent.name} · {label}"

    db: DbLocation = args.db or config.db or default_db_path()
    if args.db is None and config.db is None and isinstance(db, Path):
        try:
            make_private_dirs(db.parent)  # parents too: 0700 whatever the umask
        except OSError as exc:
            raise UserError(f"cannot create the data directory {db.parent}: {exc.strerror}") from None
    state = RememberedState(data_dir() / "state.json")
    servers = session_servers(config, args, state, db)
    log_agents_servers(agent, db)
    session, checkpointer = asyncio.run(open_stores(db))
    backend = ChatBackend(
        session, checkpointer, agent,
        # the archive makes its own directory (0700) when it first keeps an output
        context_policy=ContextPolicy(result_store=FileResultStore(archive_dir(db))),
        trash_days=config.trash_days, mcp=servers, max_turns=config.max_turns,
    )
    # --theme wins, then the theme the user last picked in the app (ctrl+t), then the config file's
    return LoviaApp(backend, model_label=label, theme=args.theme, default_theme=config.theme, state=state,
                    tune_collector_for_startup=True, keys=config.keys)


def session_servers(config: Config, args: argparse.Namespace, state: RememberedState, db: DbLocation) -> SessionServers:
    """The MCP servers of the config file the app may offer, as ``--mcp`` and ``--no-mcp`` choose them.

    Without either flag every server is listed, on in every session unless ``enabled = false``;
    ``--mcp NAME`` lists only the named ones, on by default; ``--no-mcp`` lists none. A stdio
    server's messages go to ``mcp-NAME.log`` beside the tool-output archive.
    """
    from lovia.tui.config import config_path
    from lovia.tui.session_servers import SessionServers

    settings = list(config.mcp_servers)
    if args.no_mcp:
        return SessionServers(state=state)
    if args.mcp:
        known = {s.name for s in settings}
        unknown = [name for name in args.mcp if name not in known]
        if unknown:
            have = ", ".join(sorted(known)) or "none (add [mcp.servers.NAME] tables to it)"
            raise UserError(f"--mcp {unknown[0]}: the config file {config_path()} has no [mcp.servers.{unknown[0]}]; "
                            f"its servers: {have}")
        settings = [s for s in settings if s.name in args.mcp]
        on = {s.name for s in settings}
    else:
        on = {s.name for s in settings if s.enabled}
    if settings:
        check_mcp_installed()
    return SessionServers([s.server(mcp_log_dir(db)) for s in settings], on_by_default=on, state=state)


def mcp_log_dir(db: DbLocation) -> Path:
    """Where the MCP servers lovia starts write their messages (``mcp-NAME.log``): beside the tool-output archive."""
    return archive_dir(db).parent


def log_agents_servers(agent: Agent, db: DbLocation) -> None:
    """Give the MCP servers of ``--agent``'s agents that have no log one (their messages would be lost under the UI)."""
    with contextlib.suppress(LoviaError):  # two agents share a name: their first run says so
        for server in (s for a in agent_graph(agent).values() for s in a.mcp_servers):
            if server.log is None and server.command is not None:
                server.log = mcp_log_dir(db) / f"mcp-{safe_file_name(server.name)}.log"


def check_mcp_installed() -> None:
    """Refuse to start when the config file names servers and the SDK is missing (found, not imported:
    the SDK is imported when a server first starts, so start-up does not wait for it)."""
    if not sdk_installed():
        raise UserError(f"the config file names MCP servers, but the MCP SDK is not installed: {SDK_INSTALL_HINT} "
                        "(or start with --no-mcp)")


def archive_dir(db: DbLocation) -> Path:
    """Where long tool outputs are archived (:class:`lovia.context.FileResultStore`): beside a SQLite file;
    for a PostgreSQL database, on this machine under the user data directory, one folder per server and
    database (the archive is files, so each machine keeps the outputs its own runs archived)."""
    if isinstance(db, Path):
        return db.parent / "tool-outputs"
    from lovia.tui.config import data_dir

    parts = urlsplit(db.url)
    name = "-".join(part for part in (parts.hostname or "local", str(parts.port or 5432),
                                       parts.path.strip("/") or parts.username or "default") if part)
    return data_dir() / "postgres" / safe_file_name(name) / "tool-outputs"


def check_api_key(model: object) -> None:
    """Refuse to start on the hosted OpenAI endpoint without a key, saying what to set.

    A model at a local ``base_url`` (Ollama, llama.cpp, vLLM...) needs no key and passes.
    """
    openai_chat = sys.modules.get("lovia.models.openai_chat")
    if openai_chat is None:
        return  # never imported, so ``model`` is not one of its models: the demo model starts without the client
    if isinstance(model, openai_chat.OpenAIChatModel) and model.missing_key:
        raise UserError(
            f"{model.name} needs an API key for the OpenAI API: set LOVIA_API_KEY or OPENAI_API_KEY in the "
            "environment; for a local server give its address with --base-url (or LOVIA_BASE_URL), "
            "e.g. http://127.0.0.1:8080/v1, or use --model ollama:NAME"
        )


if __name__ == "__main__":
    sys.exit(main())
