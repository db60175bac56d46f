"""A session and its runs.

A session is what lives as long as a person's chat, one `butler run` batch, or one context of a
`butler serve` process: the config, the policy, the model, the tools (MCP included), the
memory and its frozen block, the project instructions — built once by :func:`open_session`.
A run (one task, one resumed park) is a :class:`~butler_cli.app.run.butler.Butler` over a session
plus what is its own: the session grants, the kept approvals read as it starts, the hooks.

`serve` and the scheduler keep sessions in :class:`Sessions`, keyed by what a session is made
of (the flags, the folder, a park's recorded context but its task), and lend each to one run
at a time. A session is not shared by two runs at once; a kept one is rebuilt when a file it
was built from changed (the config file, the policy file, the policy's code or rule file): a
decision never runs under a policy the person has since edited.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import threading
from collections import OrderedDict
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from butler_cli.app.config import templates
from butler_cli.app.config.config import Config, load_config, resolve_options
from butler_cli.app.config.first_model import no_model
from butler_cli.app.config.options import RunOptions
from butler_cli.app.run.instructions import GateFiles, Instructions, find
from butler_cli.app.run.protected import (
    GateWatch,
    policy_file_of,
    protected_paths,
    trusted_files,
)
from butler_cli.core.defaults import DEFAULT_MAX_ROUNDS, DEFAULT_POLICY
from butler_cli.core.errors import UsageError
from butler_cli.memory.store import DEFAULT_PROFILE, MemoryStore, open_memory
from butler_cli.memory.tools import MemoryTools
from butler_cli.policy.loader import LoadedPolicy, load_policy
from butler_cli.policy.settings import PolicySettings
from butler_cli.providers import model_spec_of, resolve_model
from butler_cli.store.conversations import ConversationStore
from butler_cli.store.files import butler_home, read_no_follow
from butler_cli.tools.context import ToolContext
from butler_cli.tools.loader import LoadedTools, load_tool_plugins
from butler_cli.tools.masking import MaskingToolbox
from butler_cli.tools.paths import roots_from, write_roots_from
from butler_cli.tools.redact import remember_secret

if TYPE_CHECKING:
    from collections.abc import Iterable

    from butler_cli.core.park import RunContext
    from butler_cli.core.provider import Provider
    from butler_cli.core.toolsets import Toolset
    from butler_cli.tools.mcp_hub import McpHub, McpServer

#: When set, every session built appends one line (its folder and policy) to the file this
#: names: a test counts how often `serve` builds the config and policy (issue 23).
COUNT_ENV = "BUTLER_TEST_COUNT_SESSIONS"

#: How many idle sessions :class:`Sessions` keeps (the least recently used goes first).
KEEP_IDLE = 8


@dataclass(frozen=True)
class SessionKey:
    """What a session is made of, as given: the flags, the folder, and the recorded context of
    the park it continues (its task left out: every park of one context shares a session)."""

    options: str
    cwd: str
    recorded: str

    @classmethod
    def of(cls, opts: RunOptions, cwd: Path, recorded: RunContext | None) -> SessionKey:
        context = "" if recorded is None else recorded.model_dump_json(exclude={"task"})
        return cls(json.dumps(asdict(opts), sort_keys=True), str(cwd), context)


@dataclass(frozen=True)
class Guard:
    """What a session's gate is built from, before any model or tool: the config, the options
    as resolved, the home and folder, the policy loaded, the files the gate is built from and
    the paths no tool may see. Built by :func:`open_guard` alone: a run, `butler doctor` and
    `butler tools list` read the same one, so they cannot disagree on what is protected."""

    home: Path
    cwd: Path
    settings: Config
    #: The options as resolved (flags > park record > environment > file > defaults).
    options: RunOptions
    policy: LoadedPolicy
    policy_file: Path | None
    #: The files the gate was built from: the config file, the policy's files.
    sources: tuple[Path, ...]
    #: Every path the agent must never see or change (the home, the config file, the keys,
    #: the policy's code and rule files…), resolved.
    protected: tuple[Path, ...]


@dataclass(frozen=True)
class Equipment:
    """The tools a session offers, built on its :class:`Guard`: the memory's, every
    ``butler.tools`` plug-in's, the MCP servers'."""

    memory: Toolset
    plugins: tuple[LoadedTools, ...]
    mcp: McpHub | None = None
    servers: tuple[tuple[McpServer, Toolset], ...] = ()

    def toolsets(self) -> list[Toolset]:
        """Every toolset, in the order a run offers them."""
        plugged = [toolset for plugin in self.plugins for toolset in plugin.toolsets]
        return [self.memory, *plugged, *(toolset for _, toolset in self.servers)]

    def unwatched(self) -> frozenset[str]:
        """The tools after which the gate's watch need not run: declared ``read_only`` by
        the butler's own toolsets (the memory's, the built-in plug-ins'), which run in this
        process. A third-party plug-in's or an MCP server's claim is not believed: what
        they run can move a folder whatever they declare."""
        ours = [self.memory, *(t for p in self.plugins if p.ours for t in p.toolsets)]
        return frozenset(
            spec.name
            for toolset in ours
            if not toolset.governed
            for spec in toolset.specs()
            if spec.read_only
        )


@dataclass
class Session:
    """The long-lived part of a butler: built once, then used by one run at a time."""

    guard: Guard
    provider: Provider
    model_spec: str
    memory: MemoryStore
    #: F4: the frozen block, composed once (or the park's, byte for byte); `remember` does not
    #: change it.
    block: str
    #: The block it was asked to send (a park's), or None: composed from the memory.
    recorded_block: str | None
    instructions: Instructions
    max_rounds: int
    toolbox: MaskingToolbox
    mcp: McpHub | None
    #: The files it was built from as they were then (see :func:`stamp`); set where sessions
    #: are kept (:class:`Sessions`): a one-shot run reads nothing more.
    built_from: dict[str, str] = field(default_factory=dict)
    key: SessionKey | None = None
    #: Recorded in every park a run of this session makes (``Butler.made``).
    id: str = field(default_factory=lambda: os.urandom(8).hex())  # `secrets` loads hmac
    #: The conversation store, opened on first use and kept as long as the session: a kept
    #: session (`serve`) does not open and close the database — a WAL checkpoint — per run.
    _conversations: ConversationStore | None = field(default=None, repr=False)

    @property
    def conversations(self) -> ConversationStore:
        """The conversation store of this session's home (opened on first use)."""
        if self._conversations is None:
            self._conversations = ConversationStore(self.home)
        return self._conversations

    # The guard's, read from it (never copied).
    @property
    def home(self) -> Path:
        return self.guard.home

    @property
    def cwd(self) -> Path:
        return self.guard.cwd

    @property
    def settings(self) -> Config:
        return self.guard.settings

    @property
    def options(self) -> RunOptions:
        return self.guard.options

    @property
    def policy(self) -> LoadedPolicy:
        return self.guard.policy

    @property
    def policy_file(self) -> Path | None:
        return self.guard.policy_file

    @property
    def sources(self) -> tuple[Path, ...]:
        return self.guard.sources

    @property
    def persona(self) -> str:
        return self.options.system or ""

    def stale(self) -> bool:
        """Whether a file this session was built from has changed (or cannot be read) since,
        or its block would be composed otherwise now (a fact forgotten is never sent again;
        one remembered joins the next session)."""
        if stamp(self.built_from) != self.built_from:
            return True
        return self.memory.block(self.recorded_block) != self.block

    def close(self) -> None:
        """Close the memory database (safe to call twice). The MCP servers are the process's:
        they stop when it ends."""
        self.mcp = None
        self.memory.close()
        if self._conversations is not None:
            self._conversations.close()
            self._conversations = None


