"""What a new user's trial of the keymap found: a clash warning cut off at 80x24 and leaving an
action without a key unsaid, refusals that pointed to a help screen lovia had not opened, help
that ``?`` opened but did not close, and an empty sessions list blaming the filter for what the
time view hid."""

from __future__ import annotations

import pytest
from textual.strip import Strip

from lovia.errors import UserError
from lovia.tui import format
from lovia.tui.config import Config
from lovia.tui.keymap import Keymap
from lovia.tui.screens.help import HelpScreen
from lovia.tui.screens.main import MainScreen
from lovia.tui.widgets.sessions_pane import SessionsPane
from lovia.tui.widgets.transcript import Transcript
from tests.tui.conftest import make_app, settle, told, wait_for
from tests.tui.test_keymap import config_file, run_lovia
from tests.tui.test_where_time_went import T0, sessions_at


def screen_rows(app) -> list[str]:
    """The screen's text, row by row, as the terminal gets it."""
    update = app.screen._compositor.render_update(full=True)  # guarded in test_textual_private_names.py
    return ["".join(segment.text for segment in Strip.join(strips)) for strips in update.strips]


def words(text: str) -> str:
    return " ".join(text.split())


# -- 1. the clash warning: whole at 80x24, and no action left without a key unsaid ----------------


async def test_the_whole_clash_warning_is_readable_at_80x24_and_says_what_help_is_left_with(tmp_path):
    """``app.help = "ctrl+b"``: the notice ended "give one of them" (its title took two lines, and
    Textual's notice was a line short), and help was left with no key without a word of it."""
    app = make_app(tmp_path / "lovia.db", keys={"app.help": ("ctrl+b",)})
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        await settle(pilot)
        (warning,) = [n for n in told(app) if n.severity == "warning"]
        (toast,) = app.screen.query("Toast")
        region = toast.content_region
        rows = screen_rows(app)
        shown = words(" ".join(rows[y][region.x:region.right] for y in range(region.y, region.bottom)))
        assert shown == words(f"{warning.title} {warning.message}")  # every line of it, the last too
        composer = app.screen.query_one("#composer")
        assert toast.region.bottom <= composer.region.y  # clear of the message box
        # Which action takes the key, which is left without one, and how to reach that one
        message = words(warning.message)
        assert "main.toggle_sessions takes it" in message
        assert "app.help has no key" in message
        assert "[keys]" in message and "palette (ctrl+p) runs app.help" in message
        # ... and it is so: ctrl+b folds the sessions pane, help comes from the palette
        await pilot.press("ctrl+b")
        await pilot.pause()
        assert isinstance(app.screen, MainScreen)
        await pilot.press("ctrl+p")
        await pilot.pause()
        await pilot.press(*"Help", "enter")
        await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen))


def test_a_clash_says_which_action_keeps_which_key():
    # The key set in [keys] wins in its widget: the default loses it, and with nothing left says so
    (clash,) = Keymap({"transcript.copy": ("e",)}).clashes()
    assert clash.takes == "transcript.copy" and clash.loses == "transcript.edit"
    assert "transcript.edit has no key" in str(clash) and "[keys]" in str(clash)
    # An action with another key keeps it, and the message says which
    (clash,) = Keymap({"main.trash": ("f1",), "app.help": ("f1", "f12")}).clashes()
    assert str(clash) == "f1: main.trash takes it in the main screen, so app.help keeps only f12."


async def test_a_key_set_in_keys_takes_the_key_from_the_default_in_its_widget(tmp_path):
    """What the clash message says of one widget is what Textual does: e copies, it no longer edits."""
    app = make_app(tmp_path / "lovia.db", keys={"transcript.copy": ("e",)})
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot)
        app.screen.query_one(Transcript).focus()
        await pilot.pause()
        assert app.screen.active_bindings["e"].binding.id == "transcript.copy"


# -- 2. a refused [keys] table ------------------------------------------------------------------


