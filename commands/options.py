"""Option bundles shared by several commands, and the one error boundary."""

from __future__ import annotations

import contextlib
import functools
import math
import os
import signal
import sys
import threading

import click

from nlq import io
from nlq.errors import NlqError
from nlq.text import terminal_safe
from nlq.witness import DEFAULT_MAX_QUESTION_CHARS


class Seconds(click.FloatRange):
    """A finite number of seconds above 0 (`nan` and `inf` would switch the time limit off)."""

    name = "seconds"

    def __init__(self):
        super().__init__(min=0, min_open=True)

    def convert(self, value, param, ctx):
        seconds = super().convert(value, param, ctx)
        if not math.isfinite(seconds):
            self.fail(f"{value!r} is not a finite number of seconds.", param, ctx)
        return seconds


def backend_options(fn):
    """`--data DIR` (env NLQ_DATA) / `--uri URI` (env NLQ_URI), plus `--timeout`, `--max-rows` and
    `--skip-bad-lines` (handed to `open_backend_from` through the click context, not to `fn`).

    Exactly one of --data and --uri; a flag given on the command line overrides
    the other option's environment variable (see `backend_choice`)."""
    @click.option("--data", "data", type=click.Path(file_okay=False), envvar="NLQ_DATA",
                  help="Folder of databases served by the embedded engine: mongoexport output (.json, .jsonl), "
                       "mongodump folders (.bson), gzip-compressed too (env NLQ_DATA); `example` serves the worlds "
                       "installed with nlq (clinic, club, racing).")
    @click.option("--uri", envvar="NLQ_URI",
                  help="MongoDB connection string (read-only use), or file:DIR for --data DIR (env NLQ_URI). "
                       "A flag overrides the other option's environment variable.")
    @click.option("--timeout", type=Seconds(), default=20.0, show_default=True,
                  help="Per-query time limit in seconds (a finite number above 0).")
    @click.option("--max-rows", type=click.IntRange(min=1), default=100_000, show_default=True,
                  help="Row cap on every query result.")
    @click.option("--skip-bad-lines", is_flag=True,
                  help="With --data: skip malformed lines of data files (one warning per file) instead of "
                       "stopping with exit 1.")
    @functools.wraps(fn)
    def wrapper(*args, skip_bad_lines=False, **kwargs):
        # Kept for open_backend_from, so that every command with these options honours it.
        click.get_current_context().meta["nlq.skip_bad_lines"] = skip_bad_lines
        return fn(*args, **kwargs)
    return wrapper


def input_limits(fn):
    """`--max-nesting` and `--max-record-bytes`, passed on as one `limits` dict for
    `nlq.io.read_records(..., **limits)`."""
    @click.option("--max-nesting", type=click.IntRange(1, io.MAX_NESTING), default=io.DEFAULT_MAX_NESTING,
                  show_default=True,
                  help="Deepest nesting of arrays and objects an input record may have (typed failure "
                       "input_too_deep beyond).")
    @click.option("--max-record-bytes", type=click.IntRange(min=1), default=io.DEFAULT_MAX_RECORD_BYTES,
                  show_default=True,
                  help="Longest input line in bytes (typed failure input_too_large beyond; the line is skipped "
                       "unread).")
    @functools.wraps(fn)
    def wrapper(*args, max_nesting, max_record_bytes, **kwargs):
        return fn(*args, limits={"max_nesting": max_nesting, "max_record_bytes": max_record_bytes}, **kwargs)
    return wrapper


def io_options(fn):
    """`INPUT` (default '-'), `-o/--output` (default '-'), `--append`, `--strict`, `--progress`,
    and the input limits (`limits`, see `input_limits`)."""
    @click.argument("input", default="-", type=click.Path(allow_dash=True))
    @click.option("-o", "--output", default="-", type=click.Path(allow_dash=True), show_default=True,
                  help="Where to write JSONL ('-' = stdout).")
    @click.option("--append", is_flag=True,
                  help="Add to the end of the -o file instead of starting it anew (each line is written whole, "
                       "so several processes may append to one file).")
    @click.option("--strict", is_flag=True,
                  help="Stop with exit 1 at the first malformed input line instead of writing a failure record.")
    @click.option("--progress", is_flag=True,
                  help="Show a progress bar on stderr (default: only when stderr is a terminal).")
    @input_limits
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return fn(*args, **kwargs)
    return wrapper


def question_limit(fn):
    """`--max-question-chars`: the longest question a stage reads (typed failure input_too_large beyond)."""
    @click.option("--max-question-chars", type=click.IntRange(min=1), default=DEFAULT_MAX_QUESTION_CHARS,
                  show_default=True,
                  help="Longest question text in characters (typed failure input_too_large beyond).")
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return fn(*args, **kwargs)
    return wrapper


