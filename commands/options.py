"""Option bundles shared by several commands, and the one error boundary."""

from __future__ import annotations

import functools
import sys

import click

from nlq.errors import NlqError


def backend_options(fn):
    """`--data DIR` / `--uri URI` (env NLQ_URI), plus `--timeout` and `--max-rows`."""
    @click.option("--data", "data", type=click.Path(file_okay=False), envvar="NLQ_DATA",
                  help="Folder of JSON/JSONL databases served by the embedded engine.")
    @click.option("--uri", envvar="NLQ_URI",
                  help="MongoDB connection string (read-only use), or file:DIR for --data DIR.")
    @click.option("--timeout", type=float, default=20.0, show_default=True,
                  help="Per-query time limit in seconds.")
    @click.option("--max-rows", type=int, default=100_000, show_default=True,
                  help="Row cap on every query result.")
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return fn(*args, **kwargs)
    return wrapper


def io_options(fn):
    """`INPUT` (default '-'), `-o/--output` (default '-'), `--strict`, `--progress`."""
    @click.argument("input", default="-", type=click.Path(allow_dash=True))
    @click.option("-o", "--output", default="-", type=click.Path(allow_dash=True), show_default=True,
                  help="Where to write JSONL ('-' = stdout).")
    @click.option("--strict", is_flag=True,
                  help="Stop with exit 1 at the first malformed input line instead of writing a failure record.")
    @click.option("--progress", is_flag=True,
                  help="Show a progress bar on stderr (default: only when stderr is a terminal).")
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return fn(*args, **kwargs)
    return wrapper


def open_backend_from(data, uri):
    """The backend for the options, as a click error when it cannot be opened."""
    from nlq.backends import open_backend

    with errors_as_click():
        return open_backend(data=data, uri=uri)


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


def show_progress(flag: bool) -> bool:
    """Progress bars only when asked or when stderr is a terminal."""
    return flag or sys.stderr.isatty()


def with_progress(records, flag: bool, desc: str):
    """The records, counted by a progress bar on stderr when `show_progress(flag)`."""
    if not show_progress(flag):
        return records
    from tqdm import tqdm

    return tqdm(records, desc=desc, unit="rec", file=sys.stderr)
