"""The example data installed with nlq: three small MongoDB-native worlds and their tasks.

`--data example` (also `NLQ_DATA=example`, `--uri file:example`,
`nlq.open_backend(data="example")`) serves the databases `clinic`, `club` and
`racing`, generated for nlq (no real person's data). An input file written
`example:PATH` is the file PATH of the shipped folder:

- `example:worlds` — the worlds (`--data example` is short for it);
- `example:tasks/clinic.jsonl`, `example:tasks/club.jsonl`, `example:tasks/racing.jsonl`
  — 45 task records each, with a verified gold pipeline and labels;
- `example:predictions/other-system.jsonl` — five predictions of an imaginary other
  system, under its own field names (for `nlq import --map`).

So every example in `--help` and the README runs after a plain `pip install`,
from any folder. A folder of your own called `example` is `./example`.
"""

from __future__ import annotations

from pathlib import Path

from nlq.errors import InputError

NAME = "example"
SCHEME = "example:"
ROOT = Path(__file__).resolve().parent
_KINDS = ("worlds", "tasks", "predictions")


def shipped() -> list[str]:
    """The names `example:NAME` accepts, sorted: `worlds` and every shipped task and prediction file."""
    names = ["worlds"]
    for kind in _KINDS[1:]:
        names += sorted(f"{kind}/{p.name}" for p in (ROOT / kind).glob("*.jsonl"))
    return names


def is_example(value) -> bool:
    """True for `example` and `example:...` (the shipped data), false for any other value."""
    return isinstance(value, str) and (value == NAME or value.startswith(SCHEME))


def resolve(value: str) -> str:
    """The path of the shipped file or folder `value` names (`example` = `example:worlds`),
    `value` unchanged when it does not name one; InputError for an `example:` name nlq does not ship."""
    if not is_example(value):
        return value
    name = value[len(SCHEME):].strip("/") if value != NAME else "worlds"
    name = name or "worlds"
    if name not in shipped():
        raise InputError(f"nlq ships no example {name!r}",
                         hint="the shipped names are " + ", ".join(f"example:{n}" for n in shipped()))
    return str(ROOT / name)