_EXPLICIT = (click.core.ParameterSource.COMMANDLINE, click.core.ParameterSource.PROMPT)


def backend_choice(data, uri):
    """`(data, uri)` with exactly one set, or a click.UsageError (exit 2).

    A flag given on the command line overrides the other option's environment
    default (`--uri` wins over NLQ_DATA, `--data` over NLQ_URI); two flags
    (`--data X --uri Y`, also `--uri file:Y`), two environment variables and
    none at all are usage errors."""
    ctx = click.get_current_context(silent=True)
    if ctx is not None and data and uri:
        data_explicit = ctx.get_parameter_source("data") in _EXPLICIT
        uri_explicit = ctx.get_parameter_source("uri") in _EXPLICIT
        if data_explicit and not uri_explicit:
            uri = None
        elif uri_explicit and not data_explicit:
            data = None
        elif not data_explicit:
            raise click.UsageError("NLQ_DATA and NLQ_URI are both set: pick one with --data DIR or --uri URI")
    if data and uri:
        raise click.UsageError("give either --data or --uri, not both")
    if not data and not uri:
        raise click.UsageError("no database: give --data DIR (embedded) or --uri mongodb://... "
                               "(or set NLQ_DATA / NLQ_URI)")
    return data, uri


def open_backend_from(data, uri, timeout):
    """The backend for the options (usage errors exit 2, a backend that cannot be opened exits 1).

    Use it as a context manager (`with open_backend_from(...) as backend:`): the
    MongoDB client is closed when the command ends."""
    from nlq.backends import open_backend

    data, uri = backend_choice(data, uri)
    ctx = click.get_current_context(silent=True)
    skip = bool(ctx is not None and ctx.meta.get("nlq.skip_bad_lines"))
    with errors_as_click():
        return open_backend(data=data, uri=uri, timeout=timeout, skip_bad_lines=skip, warn=warn)


class errors_as_click:
    """Context manager: NlqError -> one-line message (plus hint) and exit 1."""

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc is not None and isinstance(exc, NlqError):
            message = f"nlq: {exc.message}"
            if exc.hint:
                message += f"\nhint: {exc.hint}"
            click.echo(terminal_safe(message), err=True)
            sys.exit(1)
        return False


def warn(message: str) -> None:
    """A warning on stderr (`nlq: warning: ...`), never in the output stream."""
    click.echo(terminal_safe(f"nlq: warning: {message}"), err=True)


def show_progress(flag: bool) -> bool:
    """Progress bars only when asked or when stderr is a terminal."""
    return flag or sys.stderr.isatty()


def with_progress(records, flag: bool, desc: str):
    """The records, counted by a progress bar on stderr when `show_progress(flag)`."""
    if not show_progress(flag):
        return records
    from tqdm import tqdm

    return tqdm(records, desc=desc, unit="rec", file=sys.stderr)


def with_model_progress(records, client, flag: bool, source, desc: str):
    """The output records of a model run, with its progress line on stderr (records, model
    calls, cache hits, tokens, errors, ETA) when `show_progress(flag)`."""
    if client is None or not show_progress(flag):
        return records
    from nlq.llm.progress import count_lines, progress_line

    return progress_line(records, client, stream=sys.stderr, total=count_lines(source), desc=desc,
                         tty=sys.stderr.isatty())


def check_budget(client) -> None:
    """Exit 1 (after every record was written) when `--budget` refused calls: the run is
    incomplete, and a rerun resumes from the cache (`make paper` keeps the partial file)."""
    refused = client.stats.get("refused", 0) if client is not None else 0
    if refused:
        click.echo(f"nlq: the --budget was spent: {refused} model call(s) refused, their records carry "
                   "typed budget_exhausted failures\nhint: rerun with a larger --budget to resume "
                   "(replies already fetched come from the cache)", err=True)
        sys.exit(1)


MODEL_ENV = "NLQ_BASE_URL, NLQ_API_KEY and NLQ_MODEL"


def _key_value(ctx, param, values):
    """`--option KEY=VALUE` pairs as a dict; VALUE is read as JSON when it parses (`3`, `true`), else text."""
    import orjson

    options = {}
    for item in values:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise click.BadParameter(f"expected KEY=VALUE, got {item!r}", ctx=ctx, param=param)
        try:
            options[key] = orjson.loads(value)
        except orjson.JSONDecodeError:
            options[key] = value
    return options


