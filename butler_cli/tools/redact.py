"""Masking secrets for display: what a person is shown never includes a credential, while the
call that runs keeps its exact arguments."""

from __future__ import annotations

import re
from typing import Any

SECRET_NAME = re.compile(r"authorization|cookie|token|secret|password|passwd|api[-_]?key", re.I)
MASK = "****"


def redact(value: Any) -> Any:
    """A copy with the values of secret-looking keys (at any depth) replaced by ``****``."""
    if isinstance(value, dict):
        return {k: MASK if SECRET_NAME.search(str(k)) else redact(v) for k, v in value.items()}
    if isinstance(value, list):
        return [redact(v) for v in value]
    return value
