"""lovia-dark: the default theme."""

from textual.theme import Theme

THEME = Theme(
    name="lovia-dark",
    primary="#7AA2F7",
    secondary="#BB9AF7",
    accent="#E0AF68",
    warning="#E0AF68",
    error="#F7768E",
    success="#9ECE6A",
    foreground="#C0CAF5",
    background="#16161E",
    surface="#1F2335",
    panel="#24283B",
    dark=True,
)
