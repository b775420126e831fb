"""The keymap: every key lovia binds is an action with a stable name, and the config file moves it.

Each :class:`~textual.binding.Binding` in ``lovia.tui`` has an id ``"<scope>.<action>"`` (the
action's name, e.g. ``transcript.copy``); the scope says where it applies (``app``: anywhere,
``main``: the main screen, otherwise a pane or a dialog). The config file's ``[keys]`` table maps
names to keys::

    [keys]
    transcript.copy = "ctrl+y"          # TOML reads this dotted key as a table: both forms work
    "main.toggle_sessions" = "f2,ctrl+b"  # several keys: comma-separated, or a list of strings

The table is validated by :func:`parse_keys` (an unknown name or a key Textual would not
understand is a :class:`~lovia.errors.UserError` naming it) and applied with Textual's own
``App.set_keymap`` (:meth:`Keymap.textual_keymap`). A rebound action loses its default keys.

**Clashes** (:meth:`Keymap.clashes`): two actions on one key clash when both could take that key
at the same moment, that is when their places overlap:

- the same scope (one pane, one screen, or the app); or
- one scope holds the other: the app holds every scope, the main screen every pane on it, the
  conversation its composer and transcript. Then one of them shadows the other there: a priority
  binding (it takes the key before the focused widget does) everywhere it holds, otherwise the
  inner one while its pane has focus. ``app.help = "ctrl+b"`` clashes with the main screen's
  ``ctrl+b``: help would never open from the main screen.

Panes side by side never clash (``c`` copies in the transcript and in the runs list). A key set
in ``[keys]`` that a widget's own built-in binding uses (Textual's: the text area's ``ctrl+k``,
a list's ``pageup``) clashes by the same rule: in that widget the built-in is lost; between
places, one shadows the other (``app.next_theme = "f7"`` would not work while typing: the
composer's ``f7`` selects all). Actions lovia itself puts on one
key take turns (only one applies at a time, their ``check_action`` says which) and are listed in
:data:`TAKE_TURNS`; the defaults have no other clash, and a test holds every new binding to that.
Clashes do not stop lovia: the key goes where Textual sends it first (in one widget the key set in
``[keys]``; between places a priority binding, else the one nearer the focus) and the other action
loses it there. The app starts and says, for each, which action takes the key and what the other is
left with (its other keys, or none: then the command palette runs it); ``lovia keys`` lists them too.
"""

from __future__ import annotations

import difflib
import importlib
import pkgutil
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from functools import cache, cached_property
from typing import Any

from textual.app import App
from textual.binding import Binding
from textual.dom import DOMNode
from textual.keys import KEY_NAME_REPLACEMENTS, REPLACED_KEYS, Keys, key_to_character
from textual.screen import ModalScreen, Screen

from lovia._wording import toml_kind
from lovia.errors import UserError

WHERE_TO_FIND_NAMES = "`lovia keys` lists every action's name"
"""Said when the config file's ``[keys]`` table is refused: lovia did not start, so no help screen to point to."""

SEVERAL_KEYS = 'several keys are separated by commas ("ctrl+y,ctrl+u") or given as a list (["ctrl+y", "ctrl+u"])'
"""How the README's Keymap section says to give an action several keys."""

MODIFIERS = frozenset({"ctrl", "shift", "alt", "meta", "super", "hyper"})

NAMED_KEYS = frozenset(
    key.value.rpartition("+")[2] for key in Keys if not key.value.startswith("<") and key.value != "ctrl-at"
) | {"space", "tab", "enter", "backspace", "escape"}
"""Key names without modifiers that Textual knows besides characters (``escape``, ``f5``, ``up``...)."""

SCOPE_TITLES = {
    "app": "Anywhere", "main": "Main screen", "chat": "Conversation", "composer": "Composer",
    "transcript": "Transcript", "sessions": "Sessions list", "sessions-filter": "Sessions filter",
    "runs": "Runs list", "inspector": "Checkpoint inspector", "help": "Help screen",
    "confirm": "Yes/no question", "choice": "Choice dialog", "prompt": "Text prompt", "mcp": "MCP servers",
}
"""How the help screen and ``lovia keys`` title a scope; an unlisted scope is titled by its name."""

