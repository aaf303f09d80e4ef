"""The one value every query form parses to: a collection and a pipeline."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Query:
    """`db.<collection>.aggregate(<pipeline>)`, whatever the query was written as.

    `form` records the surface form it was parsed from ('aggregate', 'find',
    'count', 'countDocuments', 'distinct', 'json'); find/count/distinct are
    lowered to equivalent aggregation stages by the parser. `warnings` notes
    what a tolerant parse accepted (e.g. a missing final ')'). Equality looks
    at the collection and the pipeline only.
    """

    collection: str
    pipeline: list = field(default_factory=list)
    form: str = field(default="aggregate", compare=False)
    warnings: tuple = field(default=(), compare=False)

    def to_json(self) -> dict:
        return {"collection": self.collection, "pipeline": self.pipeline}
