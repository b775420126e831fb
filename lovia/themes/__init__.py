"""lovia's Textual themes, one file each."""

from lovia.themes.dark import THEME as DARK
from lovia.themes.high_contrast import THEME as HIGH_CONTRAST
from lovia.themes.light import THEME as LIGHT

THEMES = [DARK, LIGHT, HIGH_CONTRAST]
DEFAULT_THEME = DARK.name
THEME_NAMES = [theme.name for theme in THEMES]

__all__ = ["DARK", "DEFAULT_THEME", "HIGH_CONTRAST", "LIGHT", "THEMES", "THEME_NAMES"]