def _budget(ctx, param, value):
    """`--budget calls=N,tokens=M` (either or both) as `{"calls": N, "tokens": M}`, or None."""
    if value is None or not value.strip():
        return None
    budget = {}
    for item in value.split(","):
        name, sep, number = item.strip().partition("=")
        if name not in ("calls", "tokens") or not sep or name in budget:
            raise click.BadParameter(f"expected calls=N,tokens=M (either or both), got {value!r}",
                                     ctx=ctx, param=param)
        try:
            budget[name] = int(number)
        except ValueError:
            budget[name] = -1
        if budget[name] < 0:
            raise click.BadParameter(f"{name} must be a whole number of at least 0, not {number!r}",
                                     ctx=ctx, param=param)
    return budget


def model_options(fn=None, *, several: bool = False):
    """The model bundle, collected into one `model_options` dict argument.

    `--model` (env NLQ_MODEL), `--base-url` (env NLQ_BASE_URL), `--api-key`
    (env NLQ_API_KEY; never echoed), `--temperature`, `--max-tokens`,
    `--option KEY=VALUE`, `--json-mode`, `--concurrency`, `--request-timeout`,
    `--max-reply-bytes`, `--budget calls=N,tokens=M` (env NLQ_BUDGET),
    `--cache FILE` (env NLQ_CACHE) / `--no-cache`, `--offline`, `--log FILE`.
    Turn it into a ModelConfig with `model_config_from`.

    With `several` (`@model_options(several=True)`), `--model` may be repeated:
    `model_options["models"]` holds every name given (NLQ_MODEL may list several,
    separated by spaces), `model_options["model"]` the first."""
    if fn is None:
        return functools.partial(model_options, several=several)
    from nlq.llm.config import DEFAULT_MAX_REPLY_BYTES

    names = ("model", "base_url", "api_key", "temperature", "max_tokens", "option", "json_mode", "concurrency",
             "request_timeout", "cache", "no_cache", "offline", "log", "max_reply_bytes", "budget", "draw")

    @click.option("--model", envvar="NLQ_MODEL", multiple=several,
                  help="Model name sent to the endpoint (env NLQ_MODEL)." + (
                      " Repeatable: every model answers, the selection chooses among their answers and "
                      "--explain shows which models agreed." if several else ""))
    @click.option("--base-url", envvar="NLQ_BASE_URL",
                  help="OpenAI-compatible base URL, e.g. http://127.0.0.1:8000/v1 (env NLQ_BASE_URL).")
    @click.option("--api-key", envvar="NLQ_API_KEY", show_default=False,
                  help="API key (env NLQ_API_KEY); never written to a log, the cache or a message.")
    @click.option("--temperature", type=click.FloatRange(min=0), default=0.0, show_default=True,
                  help="Sampling temperature.")
    @click.option("--max-tokens", type=click.IntRange(min=1), default=None,
                  help="Cap on reply tokens (default: none; a cap truncates reasoning models).")
    @click.option("--option", "option", multiple=True, callback=_key_value, metavar="KEY=VALUE",
                  help="Extra request-body field, repeatable (e.g. --option reasoning_effort=high).")
    @click.option("--json-mode", type=click.Choice(["schema", "object", "none"]), default="schema",
                  show_default=True,
                  help="Structured output: a JSON schema, any JSON object, or none (falls back on a 400).")
    @click.option("--concurrency", type=click.IntRange(min=1), default=4, show_default=True,
                  help="Records in flight at once (output stays in input order).")
    @click.option("--request-timeout", type=click.FloatRange(min=0, min_open=True), default=120.0,
                  show_default=True,
                  help="Seconds one model call may take, from the request to the last byte of the reply, "
                       "retries included (typed failure model_timeout beyond).")
    @click.option("--max-reply-bytes", type=click.IntRange(min=1), default=DEFAULT_MAX_REPLY_BYTES,
                  show_default=True,
                  help="Longest model reply read; reading stops past it (typed failure model_reply_too_large).")
    @click.option("--budget", envvar="NLQ_BUDGET", callback=_budget, metavar="calls=N,tokens=M",
                  help="Stop making model calls after N calls or M tokens in this run (env NLQ_BUDGET); "
                       "the rest get typed budget_exhausted failures, the command exits 1, and a rerun "
                       "resumes from the cache.")
    @click.option("--cache", type=click.Path(dir_okay=False), envvar="NLQ_CACHE", default=None,
                  help="Response cache: a SQLite file, or mongodb://HOST/DB[?collection=NAME] shared by several "
                       "machines (env NLQ_CACHE; default $XDG_CACHE_HOME/nlq/llm.sqlite).")
    @click.option("--no-cache", is_flag=True, help="Neither read nor write the response cache.")
    @click.option("--offline", is_flag=True, help="Answer only from the cache; a miss is a `cache_miss` failure.")
    @click.option("--log", type=click.Path(dir_okay=False), default=None,
                  help="Append one JSONL transcript line per model call to FILE.")
    @click.option("--draw", type=click.IntRange(min=0), default=0, show_default=True,
                  help="Another draw of the same requests: a part of the cache key, never sent (unlike "
                       "--option seed=N).")
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        bundle = {name: kwargs.pop(name) for name in names}
        given = bundle["model"]
        models = tuple(given or ()) if several else ((given,) if given else ())
        bundle["model"], bundle["models"] = (models[0] if models else None), models
        kwargs["model_options"] = bundle
        return fn(*args, **kwargs)
    return wrapper


