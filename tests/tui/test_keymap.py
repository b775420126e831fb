"""The keymap: every binding has a stable name, the config file's [keys] table moves it (in the real
app, at 80x24 and full size), the footer, help and palette show the keys in force, clashes are
reported, and a wrong table is refused with a message that says what to fix."""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from lovia import Agent, tool
from lovia.cli import main as lovia_main
from lovia.errors import UserError
from lovia.models import ScriptedModel, ScriptedTurn, call
from lovia.tui.config import Config
from lovia.tui.keymap import (
    TAKE_TURNS,
    Keymap,
    actions,
    builtin_bindings,
    lovia_binding_classes,
    own_bindings,
    parse_keys,
)
from lovia.tui.screens.help import HelpScreen, key_table
from lovia.tui.screens.main import MainScreen
from lovia.tui.screens.trash import TrashScreen
from lovia.tui.widgets.footer import LoviaFooter
from tests.tui.conftest import make_app, settle, told, type_and_send, wait_for

ROOT = Path(__file__).resolve().parents[2]
SIZES = [(80, 24), (160, 45)]


def config_file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


# -- every binding is named ----------------------------------------------------------------------


def test_every_binding_in_lovia_tui_has_an_id_naming_its_scope_and_action():
    classes = lovia_binding_classes()
    assert {c.__name__ for c in classes} >= {"LoviaApp", "MainScreen", "ChatPanel", "Composer", "Transcript",
                                             "SessionList", "SessionFilter", "RunList", "CheckpointInspector",
                                             "HelpScreen", "ConfirmScreen"}
    for cls in classes:
        for binding in own_bindings(cls):
            assert binding.id is not None, f"{cls.__name__}: the binding {binding.key} -> {binding.action} has no id"
            assert re.fullmatch(r"[a-z][a-z-]*\.[a-z][a-z0-9_]*", binding.id), binding.id


def test_ids_are_unique_per_scope_one_id_one_action():
    """One id names one action: two bindings with one id (in one class or in two, the sessions list
    and its filter both rename) must run the same action, so one [keys] entry moves one thing."""
    action_of: dict[str, str] = {}
    for cls in lovia_binding_classes():
        ids_here: dict[str, str] = {}
        for binding in own_bindings(cls):
            assert binding.id is not None
            # one Binding("r,enter") expands to one binding a key: the same id, the same action
            assert ids_here.setdefault(binding.id, binding.action) == binding.action, binding.id
            assert action_of.setdefault(binding.id, binding.action) == binding.action, \
                f"{binding.id} names {action_of[binding.id]} and {binding.action}"
        declared = [b.id for b in cls.__dict__["BINDINGS"]]
        assert len(declared) == len(set(declared)), f"{cls.__name__} declares an id twice: {declared}"


def test_the_default_keys_have_no_clash():
    """Holds every binding added later to the clash rule: pick another key, or list the actions in
    TAKE_TURNS if only one of them ever applies at a time."""
    assert Keymap().clashes() == []
    for group in TAKE_TURNS:
        assert group <= set(actions()), group - set(actions())


# -- the [keys] table --------------------------------------------------------------------------


def test_keys_table_in_every_toml_form(tmp_path):
    path = config_file(tmp_path, '''
model = "demo"

[keys]
transcript.copy = "ctrl+y"                # a dotted bare key: TOML makes it a table
"main.toggle_sessions" = "f4, ctrl+b"     # quoted, two keys
app.help = ["f1", "?"]                    # a list; ? is Textual's question_mark
sessions.filter = "/"

[keys.runs]
discard = "X"
''')
    config = Config.load(path)
    assert config.model == "demo"
    assert dict(config.keys) == {
        "transcript.copy": ("ctrl+y",), "main.toggle_sessions": ("f4", "ctrl+b"),
        "app.help": ("f1", "question_mark"), "sessions.filter": ("slash",), "runs.discard": ("X",),
    }
    keymap = Keymap(config.keys)
    assert keymap.key_text("app.help") == "f1 / ?"
    assert keymap.is_rebound("transcript.copy") and not keymap.is_rebound("sessions.filter")
    assert keymap.keys("transcript.edit") == ("e",)


