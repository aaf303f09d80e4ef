"""The `nlq` command line: one thin click module per subcommand, loaded lazily.

The modules live in the repository's commands/ folder and install as the
package `nlq.commands` (see setup.py).
"""

from __future__ import annotations

import importlib
import importlib.util
import signal

import click

from nlq import __version__

# subcommand -> module of this package (each defines a click command `cli`)
COMMANDS = {
    "import": "import_",
    "exec": "exec_",
    "index": "index",
    "card": "card",
    "witness": "witness",
    "generate": "generate",
    "repair": "repair",
    "score": "score",
    "report": "report",
    "ask": "ask",
    "memory": "memory",
    "shard": "shard",
}


class LazyGroup(click.Group):
    """Imports a subcommand's module only when it runs (fast `nlq --help`)."""

    def list_commands(self, ctx):
        return [name for name in COMMANDS if self._available(name)]

    @staticmethod
    def _available(name: str) -> bool:
        return importlib.util.find_spec(f"{__name__}.{COMMANDS[name]}") is not None

    def get_command(self, ctx, name):
        if name not in COMMANDS or not self._available(name):
            return None
        return importlib.import_module(f"{__name__}.{COMMANDS[name]}").cli


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="nlq")
def cli():
    """Natural-language questions to MongoDB aggregation pipelines, measured.

    Each subcommand reads and writes JSONL, so the stages pipe together:

    \b
      nlq index --data example clinic -o out/clinic.index.jsonl
      nlq witness --index out/clinic.index.jsonl example:tasks/clinic.jsonl \\
        | nlq generate --method rules --index out/clinic.index.jsonl \\
        | nlq score --data example | nlq report
    """
    # Die quietly on a closed pipe (`nlq ... | head`).
    if hasattr(signal, "SIGPIPE"):
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