def model_config_from(model_options: dict, *, needed: bool, what: str = "this command"):
    """The ModelConfig for the `model_options` bundle, or None when no model is `needed`.

    A needed model with no name or endpoint is a usage error (exit 2) naming
    NLQ_BASE_URL, NLQ_API_KEY and NLQ_MODEL."""
    from nlq.errors import ModelConfigError
    from nlq.llm import ModelConfig, default_cache_path

    if not needed:
        return None
    o = model_options
    if o["offline"] and o["no_cache"]:
        raise click.UsageError("--offline replays the response cache: it cannot go with --no-cache")
    missing = [flag for flag, value in (("--model", o["model"]), ("--base-url", o["base_url"])) if not value]
    if o["offline"]:
        missing = [flag for flag in missing if flag != "--base-url"]
    if missing:
        raise click.UsageError(f"{what} needs a model: set {MODEL_ENV} (or give {' and '.join(missing)})")
    cache = None if o["no_cache"] else (o["cache"] or default_cache_path())
    try:
        return ModelConfig(model=o["model"], base_url=o["base_url"], api_key=o["api_key"] or None,
                           temperature=o["temperature"], max_tokens=o["max_tokens"], options=o["option"],
                           json_mode=o["json_mode"], request_timeout=o["request_timeout"],
                           concurrency=o["concurrency"], cache=cache, offline=o["offline"], log=o["log"],
                           draw=o.get("draw") or 0, **_reply_limits(o))
    except ModelConfigError as exc:
        raise click.UsageError(exc.message) from None


# The model bundle's options that only a model call reads (`--no-cache` also turns off `nlq ask`'s index cache).
MODEL_ONLY = ("model", "base_url", "api_key", "temperature", "max_tokens", "option", "json_mode", "concurrency",
              "request_timeout", "cache", "offline", "log")


def reject_model_only(config, *extra: str, why: str, allow: tuple[str, ...] = ()) -> None:
    """No model will be called (`config` is None): an option only a model reads, given on the
    command line, is a usage error (exit 2) rather than silently ignored.

    `extra` names the command's own model-only parameters (`nlq repair --rounds`), `allow`
    bundle parameters that may stay (`--model` beside `--no-model`); `why` ends the message
    (what to do instead)."""
    if config is not None:
        return
    ctx = click.get_current_context()
    names = (set(MODEL_ONLY) | set(extra)) - set(allow)
    given = [max(param.opts, key=len) for param in ctx.command.params
             if param.name in names and ctx.get_parameter_source(param.name) in _EXPLICIT]
    if given:
        verb = "applies" if len(given) == 1 else "apply"
        raise click.UsageError(f"{', '.join(given)} only {verb} when a model is called: {why}")


def _reply_limits(o: dict) -> dict:
    from nlq.llm.config import DEFAULT_MAX_REPLY_BYTES

    budget = o.get("budget") or {}
    return {"max_reply_bytes": o.get("max_reply_bytes") or DEFAULT_MAX_REPLY_BYTES,
            "budget_calls": budget.get("calls"), "budget_tokens": budget.get("tokens")}


@contextlib.contextmanager
def model_client(config):
    """The ChatClient for `config` (None when no model is configured), closed afterwards.

    While it lives SIGPIPE is ignored: the `nlq` group restores the default
    action so `nlq ... | head` ends quietly, but then a write to an HTTP
    connection the server has just closed would kill the process instead of
    raising the connection error the client retries. A closed stdout
    (`| head`) still ends quietly."""
    if config is None:
        yield None
        return
    from nlq.llm import ChatClient

    sigpipe = getattr(signal, "SIGPIPE", None)
    main = threading.current_thread() is threading.main_thread()
    previous = signal.getsignal(sigpipe) if sigpipe is not None and main else None
    if previous is not None:
        signal.signal(sigpipe, signal.SIG_IGN)
    client = ChatClient(config, warn=warn)
    try:
        yield client
    except BrokenPipeError:
        _silence_stdout()
        sys.exit(0)
    finally:
        client.close()
        if previous is not None:
            signal.signal(sigpipe, previous)