def test_no_keys_table_is_the_defaults(tmp_path):
    assert Config.load(config_file(tmp_path, 'theme = "lovia-light"\n')).keys == {}
    assert Config.load(tmp_path / "missing.toml").keys == {}


@pytest.mark.parametrize(("table", "says"), [
    ('transcript.kopy = "c"', ["unknown action 'transcript.kopy'", "did you mean transcript.copy?", "lovia keys"]),
    ('copy_run_id = "c"', ["unknown action 'copy_run_id'", "did you mean runs.copy_run_id or inspector.copy_run_id?"]),
    ('[keys.transcript]\ncopy = "c"\nwhatever = "x"', ["unknown action 'transcript.whatever'"]),
    ('transcript.copy = "ctl+y"', ["transcript.copy", "'ctl+y'", "'ctl', which is not a modifier"]),
    ('transcript.copy = "Escape"', ["'Escape'", "lowercase (escape)"]),
    ('transcript.copy = "bogus"', ["'bogus' is not a key Textual knows"]),
    ('transcript.copy = "ctrl+y,"', ["'' is empty"]),
    ('transcript.copy = []', ["has no key"]),
    # Named as the file names them, not as Python does ("got int").
    ('transcript.copy = 3', ["must be a key or a list of keys", "it is a number"]),
    ('transcript.copy = ["ctrl+y", 3]', ["must be a key or a list of keys", "it is a list holding a number"]),
])
def test_a_wrong_keys_table_is_a_clear_error(tmp_path, table, says):
    text = table if table.startswith("[keys.") else f"[keys]\n{table}\n"
    path = config_file(tmp_path, text)
    with pytest.raises(UserError) as caught:
        Config.load(path)
    message = str(caught.value)
    assert str(path) in message
    for part in says:
        assert part in message, (part, message)


def test_keys_must_be_a_table(tmp_path):
    with pytest.raises(UserError, match=r"keys in .* must be a table \(\[keys\]\)"):
        Config.load(config_file(tmp_path, 'keys = "ctrl+y"\n'))


