"""The package version (kept with pyproject.toml's; the resident engine compares it)."""

__version__ = "0.1.0"
