"""lovia-high-contrast: pure black and white with saturated accents, for low vision."""

from textual.theme import Theme

THEME = Theme(
    name="lovia-high-contrast",
    primary="#FFFF00",
    secondary="#00FFFF",
    accent="#FF00FF",
    warning="#FFFF00",
    error="#FF5555",
    success="#00FF00",
    foreground="#FFFFFF",
    background="#000000",
    surface="#000000",
    panel="#1A1A1A",
    dark=True,
    luminosity_spread=0.0,
    text_alpha=1.0,
)