WIDGETS_INSIDE = {"chat": frozenset({"composer", "transcript"})}
"""Pane scopes inside another pane (the conversation holds the composer and the transcript)."""

TAKE_TURNS: tuple[frozenset[str], ...] = (
    # escape: stops a running answer from any pane (main.stop_run, a priority binding, and the
    # conversation's own), else cancels an edit, folds an overlaid pane or clears the filter
    frozenset({"main.stop_run", "main.close_overlay", "chat.stop", "chat.cancel_edit", "sessions-filter.clear"}),
    frozenset({"main.maximize", "main.minimize"}),  # f10 maximizes, or restores once maximized
    # enter: sends from the composer, resends while editing (the composer's send is off then; the
    # conversation's resend names the key in the footer), expands a tool call in the transcript
    frozenset({"composer.send", "chat.resend", "transcript.expand"}),
)
"""Actions that may share a key in one place because only one of them applies at a time."""

IN_PALETTE = frozenset({
    "app.new_session", "app.next_pane", "app.previous_pane", "app.next_theme", "app.help", "app.quit",
    "main.toggle_sessions", "main.toggle_runs", "main.search", "main.export", "main.maximize", "main.minimize",
    "main.trash", "main.mcp_servers", "chat.stop", "chat.cancel_edit", "chat.resume", "chat.regenerate",
    "chat.edit_last", "composer.send", "transcript.copy", "transcript.copy_code", "transcript.edit",
    "transcript.expand", "transcript.fork", "transcript.timeline", "transcript.trim", "transcript.undo_rewind",
    "transcript.next_match", "transcript.previous_match", "sessions.rename", "sessions.delete",
    "sessions.filter", "sessions.time_view", "runs.timeline",
})
"""Actions the command palette offers (while they apply): one a clash leaves without a key is still run there."""

CLASH_NOTICE_TITLE = "Key clash in [keys]"

FOLLOWS = {"help.close": "app.help"}
"""Actions that also take every key of another, wherever the config file puts it: the help screen
closes with the keys that open it (``app.help = ["f1", "?"]``: ``?`` closes it too)."""


@dataclass(frozen=True)
class Action:
    """One named action: where it applies, what it does, and its default keys."""

    name: str
    scope: str
    description: str
    default_keys: tuple[str, ...]
    priority: bool
    owners: tuple[type[DOMNode], ...]
    """The classes whose BINDINGS hold it (one, or a few for one action in several widgets)."""

    @property
    def title(self) -> str:
        return scope_title(self.scope)


@dataclass(frozen=True)
class Meeting:
    """Two bindings on one key in one place, and which of them Textual gives the key to there."""

    names: tuple[str, str]
    where: str
    """Where they meet, said for a message: "main.toggle_sessions takes it in the main screen"."""
    takes: str | None = None
    """The one that gets the key where they meet; ``None`` when either may (both set in [keys])."""
    there: str = ""
    """Where the other loses it: "" wherever it applies, else " in the transcript"."""

    @property
    def loses(self) -> str | None:
        return None if self.takes is None else next(n for n in self.names if n != self.takes)


