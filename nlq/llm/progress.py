"""The progress line of a model run on stderr: records, model calls, cache hits, tokens, errors, ETA.

    for record in progress_line(records_out, client, stream=sys.stderr, total=40, desc="generate"):
        ...

    generate: 12/40 records, 30 model calls, 5 cache hits, 12345 tokens, 1 errors, 0:00:42 left

On a terminal the line is rewritten in place (at most every `every` seconds);
elsewhere (`--progress` into a file or a pipe) a new line is written at most
every `every_plain` seconds. A last line is always written when the run ends.
"""

from __future__ import annotations

import datetime as _dt
import time
from typing import Iterable, Iterator


def progress_line(records: Iterable[dict], client, *, stream, total: int | None = None, desc: str = "",
                  tty: bool = False, every: float = 0.5, every_plain: float = 10.0) -> Iterator[dict]:
    """`records`, passed through unchanged, with the progress of the run written to `stream`."""
    started = last = time.monotonic()
    done = errors = 0
    interval = every if tty else every_plain

    def line(final: bool = False) -> str:
        stats = client.stats if client is not None else {}
        counted = f"{done}/{total}" if total is not None else f"{done}"
        text = (f"{desc}: {counted} records, {stats.get('calls', 0)} model calls, "
                f"{stats.get('cache_hits', 0)} cache hits, {stats.get('tokens', 0)} tokens, {errors} errors")
        elapsed = time.monotonic() - started
        if final:
            text += f", {_clock(elapsed)} elapsed"
        elif total is not None and done:
            text += f", {_clock(elapsed / done * max(total - done, 0))} left"
        return text

    def write(text: str, final: bool = False) -> None:
        if tty:
            stream.write("\r\x1b[K" + text + ("\n" if final else ""))
        else:
            stream.write(text + "\n")
        stream.flush()

    try:
        for record in records:
            done += 1
            errors += bool(isinstance(record, dict) and record.get("failure"))
            now = time.monotonic()
            if now - last >= interval:
                last = now
                write(line())
            yield record
    finally:
        write(line(final=True), final=True)


def _clock(seconds: float) -> str:
    return str(_dt.timedelta(seconds=round(seconds)))


def count_lines(path: str) -> int | None:
    """Lines of an input file (for the ETA), or None for stdin or what cannot be read."""
    if path in ("-", None):
        return None
    try:
        with open(path, "rb") as source:
            count, last = 0, b"\n"
            while block := source.read(1 << 20):
                count += block.count(b"\n")
                last = block[-1:]
            return count + (last != b"\n")
    except OSError:
        return None
