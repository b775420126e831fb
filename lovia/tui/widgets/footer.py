"""The footer: whole entries only, and always the way to every key (f1 Help)."""

from __future__ import annotations

from textual import events
from textual.app import ComposeResult
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Footer
from textual.widgets._footer import FooterKey  # not exported; guarded in tests/tui/test_textual_private_names.py

from lovia.tui.keymap import declared_position, keymap_of

ALWAYS_SHOWN = frozenset({"help"})
"""Actions the footer shows however narrow the screen: f1 lists every key the footer leaves out."""


class LoviaFooter(Footer):
    """Textual's footer, without cutting an entry mid-word at narrow widths.

    Entries are kept in Textual's order (the focused pane's keys first, the app's last) while
    they fit whole beside the command palette's; those that do not fit are left out, except
    f1 Help, which always has room. Left-out keys still work, and the palette and f1 list them.
    """

    def compose(self) -> ComposeResult:
        widgets = list(super().compose())
        keys = [w for w in widgets if isinstance(w, FooterKey) and not w.has_class("-command-palette")]
        if keymap_of(self).rebound:
            keys = self._in_declared_order(keys)
        others = [w for w in widgets if w not in keys]
        room = self.app.size.width - sum(_width(w) for w in others if isinstance(w, FooterKey))
        room -= sum(_width(w) for w in keys if w.action in ALWAYS_SHOWN)
        shown: list[Widget] = []
        for key in keys:
            if key.action not in ALWAYS_SHOWN:
                if _width(key) > room:
                    room = -1  # no later, shorter entry either: the order says what matters most
                    continue
                room -= _width(key)
            shown.append(key)
        yield from shown
        yield from others

    def _in_declared_order(self, keys: list[FooterKey]) -> list[FooterKey]:
        """``keys`` with each entry the config file's ``[keys]`` moved back in its declared place.

        Textual puts a rebound binding after every other binding of its widget, where a narrow
        footer leaves it out first; it goes back before the first entry of the same widget that
        its BINDINGS declare after it. Every other entry keeps Textual's order.
        """
        active = self.screen.active_bindings
        rebound = keymap_of(self).rebound

        def source(key: FooterKey) -> tuple[object, int, bool]:
            found = active.get(key.key)
            if found is None:
                return None, 0, False
            binding_id = found.binding.id
            return found.node, declared_position(type(found.node), binding_id), binding_id in rebound

        ordered = [key for key in keys if not source(key)[2]]
        for index, key in enumerate(keys):
            node, position, moved = source(key)
            if not moved:
                continue
            later = [i for i, other in enumerate(ordered) if source(other)[0] is node and source(other)[1] > position]
            same = [i for i, other in enumerate(ordered) if source(other)[0] is node]
            # with no other entry of its widget shown, it stays where Textual put it among the others
            before = sum(1 for other in keys[:index] if other in ordered)
            ordered.insert(later[0] if later else same[-1] + 1 if same else before, key)
        return ordered

    _composed_for: int | None = None  # the width the entries were picked for
    _composed_from: tuple[object, ...] | None = None  # what the entries shown were made from

    _recompose_waiting = False  # a recompose is asked for and has not run yet
    _held = False  # changes wait for release() (while the screen's first load changes them many times)
    _changed_while_held = False

    def hold(self) -> None:
        """Let binding changes wait until :meth:`release`: the entries are then made once."""
        self._held = True

    async def release(self) -> None:
        """Make the entries for the bindings as they are now, if they changed while held, before returning.

        At once rather than after the next refresh (as a binding change asks): released at the
        end of the screen's first load, the entries are then in its first layout and paint, not
        added by a second one.
        """
        self._held = False
        if self._changed_while_held and self.is_attached:
            self._changed_while_held = False
            self._bindings_ready = True  # the screen said its bindings changed: they are known
            # As the footer: Textual binds each entry to the message pump that is running (private
            # API, guarded by tests/tui/test_startup.py and the pinned Textual range).
            with self._context():
                await self.recompose()

    def bindings_changed(self, screen: Screen) -> None:
        """Ask for one recompose however many changes come before it runs (Textual asks once a change)."""
        if self._held:
            self._changed_while_held = True
            return
        if self._recompose_waiting:
            return
        super().bindings_changed(screen)  # asks for the recompose when the screen is ours and the app focused
        self._recompose_waiting = screen.app.app_focus and self.is_attached and screen is self.screen

    async def recompose(self) -> None:
        """Make the entries again only when what they show changed.

        Every change of focus or of an action's availability asks for a recompose (several per
        key press, a dozen while the app starts), and each one replaces every entry; most change
        nothing. What the entries are made from is compared instead: the width, whether the
        bindings are known yet, and each active binding with its state.
        """
        self._recompose_waiting = False
        made_from = self._made_from()
        if made_from == self._composed_from:
            return
        self._composed_from = made_from
        await super().recompose()

    def _made_from(self) -> tuple[object, ...]:
        if not self.is_attached:
            return ()
        bindings = tuple((b.key, b.key_display, b.action, b.description, b.show, b.tooltip, enabled, tooltip)
                         for _, b, enabled, tooltip in self.screen.active_bindings.values())
        return self.app.size.width, self.compact, self._bindings_ready, bindings

    def on_resize(self, event: events.Resize) -> None:
        if event.size.width != self._composed_for:
            self._composed_for = event.size.width
            self.call_after_refresh(self.recompose)


def _width(key: FooterKey) -> int:
    """The cells ``key`` takes, as Textual's footer pads it (not compact): `` f1 Help ``."""
    width = len(key.key_display) + 2
    if key.description:
        width += len(key.description) + 1
    if key.has_class("-command-palette"):
        width += 2  # its left border and right padding
    return width
