"""`nlq repair`: gate, execute and vote among a record's candidates; the prediction becomes the winner."""

from __future__ import annotations

import click

from nlq.commands.options import (backend_options, check_budget, errors_as_click, io_options, model_client,
                                  model_config_from, model_options, open_backend_from, profile_options,
                                  reject_model_only, with_model_progress, with_progress)


@click.command(epilog="""\b
Example:
  nlq index --data example clinic -o out/clinic.index.jsonl
  nlq generate --method rules --index out/clinic.index.jsonl example:tasks/clinic.jsonl -o out/rules.jsonl
  nlq import --map question=nl,db=db_id,prediction=pred --tasks example:tasks/clinic.jsonl \\
    --method other example:predictions/other-system.jsonl -o out/other.jsonl
  nlq repair --data example --index out/clinic.index.jsonl --runs out/other.jsonl out/rules.jsonl \\
    | nlq score --data example | nlq report
""")
@backend_options
@io_options
@click.option("--index", "index_path", required=True, type=click.Path(exists=True, dir_okay=False),
              help="Grounding index (JSONL from `nlq index`), one document per database.")
@click.option("--runs", multiple=True, type=click.Path(exists=True, dir_okay=False),
              help="Another run's records (JSONL): the prediction of the record with the same id becomes a "
                   "candidate. Repeatable.")
@click.option("--min-vote", type=click.FloatRange(0, 1), default=None,
              help="Abstain (typed `abstained` failure) when the winning cluster holds a smaller share of the votes.")
@click.option("--select", "select_", type=click.Choice(["evidence", "vote"]), default=None,
              help="Without a model, how the winning result is chosen: `evidence` (the default), the selection "
                   "model over agreement, execution feedback, result shape and confidences (docs/SELECTION.md); "
                   "`vote`, the paper's majority (noisy-OR of calibrated confidences when every candidate has one; "
                   "the default under --profile paper).")
@click.option("--min-confidence", type=click.FloatRange(0, 1), default=None,
              help="Abstain (typed `abstained` failure) when repair.confidence, the calibrated probability "
                   "that the chosen answer is right, is lower.")
@click.option("--contract", is_flag=True, help="Check each candidate's declared output contract after execution.")
@click.option("--no-gate", is_flag=True, help="Knockout: no admissibility gate (every executed candidate votes).")
@click.option("--no-bisection", is_flag=True, help="Knockout: report empty results without prefix bisection.")
@click.option("--fail-closed", is_flag=True,
              help="A $lookup join probe that cannot run is a violation (default: it fails open).")
@click.option("--rounds", type=click.IntRange(min=1), default=6, show_default=True,
              help="With a model: decodes per attempt (the first attempt starts from the record's prediction).")
@click.option("--attempts", type=click.IntRange(min=1), default=3, show_default=True,
              help="With a model: attempts voted in result space.")
@click.option("--no-model", is_flag=True,
              help="Vote among the given candidates only, even when NLQ_MODEL is set.")
@model_options
@profile_options("repair")
def cli(data, uri, timeout, max_rows, input, output, append, strict, progress, limits, index_path, runs, min_vote,
        select_, min_confidence, contract, no_gate, no_bisection, fail_closed, rounds, attempts, no_model, model_options,
        profile):
    """Repair each record: gate, execute and cluster its `prediction` and `candidates` by result.

    Adds `repair = {violations, rounds, attempts, clusters, vote_share,
    confidence, system, agreed, rows, ms, original}` and replaces `prediction`
    with the candidate of the winning result cluster (`original` keeps the
    input one). With --select evidence (the default) the winner is the cluster
    the selection model finds most likely right; with --select vote the
    largest, or, when every candidate carries a calibrated `confidence` (rules
    --candidates K), the noisy-OR of its members' confidences. `confidence` is
    the calibrated probability that the chosen answer is right, `system` the
    run it came from (its prediction's `method`), `agreed` the systems whose
    answers gave the same result. No candidate that runs is a typed
    `no_valid_candidate` failure.

    With a model (--model or NLQ_MODEL, and the other model options), each
    record gets the SAG loop: --attempts attempts of up to --rounds decodes
    from the path card and value witnesses, each gated, executed and fed back
    to the model with its violations; the attempts' best candidates vote.
    `repair.rounds` then lists the rounds each attempt used and `repair.usage`
    counts the model calls. For example, with NLQ_BASE_URL, NLQ_API_KEY and
    NLQ_MODEL set:

    \b
      nlq repair --data example --index out/clinic.index.jsonl out/rules.jsonl

    --profile paper (or NLQ_PROFILE=paper) gates, executes and votes as the
    paper's Algorithm 1 does; each element below is also an option of its own
    (docs/REPRODUCTION.md).
    """
    from nlq import index as grounding
    from nlq import io, repair
    from nlq.commands.generate import with_reasoning_effort
    from nlq.methods.sag import Settings, repair_loop

    model_options = with_reasoning_effort(model_options, profile)
    config = model_config_from(model_options, needed=bool(model_options["model"]) and not no_model,
                               what="nlq repair with a model")
    reject_model_only(config, "rounds", "attempts",
                      why="--no-model keeps the vote model-free; drop one of them" if no_model else
                      "give --model (or set NLQ_MODEL) for the repair loop, or leave them out to vote among the "
                      "given candidates", allow=("model",) if no_model else ())
    with open_backend_from(data, uri, timeout) as backend, errors_as_click(), model_client(config) as model:
        indexes = grounding.load(index_path)
        # one description of the knockouts serves the candidates' checks and, with a model, the loop
        settings = Settings(gate=not no_gate, bisection=not no_bisection, contract=contract, rounds=rounds,
                            attempts=attempts, fail_closed=fail_closed, profile=profile)
        options = settings.options(timeout=timeout, max_rows=max_rows, min_vote=min_vote)
        options.select = select_ or ("vote" if profile.get("name") == "paper" else "evidence")
        options.min_confidence = min_confidence
        loop = repair_loop(model, settings, start_from_prediction=True) if model is not None else None
        records = io.read_records(input, strict=strict, stage="repair", **limits)
        if runs:
            records = repair.extra_candidates(records, list(runs))
        if model is None:
            records = with_progress(records, progress, "repair")
        workers = config.concurrency if config is not None else 1
        out = repair.run(records, backend, indexes, options=options, loop=loop, workers=workers)
        io.write_records(with_model_progress(out, model, progress, input, "repair"), output, append=append)
        check_budget(model)
