"""The embedded backend reads collections lazily and samples .jsonl files by line: the same
counts, samples and index bytes as reading every file whole (what the backend did before)."""

from __future__ import annotations

import json
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nlq import index as grounding
from nlq import io
from nlq.backends import EmbeddedBackend, sampling
from nlq.backends.embedded import synthetic_id
from nlq.errors import BackendError, InputError
from nlq.mql.values import ObjectId
from tests.conftest import ATLAS, TEND_V1, WORLDS, need


def as_inserted(db: str, collection: str, docs: list[dict]) -> list[dict]:
    """The documents as an insert stores them: `_id` first, the synthetic one when absent."""
    return [{"_id": doc["_id"] if "_id" in doc else synthetic_id(db, collection, i), **doc}
            for i, doc in enumerate(docs)]


def eager_collections(root) -> dict[str, dict[str, list[dict]]]:
    """Every database's collections read whole, file after file, as the backend always did
    (then given their `_id`s as an insert would)."""
    out = {db: {c: as_inserted(db, c, docs) for c, docs in colls.items()} for db, colls in _eager(root).items()}
    return out


def _eager(root) -> dict[str, dict[str, list[dict]]]:
    out: dict[str, dict[str, list[dict]]] = {}
    for single in sorted(root.glob("*.json")):
        out.setdefault(single.stem, {}).update(io.load_json_file(single))
    for folder in sorted(p for p in root.iterdir() if p.is_dir()):
        for path in sorted(folder.iterdir()):
            if path.suffix == ".jsonl":
                with open(path, "rb") as f:
                    docs = [line.record for line in io.iter_lines(f)]
            elif path.suffix == ".json" and path.name != "manifest.json":
                docs = io.load_json_file(path)
            else:
                continue
            out.setdefault(folder.name, {})[path.stem] = docs
    return out


def eager_index(root, **kw) -> list[bytes]:
    """The index lines of the eager reading: `sampling.sample` over whole collections."""
    lines = []
    for db, colls in sorted(eager_collections(root).items()):
        samples = {c: sampling.sample(docs, kw.get("sample", grounding.DEFAULT_SAMPLE), kw.get("seed", 0))
                   for c, docs in colls.items()}
        lines.append(io.dumps(grounding.index_documents(db, samples, counts={c: len(d) for c, d in colls.items()},
                                                        sample=kw.get("sample", grounding.DEFAULT_SAMPLE),
                                                        seed=kw.get("seed", 0))))
    return lines


def lazy_index(root, **kw) -> list[bytes]:
    return [io.dumps(doc) for doc in grounding.build(EmbeddedBackend(root), **kw)]


@pytest.mark.parametrize("kw", [{}, {"sample": 7, "seed": 3}])
def test_the_index_of_the_fixture_worlds_is_byte_identical_to_reading_them_whole(kw):
    assert lazy_index(WORLDS, **kw) == eager_index(WORLDS, **kw)


@pytest.mark.parametrize("root", [TEND_V1 / "mongodb_data", ATLAS])
def test_the_index_of_the_shared_corpora_is_byte_identical_to_reading_them_whole(root):
    need(root)
    assert lazy_index(root, sample=50) == eager_index(root, sample=50)


def _id_value(kind: str, i: int, rng: random.Random):
    if kind == "oid":
        return ObjectId(f"{rng.getrandbits(96):024x}")
    if kind == "int":
        return rng.randrange(-10**6, 10**6)
    if kind == "str":
        return rng.choice(["a", "b", "é", "z z", ""]) + str(i)
    if kind == "double":
        return rng.random()
    return {"k": i % 3}  # an embedded document as _id: parsed, not read from the text


def _line(doc: dict, style: int) -> bytes:
    if style == 0:
        return io.dumps(doc)
    text = json.dumps(json.loads(io.dumps(doc)), ensure_ascii=style == 1, indent=None, separators=(", ", " : "))
    return text.encode()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(kinds=st.lists(st.sampled_from(["oid", "int", "str", "double", "doc", None]), min_size=1, max_size=40),
       styles=st.lists(st.integers(0, 2), min_size=1, max_size=40), n=st.integers(1, 45), seed=st.integers(0, 5),
       blank=st.booleans(), bom=st.booleans(), final_newline=st.booleans())
def test_counts_and_samples_by_line_equal_those_of_the_whole_file(tmp_path_factory, kinds, styles, n, seed, blank,
                                                                   bom, final_newline):
    root = tmp_path_factory.mktemp("w")
    rng = random.Random(seed)
    docs = []
    for i, kind in enumerate(kinds):
        doc = {"v": i, "nested": {"_id": i} if i % 5 == 0 else [i], "note": "\u005fid" if i % 7 == 0 else "x"}
        if kind is not None:
            doc = {"_id": _id_value(kind, i, rng), **doc}
        docs.append(doc)
    lines = [_line(doc, styles[i % len(styles)]) for i, doc in enumerate(docs)]
    data = (b"\n  \n" if blank else b"\n").join(lines) + (b"\n" if final_newline else b"")
    (root / "db").mkdir()
    (root / "db" / "c.jsonl").write_bytes((b"\xef\xbb\xbf" if bom else b"") + data)
    whole = eager_collections(root)["db"]["c"]
    lazy = EmbeddedBackend(root)
    assert lazy.count("db", "c") == len(whole)
    assert lazy.sample("db", "c", n, seed) == sampling.sample(whole, n, seed)
    assert lazy.documents("db", "c") == whole  # and reading it whole afterwards gives the same


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ids=st.lists(st.integers(0, 5), min_size=1, max_size=30), styles=st.lists(st.integers(0, 3), min_size=1),
       blank=st.sampled_from([b"\n", b"\n\n", b"\n \t\n", b"\r\n"]), lead=st.sampled_from([b"", b"\n", b"  "]),
       bom=st.booleans(), final_newline=st.booleans(), upper=st.booleans())
