"""`nlq exec`: run one query, or the gold query of every task record."""

from __future__ import annotations

import click

from nlq.commands.options import backend_options, errors_as_click, input_limits, open_backend_from, warn


@click.command(name="exec", epilog="""\b
Examples:
  nlq exec --data example --db clinic 'db.patients.find({}, {_id: 0}).limit(2)'
  nlq exec --data example --db clinic --explain 'db.patients.countDocuments({})'
  nlq exec --data example --tasks example:tasks/clinic.jsonl --rows
""")
@backend_options
@click.argument("query", required=False)
@click.option("--db", help="Database to query (overrides a task record's own db).")
@click.option("--tasks", type=click.Path(allow_dash=True),
              help="JSONL task records ('-' = stdin): execute each record's gold, add `execution`.")
@click.option("--rows", is_flag=True, help="With --tasks: embed the result rows as execution.rows.")
@click.option("--explain", is_flag=True, help="Print the parsed and lowered query instead of running it.")
@click.option("-o", "--output", default="-", type=click.Path(allow_dash=True), show_default=True,
              help="Where to write JSONL ('-' = stdout).")
@click.option("--append", is_flag=True, help="Add to the end of the -o file instead of starting it anew.")
@click.option("--strict", is_flag=True, help="With --tasks: stop (exit 1) at the first malformed input line.")
@input_limits
def cli(data, uri, timeout, max_rows, query, db, tasks, rows, explain, output, append, strict, limits):
    """Run QUERY (mongosh or JSON; '-' reads it from stdin) and print its rows as JSONL.

    With --tasks, every task record gets `execution = {rows_count, ms, error}`;
    a record that cannot be executed carries a typed `error` and flows on.
    """
    from nlq import execute, io

    if (query is None) == (tasks is None):
        raise click.UsageError("give either a QUERY or --tasks FILE")
    with errors_as_click():
        if explain:
            if query is None:
                raise click.UsageError("--explain needs a QUERY")
            io.write_records([execute.explain(execute.read_query_text(query))], output, append=append)
            return
        if query is not None and not db:
            raise click.UsageError("--db is required with a QUERY")
        with open_backend_from(data, uri, timeout) as backend:
            if tasks is not None:
                records = io.read_records(tasks, strict=strict, stage="exec", **limits)
                io.write_records(execute.run_tasks(records, backend, db=db, rows=rows, timeout=timeout,
                                                   max_rows=max_rows, warn=warn), output, append=append)
            else:
                result = execute.run_query(backend, db, execute.read_query_text(query), timeout=timeout,
                                           max_rows=max_rows, warn=warn)
                io.write_records(result, output, append=append)
