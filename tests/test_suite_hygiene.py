"""The suite itself: no test can reach a real provider with the key of whoever runs it."""

from __future__ import annotations

import os
from typing import Any

from conftest import provider_variables


def test_no_test_inherits_a_provider_key(butler: Any) -> None:
    """Run as `OPENAI_API_KEY=sk-… python -m pytest`: the key is gone for the tests and for
    every butler they start (the fork server and exec'd ones alike)."""
    assert provider_variables(os.environ) == []
    shown = butler("doctor", "--json")
    assert "sk-the-real-one" not in shown.stdout + shown.stderr
