"""The footer: the keys in force, whole entries only, and always the way to every key (f1 Help).

One widget draws every entry. Textual's ``Footer`` mounts a widget per entry (and restyles each
one twice as it binds its compact flag): at start that was ~45 ms of the first paint for 26
entries, and every focus change that changed the keys mounted them all again. Here a change of
the keys is one repaint of one line. It looks as Textual's footer looks, from the same theme
variables and component classes (``footer-key--key``, ``footer-key--description``).
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import groupby
from typing import ClassVar, Protocol, runtime_checkable

from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.binding import Binding
from textual.screen import Screen
from textual.strip import Strip
from textual.widget import Widget

from lovia.tui.keymap import declared_position, keymap_of

ALWAYS_SHOWN = frozenset({"help"})
"""Actions the footer shows however narrow the screen: f1 lists every key the footer leaves out."""

_PALETTE_EDGE = "▏"
"""The line left of the command palette's entry (Textual's ``vkey`` border)."""
_DIM = Style(dim=True)


@runtime_checkable
class HidesInFooter(Protocol):
    """A widget some of whose keys do nothing for what it has selected now: the footer leaves them
    out, so the keys that do something fit (an 80-column footer has room for four or five). The
    keys still work (and say why they do nothing); the help screen lists them all. A widget calls
    ``refresh_bindings`` when what it hides may have changed."""

    def hidden_in_footer(self, action: str) -> bool:
        """Whether the footer leaves out this widget's binding to ``action`` now."""
        ...


@runtime_checkable
class DescribesInFooter(Protocol):
    """A widget one of whose keys does something else for what it has selected now than its
    binding's description says (``enter`` folds a tool call it unfolded): the footer says what. A
    widget calls ``refresh_bindings`` when that may have changed."""

    def footer_description(self, action: str) -> str | None:
        """What the footer calls this widget's binding to ``action`` now; ``None``: the binding's description."""
        ...


@dataclass(frozen=True)
class FooterEntry:
    """One key the footer shows: what it presses when clicked, and how it reads."""

    key: str
    key_display: str
    description: str
    action: str
    enabled: bool = True
    tooltip: str = ""

    @property
    def width(self) -> int:
        """The cells it takes: `` f1 Help ``."""
        return cell_len(self.key_display) + 2 + (cell_len(self.description) + 1 if self.description else 0)

    @property
    def compact_width(self) -> int:
        """The cells it takes drawn compact, as the command palette's is: ``^p palette``."""
        return cell_len(self.key_display) + (cell_len(self.description) + 1 if self.description else 0)


def _grouped(entries: list[tuple[FooterEntry, Binding.Group | None]]) -> list[FooterEntry]:
    """As Textual's footer draws them: side by side bindings of one group are one entry, their
    keys together under the group's description (``n/N Match``: room for one more key at 80
    columns). A click presses the first; the tooltip holds each one's."""
    merged: list[FooterEntry] = []
    for group, members in groupby(entries, key=lambda pair: pair[1]):
        same = [entry for entry, _ in members]
        if group is None or len(same) == 1:
            merged.extend(same)
            continue
        first = same[0]
        merged.append(FooterEntry(
            first.key, "/".join(entry.key_display for entry in same), group.description, first.action,
            any(entry.enabled for entry in same),
            "\n".join(f"{entry.key_display}: {entry.tooltip or entry.description}" for entry in same)))
    return merged


