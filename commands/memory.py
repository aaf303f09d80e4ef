"""`nlq memory`: the memory of verified answers (add, list, remove, verify)."""

from __future__ import annotations

import click

from nlq.commands.options import (backend_options, errors_as_click, io_options, memory_option, open_backend_from,
                                  open_memory)
from nlq import io


@click.group("memory", epilog="""\b
Example:
  nlq memory add --memory out/clinic.memory.sqlite --gold example:tasks/clinic.jsonl | head -1
  nlq memory verify --memory out/clinic.memory.sqlite --data example -o /dev/null
  nlq memory list --memory out/clinic.memory.sqlite --db clinic | head -2
""")
def cli():
    """Verified question -> query pairs, per database, in one SQLite file.

    Entries come from records whose answer is verified: scored EXC 1 (`nlq
    score`) or confirmed by a user (`nlq ask --confirm`). `nlq generate
    --memory FILE` then answers each question with help from the entries
    most like it, never from an entry of the record itself.
    """


@cli.command("add")
@io_options
@memory_option(required=True)
@click.option("--gold", is_flag=True,
              help="Remember each record's gold instead of its prediction (on purpose only: a memory of a "
                   "benchmark's golds answers that benchmark from its own answers).")
def add(input, output, append, strict, progress, limits, memory_path, gold):
    """Add the verified records of INPUT (scored EXC 1, or `confirmed`); each record is written out
    with `memory = {added: ID, new}` or `{skipped: why}`."""
    from nlq.memory.stage import STAGE, add_records

    with errors_as_click(), open_memory(memory_path) as memory:
        records = io.read_records(input, strict=strict, stage=STAGE, **limits)
        io.write_records(add_records(records, memory, gold=gold), output, append=append)


@cli.command("list")
@memory_option(required=True)
@click.option("--db", default=None, help="Only this database's entries.")
@click.option("--stale", is_flag=True, help="Also the stale entries (`verify` found they no longer answer).")
@click.option("-o", "--output", default="-", type=click.Path(dir_okay=False, allow_dash=True),
              help="Output file (default stdout).")
def list_(memory_path, db, stale, output):
    """The entries as JSONL: {id, db, kind, question, mql, verified_by, at, source, stale}."""
    with errors_as_click(), open_memory(memory_path) as memory:
        io.write_records((e.to_json() for e in memory.entries(db, stale=stale)), output)


@cli.command("remove")
@memory_option(required=True)
@click.argument("ids", nargs=-1, required=True, type=click.IntRange(min=1))
def remove(memory_path, ids):
    """Delete the entries with these IDS (from `nlq memory list`)."""
    with errors_as_click(), open_memory(memory_path) as memory:
        n = memory.remove(ids)
    click.echo(f"removed {n} of {len(ids)} entries", err=True)
    if n < len(ids):
        raise SystemExit(1)


@cli.command("verify")
@memory_option(required=True)
@click.option("--db", default=None, help="Only this database's entries.")
@click.option("-o", "--output", default="-", type=click.Path(dir_okay=False, allow_dash=True),
              help="Output file (default stdout).")
@backend_options
def verify(memory_path, db, output, data, uri, timeout, max_rows):
    """Re-run every entry on the current data: one that no longer runs, or now returns nothing, is
    marked stale and no longer used (one that answers again is used again). Writes each entry with
    `verify = {ok, rows | reason}`; a summary goes to stderr."""
    from nlq.memory.stage import verify as verify_entries

    backend = open_backend_from(data, uri, timeout)
    counts = {"ok": 0, "stale": 0}

    def counted(records):
        for record in records:
            counts["ok" if record["verify"]["ok"] else "stale"] += 1
            yield record

    with errors_as_click(), backend, open_memory(memory_path) as memory:
        io.write_records(counted(verify_entries(memory, backend, db=db, timeout=timeout, max_rows=max_rows)),
                         output)
    click.echo(f"{counts['ok']} entries answer, {counts['stale']} stale", err=True)
