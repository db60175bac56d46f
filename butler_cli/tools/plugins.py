"""The built-in tools as ``butler.tools`` plug-ins (registered in ``pyproject.toml``).

Each factory is what a third party would write: it takes a :class:`butler_cli.api.ToolContext`
and returns toolsets, importing nothing of the butler but :mod:`butler_cli.api` (and the
tools' own modules beside this one). The loader that finds them is
:mod:`butler_cli.tools.loader`.
"""

from __future__ import annotations

from butler_cli.api import Setting, ToolContext, Toolset
from butler_cli.tools.clock import clock_toolset
from butler_cli.tools.command import CommandTool
from butler_cli.tools.files import FileTools
from butler_cli.tools.http import http_gate

__all__ = ["SMTP", "ToolContext", "clock", "command", "email", "files", "http"]


def files(context: ToolContext) -> list[Toolset]:
    tools = FileTools(context.base_dir, context.home, context.protected, context.roots)
    return [tools.benign(), tools.governed(context.policy)]


def clock(context: ToolContext) -> Toolset:
    return clock_toolset()


def command(context: ToolContext) -> Toolset:
    return CommandTool(
        context.base_dir,
        context.home,
        list(context.roots),
        protected=list(context.protected),
        network=bool(context.sandbox.get("network", True)),
        write_roots=list(context.write_roots) or [context.base_dir],
        trusted=list(context.trusted),
    ).governed(context.policy)


def http(context: ToolContext) -> Toolset:
    return http_gate(context.policy)


def email(context: ToolContext) -> list[Toolset]:
    """send_email, only where an SMTP server is configured (``[smtp]``, declared by
    :data:`SMTP`): offered without one, it was asked about, approved by a person, and only
    then failed."""
    smtp = context.section("smtp")
    if not smtp.get("host"):
        return []
    from butler_cli.tools.email import EmailTool

    return [EmailTool(smtp, context.secret).governed(context.policy)]


#: send_email's config section ``[smtp]``, declared as any plug-in declares one: an entry
#: point in ``butler.settings`` (``smtp = "butler_cli.tools.plugins:SMTP"``, pyproject.toml).
SMTP = (
    Setting("host", str, help="the SMTP server for send_email"),
    Setting("port", int, 587),
    Setting("tls", str, "starttls", choices=("starttls", "ssl", "none")),
    Setting("user", str),
    Setting("password_env", str, "BUTLER_SMTP_PASSWORD", secret_name=True, help="a NAME"),
    Setting("sender", str),
    Setting("timeout", float, 30.0, above=0, help="seconds to wait on the SMTP server"),
)
