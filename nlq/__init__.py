"""nlq: natural-language questions to MongoDB aggregation pipelines, measured."""

__version__ = "0.1.0"