def resolved(opts: RunOptions, recorded: RunContext | None = None) -> tuple[Config, RunOptions]:
    """The config file read and the options resolved by the one resolver
    (``resolve_options``): the flags, then — a resume — the park's record, then the
    environment, the config file, the defaults."""
    settings = load_config()
    if opts.template is not None:  # -t NAME: the person's saved system prompt
        if opts.system is not None:
            raise UsageError("give --system (-s) or --template (-t), not both")
        opts = replace(opts, system=templates.load(opts.template), template=None)
    return settings, resolve_options(opts, settings, recorded)


def open_guard(settings: Config, opts: RunOptions, home: Path, cwd: Path) -> Guard:
    """The policy loaded (a bad one is a usage error) and everything the gate is built from:
    the one place what a session protects is decided."""
    policy_file = Path(opts.policy_file).expanduser().resolve() if opts.policy_file else None
    policy = load_policy(
        opts.policy or DEFAULT_POLICY, PolicySettings(home, policy_file, settings.sections)
    )
    gate = _policy_sources(policy, policy_file)
    return Guard(
        home=home,
        cwd=cwd,
        settings=settings,
        options=opts,
        policy=policy,
        policy_file=policy_file,
        sources=tuple(p for p in [settings.path, *gate] if p is not None),
        protected=tuple(protected_paths(home, gate, settings)),
    )


