"""Shared test fixtures: paths, the shared-data skip, and a CLI runner."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
WORLDS = FIXTURES / "worlds"
SHARED = ROOT.parent / "shared"
TEND_V1 = SHARED / "tend-v1"
TEND_NATIVE = SHARED / "tend-native"
ATLAS = SHARED / "atlas-sample"


def need(path: Path) -> Path:
    """Skip the calling test cleanly when a piece of ../shared is absent."""
    if not path.exists():
        pytest.skip(f"{path} is not present (a fresh clone has no ../shared)")
    return path


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


@pytest.fixture
def tend_v1() -> Path:
    return need(TEND_V1)


@pytest.fixture
def tend_native() -> Path:
    return need(TEND_NATIVE)


@pytest.fixture
def atlas() -> Path:
    return need(ATLAS)


@pytest.fixture(scope="session")
def clinic_index_file(tmp_path_factory) -> Path:
    """The clinic fixture world's index as a JSONL file, built once per test run."""
    import orjson

    from nlq import index
    from nlq.backends import EmbeddedBackend

    path = tmp_path_factory.mktemp("idx") / "clinic.index.jsonl"
    path.write_bytes(b"".join(orjson.dumps(doc) + b"\n" for doc in index.build(EmbeddedBackend(WORLDS), ["clinic"])))
    return path


@pytest.fixture
def wire_server():
    """A wire-protocol server on 127.0.0.1 answering from the embedded engine over the fixture
    worlds (tests/wire.py); stopped after the test."""
    pytest.importorskip("mockupdb", reason="mockupdb (test extra) is not installed")
    from nlq.backends import EmbeddedBackend
    from tests.wire import WireServer

    with WireServer(EmbeddedBackend(WORLDS)) as server:
        yield server


@pytest.fixture
def fake_llm():
    """A started tests.fakellm.FakeLLM on a free 127.0.0.1 port (stopped after the test)."""
    from tests.fakellm import FakeLLM

    with FakeLLM() as fake:
        yield fake
