"""The warning every deprecated name gives (old names are kept for one release)."""

from __future__ import annotations

import warnings


def deprecated(old: str, new: str, *, stacklevel: int = 3) -> None:
    """Warn that ``old`` is deprecated in favour of ``new`` (the warning points at the caller
    of the deprecated function)."""
    warnings.warn(f"{old} is deprecated and will be removed in the next release; use {new}",
                  DeprecationWarning, stacklevel=stacklevel)
