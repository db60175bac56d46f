"""The arguments as the gate judges them: each path argument replaced by the file it names.

A model writes ``~/notes/../.bashrc``; the file is ``/home/me/.bashrc``. Rules, grants and the
allowed roots must all see the second form, built once per call by the gate from a resolver the
tools layer injects (core does no I/O), so that what is checked is what runs.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Mapping
from typing import Any

#: The absolute glob a pattern on a path argument means (``~``, relative, symlinks resolved),
#: and the time the pattern was made for (see :meth:`JudgedArgs.path_glob`).
GlobResolver = Callable[[str, float | None], str]


class JudgedArgs(dict[str, Any]):
    """A plain dict of arguments that also knows which keys hold resolved paths.

    Policies that do not care read it as a dict; rule engines ask :meth:`is_path` and
    :meth:`path_glob` to match a path argument as a path, not as text.
    """

    def __init__(
        self,
        values: Mapping[str, Any],
        path_keys: Iterable[str] = (),
        globber: GlobResolver | None = None,
    ) -> None:
        super().__init__(values)
        self.path_keys = frozenset(path_keys)
        self._globber = globber

    def is_path(self, key: str) -> bool:
        return key in self.path_keys and isinstance(self.get(key), str)

    def path_glob(self, glob: str, since: float | None = None) -> str:
        """The absolute, folded glob ``glob`` means for these arguments' task folder. With
        ``since`` (when the rule was written, the approval kept): a link on its literal
        leading folders made after then is not followed — the glob names the folder it was
        made for, never the one a link now puts there."""
        if self._globber is None:
            raise ValueError("no path resolver: path arguments cannot be matched as paths")
        return self._globber(glob, since)

    def fresh(self) -> JudgedArgs:
        """A deep copy (values only; the resolver is shared): a policy cannot change ours."""
        return JudgedArgs(copy.deepcopy(dict(self)), self.path_keys, self._globber)

    def __deepcopy__(self, memo: dict[int, Any]) -> JudgedArgs:
        return self.fresh()
