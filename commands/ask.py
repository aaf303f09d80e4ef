"""`nlq ask`: one question to rows — index (cached), witness, generate, execute."""

from __future__ import annotations

import contextlib

import click

from nlq import methods
from nlq.text import terminal_safe
from nlq.commands.options import (backend_options, errors_as_click, memory_option, model_client, model_config_from,
                                  model_options, open_backend_from, open_memory, question_limit, reject_model_only,
                                  warn)


@click.command(name="ask", epilog="""\b
Examples:
  nlq ask --data example --db clinic "How many patients are allergic to penicillin?"
  nlq ask --data example --db racing --explain "Which drivers are former junior champions?"
""")
@backend_options
@click.argument("question")
@click.option("--db", required=True, help="Database the question is about.")
@click.option("-m", "--method", type=click.Choice(methods.names()), default="rules", show_default=True,
              help="Generation method (an LLM method needs the model options below).")
@click.option("--repair", "use_repair", is_flag=True,
              help="Pass the prediction through `nlq repair` (admissibility gate, execution feedback, "
                   "result-space vote; with a model, its repair loop) before running it.")
@click.option("--also", multiple=True, type=click.Choice(methods.names()),
              help="Another method to answer too (repeatable): every method's pipeline is a candidate, "
                   "`nlq repair`'s selection chooses one, and --explain shows which systems agreed.")
@click.option("--min-confidence", type=click.FloatRange(0, 1), default=None,
              help="No answer (exit 1) when the method's confidence is below this.")
@click.option("--max-steps", type=click.IntRange(min=1), default=50, show_default=True,
              help="react: model turns before the typed `budget_exhausted` failure.")
@click.option("--allow-unresolved", is_flag=True,
              help="Answer even when the reading leaves out words that state a constraint (a value, a "
                   "comparison, other data named); they are printed on stderr. Without it such a question "
                   "gets no answer (exit 1, the `abstained` failure lists the words).")
@click.option("--no-probe", is_flag=True,
              help="Do not ask the database for the question's literals the grounding index does not hold "
                   "(it reads a sample of each collection; by default a read-only, bounded $match finds them).")
@click.option("--explain", is_flag=True,
              help="Show the witnesses, the card lines used, the pipeline (mongosh), the confidence and the "
                   "timings before the rows.")
@click.option("--json", "as_json", is_flag=True,
              help="Write the whole answer record (witnesses, prediction, execution with rows, explain) as JSON.")
@memory_option()
@click.option("--confirm", is_flag=True,
              help="You checked this answer: remember it in --memory as a verified entry (rerun the question "
                   "with --confirm once its rows are right).")
@question_limit
@model_options(several=True)
def cli(data, uri, timeout, max_rows, question, db, method, use_repair, also, min_confidence, max_steps,
        allow_unresolved, no_probe, explain, as_json, memory_path, confirm, max_question_chars, model_options):
    """Answer QUESTION on a database: print the result rows as JSONL.

    Builds the grounding index of --db (cached for --data folders, keyed by a
    hash of the files, in $XDG_CACHE_HOME/nlq/index), finds the question's
    witnesses, generates a pipeline and runs it. Exits 1 with the reason when no
    answer can be given, and when the reading leaves out words that state a
    constraint (it would answer another question; --allow-unresolved answers
    anyway and prints the words on stderr). --no-cache turns off both caches: the index is built
    afresh and not kept, and model replies are neither read nor written.

    An LLM method reads the model options (or NLQ_BASE_URL, NLQ_API_KEY and
    NLQ_MODEL), e.g. `nlq ask -m card --data example --db clinic "..."`;
    with --also, several methods answer and the selection chooses, showing who
    agreed: `nlq ask -m card --also sql-pivot --also rules --explain --data
    example --db clinic "How many patients?"`; with --model repeated, several
    models of the endpoint answer with the method (`--model a --model b`), each
    its own system (METHOD@MODEL) in the selection.
    """
    from nlq import ask, io

    if confirm and not memory_path:
        raise click.UsageError("--confirm needs --memory FILE (or NLQ_MEMORY): where the answer is remembered")
    with errors_as_click():
        impls = [methods.get(name) for name in (method, *also)]
    # a model is needed by an LLM method, and used by --repair when one is named (as `nlq repair` does)
    config = model_config_from(model_options, needed=any(methods.needs(i, "needs_model", {}) for i in impls) or (
        use_repair and bool(model_options["model"])), what=f"--method {method}")
    reject_model_only(config, why=f"--method {method} calls none (an LLM method does, and --repair with --model)")
    models = model_options["models"]
    if len(models) > 1 and not methods.needs(impls[0], "needs_model", {}):
        raise click.UsageError(f"several --model answer with a method that calls a model; --method {method} "
                               "calls none (e.g. -m card)")
    if len(set(models)) < len(models):
        raise click.UsageError("each --model is named once: one model's repetition is no second opinion")
    more = [model_config_from({**model_options, "model": name}, needed=True, what=f"--model {name}")
            for name in models[1:]]
    memory = open_memory(memory_path)
    with contextlib.ExitStack() as stack:
        backend = stack.enter_context(open_backend_from(data, uri, timeout))
        stack.enter_context(errors_as_click())
        model = stack.enter_context(model_client(config))
        more_models = tuple(stack.enter_context(model_client(c)) for c in more)
        record = ask.run(question, backend, db, method=method, repair=use_repair,
                         cache=not model_options["no_cache"], timeout=timeout, max_rows=max_rows, model=model,
                         options={"min_confidence": min_confidence, "max_steps": max_steps, "memory": memory},
                         warn=warn, max_question_chars=max_question_chars, also=also,
                         allow_unresolved=allow_unresolved, more_models=more_models,
                         probe_values=not no_probe)
        if as_json:
            io.write_records([record])
        elif explain:
            click.echo(terminal_safe(ask.explain_text(record)), nl=False)
        else:
            io.write_records(record["execution"]["rows"] or [])
        ask.check_answered(record)
        if confirm:
            entry_id = ask.remember(record, memory)
            click.echo(f"nlq: remembered as verified entry {entry_id} of {memory.path}", err=True)