def equip(guard: Guard, memory: MemoryStore, *, mcp: bool = True) -> Equipment:
    """The tools a session on ``guard`` offers, each bound to its folder, home, policy and
    protected paths; the MCP servers' (``mcp``) hidden from the protected paths first."""
    settings = guard.settings
    context = ToolContext(
        guard.cwd,
        guard.home,
        guard.policy.classify,
        list(guard.protected),
        roots_from(guard.cwd, settings.allowed_roots()),
        dict(settings.sections),
        write_roots_from(guard.cwd, settings.allowed_roots()),
        tuple(trusted_files(settings, guard.cwd)),
    )
    plugins = tuple(load_tool_plugins(context))
    memory_tools = MemoryTools(memory).toolset()
    if not (mcp and settings.mcp):
        return Equipment(memory_tools, plugins)
    from butler_cli.app.run.mcp_servers import mcp_with_toolsets

    hub, servers = mcp_with_toolsets(settings, guard.home, guard.policy, list(guard.protected))
    return Equipment(memory_tools, plugins, hub, tuple(servers))


def open_session(
    opts: RunOptions,
    *,
    cwd: Path | None = None,
    home: Path | None = None,
    recorded: RunContext | None = None,
) -> Session:
    """Resolve model and policy up front (a bad one is a usage error before anything runs),
    then build everything a session keeps.

    ``opts`` are the flags: the one resolver (``resolve_options``) fills the rest — for a
    resume (``recorded``: the park's context) the park's record, then the environment, then
    the config file, then the defaults. A park's memory block and instructions are sent as
    recorded (the block only when its profile is the session's).
    """
    cwd = (cwd or Path.cwd()).absolute()
    given = opts
    settings, opts = resolved(opts, recorded)
    model = settings.model_spec(opts.model) if opts.model else opts.model  # [aliases]
    if not model:
        raise no_model()
    max_rounds = opts.max_rounds if opts.max_rounds is not None else DEFAULT_MAX_ROUNDS
    if max_rounds < 1:
        raise UsageError("--max-rounds must be at least 1")
    home = home or butler_home()
    memory = open_memory(home, opts.profile or DEFAULT_PROFILE)  # bad name: usage error
    provider = resolve_model(
        model,
        opts.base_url,
        settings.providers,
        opts.model_options,
        stream=settings.streams(opts),
    )
    guard = open_guard(settings, opts, home, cwd)
    _count(cwd, guard.policy.spec)
    same_memory = recorded is not None and memory.profile == recorded.profile
    recorded_block = recorded.memory_block if same_memory and recorded else None
    instructions = _instructions(cwd, GateFiles(home, list(guard.protected)), recorded)
    equipment = equip(guard, memory)
    toolbox = MaskingToolbox(equipment.toolsets())
    toolbox.watch = GateWatch(list(guard.protected)).check
    toolbox.unwatched = equipment.unwatched()
    return Session(
        guard=guard,
        provider=provider,
        model_spec=model_spec_of(provider, model),
        memory=memory,
        block=memory.block(recorded_block),
        recorded_block=recorded_block,
        instructions=instructions,
        max_rounds=max_rounds,
        toolbox=toolbox,
        mcp=equipment.mcp,
        key=SessionKey.of(given, cwd, recorded),
    )


def _instructions(cwd: Path, gate: GateFiles, recorded: RunContext | None) -> Instructions:
    """Read once, like the block: a resumed park sends the instructions it was sent. The
    park key is remembered first, so a copy of it in a file is masked like any secret."""
    if recorded is None or recorded.instructions is None:
        remember_park_key(gate.home)
        return find(cwd, gate)
    return Instructions((), recorded.instructions)