def test_lovia_refuses_a_wrong_keys_table_before_the_ui(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("LOVIA_CONFIG", str(config_file(tmp_path, '[keys]\ntranscript.kopy = "c"\n')))
    monkeypatch.setenv("LOVIA_DATA_DIR", str(tmp_path / "data"))
    assert lovia_main([]) == 2
    err = capsys.readouterr().err
    assert err.startswith("lovia: [keys] in ") and "unknown action 'transcript.kopy'" in err
    assert not (tmp_path / "data").exists()  # refused before anything was opened


# -- clashes -----------------------------------------------------------------------------------


def clash_keys(**rebound: str) -> dict[str, list[str]]:
    keymap = Keymap({name.replace("__", "."): tuple(keys.split(",")) for name, keys in rebound.items()})
    return {clash.key: list(clash.names) for clash in keymap.clashes()}


def test_clash_in_one_pane():
    assert clash_keys(transcript__copy="e") == {"e": ["transcript.copy", "transcript.edit"]}


def test_clash_between_the_app_and_the_main_screen():
    # non-priority: the main screen's ctrl+b would take it first, so help would never open there
    assert clash_keys(app__help="ctrl+b") == {"ctrl+b": ["app.help", "main.toggle_sessions"]}


def test_a_priority_binding_shadowing_a_pane():
    clashes = Keymap({"transcript.copy": ("escape",)}).clashes()
    assert [c.key for c in clashes] == ["escape"]
    assert "main.stop_run" in clashes[0].names and "transcript.copy" in clashes[0].names
    assert "main.stop_run takes it first, in the transcript too" in str(clashes[0])


def test_panes_side_by_side_and_dialogs_do_not_clash():
    # c copies in the transcript and in the runs list; y in a yes/no dialog is not the app's
    assert clash_keys(runs__discard="c") == {"c": ["runs.copy_run_id", "runs.discard"]}  # its own pane only
    assert clash_keys(app__next_theme="y") == {"y": ["app.next_theme", "transcript.copy_code"]}  # not confirm.yes
    assert clash_keys(app__next_theme="f12") == {}
    # the app's priority keys do reach a dialog
    assert "confirm.yes" in clash_keys(app__next_pane="y")["y"]


def test_a_key_a_widget_has_built_in_is_a_clash():
    from lovia.tui.widgets.composer import Composer

    assert "ctrl+k" in {b.key for b in builtin_bindings(Composer)}
    assert clash_keys(composer__newline="ctrl+k") == {
        "ctrl+k": ["composer.newline", "the composer's own delete_to_end_of_line_or_delete_line"]}
    # in a place that holds the widget, or held by it: the text area's f7 shadows the app's theme key
    # while the composer has focus, and the main screen's tab (next pane) is lost in the transcript
    assert clash_keys(app__next_theme="f7") == {"f7": ["app.next_theme", "the composer's own select_all"]}
    assert clash_keys(transcript__copy="tab") == {"tab": ["transcript.copy", "the main screen's own app.focus_next"]}
    assert clash_keys(sessions__delete="pageup")["pageup"][1] == "the sessions list's own page_up"


def test_moving_one_of_two_actions_on_a_key_keeps_the_other_there():
    """Textual drops every binding on a moved binding's old keys in that widget: the other action
    on escape (cancelling an edit) is given its key again."""
    keymap = Keymap({"chat.stop": ("f11",)})
    assert keymap.textual_keymap() == {"chat.stop": "f11", "chat.cancel_edit": "escape"}
    assert keymap.clashes() == []


# -- in the real app ---------------------------------------------------------------------------


def footer_keys(app) -> dict[str, str]:
    return {entry.action: entry.key for entry, _, _ in app.screen.query_one(LoviaFooter).spans()}


@pytest.mark.parametrize("size", SIZES)
async def test_a_moved_key_works_and_the_old_one_no_longer_does(tmp_path, size):
    app = make_app(tmp_path / "lovia.db", keys={"app.help": ("question_mark",), "main.toggle_runs": ("f4",)})
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        app.screen.chat.transcript.focus()
        await pilot.pause()
        await pilot.press("f1")
        await pilot.pause()
        assert not isinstance(app.screen, HelpScreen)  # the old key does nothing now
        await pilot.press("question_mark")
        await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen))
        await pilot.press("escape")
        await wait_for(pilot, lambda: isinstance(app.screen, MainScreen))

        main = app.screen
        shown = main.pane_shown("runs")
        await pilot.press("ctrl+o")
        await pilot.pause()
        assert main.pane_shown("runs") == shown
        await pilot.press("f4")
        await wait_for(pilot, lambda: main.pane_shown("runs") != shown)
        assert footer_keys(app).get("help") == "question_mark"  # always shown, whatever the width
        if size == (160, 45):
            assert footer_keys(app).get("toggle_pane('runs')") == "f4"


