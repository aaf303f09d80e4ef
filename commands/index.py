"""`nlq index`: the grounding index of each database (path lattice, dynamic maps, values)."""

from __future__ import annotations

import click

from nlq.commands.options import backend_options, errors_as_click, open_backend_from, profile_options
from nlq import index as grounding
from nlq import io


@click.command(name="index", epilog="""\b
Example:
  nlq index --data example --db clinic -o out/clinic.index.jsonl
  nlq index --data example clinic | nlq card
""")
@backend_options
@click.argument("dbs", nargs=-1, metavar="[DB]...")
@click.option("--db", "db_options", multiple=True, metavar="DB",
              help="Database to index (repeatable; named twice, indexed once; default: every database "
                   "of the backend).")
@click.option("--sample", type=click.IntRange(min=1), default=grounding.DEFAULT_SAMPLE, show_default=True,
              help="Documents sampled per collection.")
@click.option("--seed", type=int, default=grounding.DEFAULT_SEED, show_default=True,
              help="Sampling seed (same seed, same index).")
@click.option("-o", "--output", default="-", type=click.Path(allow_dash=True), show_default=True,
              help="Where to write the index JSONL ('-' = stdout).")
@profile_options("index")
def cli(data, uri, timeout, max_rows, dbs, db_options, sample, seed, output, profile):
    """Induce the grounding index: one JSON document per database.

    Samples each collection through the backend and writes the path lattice
    (with dynamic-key maps collapsed to <*>), valid prefixes, top-level
    fields, data-witnessed join edges and the value index (docs/COMMANDS.md, "nlq index").
    --profile paper indexes as the paper's reference implementation did (the
    first 400 documents, depth 7, 8 elements per array, its map and collapse
    rules); docs/REPRODUCTION.md lists every element.
    """
    named = list(dict.fromkeys(list(dbs) + list(db_options)))  # each database once, first mention's order
    with open_backend_from(data, uri, timeout) as backend, errors_as_click():
        io.write_records(grounding.build(backend, named, sample=sample, seed=seed, max_depth=profile["max_depth"],
                                         sampling=profile["sampling"], array_elements=profile["array_elements"],
                                         map_rule=profile["map_rule"], collapse_rule=profile["collapse_rule"]),
                         output, encode=grounding.dumps)