def test_objectid_ids_read_from_the_whole_text_give_the_order_of_each_line_read_alone(
        tmp_path_factory, ids, styles, blank, lead, bom, final_newline, upper):
    from nlq.backends import embedded

    spellings = ['{"_id":{"$oid":"%s"},"a":1}', '{"_id": {"$oid": "%s"}, "a": 1}', ' { "_id" : { "$oid" : "%s" } }',
                 '{"_id":{"$oid":"%s"}}']
    lines = []
    for i, v in enumerate(ids):  # repeated ids: equal ones keep their file order
        hex_id = f"{v * 0x1234567 + (v % 2) * 0xABCDEF:024x}"
        lines.append((spellings[styles[i % len(styles)]] % (hex_id.upper() if upper and v % 2 else hex_id)).encode())
    text = (b"\xef\xbb\xbf" if bom else b"") + lead + blank.join(lines) + (b"\n" if final_newline else b"")
    path = tmp_path_factory.mktemp("w") / "c.jsonl"
    path.write_bytes(text)
    read = embedded._Lines(path)
    expected = sampling.key_order([embedded._line_id_key(*read.line(i)) for i in range(len(read))])
    assert read.objectid_order() == expected
    second_id = text.replace(b'"a"', b'"_id"', 1)  # a line holding _id twice: parsed, never read from the text
    if second_id != text:
        path.write_bytes(second_id)
        assert embedded._Lines(path).objectid_order() is None


def test_collections_are_listed_without_reading_them_and_read_once(tmp_path):
    folder = tmp_path / "shop"
    folder.mkdir()
    (folder / "broken.json").write_text("[{")
    (folder / "items.jsonl").write_text('{"_id": 1}\n{"_id": 2}\n')
    backend = EmbeddedBackend(tmp_path)
    assert backend.collections("shop") == ["broken", "items"]
    assert backend.aggregate("shop", "items", [{"$count": "n"}]) == [{"n": 2}]
    assert backend.documents("shop", "items") is backend.documents("shop", "items")
    with pytest.raises(InputError, match="broken.json: malformed JSON"):
        backend.count("shop", "broken")


def test_a_sampled_malformed_line_is_reported_and_skip_bad_lines_counts_only_documents(tmp_path):
    folder = tmp_path / "shop"
    folder.mkdir()
    lines = [b'{"_id": %d}' % i for i in range(10)]
    lines[4] = b'{"_id": 4,'
    (folder / "items.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    with pytest.raises(BackendError, match=r"items.jsonl, line 5: malformed JSON"):
        EmbeddedBackend(tmp_path).sample("shop", "items", 20)
    warned = []
    skipping = EmbeddedBackend(tmp_path, skip_bad_lines=True, warn=warned.append)
    assert skipping.count("shop", "items") == 9
    assert [d["_id"] for d in skipping.sample("shop", "items", 3, seed=1)] == \
        [d["_id"] for d in sampling.sample([{"_id": i} for i in range(10) if i != 4], 3, 1)]
    assert len(warned) == 1


def test_a_malformed_line_outside_the_sample_is_not_read_by_index(tmp_path):
    """What the sampled reading costs (README): the whole-collection commands report it."""
    folder = tmp_path / "shop"
    folder.mkdir()
    lines = [b'{"v": %d}' % i for i in range(50)]
    lines[49] = b'{"v": '
    (folder / "items.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    backend = EmbeddedBackend(tmp_path)
    sampled = backend.sample("shop", "items", 3, seed=0)
    assert len(sampled) == 3 and backend.count("shop", "items") == 50
    if 49 not in sampling.positions(50, 3, 0):
        with pytest.raises(BackendError, match="line 50"):
            backend.documents("shop", "items")


def test_objectid_keys_read_from_the_text_are_the_values_sort_keys():
    from nlq.backends import embedded
    from nlq.mql.values import sort_key

    oid = ObjectId("0123456789abcdefABCDEF01")
    raw = b'{"_id": {"$oid": "0123456789abcdefABCDEF01"}, "a": 1}'
    assert embedded._line_id_key(1, raw) == sort_key(oid)
    assert embedded._line_id_key(1, b'{"_id":-0,"a":1}') == sort_key(0)
    assert embedded._line_id_key(1, b'{"_id":"x","_id":2}') == sort_key(2)  # twice: parsed, the last wins
    assert embedded._line_id_key(1, b'{"\\u005fid": 3}') == sort_key(3)


def test_a_file_too_large_to_read_in_one_piece_is_read_by_line_alike(tmp_path, monkeypatch):
    from nlq.backends import embedded

    path = tmp_path / "c.jsonl"
    path.write_bytes(b'\xef\xbb\xbf{"_id": {"$oid": "000000000000000000000002"}}\n\n  \n{"b":\n{"c": 3}')
    whole = embedded._Lines(path)
    monkeypatch.setattr(embedded, "WHOLE_FILE_BYTES", 0)
    by_line = embedded._Lines(path)
    assert [whole.line(i) for i in range(len(whole))] == [by_line.line(i) for i in range(len(by_line))]
    assert [n for n, _ in (whole.line(i) for i in range(len(whole)))] == [1, 4, 5]
