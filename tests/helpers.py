"""Assertions shared by several test modules."""

from __future__ import annotations

import pytest


def assert_raises(error: type[Exception], message: str, fn, *args) -> None:
    """`fn(*args)` raises `error` with `message` in its text."""
    with pytest.raises(error) as info:
        fn(*args)
    assert message in str(info.value)