@pytest.mark.parametrize("size", SIZES)
async def test_a_moved_key_in_a_pane_and_in_the_composer(tmp_path, size):
    app = make_app(tmp_path / "lovia.db", keys={"composer.send": ("f9",), "transcript.copy": ("ctrl+y",)})
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        composer = app.screen.chat.composer
        composer.focus()
        await pilot.press("h", "i", "enter", "t", "h", "e", "r", "e")
        await pilot.pause()
        assert composer.text == "hi\nthere"  # enter no longer sends: it is the text area's new line
        assert "f9 to send" in str(composer.placeholder)
        await pilot.press("f9")
        await wait_for(pilot, lambda: not app.screen.chat.running and app.screen.chat.has_history)
        await settle(pilot)
        transcript = app.screen.chat.transcript
        transcript.focus()
        await pilot.press("home")
        await pilot.press("c")
        await pilot.pause()
        assert not app.clipboard
        await pilot.press("ctrl+y")
        await wait_for(pilot, lambda: app.clipboard.startswith("hi"))
        # in its declared place (Textual puts a moved binding last, where 80 columns would leave it out)
        assert footer_keys(app).get("copy") == "ctrl+y"
        actions_shown = [entry.action for entry in app.screen.query_one(LoviaFooter).entries]
        # (expand, declared before it, does nothing for a message, and the footer leaves it out)
        assert actions_shown.index("copy") == 0 and actions_shown.index("edit") == 1


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("rebound", ["transcript.fork", "transcript.copy"])
async def test_a_key_given_in_keys_to_another_transcript_action_runs_that_action_not_edit(tmp_path, size, rebound):
    # The clash notice said "transcript.fork takes it", the footer showed "e Fork", and e edited (the
    # transcript reads e, f and t itself, before the bindings, and asked for edit's default keys).
    app = make_app(tmp_path / "lovia.db", keys={rebound: ("e",)})
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        assert f"e: {rebound} takes it in the transcript, so transcript.edit has no key" in told(app)[0].message
        await type_and_send(pilot, "hello there")
        chat = app.screen.chat
        chat.transcript.focus()
        await pilot.press("up")
        await settle(pilot)
        await pilot.press("e")
        await settle(pilot)
        assert not chat.composer.has_class("-editing")
        if rebound == "transcript.fork":
            assert any(n.message.startswith("Forked:") for n in told(app))
        else:
            assert app.clipboard == "hello there"
    rows = {row.name: row for _, group in key_table(Keymap({rebound: ("e",)})) for row in group}
    assert rows["transcript.edit"].lost == "e" and rows[rebound].lost is None  # the help says so on its row


def test_a_key_lost_in_one_place_only_is_still_in_force_elsewhere():
    # ctrl+j is the composer's new line: chat.resume loses it there only, and keeps it in the transcript.
    keymap = Keymap({"chat.resume": ("ctrl+j",)})
    assert "chat.resume has no key in the composer" in str(keymap.clashes()[0])
    assert keymap.keys_in_force("chat.resume") == ("ctrl+j",) and keymap.lost_key_text("chat.resume") is None
    assert keymap.keys_in_force("composer.newline") == ("ctrl+j",)


@pytest.mark.parametrize("size", SIZES)
async def test_enter_given_to_a_new_line_in_keys_makes_a_new_line_and_does_not_send(tmp_path, size):
    app = make_app(tmp_path / "lovia.db", keys={"composer.newline": ("enter",)})
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        composer = app.screen.chat.composer
        composer.focus()
        await pilot.press("h", "i", "enter", "y", "o")
        await settle(pilot)
        assert composer.text == "hi\nyo" and not app.screen.chat.has_history


async def test_the_help_and_the_palette_show_the_keys_in_force(tmp_path):
    keymap = {"main.toggle_sessions": ("f4",), "app.next_pane": ("f7",)}
    rows = {row.name: row for _, group in key_table(Keymap(keymap)) for row in group}
    assert rows["main.toggle_sessions"].keys == "f4" and rows["main.toggle_sessions"].default == "ctrl+b"
    assert rows["main.toggle_runs"].keys == "ctrl+o" and rows["main.toggle_runs"].default is None
    assert set(actions()) <= set(rows), "the help lists every action by its name"

    app = make_app(tmp_path / "lovia.db", keys=keymap)
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot)
        commands = {c.title: c.help for c in app.get_system_commands(app.screen)}
        assert commands["Next pane"] == "Move focus to the next pane (f7)"
        assert "(f4)" in "".join(help_text for title, help_text in commands.items() if "sessions pane" in title)
        await pilot.press("f7")  # moves focus: the app's priority key, moved
        await pilot.pause()
        await pilot.press("f1")
        await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen))
        screen = app.export_screenshot()
        assert "main.toggle_sessions" in screen and "(default&#160;ctrl+b)" in screen


async def test_a_clash_is_reported_when_the_app_starts(tmp_path):
    app = make_app(tmp_path / "lovia.db", keys={"app.help": ("ctrl+b",)})
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        warnings = [n for n in told(app) if n.severity == "warning"]
        assert len(warnings) == 1
        assert "ctrl+b: main.toggle_sessions takes it in the main screen, so app.help has no key" in warnings[0].message
        assert "[keys]" in warnings[0].message and "[keys]" in warnings[0].title
        await pilot.press("ctrl+b")  # the app works on: the main screen's ctrl+b takes the key there
        await pilot.pause()
        assert isinstance(app.screen, MainScreen)


