"""nlq generate: add a `prediction` to each task record."""

from __future__ import annotations

import contextlib

import click

from nlq.commands.options import (backend_options, check_budget, errors_as_click, io_options, ledger_options,
                                  memory_option, model_client, model_config_from, model_options, open_backend_from,
                                  open_memory, profile_options, question_limit, reject_model_only, with_model_progress,
                                  with_progress)
from nlq import generate, io, methods
from nlq import index as grounding


@click.command("generate", epilog="""\b
Example:
  nlq index --data example --db racing -o out/racing.index.jsonl
  nlq witness --index out/racing.index.jsonl example:tasks/racing.jsonl \\
    | nlq generate --method rules --index out/racing.index.jsonl | head -1
""")
@io_options
@question_limit
@click.option("-m", "--method", type=click.Choice(methods.names()), default="rules", show_default=True,
              help="Generation method.")
@click.option("--index", "index_path", required=True, type=click.Path(exists=True, dir_okay=False),
              help="Grounding index (JSONL from `nlq index`), one document per database.")
@click.option("--min-confidence", type=click.FloatRange(0, 1), default=None,
              help="Abstain (typed `abstained` failure) below this confidence.")
@click.option("--candidates", type=click.IntRange(0), default=0, show_default=True,
              help="Also add the K best other readings as the record's `candidates` (rules), for `nlq repair`.")
@click.option("--fallback", type=click.Choice(methods.names()), default=None,
              help="cascade: the method that answers below the threshold.")
@click.option("--threshold", type=click.FloatRange(0, 1), default=None,
              help="cascade: rules' answer stands at or above this confidence (0.8 is the recommended threshold).")
@click.option("--max-steps", type=click.IntRange(min=1), default=50, show_default=True,
              help="react: model turns before the typed `budget_exhausted` failure.")
@click.option("--ladder", type=click.Choice(["card", "gated-repair", "value-bisection", "sag"]), default=None,
              help="sag: a rung of the paper's cumulative ladder (default sag, the full solver).")
@click.option("--card", "card_kind", type=click.Choice(["full", "top-level", "no-collapse"]), default=None,
              help="sag: the path card shown (knockouts: top-level fields only, no dynamic-key collapse).")
@click.option("--no-gate", is_flag=True, help="sag knockout: no admissibility gate (execution feedback only).")
@click.option("--no-witnesses", is_flag=True, help="sag knockout: no value-witness lines in the prompt.")
@click.option("--no-bisection", is_flag=True, help="sag knockout: empty results without prefix bisection.")
@click.option("--contract", is_flag=True,
              help="sag: the model declares an output contract first; results are checked against it.")
@click.option("--fail-closed", is_flag=True, help="sag: a $lookup join probe that cannot run is a violation.")
@click.option("--rounds", type=click.IntRange(min=1), default=None,
              help="sag: repair rounds per attempt (default: the rung's, 6; card: 1).")
@click.option("--attempts", type=click.IntRange(min=1), default=None,
              help="sag: attempts voted in result space (default: the rung's, 3 for sag, else 1).")
@memory_option()
@click.option("--shots", type=click.IntRange(min=0), default=3, show_default=True,
              help="With --memory, model methods: the memory entries shown as examples in the prompt.")
