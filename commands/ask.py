"""`nlq ask`: one question to rows — index (cached), witness, generate, execute."""

from __future__ import annotations

import click

from nlq import methods
from nlq.commands.options import backend_options, errors_as_click, open_backend_from, warn


@click.command(name="ask", epilog="""\b
Examples:
  nlq ask --data fixtures/worlds --db clinic "How many patients are allergic to penicillin?"
  nlq ask --data fixtures/worlds --db racing --explain "Which drivers are former junior champions?"
""")
@backend_options
@click.argument("question")
@click.option("--db", required=True, help="Database the question is about.")
@click.option("-m", "--method", type=click.Choice(methods.names()), default="rules", show_default=True,
              help="Generation method.")
@click.option("--repair", "use_repair", is_flag=True,
              help="Pass the prediction through `nlq repair` (admissibility gate, execution feedback, "
                   "result-space vote) before running it.")
@click.option("--min-confidence", type=click.FloatRange(0, 1), default=None,
              help="No answer (exit 1) when the method's confidence is below this.")
@click.option("--explain", is_flag=True,
              help="Show the witnesses, the card lines used, the pipeline (mongosh), the confidence and the "
                   "timings before the rows.")
@click.option("--json", "as_json", is_flag=True,
              help="Write the whole answer record (witnesses, prediction, execution with rows, explain) as JSON.")
@click.option("--no-cache", is_flag=True,
              help="Build the grounding index afresh and do not keep it (default: cached in "
                   "$XDG_CACHE_HOME/nlq/index, keyed by the data's content).")
def cli(data, uri, timeout, max_rows, question, db, method, use_repair, min_confidence, explain, as_json, no_cache):
    """Answer QUESTION on a database: print the result rows as JSONL.

    Builds the grounding index of --db (cached for --data folders, keyed by a
    hash of the files), finds the question's witnesses, generates a pipeline
    and runs it. Exits 1 with the reason when no answer can be given.
    """
    from nlq import ask, io

    backend = open_backend_from(data, uri)
    with errors_as_click():
        record = ask.run(question, backend, db, method=method, repair=use_repair, cache=not no_cache,
                         timeout=timeout, max_rows=max_rows, options={"min_confidence": min_confidence},
                         warn=warn)
        if as_json:
            io.write_records([record])
        elif explain:
            click.echo(ask.explain_text(record), nl=False)
        else:
            io.write_records(record["execution"]["rows"] or [])
        ask.check_answered(record)