@dataclass(frozen=True)
class Clash:
    """Actions (or an action and a widget's built-in key) that would take ``key`` in one place.

    What a clash does (the README's Keymap section says it to the user): the key goes where Textual
    sends it first. In one widget that is the key set in ``[keys]`` (Textual drops the default
    binding on it); between places holding one another, a priority binding, else the one nearer
    the focus. The other action loses that key there: the message says which action, and whether
    it keeps another key or has none left (and then how to reach it until it is given one).
    """

    key: str
    names: tuple[str, ...]
    """The actions' names; a built-in is named by what it does, e.g. "the composer's own page_up"."""
    where: str
    """Where they meet, for the first pair found: "main.toggle_sessions takes it in the main screen"."""
    takes: str | None = None
    """The one that takes the key (one pair of names, or one loser against all the others); ``None``: not sure."""
    loses: str | None = None
    """The action (or built-in) the key is lost to, when :attr:`takes` or the only loser is known."""
    there: str = ""
    """Where :attr:`loses` loses it: "" wherever it applies, else " in the transcript"."""
    left: tuple[str, ...] = ()
    """The keys :attr:`loses` keeps, no clash taking them (as shown: ``f4``)."""
    reach: str | None = None
    """How to run :attr:`loses` with no key left: "the palette (ctrl+p) runs it meanwhile"."""

    def __str__(self) -> str:
        key = display_key(self.key)
        if self.loses is None:
            names = f"{', '.join(self.names[:-1])} and {self.names[-1]}"
            return (f"{key} is bound to {names} ({self.where}): only one takes it there; "
                    "give the others other keys in [keys].")
        said = f"{key}: {self.where}" if self.takes is not None else (
            f"{key}: {_listed([n for n in self.names if n != self.loses])} take it where they apply")
        if self.loses not in actions():  # a widget's built-in: it has no other key
            return f"{said}, so {self.loses} no longer works{self.there}."
        if self.left:
            return f"{said}, so {self.loses} keeps only {' / '.join(self.left)}{self.there}."
        reach = f"; {self.reach}" if self.reach else ""
        return (f"{said}, so {self.loses} has no key{self.there}. "
                f"Give one of them another key in [keys]{reach}.")


def _listed(names: list[str]) -> str:
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def scope_title(scope: str) -> str:
    return SCOPE_TITLES.get(scope, scope.replace("-", " ").capitalize())


def _character(base: str) -> str | None:
    """The character a key name types (``slash``: ``/``), if it types one that shows."""
    character = key_to_character(REPLACED_KEYS.get(base, base))
    return character if character and character.isprintable() and not character.isspace() else None


def display_key(key: str) -> str:
    """A key as the help and the CLI show it: Textual's name, or the character it types (``/``)."""
    modifiers, plus, base = key.rpartition("+")
    return f"{modifiers}{plus}{_character(base) or base}"


def normalize_key(key: str) -> str:
    """The key as Textual names it in bindings: a character other than a letter or digit by its
    name (``/`` is ``slash``, as ``App.set_keymap`` and ``BINDINGS`` name it)."""
    key = key.strip()
    modifiers, plus, base = key.rpartition("+")
    if len(base) == 1 and not base.isalnum():
        try:
            name = unicodedata.name(base).lower().replace("-", "_").replace(" ", "_")
        except ValueError:
            name = base
        base = KEY_NAME_REPLACEMENTS.get(name, name)
    return f"{modifiers}{plus}{base}"


def check_key(key: str) -> str | None:
    """Why Textual would not understand ``key`` (one key, no commas), or ``None`` if it would."""
    if not key:
        return "is empty"
    if any(character.isspace() for character in key):
        return f"has a space: a key is written without one (ctrl+y), and {SEVERAL_KEYS}"
    *modifiers, base = key.split("+")
    unknown = [m for m in modifiers if m not in MODIFIERS]
    if unknown:
        return (f"has {unknown[0]!r}, which is not a modifier (use {', '.join(sorted(MODIFIERS))}; "
                "the + key itself is written plus)")
    if len(base) == 1:
        return None if base.isprintable() and not base.isspace() else "is not a key that prints (write space, tab...)"
    if base in NAMED_KEYS or _character(base) is not None:
        return None
    if base.lower() in NAMED_KEYS or _character(base.lower()) is not None:
        return f"is not a key Textual knows: key names are lowercase ({base.lower()})"
    return "is not a key Textual knows (keys look like a, ctrl+x, f5, escape, up, pageup, slash)"


# -- what lovia binds --------------------------------------------------------------------------


def lovia_binding_classes() -> list[type[DOMNode]]:
    """Every class in ``lovia.tui`` (its modules imported) whose own ``BINDINGS`` bind a key."""
    import lovia.tui

    classes: list[type[DOMNode]] = []
    for module_info in sorted(pkgutil.walk_packages(lovia.tui.__path__, "lovia.tui."), key=lambda m: m.name):
        module = importlib.import_module(module_info.name)
        for value in vars(module).values():
            if (isinstance(value, type) and issubclass(value, DOMNode) and value.__module__ == module.__name__
                    and value.__dict__.get("BINDINGS")):
                classes.append(value)
    return classes


