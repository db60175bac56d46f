"""ACME's tool plug-in: one benign tool and one governed one, configured by ``[acme]``."""

from pathlib import Path

from butler_cli import approve
from butler_cli.core.gate import Gate
from butler_cli.core.toolsets import FunctionToolset, ToolSpec


def toolsets(context):
    launched = Path(context.base_dir) / "launched.txt"
    acme = context.section("acme")  # [acme], declared in acme_butler_policy/settings.py

    def launch(name, args):
        with launched.open("a") as fh:
            fh.write(args.get("what", "?") + f" from {acme['pad']}\n")
        return "launched"

    def ping(args):
        code = context.secret(acme["code_env"]) or "no code"
        return f"{acme['greeting']} (retries {acme['retries']}, region {acme['region']}, {code})"

    return [
        FunctionToolset([(ToolSpec("acme_ping", "Ping ACME.", {"type": "object"}), ping)]),
        Gate(
            [
                ToolSpec(
                    "acme_launch",
                    "Launch something.",
                    {"type": "object"},
                    approve("ACME launches need a person"),
                )
            ],
            launch,
            policy=context.policy,
        ),
    ]
