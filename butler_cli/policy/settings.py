"""What a policy may be configured with when it asks (``butler_configure``)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class PolicySettings:
    home: Path
    #: ``--policy-file``, or None for the policy's own default under ``home``.
    policy_file: Path | None = None
