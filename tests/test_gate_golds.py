"""Every gate flag on a TEND v1 train-a gold is a listed defect of that gold, with the evidence of a
full scan (the index samples 400 documents; the evidence reads every document of the collection).

A flag not listed here is a gate bug to fix, not an entry to add: the gate says only what the data
proves. Each entry names the kind of defect:

- `absent_field`: the gold reads a field that no document entering that stage holds (the stored
  data spells it otherwise, a join brought it under another name, or an earlier stage projected it
  away: a `$sort` on such a field orders nothing);
- `absent_foreign_field`: a `$lookup` sub-pipeline reads a field of the joined collection that no
  document of it holds;
- `absent_collection`: a `$lookup` from a collection the database does not have;
- `other_form`: the gold compares a literal stored in another form, or stored nowhere at that field.
"""

from __future__ import annotations

import pytest

from nlq import gate, importers
from nlq import index as grounding
from nlq.backends import EmbeddedBackend
from nlq.mql.mongosh import parse_query
from tests.conftest import TEND_V1, need

pytestmark = [pytest.mark.shared, pytest.mark.slow]

TRAIN_A = TEND_V1 / "train-a"

TRIAGE = {
    "riding_club/1921": ("absent_field", "$sort on Votes, projected away by the $project before it"),
    "icfp_1/440": ("absent_field", "$match on Docs2.instID: the $lookup brought Authorship.instID as Docs1"),
    "workshop_paper/156": ("absent_field", "$match on Scores after a $group that keeps only _id and above_90"),
    "dorm_1/1286": ("absent_field", "$lookup localField dorm.Has_amenity.amenid: the amenities are under Docs1"),
    "match_season/3776": ("absent_field", "$sort on match_season.College after a $project keeping Player"),
    "concert_singer/4267": ("absent_collection", "$lookup from concert: the database has singer and stadium"),
    "shop_membership/2287": ("absent_field", "$sort on Level after a $project of Card_Number, Hometown, Name"),
    "dorm_1/3244": ("absent_foreign_field", "the $lookup sub-pipeline reads $max_major, a field of no Student "
                                            "document (the let variable is $$max_major)"),
    "wrestler/234": ("other_form", "'Tokyo, Japan' is stored as 'Tokyo , Japan'"),
    "shop_membership/1824": ("absent_foreign_field", "$lookup foreignField Branch_ID: member documents have none"),
    "concert_singer/4290": ("other_form", "concert.Year = '2013': no joined document holds it"),
    "shop_membership/1780": ("absent_field", "$group reads Branch_ID after a $project that dropped it"),
    "game_1/929": ("absent_collection", "$lookup from SportsInfo: the database has Student and Video_Games"),
    "icfp_1/4175": ("absent_field", "$match on AuthorDetails.lname: the joined names are under Docs1"),
    "customers_card_transactions/2238": ("absent_foreign_field", "$lookup foreignField account_id: no "
                                                                 "Customers_Cards document has it"),
    "insurance_and_eClaims/4158": ("absent_field", "Policies.Claim_Headers.Amount_Paid is stored as Amount_Piad"),
}


@pytest.fixture(scope="module")
def corpus():
    need(TRAIN_A / "train-a.jsonl")
    backend = EmbeddedBackend(TRAIN_A / "mongodb_data")
    tasks = list(importers.run(str(TRAIN_A / "train-a.jsonl"), "tend-v1"))
    indexes = {doc["db"]: doc for doc in grounding.build(backend, sorted({t["db"] for t in tasks}))}
    return backend, tasks, indexes


def test_every_flag_on_a_train_a_gold_is_a_listed_defect(corpus):
    backend, tasks, indexes = corpus
    flagged = {}
    for task in tasks:
        query = parse_query(task.get("gold") or task["gold_mql"])
        found = gate.run(query, indexes[task["db"]], task["question"])
        if found:
            flagged[task["id"]] = (query, found[0])
    assert sorted(flagged) == sorted(TRIAGE), "a flag that is not a listed defect is a gate bug to fix"
    for record_id, (query, violation) in flagged.items():
        kind, _ = TRIAGE[record_id]
        db = record_id.split("/")[0]
        assert evidence(backend, db, query, violation, kind), (record_id, violation.message)


def evidence(backend, db: str, query, violation, kind: str) -> bool:
    """Whether a full scan confirms the defect the violation names."""
    if kind == "absent_collection":
        return violation.path not in backend.collections(db)
    prefix = query.pipeline[:violation.stage] if violation.stage is not None else []
    if kind == "absent_field":
        probe = prefix + [{"$match": {violation.path: {"$exists": True}}}, {"$count": "n"}]
        return backend.aggregate(db, query.collection, probe) == []
    if kind == "absent_foreign_field":
        foreign = query.pipeline[violation.stage]["$lookup"]["from"]
        probe = [{"$match": {violation.path: {"$exists": True}}}, {"$count": "n"}]
        return backend.aggregate(db, foreign, probe) == []
    if kind == "other_form":
        probe = prefix + [{"$match": {violation.path: violation.value}}, {"$count": "n"}]
        return backend.aggregate(db, query.collection, probe) == []
    return False