class LoviaFooter(Widget, can_focus=False):
    """The active bindings' keys, without cutting an entry mid-word at narrow widths.

    Entries are kept in Textual's order (the focused pane's keys first, the app's last) while
    they fit whole beside the command palette's, which is drawn at the right edge; those that do
    not fit are left out, except f1 Help, which always has room. Left-out keys still work, and the
    palette and f1 list them. A click on an entry presses its key (a disabled one rings the bell);
    hovering one shows its tooltip.
    """

    ALLOW_SELECT = False
    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "footer-key--key",
        "footer-key--description",
        "footer-key--hover",
        "footer--palette-edge",
    }
    DEFAULT_CSS = """
    LoviaFooter {
        dock: bottom;
        height: 1;
        color: $footer-foreground;
        background: $footer-background;
        text-wrap: nowrap;
        .footer-key--key {
            color: $footer-key-foreground;
            background: $footer-key-background;
            text-style: bold;
        }
        .footer-key--description {
            color: $footer-description-foreground;
            background: $footer-description-background;
        }
        .footer-key--hover { background: $block-hover-background; }
        .footer--palette-edge { color: $foreground 20%; }
    }
    """

    def __init__(self, *, name: str | None = None, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self._entries: tuple[FooterEntry, ...] = ()
        self._palette: FooterEntry | None = None
        self._bindings_ready = False  # nothing is shown until the screen says its bindings are known
        self._update_waiting = False  # an update is asked for and has not run yet
        self._held = False  # changes wait for release() (while the screen's first load changes them many times)
        self._changed_while_held = False
        self._hovered: FooterEntry | None = None

    @property
    def entries(self) -> tuple[FooterEntry, ...]:
        """The entries shown from the left, in order (the command palette's is :attr:`palette`)."""
        return self._entries

    @property
    def palette(self) -> FooterEntry | None:
        """The command palette's entry, drawn at the right edge (``None`` while no bindings are known)."""
        return self._palette

    def spans(self) -> list[tuple[FooterEntry, int, int]]:
        """Each entry shown with the columns it takes, ``start`` to ``end`` (excluded), the palette's last."""
        spans, at = [], 0
        for entry in self._entries:
            spans.append((entry, at, at + entry.width))
            at += entry.width
        if self._palette is not None:
            # drawn compact at the right edge, after its line and before a cell of padding: ``▏^p palette ``
            spans.append((self._palette, self.size.width - 1 - self._palette.compact_width, self.size.width - 1))
        return spans

    def on_mount(self) -> None:
        self.screen.bindings_updated_signal.subscribe(self, self.bindings_changed)

    def on_unmount(self) -> None:
        self.screen.bindings_updated_signal.unsubscribe(self)

    # -- when the entries are made ---------------------------------------------------------

    def hold(self) -> None:
        """Let binding changes wait until :meth:`release`: the entries are then made once."""
        self._held = True

    def release(self) -> None:
        """Make the entries for the bindings as they are now, if they changed while held.

        At once rather than after the next refresh (as a binding change asks): released at the
        end of the screen's first load, the entries are then in its first paint.
        """
        self._held = False
        if self._changed_while_held and self.is_attached:
            self._changed_while_held = False
            self._update()

    def bindings_changed(self, screen: Screen) -> None:
        """The screen's bindings changed: one update after the next refresh, however many changes come first."""
        self._bindings_ready = True
        if self._held:
            self._changed_while_held = True
            return
        # As Textual's footer: not while the app is in the background (focus left the terminal).
        if self._update_waiting or not screen.app.app_focus or not self.is_attached or screen is not self.screen:
            return
        self._update_waiting = True
        self.call_after_refresh(self._update)

    def on_resize(self, event: events.Resize) -> None:
        # Which entries fit depends on the width.
        if self._held:
            self._changed_while_held = True
        else:
            self._update()

    def _update(self) -> None:
        self._update_waiting = False
        entries, palette = self._pick_entries()
        if (entries, palette) != (self._entries, self._palette):
            self._entries, self._palette = entries, palette
            self._hover(None)  # what is under the pointer now is known at its next move
            self.refresh()

    # -- which entries ---------------------------------------------------------------------

    def _pick_entries(self) -> tuple[tuple[FooterEntry, ...], FooterEntry | None]:
        if not self._bindings_ready or not self.is_attached:
            return (), None
        entries, palette = self._entries_in_force()
        if keymap_of(self).rebound:
            entries = self._in_declared_order(entries)
        room = (self.size.width or self.app.size.width) - (palette.compact_width + 2 if palette is not None else 0)
        room -= sum(entry.width for entry in entries if entry.action in ALWAYS_SHOWN)
        shown: list[FooterEntry] = []
        for entry in entries:
            if entry.action not in ALWAYS_SHOWN:
                if entry.width > room:
                    room = -1  # no later, shorter entry either: the order says what matters most
                    continue
                room -= entry.width
            shown.append(entry)
        return tuple(shown), palette

    def _entries_in_force(self) -> tuple[list[FooterEntry], FooterEntry | None]:
        """As Textual's footer picks them: the first shown binding of each action, in the screen's order."""
        app, active = self.app, self.screen.active_bindings
        by_action: dict[str, list[tuple[FooterEntry, Binding.Group | None]]] = {}
        for node, binding, enabled, tooltip in active.values():
            if binding.show and not (isinstance(node, HidesInFooter) and node.hidden_in_footer(binding.action)):
                described = node.footer_description(binding.action) if isinstance(node, DescribesInFooter) else None
                by_action.setdefault(binding.action, []).append((FooterEntry(
                    binding.key, app.get_key_display(binding), described or binding.description, binding.action,
                    enabled, tooltip), binding.group))
        entries = _grouped([same[0] for same in by_action.values()])
        palette = None
        if app.ENABLE_COMMAND_PALETTE and app.COMMAND_PALETTE_BINDING in active:
            _, binding, enabled, tooltip = active[app.COMMAND_PALETTE_BINDING]
            palette = FooterEntry(binding.key, app.get_key_display(binding), binding.description, binding.action,
                                  enabled, binding.tooltip or binding.description)
        return entries, palette

    def _in_declared_order(self, entries: list[FooterEntry]) -> list[FooterEntry]:
        """``entries`` with each entry the config file's ``[keys]`` moved back in its declared place.

        Textual puts a rebound binding after every other binding of its widget, where a narrow
        footer leaves it out first; it goes back before the first entry of the same widget that
        its BINDINGS declare after it. Every other entry keeps Textual's order.
        """
        active = self.screen.active_bindings
        rebound = keymap_of(self).rebound

        def source(entry: FooterEntry) -> tuple[object, int, bool]:
            found = active.get(entry.key)
            if found is None:
                return None, 0, False
            binding_id = found.binding.id
            return found.node, declared_position(type(found.node), binding_id), binding_id in rebound

        ordered = [entry for entry in entries if not source(entry)[2]]
        for index, entry in enumerate(entries):
            node, position, moved = source(entry)
            if not moved:
                continue
            later = [i for i, other in enumerate(ordered) if source(other)[0] is node and source(other)[1] > position]
            same = [i for i, other in enumerate(ordered) if source(other)[0] is node]
            # with no other entry of its widget shown, it stays where Textual put it among the others
            before = sum(1 for other in entries[:index] if other in ordered)
            ordered.insert(later[0] if later else same[-1] + 1 if same else before, entry)
        return ordered

    # -- drawing ---------------------------------------------------------------------------

    def render_line(self, y: int) -> Strip:
        """The one line: the entries from the left, the command palette's at the right edge."""
        blank = Style(bgcolor=self.rich_style.bgcolor)  # where nothing is drawn, the footer's background
        segments = [segment for entry in self._entries for segment in self._drawn(entry)]
        if self._palette is not None:
            palette = [Segment(_PALETTE_EDGE, self.get_component_rich_style("footer--palette-edge")),
                       *self._drawn(self._palette, compact=True), Segment(" ", blank)]
            gap = self.size.width - Segment.get_line_length(segments) - Segment.get_line_length(palette)
            segments += [Segment(" " * max(gap, 0), blank), *palette]
        return Strip(segments).adjust_cell_length(self.size.width, blank)

    def _drawn(self, entry: FooterEntry, *, compact: bool = False) -> list[Segment]:
        """`` f1 Help ``; ``compact``, as Textual draws the palette's entry: ``^p palette``."""
        key = self.get_component_rich_style("footer-key--key")
        description = self.get_component_rich_style("footer-key--description")
        if entry == self._hovered:
            key, description = key + self._hover_style, description + self._hover_style
        if not entry.enabled:
            key, description = key + _DIM, description + _DIM
        if compact:
            drawn = [Segment(entry.key_display, key)]
            return [*drawn, Segment(f" {entry.description}", description)] if entry.description else drawn
        drawn = [Segment(f" {entry.key_display} ", key)]
        return [*drawn, Segment(f"{entry.description} ", description)] if entry.description else drawn

    @property
    def _hover_style(self) -> Style:
        return Style(bgcolor=self.get_component_rich_style("footer-key--hover").bgcolor)

    # -- the mouse -------------------------------------------------------------------------

    def _entry_at(self, x: int) -> FooterEntry | None:
        return next((entry for entry, start, end in self.spans() if start <= x < end), None)

    def on_mouse_move(self, event: events.MouseMove) -> None:
        self._hover(self._entry_at(event.x))

    def on_leave(self, event: events.Leave) -> None:
        self._hover(None)

    def _hover(self, entry: FooterEntry | None) -> None:
        if entry != self._hovered:
            self._hovered = entry
            self.tooltip = (entry.tooltip or None) if entry is not None else None
            self.refresh()

    def on_mouse_down(self, event: events.MouseDown) -> None:
        entry = self._entry_at(event.x)
        if entry is None:
            return
        if entry.enabled:
            self.app.simulate_key(entry.key)
        else:
            self.app.bell()
