"""Option bundles shared by several commands, and the one error boundary."""

from __future__ import annotations

import functools
import math
import sys

import click

from nlq import io
from nlq.errors import NlqError
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
                  help="Folder of JSON/JSONL databases served by the embedded engine (env NLQ_DATA).")
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


def open_backend_from(data, uri):
    """The backend for the options (usage errors exit 2, a backend that cannot be opened exits 1)."""
    from nlq.backends import open_backend

    data, uri = backend_choice(data, uri)
    ctx = click.get_current_context(silent=True)
    skip = bool(ctx is not None and ctx.meta.get("nlq.skip_bad_lines"))
    with errors_as_click():
        return open_backend(data=data, uri=uri, skip_bad_lines=skip, warn=warn)


class errors_as_click:
    """Context manager: NlqError -> one-line message (plus hint) and exit 1."""

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc is not None and isinstance(exc, NlqError):
            message = f"nlq: {exc.message}"
            if exc.hint:
                message += f"\nhint: {exc.hint}"
            click.echo(message, err=True)
            sys.exit(1)
        return False


def warn(message: str) -> None:
    """A warning on stderr (`nlq: warning: ...`), never in the output stream."""
    click.echo(f"nlq: warning: {message}", err=True)


def show_progress(flag: bool) -> bool:
    """Progress bars only when asked or when stderr is a terminal."""
    return flag or sys.stderr.isatty()


def with_progress(records, flag: bool, desc: str):
    """The records, counted by a progress bar on stderr when `show_progress(flag)`."""
    if not show_progress(flag):
        return records
    from tqdm import tqdm

    return tqdm(records, desc=desc, unit="rec", file=sys.stderr)
