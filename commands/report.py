"""`nlq report`: EXC, EXF1 and the outcome decomposition of scored runs, side by side."""

from __future__ import annotations

import shutil
import sys

import click

from nlq.commands.options import errors_as_click
from nlq.text import terminal_safe


@click.command(epilog="""\b
Examples:
  nlq score --data example --self-check example:tasks/clinic.jsonl \\
    | nlq report --by labels.schema_flex --format markdown
  nlq score --data example example:tasks/club.jsonl -o out/club.scored.jsonl
  nlq report out/club.scored.jsonl --layout paper --format html -o out/report.html
  nlq index --data example --db racing -o out/racing.index.jsonl
  nlq generate --index out/racing.index.jsonl example:tasks/racing.jsonl \\
    | nlq score --data example -o out/racing.scored.jsonl
  nlq report out/racing.scored.jsonl --explain racing/6
""")
@click.argument("scored", nargs=-1, type=click.Path(allow_dash=True))
@click.option("--by", "by", multiple=True, metavar="FIELD",
              help="Slice by a dotted record field (db, labels.schema_flex, prediction.method); repeatable.")
@click.option("--ref", metavar="RUN", help="Reference run (name or file) for the paired McNemar test.")
@click.option("--name", "names", multiple=True, metavar="NAME",
              help="Run names, one per file in order (default: the file name).")
@click.option("--format", "fmt", type=click.Choice(["table", "markdown", "json", "latex", "html"]),
              default="table", show_default=True,
              help="table (rich, for the terminal), markdown, json (fractions), latex (booktabs) "
                   "or html (one self-contained page with charts).")
@click.option("--layout", type=click.Choice(["full", "paper"]), default="full", show_default=True,
              help="full (every outcome bucket) or paper (the TEND paper's compact columns, claim-axis "
                   "slices and interaction economics).")
@click.option("--cascade-fallback", metavar="RUN",
              help="Run (name or file) a cascade falls back on: each run with confidence gets the "
                   "EXC / calls-saved curve over all thresholds.")
@click.option("--width", type=click.IntRange(min=40), metavar="COLUMNS",
              help="Fit the table format in this many columns (default: the terminal's width; "
                   "unlimited when not writing to a terminal).")
@click.option("--explain", "explain_id", metavar="ID",
              help="Instead of the report: why the record with this id got its verdict (score.diff, readably).")
@click.option("-o", "--output", default="-", type=click.Path(allow_dash=True), show_default=True,
              help="Where to write the report ('-' = stdout).")
@click.option("--bootstrap", type=click.IntRange(min=0), default=1000, show_default=True,
              help="Bootstrap resamples for the 95% EXC interval (0 = none).")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the bootstrap.")
def cli(scored, by, ref, names, fmt, layout, cascade_fallback, width, explain_id, output, bootstrap, seed):
    """Report scored runs: each SCORED file (default stdin) is one run.

    """
    from nlq import io, report

    if width is None and output == "-" and sys.stdout.isatty():
        width = shutil.get_terminal_size().columns
    with errors_as_click():
        if explain_id is not None:
            text = report.explain(list(scored), explain_id, names=list(names))
        else:
            text = report.run(list(scored), names=list(names), by=list(by), ref=ref, fmt=fmt, layout=layout,
                              bootstrap=bootstrap, seed=seed, cascade_fallback=cascade_fallback, width=width)
        if explain_id is not None or fmt in ("table", "markdown", "latex"):  # json and html escape their own
            text = terminal_safe(text)
        with io.open_output(output) as out:
            out.write(text.encode())