def own_bindings(cls: type[DOMNode]) -> list[Binding]:
    """The bindings ``cls`` itself declares (not its bases'), one per key as Textual expands them."""
    return list(Binding.make_bindings(cls.__dict__.get("BINDINGS", [])))


def builtin_bindings(cls: type[DOMNode]) -> list[Binding]:
    """The bindings without a name ``cls`` inherits (Textual's: a list's ``enter``, the text area's
    ``ctrl+k``) that its own do not replace: as Textual merges them, a class's bindings on a key
    replace every base class's bindings on that key."""
    inherited: dict[str, list[Binding]] = {}
    for base in reversed(cls.__mro__[1:]):
        if isinstance(base, type) and issubclass(base, DOMNode):
            by_key: dict[str, list[Binding]] = {}
            for binding in own_bindings(base):
                by_key.setdefault(binding.key, []).append(binding)
            inherited.update(by_key)
    own_keys = {b.key for b in own_bindings(cls)}
    return [b for key, bindings in inherited.items() if key not in own_keys for b in bindings
            if b.id is None and not b.system]


@cache
def declared_position(cls: type[DOMNode], binding_id: str | None) -> int:
    """Where the binding ``binding_id`` is declared among the bindings ``cls`` has (its own first,
    then its bases'); a binding without an id, or unknown, comes after every declared one."""
    position = 0
    for owner in cls.__mro__:
        if isinstance(owner, type) and issubclass(owner, DOMNode):
            for binding in own_bindings(owner):
                if binding_id is not None and binding.id == binding_id:
                    return position
                position += 1
    return position


@cache
def actions() -> dict[str, Action]:
    """Every named action, by name, in the order the help lists them (by scope, then as declared)."""
    found: dict[str, Action] = {}
    for cls in lovia_binding_classes():
        for binding in own_bindings(cls):
            if binding.id is None:
                continue
            known = found.get(binding.id)
            if known is None:
                found[binding.id] = Action(
                    name=binding.id, scope=binding.id.partition(".")[0],
                    description=binding.tooltip or binding.description or binding.action,
                    default_keys=(binding.key,), priority=binding.priority, owners=(cls,))
            else:
                keys = known.default_keys + ((binding.key,) if binding.key not in known.default_keys else ())
                owners = known.owners + ((cls,) if cls not in known.owners else ())
                found[binding.id] = Action(known.name, known.scope, known.description, keys,
                                           known.priority or binding.priority, owners)
    order = list(SCOPE_TITLES)
    return dict(sorted(found.items(), key=lambda item: (
        order.index(item[1].scope) if item[1].scope in order else len(order), item[1].scope)))


def _screen_scopes() -> set[str]:
    return {a.scope for a in actions().values() if any(issubclass(o, Screen) for o in a.owners)}


def _holds(outer: tuple[type[DOMNode], ...], outer_scope: str, outer_priority: bool,
           inner: tuple[type[DOMNode], ...], inner_scope: str) -> bool:
    """Whether a binding of ``outer`` (classes of one scope) is in force where ``inner``'s widgets
    are (another scope): the app holds every scope, the main screen its panes, a pane its WIDGETS_INSIDE."""
    if outer_scope == inner_scope:
        return False
    if any(issubclass(o, App) for o in outer):
        # A dialog (a modal screen) stops every key but the app's priority ones
        return outer_priority or not any(issubclass(o, ModalScreen) for o in inner)
    if any(issubclass(o, Screen) for o in outer):
        # A pane belongs to the screen of its scope's name if there is one (a search screen's
        # list), else to the main screen; a dialog holds its own keys only.
        return (outer_scope == "main" and not any(issubclass(o, Screen) for o in inner)
                and inner_scope not in _screen_scopes())
    return inner_scope in WIDGETS_INSIDE.get(outer_scope, frozenset())