def _policy_sources(policy: LoadedPolicy, policy_file: Path | None) -> list[Path]:
    """The files the policy was built from — the ``--policy-file``, a file policy, its code,
    and the rule file a policy names as its ``source`` (tiered does): the agent may not
    change them, and a kept session whose files changed is rebuilt."""
    named = getattr(policy.policy, "source", None)
    found = [
        policy_file,
        policy_file_of(policy.spec),
        *policy.files,
        named if isinstance(named, Path) else None,
    ]
    return [Path(p) for p in dict.fromkeys(found) if p is not None]


def stamp(files: Iterable[str]) -> dict[str, str]:
    """Each file's content digest (a folder: its identity and times; "" when missing or
    unreadable): a change of any byte shows, however quickly it was made."""
    out: dict[str, str] = {}
    for name in files:
        try:
            # never waits: a FIFO put in a file's place opens at once and is not read
            fd = os.open(name, os.O_RDONLY | os.O_NONBLOCK)
        except OSError:
            out[name] = ""
            continue
        try:
            out[name] = _digest(fd)
        except OSError:
            out[name] = ""
        finally:
            os.close(fd)
    return out


def _digest(fd: int) -> str:
    """A regular file's content digest; a folder's identity and times; anything else (a FIFO,
    a device) its kind and inode, never read."""
    import hashlib

    info = os.fstat(fd)
    if stat.S_ISDIR(info.st_mode):
        return f"dir {info.st_dev} {info.st_ino} {info.st_mtime_ns} {info.st_ctime_ns}"
    if not stat.S_ISREG(info.st_mode):
        return f"not a file {info.st_mode:o} {info.st_ino}"
    digest = hashlib.sha256()
    while chunk := os.read(fd, 1 << 16):
        digest.update(chunk)
    return digest.hexdigest()


def remember_park_key(home: Path) -> None:
    """The park key is a secret like any other: masked in every result (an MCP server or a
    program that could read the home returns it as ``****``) and every line shown."""
    # none yet (made at the first park), or unreadable (reported when it is used); the name
    # is store.key.KEY_FILE, not imported here: that module loads `random` for a run that
    # may never park
    with contextlib.suppress(OSError):
        remember_secret(read_no_follow(home / "park.key").decode("ascii", "replace"))


def _count(cwd: Path, policy: str) -> None:
    target = os.environ.get(COUNT_ENV)
    if target:
        with open(target, "a", encoding="utf-8") as fh:
            fh.write(f"{cwd} {policy}\n")


class Sessions:
    """The sessions a long-running process keeps (`serve`: the inbox and the scheduler), by
    :class:`SessionKey`. Thread-safe: each session is lent to one run at a time — two
    decisions of one context at once get two sessions — and a kept one whose files changed is
    closed and built afresh. At most :data:`KEEP_IDLE` idle ones are kept."""

    def __init__(self, home: Path, keep: int = KEEP_IDLE) -> None:
        self.home = home
        self._keep = keep
        self._lock = threading.Lock()
        self._idle: OrderedDict[SessionKey, list[Session]] = OrderedDict()
        self._closed = False

    def lend(self, opts: RunOptions, cwd: Path, recorded: RunContext | None = None) -> Session:
        """An idle session of this key that is still current, else a new one; give it back
        with :meth:`give_back`."""
        key = SessionKey.of(opts, cwd.absolute(), recorded)
        with self._lock:
            idle = self._idle.get(key)
            session = idle.pop() if idle else None
            if idle is not None and not idle:
                del self._idle[key]
        if session is not None and session.stale():
            session.close()
            session = None
        if session is None:
            session = open_session(opts, cwd=cwd, home=self.home, recorded=recorded)
            session.built_from = stamp(map(str, session.sources))
        return session

    def give_back(self, session: Session) -> None:
        """The run is over: keep the session for the next run of its key."""
        assert session.key is not None
        dropped: list[Session] = []
        with self._lock:
            if self._closed:
                dropped.append(session)
            else:
                self._idle.setdefault(session.key, []).append(session)
                self._idle.move_to_end(session.key)
                while sum(map(len, self._idle.values())) > self._keep:
                    _, oldest = self._idle.popitem(last=False)
                    dropped.extend(oldest)
        for s in dropped:
            s.close()

    def close(self) -> None:
        """Close every idle session; one lent now is closed when it is given back."""
        with self._lock:
            self._closed = True
            idle = [s for group in self._idle.values() for s in group]
            self._idle.clear()
        for s in idle:
            s.close()
