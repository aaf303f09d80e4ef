"""`nlq shard`: split records across machines by id, and join the shards' outputs."""

from __future__ import annotations

import click

from nlq.commands.options import errors_as_click, io_options
from nlq import io
from nlq import shard as shards


@click.group("shard", epilog="""\b
Example:
  nlq index --data example clinic -o out/clinic.index.jsonl
  nlq shard select 1/2 example:tasks/clinic.jsonl | nlq generate --index out/clinic.index.jsonl -o out/clinic.1.jsonl
  nlq shard select 2/2 example:tasks/clinic.jsonl | nlq generate --index out/clinic.index.jsonl -o out/clinic.2.jsonl
  nlq shard join --order example:tasks/clinic.jsonl out/clinic.1.jsonl out/clinic.2.jsonl \\
    | nlq score --data example | nlq report
""")
def cli():
    """A stable split of records by id (sha256), the same on every machine, and its join."""


@cli.command("select")
@click.argument("spec", metavar="I/N")
@io_options
def select(spec, input, output, append, strict, progress, limits):
    """The records of shard I of N (a record without an id is in shard 1)."""
    with errors_as_click():
        i, n = shards.parse(spec)
        records = io.read_records(input, strict=strict, stage="shard", **limits)
        io.write_records(shards.select(records, i, n), output, append=append)


@cli.command("join")
@click.option("--order", required=True,
              help="The unsharded records (the task file): the joined records follow their ids' order.")
@click.argument("parts", nargs=-1, required=True)
@click.option("-o", "--output", default="-", type=click.Path(dir_okay=False, allow_dash=True),
              help="Output file (default stdout).")
def join(order, parts, output):
    """The shards' PARTS as one file, in the order of --order's record ids."""
    with errors_as_click():
        io.write_records(shards.join(io.read_records(order, stage="shard"),
                                     [io.read_records(p, stage="shard") for p in parts]), output)