def _inside(outer: Action, inner: Action) -> bool:
    """Whether ``outer``'s binding is in force where ``inner``'s scope is (but not the same scope)."""
    return _holds(outer.owners, outer.scope, outer.priority, inner.owners, inner.scope)


def _scope_of(cls: type[DOMNode]) -> str | None:
    return next((b.id.partition(".")[0] for b in own_bindings(cls) if b.id), None)


# -- the [keys] table ---------------------------------------------------------------------------


def _kind_of_keys(value: object) -> str:
    """What a ``[keys]`` value that is no key or list of keys is, for the error that refuses it."""
    if isinstance(value, list):
        return f"a list holding {toml_kind(next(k for k in value if not isinstance(k, str)))}"
    return toml_kind(value)


def parse_keys(table: object, source: str) -> dict[str, tuple[str, ...]]:
    """The ``[keys]`` table of ``source`` (the config file), validated: action name -> its keys.

    Names may be written dotted (TOML then nests them: ``[keys.transcript] copy = "c"`` is the
    same); a value is a key, several comma-separated, or a list of keys. Raises
    :class:`~lovia.errors.UserError` naming the first thing wrong and where to look.
    """
    if not isinstance(table, Mapping):
        raise UserError(f"keys in {source} must be a table ([keys]) of action names and keys")
    known = actions()
    result: dict[str, tuple[str, ...]] = {}
    for name, value in _flatten(table):
        if name not in known:
            close = suggestions(name)
            hint = f" (did you mean {' or '.join(close)}?)" if close else ""
            raise UserError(f"[keys] in {source} names an unknown action {name!r}{hint}; {WHERE_TO_FIND_NAMES}")
        raw = value.split(",") if isinstance(value, str) else value
        if not isinstance(raw, list) or not all(isinstance(k, str) for k in raw):
            raise UserError(f"{name} in [keys] of {source} must be a key or a list of keys, "
                            f"e.g. \"ctrl+y\" or [\"ctrl+y\", \"f6\"]; it is {_kind_of_keys(value)}")
        keys: list[str] = []
        for key in raw:
            problem = check_key(key.strip())
            if problem:
                raise UserError(f"{name} in [keys] of {source}: {key.strip()!r} {problem}")
            normalized = normalize_key(key)
            if normalized not in keys:
                keys.append(normalized)
        if not keys:
            raise UserError(f"{name} in [keys] of {source} has no key; give at least one (an action cannot be unbound)")
        result[name] = tuple(keys)
    return result


def suggestions(name: str) -> list[str]:
    """Action names the unknown ``name`` may have meant: those with its action part (``copy``), else
    the names spelt most like it (``transcript.cpy``: ``transcript.copy``)."""
    known = list(actions())
    same_action = [n for n in known if n.rpartition(".")[2] == name.rpartition(".")[2]]
    if same_action:
        return same_action
    scope, dot, action = name.rpartition(".")
    in_scope = [n for n in known if n.rpartition(".")[0] == scope] if dot else known
    if in_scope:  # the action part misspelt: compared with those of the scope (of every scope when bare)
        parts = {n.rpartition(".")[2] for n in in_scope}
        close = difflib.get_close_matches(action, parts, n=2, cutoff=0.7)
        return [n for part in close for n in in_scope if n.rpartition(".")[2] == part][:3]
    return difflib.get_close_matches(name, known, n=2, cutoff=0.8)  # the scope misspelt


def _flatten(table: Mapping[str, Any], prefix: str = "") -> Iterable[tuple[str, object]]:
    for key, value in table.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            yield from _flatten(value, f"{name}.")
        else:
            yield name, value


# -- the keys in force ------------------------------------------------------------------------


