"""A keyring backend for tests (PYTHON_KEYRING_BACKEND=fake_keyring.FileKeyring): entries in
a JSON file named by FAKE_KEYRING_FILE, so the keyring path of `butler keys` runs for real on
a headless machine whose keyring has no backend."""

from __future__ import annotations

import json
import os
from pathlib import Path

from keyring.backend import KeyringBackend
from keyring.errors import PasswordDeleteError


class FileKeyring(KeyringBackend):
    priority = 1  # type: ignore[assignment]

    def _path(self) -> Path:
        return Path(os.environ["FAKE_KEYRING_FILE"])

    def _load(self) -> dict[str, str]:
        try:
            return json.loads(self._path().read_text())
        except FileNotFoundError:
            return {}

    def get_password(self, service: str, username: str) -> str | None:
        if os.environ.get("FAKE_KEYRING_LOCKED"):  # a keyring that will not open now
            raise RuntimeError("the collection is locked")
        return self._load().get(f"{service}/{username}")

    def set_password(self, service: str, username: str, password: str) -> None:
        data = self._load()
        data[f"{service}/{username}"] = password
        self._path().write_text(json.dumps(data))

    def delete_password(self, service: str, username: str) -> None:
        data = self._load()
        if data.pop(f"{service}/{username}", None) is None:
            raise PasswordDeleteError(username)
        self._path().write_text(json.dumps(data))
