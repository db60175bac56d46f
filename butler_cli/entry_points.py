"""The installed packages' entry points, read once per process.

The tool plug-ins (``butler.tools``) and the policies (``butler.policies``) are both found
there, and each read opens the metadata of every installed package: one read serves both.
"""

from __future__ import annotations

from functools import cache
from importlib.metadata import EntryPoints, entry_points
from typing import Any, cast


@cache
def _every() -> Any:
    # Python 3.11 gives its (deprecated) groups mapping for no arguments, 3.12 EntryPoints:
    # both select by group alike, as entry_points(group=...) does.
    return entry_points()


def in_group(group: str) -> EntryPoints:
    """The entry points of ``group``, in the order importlib finds them."""
    return cast(EntryPoints, _every().select(group=group))
