"""Keys kept by `butler keys set`: in the system keyring, or where there is none (a headless
machine, CI) in a 0600 file in the user's config folder — never under BUTLER_HOME, whose
files (parks, audit, memory) must never hold a key.

The file, ``<user config dir>/keys.toml``, names every stored key; it holds the values of
the keys kept in it, and only the names of those in the keyring (a keyring cannot list its
entries). A variable of the same name in the environment always wins over a stored key.
Every stored value is handed to the masking as soon as the config is read.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import platformdirs

from butler_cli.core.errors import UsageError
from butler_cli.store.files import write_atomic

KEYS_FILE = "keys.toml"
SERVICE = "butler"
NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")


def keys_path() -> Path:
    """``<user config dir>/keys.toml`` ($XDG_CONFIG_HOME/butler on Linux), whatever
    BUTLER_HOME says: a key never sits next to the parks."""
    return Path(platformdirs.user_config_dir("butler", appauthor=False)) / KEYS_FILE


def check_name(name: str) -> str:
    if not NAME.fullmatch(name):
        raise UsageError(
            f"'{name}' is not a key name: use letters, digits and _ (like OPENAI_API_KEY)"
        )
    return name


#: The system keyrings keyring may use, chosen here in code (issue 31): never from keyring's
#: ``keyringrc.cfg``, whose ``keyring-path`` and ``default-keyring`` would make the butler
#: import whatever module a program wrote into the home.
KEYRING_BACKENDS = (
    "keyring.backends.SecretService.Keyring",
    "keyring.backends.kwallet.DBusKeyring",
    "keyring.backends.libsecret.Keyring",
    "keyring.backends.macOS.Keyring",
    "keyring.backends.Windows.WinVaultKeyring",
)
#: The variable keyring itself reads: the person's explicit choice, from their environment
#: (which no sandboxed program can change), honoured as keyring honours it.
BACKEND_VARIABLE = "PYTHON_KEYRING_BACKEND"


def system_keyring() -> Any | None:
    """The keyring backend, or None where none works (a headless machine) — then keys go to
    the 0600 file. The backend named by ``PYTHON_KEYRING_BACKEND``, else the viable one of
    :data:`KEYRING_BACKENDS` keyring ranks highest; keyring's own config file and its
    plug-in entry points are never read."""
    try:
        from keyring.backends import fail, null
        from keyring.core import load_keyring

        backend: Any
        if os.environ.get(BACKEND_VARIABLE):
            backend = load_keyring(os.environ[BACKEND_VARIABLE])
        else:
            backend = _best_backend(load_keyring)
    except Exception:  # not installed, or a backend that breaks while loading
        return None
    if backend is None or isinstance(backend, fail.Keyring | null.Keyring):
        return None
    return None if keeps_plaintext(backend) else backend


def _best_backend(load: Any) -> Any | None:
    """The viable backend of :data:`KEYRING_BACKENDS` with the highest priority."""
    best: tuple[float, Any] | None = None
    for name in KEYRING_BACKENDS:
        try:
            backend = load(name)  # raises where it cannot work here (no D-Bus, other OS)
            priority = float(backend.priority)
        except Exception:
            continue
        if priority > 0 and (best is None or priority > best[0]):
            best = (priority, backend)
    return best[1] if best is not None else None


def keeps_plaintext(backend: Any) -> bool:
    """Whether ``backend`` keeps keys in a file a program could read: ``keyrings.alt``'s file
    backends (its PlaintextKeyring stores base64 under ``~/.local/share``, which tools and
    commands can reach), or a chain holding one. Such a keyring is never used: keys go to
    the 0600 keys file, which tools and the sandbox never reach (issue 20)."""
    inner = getattr(backend, "backends", None)
    if isinstance(inner, list | tuple) and any(keeps_plaintext(b) for b in inner):
        return True
    for cls in type(backend).__mro__:
        if cls.__module__.startswith("keyrings.alt") or "Plaintext" in cls.__name__:
            return True
    return False


def keyring_files() -> Path:
    """Where file-backed keyrings (``keyrings.alt``) keep their files: hidden from tools and
    programs like the keys file, whether or not one is in use."""
    root = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local/share")
    return Path(root) / "python_keyring"


def _keyring_call(what: str, call: Any, *args: str) -> Any:
    """A keyring call whose failure (locked, no D-Bus session…) is one line, not a trace."""
    try:
        return call(SERVICE, *args)
    except Exception as exc:
        detail = " ".join(str(exc).split())[:200] or type(exc).__name__
        raise UsageError(f"the system keyring could not {what}: {detail}") from exc


def _load(path: Path | None = None) -> tuple[dict[str, str], list[str]]:
    """(keys kept in the file, names of keys kept in the keyring)."""
    path = path or keys_path()
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}, []
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"the keys file {path} cannot be read: {exc}") from exc
    import tomllib

    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"the keys file {path} is malformed: {exc}") from exc
    in_file = raw.get("file", {})
    in_keyring = raw.get("keyring", {}).get("names", [])
    if not isinstance(in_file, dict) or not isinstance(in_keyring, list):
        raise UsageError(f"the keys file {path} is malformed: [file] and [keyring] names")
    return {str(k): str(v) for k, v in in_file.items()}, [str(n) for n in in_keyring]


def _save(in_file: dict[str, str], in_keyring: list[str], path: Path | None = None) -> Path:
    import tomlkit

    path = path or keys_path()
    doc = tomlkit.document()
    doc.add(tomlkit.comment("Keys kept by `butler keys set` (0600). Never shown, never copied."))
    doc.add(tomlkit.comment("Keys in the system keyring are named here; their values are not."))
    table = tomlkit.table()
    for name, value in sorted(in_file.items()):
        table.add(name, value)
    doc.add("file", table)
    doc.add("keyring", {"names": sorted(set(in_keyring))})
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    write_atomic(path, tomlkit.dumps(doc).encode("utf-8"))  # 0600, like every butler file
    return path


def store_key(name: str, value: str) -> str:
    """Keep ``value`` under ``name``; returns where it went (for one line of output)."""
    check_name(name)
    value = value.strip()
    if not value:
        raise UsageError("no key given: type it at the prompt or pipe it on standard input")
    in_file, in_keyring = _load()
    backend = system_keyring()
    if backend is not None:
        _keyring_call("store the key", backend.set_password, name, value)
        in_file.pop(name, None)
        path = _save(in_file, [*in_keyring, name])
        return "the system keyring"
    in_file[name] = value
    path = _save(in_file, [n for n in in_keyring if n != name])
    return str(path)


def remove_key(name: str) -> bool:
    """Forget ``name`` wherever it is kept; False when it was not stored."""
    check_name(name)
    in_file, in_keyring = _load()
    if name not in in_file and name not in in_keyring:
        return False
    if name in in_keyring:
        backend = system_keyring()
        if backend is not None:
            from keyring.errors import PasswordDeleteError

            try:
                backend.delete_password(SERVICE, name)
            except PasswordDeleteError:
                pass  # already gone from the keyring: forget the name
            except Exception as exc:
                raise UsageError(f"the system keyring could not remove {name}: {exc}") from exc
    in_file.pop(name, None)
    _save(in_file, [n for n in in_keyring if n != name])
    return True


def key_names() -> list[str]:
    """The names of every stored key (never a value)."""
    in_file, in_keyring = _load()
    return sorted({*in_file, *in_keyring})


def stored_key(name: str) -> str | None:
    """The stored value for ``name`` (file first, then the keyring), else None."""
    in_file, in_keyring = _load()
    if name in in_file:
        return in_file[name]
    if name in in_keyring:
        backend = system_keyring()
        if backend is None:
            return None
        value = _keyring_call(f"read {name}", backend.get_password, name)
        return value if isinstance(value, str) else None
    return None


def stored_values() -> list[str]:
    """Every stored value, for the masking. The keyring is only asked when it holds one; a
    keyring that cannot be read now (locked) gives nothing — its keys cannot be used either,
    and using one (:func:`stored_key`) reports the failure."""
    in_file, in_keyring = _load()
    values = list(in_file.values())
    backend = system_keyring() if in_keyring else None
    if backend is None:
        return values
    for name in in_keyring:
        try:
            value = backend.get_password(SERVICE, name)
        except Exception:
            continue
        if isinstance(value, str) and value:
            values.append(value)
    return values


def key_from(name: str | None) -> str | None:
    """The key named ``name``: its environment variable when set (it always wins), else the
    stored key of that name."""
    if not name:
        return None
    return os.environ.get(name) or stored_key(name)