@dataclass(frozen=True)
class Keymap:
    """The keys in force: every action's default keys, with the ``[keys]`` table's over them."""

    rebound: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """Validated by :func:`parse_keys`: action name -> the keys set for it."""

    def keys(self, name: str) -> tuple[str, ...]:
        """The keys ``name`` takes now (Textual's names: ``slash``, ``ctrl+b``).

        An action in :data:`FOLLOWS` takes the keys of the one it follows in force in place of
        that one's defaults (the help closes with ``escape``, the keys that open it, and ``q``)."""
        keys = self.rebound.get(name) or actions()[name].default_keys
        followed = FOLLOWS.get(name)
        if followed is None:
            return keys
        defaults, now = actions()[followed].default_keys, self.keys(followed)
        at = next((i for i, key in enumerate(keys) if key in defaults), len(keys))
        kept = [key for key in keys if key not in defaults]
        return tuple(dict.fromkeys([*kept[:at], *now, *kept[at:]]))

    def is_rebound(self, name: str) -> bool:
        return self.keys(name) != actions()[name].default_keys

    def key_text(self, name: str) -> str:
        """The keys to name for ``name`` in a hint, as shown to the user: ``ctrl+b`` or ``r / enter``.

        A key a clash leaves in doubt (see :meth:`clashes`) is not named while ``name`` has another:
        "f1 lists every key" is not said of an f1 the config file gave to something else too.
        """
        return " / ".join(display_key(k) for k in self._hinted_keys(name))

    def first_key_text(self, name: str) -> str:
        """The first key :meth:`key_text` names, as shown to the user (a button's hint: ``Cancel (n)``)."""
        return display_key(self._hinted_keys(name)[0])

    def configured_key_text(self, name: str) -> str:
        """Every key ``name`` takes as the config file put it, clashes included (the help's table)."""
        return " / ".join(display_key(k) for k in self.keys(name))

    def sure_key_text(self, name: str) -> str | None:
        """:meth:`key_text`, or ``None`` when a clash also gives every key of ``name`` to another
        (which one takes it is Textual's choice): a hint that can do without the key says nothing of it."""
        if set(self.keys(name)) <= self._clashed_keys.get(name, set()):
            return None
        return self.key_text(name)

    def keys_in_force(self, name: str) -> tuple[str, ...]:
        """The keys of ``name`` no clash gives to another action (see :meth:`clashes`).

        What a widget that reads keys itself, ahead of Textual's bindings (its ``on_key``), acts on:
        with ``transcript.fork = "e"`` the transcript's ``e`` forks, as its binding does, not edits."""
        lost = self._lost_keys.get(name, set())
        return tuple(k for k in self.keys(name) if k not in lost)

    def lost_key_text(self, name: str) -> str | None:
        """The keys of ``name`` a clash gives to another, as shown (the help's note), or ``None``."""
        lost = [k for k in self.keys(name) if k in self._lost_keys.get(name, set())]
        return " / ".join(display_key(k) for k in lost) or None

    @cached_property
    def _lost_keys(self) -> dict[str, set[str]]:
        """Action name -> its keys another action surely takes wherever it applies (``Meeting.loses``
        with no ``there``: a key lost only in one place, "in the composer", still works elsewhere)."""
        lost: dict[str, set[str]] = {}
        for key, meetings in self._meetings.items() if self.rebound else ():
            for meeting in meetings:
                if meeting.loses is not None and not meeting.there:
                    lost.setdefault(meeting.loses, set()).add(key)
        return lost

    def _hinted_keys(self, name: str) -> tuple[str, ...]:
        keys = self.keys(name)
        doubtful = self._clashed_keys.get(name, set())
        return tuple(k for k in keys if k not in doubtful) or keys

    @cached_property
    def _clashed_keys(self) -> dict[str, set[str]]:
        """Action name -> its keys that some clash also gives to another."""
        clashed: dict[str, set[str]] = {}
        for clash in self.clashes() if self.rebound else ():
            for name in clash.names:
                clashed.setdefault(name, set()).add(clash.key)
        return clashed

    def textual_keymap(self) -> dict[str, str]:
        """What to give ``App.set_keymap``.

        Textual moves a rebound binding by dropping every binding on its old keys in that widget:
        an action sharing one of them (``escape`` stops or cancels an edit) is given its keys
        again here, so it keeps them.
        """
        known = actions()
        keymap = {name: ",".join(keys) for name, keys in self.rebound.items()}
        for name, followed in FOLLOWS.items():
            if name in self.rebound or followed in self.rebound:
                keymap[name] = ",".join(self.keys(name))
        for name in self.rebound:
            moved = set(known[name].default_keys)
            for other in known.values():
                if (other.name not in keymap and set(other.owners) & set(known[name].owners)
                        and moved & set(other.default_keys)):
                    keymap[other.name] = ",".join(other.default_keys)
        return keymap

    def clashes(self) -> list[Clash]:
        """Every clash in force (see the module's docstring for the rule), one per key, each saying
        which action takes the key and what the other is left with (see :class:`Clash`)."""
        return list(self._clashes)

    @cached_property
    def _clashes(self) -> tuple[Clash, ...]:
        known = actions()
        clashes = [self._clash(key, meetings) for key, meetings in self._meetings.items()]
        lost: dict[str, set[str]] = {}  # action -> its keys a clash takes from it (or may)
        for clash in clashes:
            for name in clash.names if clash.loses is None else (clash.loses,):
                lost.setdefault(name, set()).add(clash.key)
        palette_keys = [k for k in self.keys("app.command_palette") if k not in lost.get("app.command_palette", ())]
        palette = display_key(palette_keys[0]) if palette_keys else None
        return tuple(clash if clash.loses not in known else replace(
            clash, left=tuple(display_key(k) for k in self.keys(clash.loses) if k not in lost[clash.loses]),
            reach=f"the palette ({palette}) runs {clash.loses} meanwhile"
            if palette and clash.loses in IN_PALETTE else None) for clash in clashes)

    @cached_property
    def _meetings(self) -> dict[str, list[Meeting]]:
        """Key -> every pair of actions (or an action and a built-in) that would take it in one place."""
        known = actions()
        slots = [(key, a) for a in known.values() for key in self.keys(a.name)]
        by_key: dict[str, list[Meeting]] = {}
        for key, first in slots:
            for other_key, second in slots:
                if other_key != key or first.name >= second.name:
                    continue
                if any({first.name, second.name} <= group for group in TAKE_TURNS):
                    continue
                meeting = self._meeting(first, second)
                if meeting:
                    by_key.setdefault(key, []).append(meeting)
        # A moved key on a built-in one (Textual's) where both are in force: the action's own
        # widget, a widget in the action's place, or a place holding the action's widget.
        classes = [(cls, scope) for cls in lovia_binding_classes() if (scope := _scope_of(cls))]
        for name, keys in self.rebound.items():
            action = known[name]
            for cls, scope in classes:
                for builtin in builtin_bindings(cls):
                    if builtin.key not in keys:
                        continue
                    place = scope_title(scope).lower()
                    own = f"the {place}'s own {builtin.action}"
                    if cls in action.owners:  # one widget: Textual drops the built-in for the key set in [keys]
                        found = Meeting((name, own), f"{name} takes it in the {place}", name)
                    elif scope == action.scope:
                        found = Meeting((name, own), f"both in the {place}")
                    elif _holds(action.owners, action.scope, action.priority, (cls,), scope):
                        found = (Meeting((name, own), f"{name} takes it first, in the {place} too", name)
                                 if action.priority else
                                 Meeting((name, own), f"{own} takes it in the {place}", own, f" in the {place}"))
                    elif _holds((cls,), scope, builtin.priority, action.owners, action.scope):
                        inner = scope_title(action.scope).lower()
                        found = (Meeting((name, own), f"{own} takes it first, in the {inner} too", own)
                                 if builtin.priority else
                                 Meeting((name, own), f"{name} takes it in the {inner}", name, f" in the {inner}"))
                    else:
                        continue
                    by_key.setdefault(builtin.key, []).append(found)
        return by_key

    @staticmethod
    def _clash(key: str, meetings: list[Meeting]) -> Clash:
        names: list[str] = []
        for meeting in meetings:
            names.extend(n for n in meeting.names if n not in names)
        first = meetings[0]
        if len(meetings) == 1:
            return Clash(key, tuple(names), first.where, first.takes, first.loses, first.there)
        losers = {meeting.loses for meeting in meetings}
        if len(losers) == 1 and None not in losers:  # one action loses the key to each of the others
            (loser,) = losers
            theres = {meeting.there for meeting in meetings}
            return Clash(key, tuple(names), first.where, None, loser, "" if "" in theres else " there")
        return Clash(key, tuple(names), first.where)

    def _meeting(self, first: Action, second: Action) -> Meeting | None:
        """Where both would take the key, and which takes it there; ``None``: nowhere."""
        names = (first.name, second.name)
        if first.scope == second.scope:
            place = scope_title(first.scope).lower()
            common = set(first.owners) & set(second.owners)
            moved = [a for a in (first, second) if a.name in self.rebound]
            if common and len(moved) == 1:  # in one widget Textual drops the default for the key set in [keys]
                (taker,) = moved
                loser = second if taker is first else first
                there = "" if set(loser.owners) <= common else f" in the {place}"
                return Meeting(names, f"{taker.name} takes it in the {place}", taker.name, there)
            return Meeting(names, f"both in the {place}")
        for outer, inner in ((first, second), (second, first)):
            if _inside(outer, inner):
                place = scope_title(inner.scope).lower()
                if outer.priority:
                    return Meeting(names, f"{outer.name} takes it first, in the {place} too", outer.name)
                # the app's keys apply on the main screen (a dialog stops them): lost there is lost
                there = "" if (outer.scope, inner.scope) == ("app", "main") else f" in the {place}"
                return Meeting(names, f"{inner.name} takes it in the {place}", inner.name, there)
        return None

    def clash_notice(self) -> tuple[str, str] | None:
        """The notice (message, title) the app shows at start when keys clash, or ``None``.

        The title is one line at 80 columns (a wrapped title made Textual's notice a line too short:
        its last line, the one saying what to do, was cut off)."""
        clashes = self.clashes() if self.rebound else []
        if not clashes:
            return None
        help_key = self.sure_key_text("app.help")
        lines = [str(clash) for clash in clashes] + ([f"{help_key} lists them again."] if help_key else [])
        return "\n".join(lines), CLASH_NOTICE_TITLE


