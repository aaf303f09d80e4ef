"""Assertions and small worlds shared by several test modules."""

from __future__ import annotations

import re

import pytest


def assert_raises(error: type[Exception], message: str, fn, *args) -> None:
    """`fn(*args)` raises `error` with `message` in its text."""
    with pytest.raises(error) as info:
        fn(*args)
    assert message in str(info.value)


def help_examples(help_text: str) -> list[str]:
    """The shell commands under the `Example:`/`Examples:` heading a `--help` text ends with,
    continuation lines joined."""
    parts = re.split(r"^\s*Examples?:\s*$", help_text, flags=re.M)
    tail = parts[-1] if len(parts) > 1 else ""
    joined = re.sub(r"\\\n\s*", " ", tail)
    return [line.strip() for line in joined.splitlines() if line.strip()]


class OneCallMethod:
    """A test generation method: one model call on the bare question (with the shared repair turns),
    decoded as a pipeline on collection `c`; `name` is what `generate.run` is asked for."""

    channels = ("question",)
    needs_model = True

    def __init__(self, name: str = "echo"):
        self.name = name

    def generate(self, task, context):
        from nlq.llm import chat_decoded, decode_pipeline, pipeline_schema

        decoded = chat_decoded(context.model, [{"role": "user", "content": task["question"]}],
                               lambda text: decode_pipeline(text, ["c"]), schema=pipeline_schema(["c"]))
        return dict(decoded.value)


def rules_world(root, databases: dict) -> tuple:
    """(backend, indexes) of tiny databases written under `root`: `{db: {collection: docs}}`."""
    import orjson

    from nlq import index as grounding
    from nlq.backends import EmbeddedBackend

    for db, collections in databases.items():
        (root / db).mkdir()
        for name, docs in collections.items():
            (root / db / f"{name}.json").write_bytes(orjson.dumps(docs))
    backend = EmbeddedBackend(root)
    return backend, {doc["db"]: doc for doc in grounding.build(backend, sorted(databases))}


def rules_answer(world: tuple, db: str, question: str) -> tuple[dict, list]:
    """(`rules`' prediction, the rows it returns) for one question over a `rules_world`."""
    from nlq import generate, witness

    backend, indexes = world
    task = next(witness.run([{"id": "q", "db": db, "question": question}], indexes))
    prediction = next(generate.run([task], "rules", generate.Context(indexes)))["prediction"]
    return prediction, list(backend.aggregate(db, prediction["collection"], prediction["pipeline"]))
