"""The default limits of one query (the paper's evaluation protocol: a per-query
timeout, and caps on the rows and bytes a result may hold). The engine and
both backends use them; commands expose them as options."""

DEFAULT_TIMEOUT = 20.0        # seconds per query
DEFAULT_MAX_ROWS = 100_000    # result row cap
DEFAULT_MAX_BYTES = 64 << 20  # result byte cap (BSON-ish size estimate)
