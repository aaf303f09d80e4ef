"""The aggregation stages, one module per family; each stage is a compiler
`compile(spec, ctx) -> fn(stream) -> stream` registered with
`registry.implements(STAGE, "$name")`.

    base        document paths, stream materialization, shared argument checks
    filtering   $match, $redact
    projection  $project, $addFields/$set, $unset, $unwind, $replaceRoot, $replaceWith
    ordering    $sort, $skip, $limit (and the sort order used by $sortArray, $top...)
    grouping    $group, $count, $sortByCount
    joins       $lookup, $graphLookup, $unionWith, $documents, $facet
    buckets     $bucket, $bucketAuto
    windows     $setWindowFields and the window functions
    gaps        $densify, $fill
    fusion      adjacent stages as one loop ($unwind + $group), where provably equal

Semantics follow the manual's stage pages
(https://www.mongodb.com/docs/manual/reference/operator/aggregation-pipeline/).
Streaming stages are generators; blocking stages ($group, $sort, $facet,
buckets, windows, $densify) buffer their input. Documents are shared, never
deep-copied: a stage that changes a document builds a new dict along the
changed path only. This package imports none of its modules:
`registry.load()` does.
"""
