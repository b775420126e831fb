"""lovia-light: for light terminals."""

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
