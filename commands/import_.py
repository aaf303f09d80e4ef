"""`nlq import`: benchmark records (TEND v1, TEND-native) or any system's predictions -> nlq task records."""

from __future__ import annotations

import click

from nlq import importers
from nlq.errors import InputError
from nlq.commands.options import errors_as_click, io_options, with_progress
from nlq.io import write_records


@click.command(name="import", epilog="""\b
Examples:
  nlq import --map question=nl,db=db_id,prediction=pred --tasks example:tasks/clinic.jsonl \\
    example:predictions/other-system.jsonl | nlq score --data example | nlq report
  echo '{"record_id": 1, "db_id": "clinic", "nl_queries": ["How many patients are there?"], "MQL": "db.patients.countDocuments({})"}' \\
    | nlq import --format tend-v1 --paraphrases
""")
@click.option("--format", "fmt", type=click.Choice(sorted(importers.FORMATS) + ["mapped"]),
              help="Record layout of INPUT (a JSON array or JSONL); `mapped` (the default with --map): "
                   "another system's predictions.")
@click.option("--map", "maps", multiple=True, metavar="TARGET=FIELD[,...]",
              help=f"Where each target is in the input records (dotted fields; targets: "
                   f"{', '.join(importers.MAP_TARGETS)}); unmapped targets are looked for under their own name.")
@click.option("--tasks", type=click.Path(allow_dash=False, dir_okay=False),
              help="Task records to join the predictions with (by id, else by db and question): "
                   "they bring the gold and the labels.")
@click.option("--method", metavar="NAME", help="Recorded as the predictions' `method` (mapped format).")
@click.option("--paraphrases", is_flag=True,
              help="One task per phrasing (id <db>/<record>/pk, labels.paraphrase = k) instead of one per record.")
@io_options
def cli(input, output, append, strict, progress, limits, fmt, maps, tasks, method, paraphrases):
    """Convert benchmark records to task records {id, db, question, paraphrases, gold_mql, labels},
    or another system's predictions (`--map`) to task records with `prediction`.

    One task record per input record, in order; a record lacking a required
    field, a prediction that matches no task of `--tasks`, or a malformed line
    becomes a failure record (`--strict`: exit 1). With --paraphrases, one
    task per phrasing of each benchmark record.
    """
    fmt = fmt or ("mapped" if maps or tasks or method else None)
    if fmt is None:
        raise click.UsageError("give --format (tend-v1, tend-native) or --map for another system's predictions")
    if fmt != "mapped" and (maps or tasks or method):
        raise click.UsageError(f"--map, --tasks and --method go with the mapped format, not --format {fmt}")
    try:
        mapping = importers.parse_map(maps)
    except InputError as exc:
        raise click.BadParameter(exc.message, param_hint="--map") from None
    with errors_as_click():
        records = importers.run(input, fmt, strict=strict, mapping=mapping, tasks=tasks, method=method,
                                 paraphrases=paraphrases, **limits)
        write_records(with_progress(records, progress, "import"), output, append=append)