DEFAULT_KEYMAP = Keymap()


def keymap_of(node: DOMNode) -> Keymap:
    """The keymap of the app ``node`` is in (an app other than lovia's has the defaults)."""
    keymap = getattr(node.app, "lovia_keymap", None)
    return keymap if isinstance(keymap, Keymap) else DEFAULT_KEYMAP


# -- lovia keys ---------------------------------------------------------------------------------


def describe(keymap: Keymap) -> str:
    """Every action with its keys in force, as lines a ``[keys]`` table takes, grouped by place."""
    lines: list[str] = []
    title = None
    known = actions()
    width = max(len(name) for name in known) + 2
    for action in known.values():
        if action.title != title:
            title = action.title
            lines += ["" if lines else "[keys]", f"# {title}"]
        value = '"' + ",".join(keymap.keys(action.name)) + '"'
        note = f" (default {','.join(action.default_keys)})" if keymap.is_rebound(action.name) else ""
        lines.append(f"{action.name:<{width}}= {value:<14} # {action.description}{note}")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    """``lovia keys``: print every action's name and keys in force (the config file's ``[keys]``
    applied), as lines for that table; exit 2 if the table is wrong, 1 if keys clash."""
    import argparse
    import sys

    from lovia.tui.config import Config, config_path

    argparse.ArgumentParser(
        prog="lovia keys",
        description="List every action's name and the keys it takes, with the config file's [keys] table "
                    f"applied ({config_path()}); copy a line into that table and change its key to move it.",
    ).parse_args(argv)
    try:
        config = Config.load()
    except UserError as exc:
        # Still the names: the refusal sends the user here to find them (every key at its default)
        print("# The config file was refused (the error follows); every action at its default keys:")
        print(describe(DEFAULT_KEYMAP))
        print(f"lovia: {exc}", file=sys.stderr)
        return 2
    keymap = Keymap(config.keys)
    print(describe(keymap))
    clashes = keymap.clashes()
    for clash in clashes:
        print(f"lovia: {clash}", file=sys.stderr)
    return 1 if clashes else 0
