"""``send_email``: governed, over the SMTP server named in the config file's ``[smtp]``
(declared in :mod:`butler_cli.tools.plugins`, so every key arrives checked, defaults filled).

The password comes from the environment variable the config names (never the file itself).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from butler_cli.api import Classifier, Gate, ToolSpec, Verdict, approve, default_title, refuse

_SCHEMA = {
    "type": "object",
    "properties": {
        "to": {"description": "An address or a list of addresses"},
        "subject": {"type": "string"},
        "body": {"type": "string"},
    },
    "required": ["to", "subject", "body"],
}
_DEFAULT = approve("sends an e-mail in your name — asking you first", ask_always=True)


def _recipients(args: dict[str, Any]) -> list[str]:
    to = args.get("to")
    items = [to] if isinstance(to, str) else to
    if (
        not isinstance(items, list)
        or not items
        or not all(isinstance(a, str) and "@" in a for a in items)
    ):
        raise ValueError("'to' must be an address or a list of addresses")
    if not isinstance(args.get("subject"), str) or not isinstance(args.get("body"), str):
        raise ValueError("'subject' and 'body' must be strings")
    return items


class EmailTool:
    def __init__(
        self, smtp: Mapping[str, Any], secret: Callable[[str], str | None] = lambda _: None
    ) -> None:
        self.smtp = dict(smtp)
        #: ``ToolContext.secret``: the SMTP password by its variable's name.
        self.secret = secret

    def guard(self, name: str, args: dict[str, Any]) -> Verdict | None:
        try:
            _recipients(args)
        except ValueError as exc:
            return refuse(str(exc))
        return None

    def describe(self, name: str, args: dict[str, Any]) -> str:
        try:
            to = ", ".join(_recipients(args))
        except ValueError:
            return default_title(name, args)  # the recipients first, as given
        return f"send_email to {to}: {args['subject']!r} ({len(args['body'])} characters)"

    def execute(self, name: str, args: dict[str, Any]) -> str:
        to = _recipients(args)
        host = self.smtp.get("host")
        if not host:
            raise RuntimeError("no SMTP server configured: butler config set smtp.host HOST")
        port = int(self.smtp["port"])
        tls = self.smtp["tls"]
        # Here, not at the top: smtplib and email (with ssl) load only when mail is sent.
        import smtplib
        from email.message import EmailMessage

        message = EmailMessage()
        message["From"] = self.smtp.get("sender") or self.smtp.get("user") or f"butler@{host}"
        message["To"] = ", ".join(to)
        message["Subject"] = args["subject"]
        message.set_content(args["body"])
        client = smtplib.SMTP_SSL if tls == "ssl" else smtplib.SMTP
        with client(host, port, timeout=self.smtp["timeout"]) as smtp:
            if tls == "starttls":
                smtp.starttls()
            user = self.smtp.get("user")
            if user:
                smtp.login(user, self.secret(self.smtp["password_env"]) or "")
            refused = smtp.send_message(message)
        sent = [a for a in to if a not in refused]
        return f"sent to {', '.join(sent)}" + (
            f"; refused: {', '.join(refused)}" if refused else ""
        )

    def governed(self, policy: Classifier | None) -> Gate:
        spec = ToolSpec("send_email", "Send an e-mail.", _SCHEMA, _DEFAULT)
        return Gate([spec], self.execute, policy=policy, describer=self.describe, guard=self.guard)