@pytest.mark.parametrize("size", SIZES)
async def test_the_clash_notice_leaves_a_dialog_uncovered_and_the_help_lists_the_clashes(tmp_path, size):
    """Shown 30 s at the bottom right, the notice covered the key line of a dialog opened meanwhile."""
    app = make_app(tmp_path / "lovia.db", keys={"app.next_theme": ("ctrl+b",)})
    async with app.run_test(size=size, notifications=True) as pilot:
        await settle(pilot)
        main = app.screen
        (toast,) = main.query("Toast")
        assert "f1 lists them again." in toast.render().plain
        await pilot.press("f8")  # the trash
        await wait_for(pilot, lambda: isinstance(app.screen, TrashScreen))
        await pilot.pause()
        # Gone from the dialog and from the main screen under it, which showed through (dimmed)
        assert not app.screen.query("Toast") and not main.query_one("ToastRack").display
        assert "close" in app.export_screenshot().replace("&#160;", " ").split("Trash", 1)[1]
        await pilot.press("escape")
        await wait_for(pilot, lambda: isinstance(app.screen, MainScreen))
        await pilot.press("f1")
        await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen))
        (listed,) = app.screen.query(".clashes")
        assert "ctrl+b: main.toggle_sessions takes it in the main screen, so app.next_theme has no key" in " ".join(
            listed.render().plain.split())


async def test_no_notice_without_a_clash(tmp_path):
    app = make_app(tmp_path / "lovia.db", keys={"app.help": ("f12",)})
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        assert not [n for n in told(app) if n.severity == "warning"]


# -- lovia keys ----------------------------------------------------------------------------------


def run_lovia(tmp_path, *args: str, config: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "LOVIA_CONFIG": str(config_file(tmp_path, config)), "LOVIA_DATA_DIR": str(tmp_path / "d")}
    return subprocess.run([sys.executable, "-m", "lovia.cli", *args], capture_output=True, text=True, env=env,
                          cwd=ROOT, timeout=60)


def test_lovia_keys_lists_every_action_with_the_keys_in_force(tmp_path):
    done = run_lovia(tmp_path, "keys", config='[keys]\ntranscript.copy = "ctrl+y"\n')
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "[keys]"
    for name in actions():
        assert any(line.startswith(f"{name} ") for line in lines), name
    copy = next(line for line in lines if line.startswith("transcript.copy "))
    assert '"ctrl+y"' in copy and "(default c)" in copy
    # what it prints is a [keys] table lovia reads back
    path = config_file(tmp_path, done.stdout)
    assert Config.load(path).keys["transcript.copy"] == ("ctrl+y",)


def test_lovia_keys_reports_clashes_and_wrong_tables(tmp_path):
    clash = run_lovia(tmp_path, "keys", config='[keys]\napp.help = "ctrl+b"\n')
    assert clash.returncode == 1
    assert "ctrl+b: main.toggle_sessions takes it in the main screen, so app.help has no key" in clash.stderr
    wrong = run_lovia(tmp_path, "keys", config='[keys]\nnope.nothing = "x"\n')
    assert wrong.returncode == 2 and "unknown action 'nope.nothing'" in wrong.stderr
    # the refusal says lovia keys lists the names: it does, every action at its defaults
    assert 'transcript.copy' in wrong.stdout and "refused" in wrong.stdout


def test_parse_keys_normalizes_like_textual():
    assert parse_keys({"sessions": {"filter": "?, /"}}, "x.toml") == {"sessions.filter": ("question_mark", "slash")}


