"""Masking the API key in everything nlq writes (messages, transcript, cache, records).

    secret = Secret("sk-live-0123456789")
    secret.mask("bad key sk-live-0123456789")   -> "bad key ***"
    secret.mask_cut(text[:200])                 -> also masks a key cut in half at the end

A key shorter than MIN_SECRET_CHARS (local servers accept anything: `k`,
`EMPTY`, `ollama`) is not a secret: it is sent in the Authorization header,
which nlq never writes anywhere, and ordinary text is never rewritten for it
(masking every letter `k` would garble the transcript). Text is always masked
whole, before it is cut to an excerpt, so no fragment of a key survives a cut.
"""

from __future__ import annotations

MIN_SECRET_CHARS = 8
MASK = "***"
# A cut text ending in this many or more leading characters of the key has them masked too.
_CUT_PREFIX = 4


class Secret:
    """The masker of one key (a no-op for no key or one shorter than MIN_SECRET_CHARS)."""

    def __init__(self, key: str | None):
        self.key = key if key and len(key) >= MIN_SECRET_CHARS else None

    def __bool__(self) -> bool:
        return self.key is not None

    def mask(self, text: str) -> str:
        """`text` with every whole occurrence of the key replaced by `***`."""
        if self.key is None or not text:
            return text
        return text.replace(self.key, MASK)

    def mask_cut(self, text: str) -> str:
        """Like `mask`, for a text cut at its end from a longer one: a trailing start of
        the key (its first 4 or more characters, the rest cut off) is masked as well."""
        text = self.mask(text)
        if self.key is None or not text:
            return text
        for length in range(min(len(self.key) - 1, len(text)), _CUT_PREFIX - 1, -1):
            if text.endswith(self.key[:length]):
                return text[:-length] + MASK
        return text

    def mask_bytes(self, data: bytes) -> bytes:
        """`mask` for UTF-8 bytes (a key is ASCII in practice; any key is matched by its UTF-8)."""
        if self.key is None or not data:
            return data
        return data.replace(self.key.encode("utf-8", "surrogatepass"), MASK.encode())