@pytest.mark.parametrize(("table", "says"), [
    ('transcript.cpy = "c"', ["unknown action 'transcript.cpy'", "did you mean transcript.copy?", "lovia keys"]),
    ('cpy = "c"', ["did you mean transcript.copy?"]),
    ('transcript.copy = "ctrl+y ctrl+u"', ["several keys are separated by commas", "or given as a list"]),
])
def test_a_refused_table_suggests_the_name_and_points_to_lovia_keys_not_to_a_help_screen(tmp_path, table, says):
    with pytest.raises(UserError) as caught:
        Config.load(config_file(tmp_path, f"[keys]\n{table}\n"))
    message = str(caught.value)
    for part in says:
        assert part in message, (part, message)
    assert "help screen" not in message and "f1" not in message  # lovia refused to start: no help to open
    assert "not a modifier" not in message


def test_lovia_keys_lists_the_names_while_the_table_is_refused(tmp_path):
    helped = run_lovia(tmp_path, "--help", config="")  # the command the refusal points to is one lovia names
    assert helped.returncode == 0 and "lovia keys" in helped.stdout
    done = run_lovia(tmp_path, "keys", config='[keys]\ntranscript.cpy = "c"\n')
    assert done.returncode == 2
    assert "did you mean transcript.copy?" in done.stderr
    assert "transcript.copy" in done.stdout and "app.help" in done.stdout


# -- 3. the help closes with the keys that open it ------------------------------------------------


async def test_help_closes_with_every_key_that_opens_it(tmp_path):
    app = make_app(tmp_path / "lovia.db", keys={"app.help": ("f1", "question_mark")})
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        for opens, closes in (("f1", "question_mark"), ("f1", "f1"), ("f1", "escape"), ("f1", "q")):
            await pilot.press(opens)
            await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen))
            await pilot.press(closes)
            await wait_for(pilot, lambda: isinstance(app.screen, MainScreen))
        follows = Keymap({"app.help": ("f1", "question_mark")}).keys("help.close")
        assert follows == ("escape", "f1", "question_mark", "q")
        assert Keymap({"app.help": ("f12",)}).keys("help.close") == ("escape", "f12", "q")  # f1 no longer opens it


# -- 4. the empty sessions list under a time view ----------------------------------------------------


def hint(app) -> str:
    return words(str(app.screen.query_one("#session-list").get_option_at_index(0).prompt))


async def test_the_empty_list_says_the_time_view_hides_what_the_filter_matches(tmp_path, monkeypatch):
    db = tmp_path / "lovia.db"
    now = T0 + 3600  # Wednesday 13:00 UTC
    await sessions_at(db, {"s-today": (now - 60, 2.0), "s-last-week": (now - 8 * 86400, 5.0)})
    monkeypatch.setattr(format, "clock", lambda: now)
    app = make_app(db)
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot)
        pane = app.screen.query_one(SessionsPane)
        app.screen.query_one("#session-filter").focus()
        await pilot.press("f3")  # today
        await pilot.press(*"last")  # matches s-last-week only, which today's view leaves out
        await pilot.pause()
        assert pane.time_view.name == "today" and pane.sessions == []
        said = hint(app)
        assert "No session matches the filter" not in said and "escape clears" not in said
        assert "hides" in said and "f3 changes the view" in said
        # A filter that matches nothing at all still says escape clears it
        await pilot.press("ctrl+u", *"zzz")
        await pilot.pause()
        assert hint(app) == "No session matches the filter: escape clears it."


async def test_an_empty_time_view_without_a_filter_says_so_and_that_f3_changes_it(tmp_path, monkeypatch):
    db = tmp_path / "lovia.db"
    now = T0 + 3600
    await sessions_at(db, {"s-last-week": (now - 8 * 86400, 5.0)})
    monkeypatch.setattr(format, "clock", lambda: now)
    app = make_app(db)
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot)
        app.screen.query_one("#session-list").focus()
        for _ in range(2):  # today, then this week: both empty
            await pilot.press("f3")
            await pilot.pause()
            pane = app.screen.query_one(SessionsPane)
            assert pane.sessions == []
            said = hint(app)
            assert pane.time_view.name in said and "has no session" in said and "f3 changes the view" in said