def test_the_readme_keymap_example_is_read_as_it_says(tmp_path):
    readme = (ROOT / "README.md").read_text()
    section = readme[readme.index("### Keymap"):readme.index("### Configuration")]
    example = section[section.index("```toml") + len("```toml"):section.index("```", section.index("```toml") + 7)]
    keymap = Keymap(Config.load(config_file(tmp_path, example)).keys)
    assert keymap.keys("transcript.copy") == ("ctrl+y",) and keymap.key_text("app.help") == "f1 / ?"
    assert keymap.clashes() == []
    for name in re.findall(r"`([a-z-]+\.[a-z_]+)`", section):
        assert name in actions(), name


async def test_the_welcome_and_the_notices_name_the_keys_in_force(tmp_path):
    started, release = asyncio.Event(), asyncio.Event()

    @tool
    async def step() -> str:
        """One slow step."""
        started.set()
        await release.wait()
        return "done"

    model = ScriptedModel([ScriptedTurn(tool_calls=[call("step", {}, call_id="c1")]), "All done."])
    app = make_app(tmp_path / "lovia.db", agent=Agent(name="assistant", model=model, tools=[step]),
                   keys={"app.help": ("f12",), "composer.send": ("f9",), "chat.resume": ("f5",)})
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        welcome = str(app.screen.query_one("#welcome").render())
        assert "press f9 to start" in welcome and "f12 lists every key" in welcome
        app.screen.chat.composer.focus()
        await pilot.press("h", "i", "f9")
        await wait_for(pilot, started.is_set)
        await pilot.press("escape")
        await wait_for(pilot, lambda: not app.screen.chat.running)
        await settle(pilot)
        assert "Stopped. f5 resumes it" in app.export_screenshot().replace("&#160;", " ")
        release.set()


async def test_a_dialog_names_its_moved_keys_and_takes_them(tmp_path):
    from textual.widgets import Button

    from lovia.tui.screens.confirm import ConfirmScreen

    app = make_app(tmp_path / "lovia.db", keys={"confirm.yes": ("o",), "confirm.no": ("x", "escape")})
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        answers: list[bool | None] = []
        app.push_screen(ConfirmScreen("Go on?"), answers.append)
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen) and len(app.screen.query(Button)) == 2)
        labels = {str(b.label) for b in app.screen.query(Button)}
        assert labels == {"Cancel (x)", "Yes (o)"}
        await pilot.press("y")  # the old key: nothing
        await pilot.pause()
        assert answers == [] and isinstance(app.screen, ConfirmScreen)
        await pilot.press("o")
        await wait_for(pilot, lambda: answers == [True])


def test_every_action_name_the_code_shows_a_key_for_exists():
    """A name in ``key_text("chat.resume")`` that no binding has any more would fail only when that
    notice is shown: renaming an id must rename its uses."""
    used = set()
    for path in (ROOT / "lovia").rglob("*.py"):
        used |= set(re.findall(r"(?:key_text|first_key_text|keys|is_rebound)\(['\"]([a-z-]+\.[a-z_]+)['\"]\)",
                               path.read_text(encoding="utf-8")))
    assert {"chat.resume", "composer.send", "confirm.yes"} <= used
    assert used <= set(actions()), used - set(actions())
    assert {f"main.toggle_{name}" for name in ("sessions", "runs")} <= set(actions())  # app.py builds these two


@pytest.mark.parametrize("size", SIZES)
async def test_the_footer_keeps_its_order_when_keys_move(tmp_path, size):
    """Textual puts a rebound binding after its widget's others: the footer puts it back, so the
    entries are the same, in the same order, as with the default keys (only the keys differ)."""
    shown = []
    for keys in (None, {"composer.send": ("f9",), "main.toggle_sessions": ("f4",), "app.next_theme": ("f12",)}):
        app = make_app(tmp_path / "lovia.db", keys=keys)
        async with app.run_test(size=size) as pilot:
            await settle(pilot)
            app.screen.chat.composer.focus()
            await settle(pilot)
            shown.append([(entry.action, entry.key) for entry, _, _ in app.screen.query_one(LoviaFooter).spans()])
    default, moved = shown
    assert [action for action, _ in moved] == [action for action, _ in default]
    assert ("submit", "f9") in moved and ("submit", "enter") in default


