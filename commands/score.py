"""`nlq score`: execute gold and prediction, add EXC, EXF1 and the outcome."""

from __future__ import annotations

import click

from nlq.commands.options import (backend_options, errors_as_click, io_options, open_backend_from, warn,
                                  with_progress)


@click.command(epilog="""\b
Example:
  nlq score --data example --self-check example:tasks/clinic.jsonl | nlq report
""")
@backend_options
@io_options
@click.option("--beta", type=click.IntRange(min=0), default=2, show_default=True,
              help="Surplus top-level values a predicted row may carry (EXC's beta).")
@click.option("--self-check", is_flag=True,
              help="Score every gold against itself; list the golds that do not earn EXC = 1 on stderr.")
@click.option("--beta-sweep", is_flag=True,
              help="Also run the surplus probes on every gold result (predictions are scored as without the "
                   "flag); add score.probes and print a JSON summary line on stderr.")
def cli(data, uri, timeout, max_rows, input, output, append, strict, progress, limits, beta, self_check, beta_sweep):
    """Score predictions against gold results: adds `score` to each record.

    `score` = {exc, exf1, outcome, near_miss, order_sensitive, gold_rows,
    pred_rows, ms, error}; outcome is one of correct, no_submission, invalid,
    exec_error, empty, wrong_rows (near_miss: order_only, row_subset,
    row_superset, value_mismatch), or gold_error for a broken gold.

    """
    from nlq import io, score

    with open_backend_from(data, uri, timeout) as backend, errors_as_click():
        records = with_progress(io.read_records(input, strict=strict, stage="score", **limits), progress, "score")
        io.write_records(score.run(records, backend, beta=beta, timeout=timeout, max_rows=max_rows,
                                   self_check=self_check,
                                   beta_sweep=beta_sweep, summary=lambda line: click.echo(line, err=True), warn=warn),
                         output, append=append)
