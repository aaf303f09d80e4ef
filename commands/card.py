"""`nlq card`: the path card of an index, as text for a model prompt."""

from __future__ import annotations

import click

from nlq.commands.options import errors_as_click, profile_options
from nlq import card as path_card
from nlq import io


@click.command(name="card", epilog="""\b
Example:
  nlq index --data example clinic | nlq card --max-entries 60
""")
@click.argument("index", default="-", type=click.Path(allow_dash=True))
@click.option("--db", "dbs", multiple=True, metavar="DB",
              help="Card of this database only (repeatable; default: every index document).")
@click.option("--max-entries", type=click.IntRange(min=0), default=path_card.DEFAULT_MAX_ENTRIES, show_default=True,
              help="Most path lines per card; the deepest, least present paths are cut first.")
@click.option("--no-collapse", is_flag=True,
              help="Concrete map keys instead of <*> (ablation): the ones the index kept, parents always "
                   "included; a note counts those not kept.")
@click.option("--top-level", is_flag=True, help="Top-level fields only (ablation).")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True,
              help="text: the card itself; json: one {db, card, paths, cut} line per database.")
@click.option("-o", "--output", default="-", type=click.Path(allow_dash=True), show_default=True,
              help="Where to write the card ('-' = stdout).")
@profile_options("card")
def cli(index, dbs, max_entries, no_collapse, top_level, fmt, output, profile):
    """Render the path card of index documents (INDEX file or '-' for stdin).

    One line per lattice path with its types and presence/null/empty markers,
    dynamic maps with example keys, collections first; capped with a note.
    --profile paper renders it as the paper's reference did (400 lines per
    collection, DYNAMIC-KEY MAP lines, no top-level _-prefixed paths).
    """
    with errors_as_click():
        cards = path_card.run(io.read_records(index, strict=True), dbs=dbs, max_entries=max_entries,
                              collapse=not no_collapse, top_level=top_level, **card_profile(profile))
        if fmt == "json":
            io.write_records(cards, output)
            return
        with io.open_output(output) as out:
            for i, card in enumerate(cards):
                out.write(("\n" if i else "").encode() + card["card"].encode() + b"\n")


def card_profile(profile: dict) -> dict:
    """The card's keyword arguments among a resolved profile's elements."""
    return {k: profile[k] for k in ("card_cap", "map_line", "underscore_paths")}