async def test_the_palette_and_quit_keys_move_too(tmp_path):
    from textual.command import CommandPalette

    app = make_app(tmp_path / "lovia.db", keys={"app.command_palette": ("f11",), "app.quit": ("ctrl+w",)})
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        palette_entry = app.screen.query_one(LoviaFooter).palette
        assert palette_entry is not None and palette_entry.key == "f11"
        await pilot.press("ctrl+p")
        await pilot.pause()
        assert not isinstance(app.screen, CommandPalette)
        await pilot.press("f11")
        await wait_for(pilot, lambda: isinstance(app.screen, CommandPalette))
        await pilot.press("escape")
        await wait_for(pilot, lambda: isinstance(app.screen, MainScreen))
        await pilot.press("ctrl+q")
        await pilot.pause()
        assert app.is_running
        await pilot.press("ctrl+w")
        await wait_for(pilot, lambda: not app.is_running)


async def test_the_empty_sessions_list_names_the_keys_in_force(tmp_path):
    app = make_app(tmp_path / "lovia.db", keys={"app.help": ("f12",), "sessions-filter.clear": ("ctrl+x",)})
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot)
        sessions = app.screen.query_one("#session-list")

        def hint() -> str:
            return " ".join(str(sessions.get_option_at_index(0).prompt).split())  # wrapped to the pane

        assert hint() == "No sessions yet: write a message and press enter to start one; f12 lists every key."
        sessions.focus()
        await pilot.press("z", "z", "z")
        await wait_for(pilot, lambda: hint() == "No session matches the filter: ctrl+x clears it.")


@pytest.mark.parametrize("size", [(80, 24), (160, 45)])
async def test_the_palette_offers_search_and_the_mcp_servers_and_says_each_commands_key(tmp_path, size):
    from lovia.tui.screens.mcp_servers import ServersScreen
    from lovia.tui.screens.search import SearchScreen

    app = make_app(tmp_path / "lovia.db", keys={"main.search": ("ctrl+k",)})
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        commands = {c.title: c.help for c in app.get_system_commands(app.screen)}
        assert commands["Search"].endswith("(ctrl+k)"), "the key in force, as [keys] moved it"
        assert commands["MCP servers"].endswith("(f5)")
        assert commands["Quit"] == "Quit lovia; it asks first while an answer is running (ctrl+q)"
        for title in ("New session", "Next theme", "Help", "Send message", "Next pane", "Trash", "Filter sessions"):
            assert re.search(r"\([^()]+\)$", commands[title]), title
        for title, screen in (("Search", SearchScreen), ("MCP servers", ServersScreen)):
            await pilot.press("ctrl+p")
            await pilot.pause()
            await pilot.press(*title, "enter")
            await wait_for(pilot, lambda screen=screen: isinstance(app.screen, screen))
            await pilot.press("escape")
            await wait_for(pilot, lambda: isinstance(app.screen, MainScreen))


@pytest.mark.parametrize(("keys", "promised", "not_promised"), [
    # f1 given to the trash as well: the welcome promised "f1 lists every key"
    ({"main.trash": ("f1",)}, ["press enter to start", "ctrl+p finds any action"], ["lists every key"]),
    # help keeps a key no clash touches: that one is named
    ({"main.trash": ("f1",), "app.help": ("f1", "f12")}, ["f12 lists every key"], ["f1 "]),
    ({"main.search": ("f9",), "composer.send": ("f9",)}, ["Write a message below to start", "f1 lists every key"],
     ["press f9"]),
])
async def test_the_welcome_and_the_empty_list_promise_no_key_a_clash_gave_away(tmp_path, keys, promised,
                                                                               not_promised):
    app = make_app(tmp_path / "lovia.db", keys=keys)
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot)
        welcome = " ".join(str(app.screen.query_one("#welcome").render()).split())
        hint = " ".join(str(app.screen.query_one("#session-list").get_option_at_index(0).prompt).split())
        for said in promised:
            assert said in welcome
        for said in not_promised:
            assert said not in welcome
            assert said.replace("Write a message below", "write a message") not in hint
        assert welcome.endswith(".") and hint.endswith(".")
        assert ("lists every key" in hint) == ("lists every key" in welcome)
