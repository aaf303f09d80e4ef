"""`nlq witness`: bind the question's literals to stored values and dynamic keys."""

from __future__ import annotations

import click

from nlq.commands.options import errors_as_click, io_options, profile_options, question_limit, with_progress
from nlq import io
from nlq import index as grounding
from nlq import witness as witnesses


@click.command(name="witness", epilog="""\b
Example:
  nlq index --data example clinic -o out/clinic.index.jsonl
  nlq witness --index out/clinic.index.jsonl example:tasks/clinic.jsonl
""")
@io_options
@question_limit
@click.option("--index", "index_path", required=True, type=click.Path(exists=True, dir_okay=False),
              help="Index JSONL from `nlq index` (may hold several databases).")
@profile_options("witness")
def cli(input, output, append, strict, progress, limits, max_question_chars, index_path, profile):
    """Add `witnesses` to each task record (TASKS file or '-' for stdin).

    Quoted strings, dates, numbers, ALL-CAPS codes, title-case phrases and
    word n-grams of the question are looked up in the value index of the
    record's `db`. Only `question` is read, never gold or labels. --profile
    paper takes the paper's literal classes (quoted strings, dates and years,
    ALL-CAPS codes; title-case phrases soft) and hard witnesses of at most 6
    locations.
    """
    with errors_as_click():
        indexes = grounding.load(index_path)
        records = io.read_records(input, strict=strict, stage=witnesses.STAGE, **limits)
        io.write_records(witnesses.run(with_progress(records, progress, "witness"), indexes, hard_max=profile["hard_max"],
                                       max_question_chars=max_question_chars, literals=profile["literals"]), output, append=append)
