"""`nlq import`: benchmark records (TEND v1, TEND-native) -> nlq task records."""

from __future__ import annotations

import click

from nlq.commands.options import errors_as_click, io_options, with_progress
from nlq import importers
from nlq.io import write_records


@click.command(name="import", epilog="""\b
Example:
  echo '{"record_id": 1, "db_id": "clinic", "nl_queries": ["How many patients are there?"], "MQL": "db.patients.countDocuments({})"}' \\
    | nlq import --format tend-v1 --paraphrases
""")
@click.option("--format", "fmt", type=click.Choice(sorted(importers.FORMATS)), required=True,
              help="Benchmark record layout of INPUT (a JSON array or JSONL).")
@click.option("--paraphrases", is_flag=True,
              help="One task per phrasing (id <db>/<record>/pk, labels.paraphrase = k) instead of one per record.")
@io_options
def cli(input, output, strict, progress, fmt, paraphrases):
    """Convert benchmark records to task records {id, db, question, paraphrases, gold_mql, labels}.

    One task record per input record, in order; a record lacking a required
    field or a malformed line becomes a failure record (`--strict`: exit 1).
    With --paraphrases, one task per phrasing of each record.
    """
    with errors_as_click():
        write_records(with_progress(importers.run(input, fmt, strict=strict, paraphrases=paraphrases), progress, "import"), output)