def _silence_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush does not fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # io.UnsupportedOperation is both
        pass


def memory_option(required: bool = False):
    """`--memory FILE` (env NLQ_MEMORY): the memory of verified answers (`nlq memory`)."""
    return click.option("--memory", "memory_path", envvar="NLQ_MEMORY", required=required,
                        type=click.Path(dir_okay=False),
                        help="Memory of verified answers (SQLite, from `nlq memory add`; env NLQ_MEMORY)."
                             + ("" if required else " Its entries most like each question help answer it."))


def open_memory(path):
    """The Memory at `path` (None for None); a file that cannot be opened exits 1."""
    if path is None:
        return None
    from nlq.memory import Memory

    with errors_as_click():
        return Memory(path)


def ledger_options(fn):
    """`--ledger URI` (env NLQ_LEDGER), `--arm NAME`, `--lease SECONDS`: the run ledger (nlq.ledger),
    handed to `fn` as one `ledger` argument (None without --ledger)."""
    @click.option("--ledger", "ledger_uri", envvar="NLQ_LEDGER", default=None,
                  help="Run ledger mongodb://HOST/DB[?collection=NAME] (env NLQ_LEDGER): records another runner "
                       "finished are taken from it, a dead runner's are taken over when their lease ends.")
    @click.option("--arm", default=None, help="With --ledger: the name of this run in the ledger.")
    @click.option("--lease", type=Seconds(), default=900.0, show_default=True,
                  help="With --ledger: seconds a runner holds a record before another may take it over.")
    @functools.wraps(fn)
    def wrapper(*args, ledger_uri=None, arm=None, lease=900.0, **kwargs):
        if ledger_uri is None:
            if arm is not None:
                raise click.UsageError("--arm names a run in a ledger: give --ledger URI too")
            return fn(*args, ledger=None, **kwargs)
        if not arm:
            raise click.UsageError("--ledger needs --arm NAME (the run's name in the ledger)")
        from nlq.ledger import Ledger

        with errors_as_click():
            ledger = Ledger(ledger_uri, arm, lease=lease)
        return fn(*args, ledger=ledger, **kwargs)
    return wrapper


def profile_options(command: str):
    """`--profile paper|nlq` (env NLQ_PROFILE) and one option per profile element `command` reads
    (nlq.profiles), collected into one `profile` dict argument: every element's value, the
    profile's default unless the option is given, plus `name` (the profile in effect)."""
    from nlq import profiles

    elements = profiles.for_command(command)

    def decorate(fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            name = kwargs.pop("profile_name")
            explicit = {e.name: kwargs.pop("profile_" + e.name) for e in elements}
            with errors_as_click():
                values = profiles.resolve(name, explicit)
                values["name"] = profiles.profile_name(name)
            kwargs["profile"] = values
            return fn(*args, **kwargs)

        for element in reversed(elements):
            flag = "--" + element.name.replace("_", "-")
            nlq_default, paper_default = element.nlq, element.paper
            shown = f" (nlq: {_shown(nlq_default)}; paper: {_shown(paper_default)})"
            if element.choices == (False, True) or element.choices == (True, False):
                option = click.option(f"{flag}/--no-{flag[2:]}", "profile_" + element.name, default=None,
                                      help=element.help[0].upper() + element.help[1:] + "." + shown)
            elif element.choices is None:
                kind = str if element.name == "reasoning_effort" else \
                    click.IntRange(min=1 if element.name == "max_depth" else 0)
                option = click.option(flag, "profile_" + element.name, type=kind, default=None,
                                      help=element.help[0].upper() + element.help[1:] + "." + shown)
            else:
                option = click.option(flag, "profile_" + element.name, type=click.Choice(element.choices),
                                      default=None, help=element.help[0].upper() + element.help[1:] + "." + shown)
            wrapper = option(wrapper)
        wrapper = click.option("--profile", "profile_name", type=click.Choice(sorted(profiles.PROFILES)),
                               envvar=profiles.ENV, default=None,
                               help="Defaults of the elements below: paper (SAG as published) or nlq "
                                    "(this toolkit's; the default). Env NLQ_PROFILE.")(wrapper)
        return wrapper
    return decorate


def _shown(value) -> str:
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "on" if value else "off"
    return str(value)
