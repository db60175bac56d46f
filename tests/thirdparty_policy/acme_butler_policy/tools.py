"""ACME's tool plug-in: one benign tool and one governed one."""

from pathlib import Path

from butler_cli import approve
from butler_cli.core.gate import Gate
from butler_cli.core.toolsets import FunctionToolset, ToolSpec


def toolsets(context):
    launched = Path(context.base_dir) / "launched.txt"

    def launch(name, args):
        with launched.open("a") as fh:
            fh.write(args.get("what", "?") + "\n")
        return "launched"

    return [
        FunctionToolset(
            [(ToolSpec("acme_ping", "Ping ACME.", {"type": "object"}), lambda args: "pong")]
        ),
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
