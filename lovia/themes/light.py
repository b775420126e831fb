"""lovia-light: for light terminals."""

from rich.color_triplet import ColorTriplet
from rich.terminal_theme import TerminalTheme
from textual.theme import Theme

THEME = Theme(
    name="lovia-light",
    primary="#2E5CB8",
    secondary="#7B3FB0",
    accent="#A8650C",
    warning="#A8650C",
    error="#B3261E",
    success="#2E7D32",
    foreground="#1F2430",
    background="#FAFAF7",
    surface="#F0F0EA",
    panel="#E4E4DC",
    dark=False,
)


READABLE_YELLOW = ColorTriplet(0x94, 0x60, 0x00)
"""ANSI yellow on a light theme (5.1:1 on lovia-light's background): Textual's light ANSI colours
draw it #CB9000, 2.7:1, and a dangling call's row (``bold yellow``) read faintly."""


def readable_on_light(ansi: TerminalTheme) -> TerminalTheme:
    """``ansi`` (the ANSI colours a light theme draws Rich's named colours in) with a yellow that reads."""
    colours: list[tuple[int, int, int]] = [ansi.ansi_colors[index] for index in range(16)]
    colours[3] = READABLE_YELLOW
    return TerminalTheme(ansi.background_color, ansi.foreground_color, colours[:8], colours[8:])
