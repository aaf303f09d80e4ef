"""`nlq report`: EXC, EXF1 and the outcome decomposition of scored runs, side by side."""

from __future__ import annotations

import click

from nlq.commands.options import errors_as_click


@click.command(epilog="""\b
Example:
  nlq score --data fixtures/worlds --self-check fixtures/tasks/clinic.jsonl \\
    | nlq report --by labels.schema_flex --format markdown
""")
@click.argument("scored", nargs=-1, type=click.Path(allow_dash=True))
@click.option("--by", "by", multiple=True, metavar="FIELD",
              help="Slice by a dotted record field (db, labels.schema_flex, prediction.method); repeatable.")
@click.option("--ref", metavar="RUN", help="Reference run (name or file) for the paired McNemar test.")
@click.option("--name", "names", multiple=True, metavar="NAME",
              help="Run names, one per file in order (default: the file name).")
@click.option("--format", "fmt", type=click.Choice(["table", "markdown", "json", "latex"]),
              default="table", show_default=True,
              help="table (rich, for the terminal), markdown, json (fractions) or latex (booktabs).")
@click.option("-o", "--output", default="-", type=click.Path(allow_dash=True), show_default=True,
              help="Where to write the report ('-' = stdout).")
@click.option("--bootstrap", type=click.IntRange(min=0), default=1000, show_default=True,
              help="Bootstrap resamples for the 95% EXC interval (0 = none).")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the bootstrap.")
def cli(scored, by, ref, names, fmt, output, bootstrap, seed):
    """Report scored runs: each SCORED file (default stdin) is one run.

    """
    from nlq import io, report

    with errors_as_click():
        text = report.run(list(scored), names=list(names), by=list(by), ref=ref, fmt=fmt,
                          bootstrap=bootstrap, seed=seed)
        with io.open_output(output) as out:
            out.write(text.encode())