@backend_options
@model_options
@ledger_options
@profile_options("generate")
def cli(input, output, append, strict, progress, limits, max_question_chars, method, index_path, min_confidence,
        candidates, fallback, threshold, max_steps, ladder, card_kind, no_gate, no_witnesses, no_bisection, contract,
        fail_closed, rounds, attempts, memory_path, shots, data, uri, timeout, max_rows, model_options, ledger,
        profile):
    """Add `prediction = {collection, pipeline, method, confidence, ir, disclosure}`.

    Methods never see `gold`, `gold_mql` or `labels`; the prediction records the
    channels it observed in `disclosure`. A question the method cannot answer
    gets a typed `failure` and flows on. A record without `witnesses` gets
    them first, as `nlq witness` would compute them.

    LLM methods (card, nlq-only, schema, sampled, data-rich, sql-pivot, react,
    sag) need a model (the model options below) and add `prompt = {id, sha256}`
    and `usage`; sampled, data-rich, sql-pivot, react and sag also read the
    database (--data/--uri: seeded document samples, react's read-only actions,
    sag's gated execution and repair: the record gains `repair` as from `nlq
    repair`, the prediction `sag` = the settings in effect), e.g. with
    NLQ_BASE_URL, NLQ_API_KEY and NLQ_MODEL set:

    \b
      nlq generate -m card --index racing.index.jsonl example:tasks/racing.jsonl
      nlq generate -m sampled --data example --index racing.index.jsonl TASKS
      nlq generate -m sag --data example --index racing.index.jsonl --ladder gated-repair TASKS

    --profile paper (or NLQ_PROFILE=paper) runs SAG and the baselines as the
    paper did; each element below is also an option of its own, and the
    prediction records `profile = {name, overrides}` (docs/REPRODUCTION.md).
    """
    if method == "cascade" and (fallback is None or threshold is None):
        raise click.UsageError("--method cascade needs --fallback METHOD and --threshold T")
    sag_flags = {"--ladder": ladder, "--card": card_kind, "--no-gate": no_gate, "--no-witnesses": no_witnesses,
                 "--no-bisection": no_bisection, "--contract": contract, "--fail-closed": fail_closed,
                 "--rounds": rounds, "--attempts": attempts}
    given = [flag for flag, value in sag_flags.items() if value not in (None, False)]
    if given and method != "sag":
        raise click.UsageError(f"{', '.join(given)} only apply to --method sag")
    settings = None
    if method == "sag":
        from nlq.methods.sag import Settings

        settings = Settings(ladder=ladder or "sag", gate=not no_gate, witnesses=not no_witnesses,
                            bisection=not no_bisection, card=card_kind or "full", contract=contract,
                            rounds=rounds, attempts=attempts, fail_closed=fail_closed, profile=profile)
    with errors_as_click():  # a plugin that cannot be loaded: exit 1 with its message
        impl = methods.get(method)
    options = {"fallback": fallback}
    model_options = with_reasoning_effort(model_options, profile)
    config = model_config_from(model_options, needed=methods.needs(impl, "needs_model", options),
                               what=f"--method {method}")
    reject_model_only(config, why=f"--method {method} calls none"
                      + (f" (nor does --fallback {fallback})" if fallback else ""))
    backend = open_backend_from(data, uri, timeout) if methods.needs(impl, "needs_backend", options) else None
    memory = open_memory(memory_path)
    with errors_as_click(), model_client(config) as model, (backend or contextlib.nullcontext()), \
            (memory or contextlib.nullcontext()):
        indexes = grounding.load(index_path)
        context = generate.Context(indexes, backend=backend, model=model, min_confidence=min_confidence,
                                   max_steps=max_steps, timeout=timeout, max_rows=max_rows,
                                   candidates=candidates, fallback=fallback, threshold=threshold, sag=settings,
                                   memory=memory, shots=shots, profile=profile)
        records = io.read_records(input, strict=strict, stage="generate", **limits)
        if model is None:
            records = with_progress(records, progress, "generate")
        if ledger is None:
            out = generate.run(records, method, context, max_question_chars=max_question_chars)
        else:  # one record at a time, each done once across the runners sharing the ledger
            out = ledger.run(records, lambda r: next(generate.run([r], method, context,
                                                                  max_question_chars=max_question_chars)))
        io.write_records(with_model_progress(out, model, progress, input, "generate"), output, append=append)
        check_budget(model)


def with_reasoning_effort(model_options: dict, profile: dict) -> dict:
    """The model options with the profile's `reasoning_effort` as a request field (an explicit
    `--option reasoning_effort=...` wins)."""
    effort = profile.get("reasoning_effort")
    extra = dict(model_options.get("option") or {})
    if effort and "reasoning_effort" not in extra:
        extra["reasoning_effort"] = effort
    return {**model_options, "option": extra}
