"""What a policy may be configured with when it asks (``butler_configure``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class PolicySettings:
    home: Path
    #: ``--policy-file``, or None for the policy's own default under ``home``.
    policy_file: Path | None = None
    #: The plug-ins' config sections (``butler.settings``), by name. See :meth:`section`.
    sections: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

    def section(self, name: str) -> Mapping[str, Any]:
        """The config section ``[name]`` a plug-in declared, checked against its declaration:
        every key with a value (its variable, else the file, else its default); empty when
        no plug-in declares it."""
        return self.sections.get(name, {})
