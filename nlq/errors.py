"""The NlqError hierarchy: the only exceptions `commands/` catches.

Every error carries a short machine-readable `type` (used in failure records)
and an actionable message. `to_failure(stage)` turns one into the typed
`failure` object that flows on in the JSONL stream.
"""

from __future__ import annotations


class NlqError(Exception):
    """Base of every error nlq raises on purpose."""

    type = "error"
    hint: str | None = None

    def __init__(self, message: str, *, hint: str | None = None):
        super().__init__(message)
        if hint is not None:
            self.hint = hint

    @property
    def message(self) -> str:
        return str(self)

    def to_failure(self, stage: str) -> dict:
        return failure(stage, self.type, self.message)


class InputError(NlqError):
    """A malformed input record or file (bad JSON, wrong shape)."""

    type = "input_error"


class InputTooDeep(InputError):
    """A record nested more levels deep than the reader's limit (`--max-nesting`)."""

    type = "input_too_deep"


class InputTooLarge(InputError):
    """A record, or a field of one, larger than its limit (`--max-record-bytes`, `--max-question-chars`)."""

    type = "input_too_large"


class OutputError(NlqError):
    """The output cannot be written (a full disk, a closed device): the run stops."""

    type = "output_error"


class ParseError(NlqError):
    """A query that cannot be parsed (mongosh or JSON). Carries position info."""

    type = "parse_error"

    def __init__(self, message: str, *, line: int | None = None, column: int | None = None,
                 excerpt: str | None = None):
        self.line, self.column, self.excerpt = line, column, excerpt
        where = f" at line {line}, column {column}" if line is not None else ""
        full = f"{message}{where}"
        if excerpt:
            full += "\n" + excerpt
        super().__init__(full)


class QueryTooDeep(ParseError, InputTooDeep):
    """A query (mongosh or JSON, a record's or a model's) nested more levels deep than MongoDB
    accepts: refused before any recursive walk of it (a ParseError and an InputTooDeep)."""

    type = "input_too_deep"


class UnknownOperatorError(NlqError):
    """A `$name` that MongoDB does not know (with a did-you-mean suggestion)."""

    type = "unknown_operator"


class UnsupportedOperatorError(NlqError):
    """A real MongoDB operator the embedded engine does not implement."""

    type = "unsupported_operator"


class ForbiddenOperatorError(NlqError):
    """An operator that writes, is non-deterministic or reads server state."""

    type = "forbidden_operator"


class ExecutionError(NlqError):
    """An error MongoDB itself would raise while executing (e.g. $add of a string)."""

    type = "exec_error"

    def __init__(self, message: str, *, code: int | None = None):
        self.code = code
        super().__init__(message)


class QueryTimeout(ExecutionError):
    """The per-query time limit elapsed."""

    type = "timeout"


class ResultTooLarge(ExecutionError):
    """The result exceeded the row or byte cap."""

    type = "result_too_large"


class MemoryLimit(ExecutionError):
    """A value built while executing (a string, an array, an object) exceeded the byte cap."""

    type = "memory_limit"


class BackendError(NlqError):
    """The database cannot be reached or read (missing files, server down)."""

    type = "backend_error"


class MissingQuestionError(InputError):
    """A task record without question text (absent, blank or not a string)."""

    type = "missing_question"


class UnknownDatabaseError(InputError):
    """A record names a database the backend (or the grounding index) does not hold.

    Caused by the record, not by the environment: it becomes the record's typed
    failure, whereas a BackendError (the database cannot be reached) stops the run.
    """

    type = "unknown_db"


class BadDatabaseNameError(UnknownDatabaseError):
    """A database name that is no name inside `--data`: a path separator, `.` or `..`, an absolute path."""

    type = "bad_db_name"


class UnmatchedTaskError(InputError):
    """An imported prediction whose id or question matches no task (or several) of the task file."""

    type = "unmatched_task"


class AbstainedError(NlqError):
    """A generation method declined to answer (confidence below the threshold, or words
    stating a constraint it could not use: `unresolved`, listed in the failure)."""

    type = "abstained"

    def __init__(self, message: str, *, hint: str | None = None, unresolved: list | None = None):
        super().__init__(message, hint=hint)
        self.unresolved = list(unresolved or [])

    def to_failure(self, stage: str) -> dict:
        found = failure(stage, self.type, self.message)
        return {**found, "unresolved": self.unresolved} if self.unresolved else found


class ModelError(NlqError):
    """A call to the chat model failed (the base of every model_* failure)."""

    type = "model_error"


class ModelConfigError(ModelError):
    """No usable model configuration (no model name or endpoint, offline without a cache)."""

    type = "model_config"


class ModelTimeoutError(ModelError):
    """The endpoint did not answer within the request timeout, retries included."""

    type = "model_timeout"


class ModelRateLimitedError(ModelError):
    """429 after every retry, or a 429 that says the quota is exhausted."""

    type = "model_rate_limited"


class ModelHTTPError(ModelError):
    """An HTTP error status, a dropped connection or an unreadable response."""

    type = "model_http_error"


class ModelAuthError(ModelError):
    """The endpoint refused the credentials (401/403)."""

    type = "model_auth"


class ModelBadOutputError(ModelError):
    """The model's reply could not be decoded into what was asked (after the repair turns).

    `feedback` is what the repair turn tells the model (default: the message);
    a method that must not disclose a channel says less to the model than to the user."""

    type = "model_bad_output"

    def __init__(self, message: str, *, hint: str | None = None, feedback: str | None = None):
        super().__init__(message, hint=hint)
        self.feedback = feedback or message


class ModelReplyTooLargeError(ModelError):
    """A reply longer than `--max-reply-bytes` (reading stops at the cap; not retried)."""

    type = "model_reply_too_large"


class CacheMissError(ModelError):
    """`--offline` and the request is not in the response cache."""

    type = "cache_miss"


class BudgetExhaustedError(NlqError):
    """A multi-turn method used its whole step budget without submitting an answer."""

    type = "budget_exhausted"


class CallBudgetExhaustedError(BudgetExhaustedError):
    """`--budget calls=N,tokens=M` is spent: no further model call is made in this run
    (replies already in the cache are still served, so a rerun resumes)."""


class NoAnswerError(NlqError):
    """`nlq ask` could not answer: no pipeline was generated, or it failed to run."""

    type = "no_answer"


class PluginError(NlqError):
    """An installed plugin (a `nlq.methods` entry point) that cannot be loaded or is not a method."""

    type = "plugin_error"


def failure(stage: str, type_: str, message: str) -> dict:
    """The typed failure object : `{"stage", "type", "message"}`."""
    return {"stage": stage, "type": type_, "message": message}


def json_type(value) -> str:
    """The JSON kind of a value, for messages about a field of the wrong type: 'an array'..."""
    names = {list: "an array", dict: "an object", bool: "a boolean", int: "a number", float: "a number",
             str: "a string", type(None): "null"}
    return names.get(type(value), type(value).__name__)
