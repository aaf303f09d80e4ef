"""Run nlq with `--uri` on SecantusDB and with `--data` on the same documents; compare.

    python -m tests.secantus.run --server .venv-wire/bin/secantusd-py   # what `make wire` runs

Both sides read identical documents: the fixture worlds as they are, and the
TEND v1 databases (when ../shared/tend-v1 is present) with the deterministic
`_id`s of tests/differential/harness.py, written to a temporary folder for
`--data` and inserted into the server for `--uri`. Then `nlq index` (every
database), `nlq exec --tasks --rows` and `nlq score --self-check` run once per
side, and every output record is compared with its twin: index documents
exactly, result rows as the differential harness compares them (documents as
mappings, numeric types significant, order only where a `$sort` defines it),
scores by outcome, EXC, EXF1, row counts and error type. The manual's find()
examples (tests/conformance/find.jsonl) run too: each one's lowered pipeline,
what `--uri` sends, runs on the server and must give the manual's answer.

Known server divergences are listed in tests/secantus/divergences.jsonl, each
with the manual's verdict and a minimal repro whose `expected` result is the
manual's answer: the repro runs on the server (it must still differ) and on the
engine (it must give `expected`). tests/secantus/verdicts.jsonl names the
divergence behind every differing record.

Prints the agreement per command and every disagreement; exits 1 when one is
not triaged, a recorded one no longer occurs, or a repro does not behave as
recorded. The server binds 127.0.0.1, keeps its data in memory and is stopped at
the end (and by the kernel if this process dies first).
"""

from __future__ import annotations

import argparse
import ctypes
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tests.secantus import shared

from nlq import io

ROOT = Path(__file__).resolve().parents[2]
WORLDS = ROOT / "fixtures" / "worlds"
TASKS = ROOT / "fixtures" / "tasks"
TEND_V1 = ROOT.parent / "shared" / "tend-v1"
VERDICTS = Path(__file__).resolve().parent / "verdicts.jsonl"
DIVERGENCES = Path(__file__).resolve().parent / "divergences.jsonl"
FIND_CASES = ROOT / "tests" / "conformance" / "find.jsonl"
NLQ = Path(sys.executable).parent / "nlq"
VERDICT_KINDS = ("server_wrong", "both_acceptable")  # never "nlq_wrong": that is a bug to fix


def _die_with_parent() -> None:
    """In the server's process: receive SIGTERM when this process ends (Linux prctl)."""
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


class Server:
    """SecantusDB on a free 127.0.0.1 port, in-memory storage, standalone topology."""

    def __init__(self, executable: str, log: Path):
        self.executable, self.log = executable, log
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.uri = f"mongodb://127.0.0.1:{self.port}/"

    def __enter__(self):
        import pymongo

        self._log = open(self.log, "wb")
        self._proc = subprocess.Popen(
            [self.executable, "--host", "127.0.0.1", "--port", str(self.port), "--storage-path", ":memory:",
             "--standalone", "--log-level", "WARNING"],
            stdout=self._log, stderr=subprocess.STDOUT, preexec_fn=_die_with_parent)
        deadline = time.monotonic() + 60
        with pymongo.MongoClient(self.uri, serverSelectionTimeoutMS=1000) as client:
            while True:
                try:
                    client.admin.command("ping")
                    return self
                except pymongo.errors.PyMongoError:
                    if self._proc.poll() is not None or time.monotonic() > deadline:
                        self.__exit__()
                        raise SystemExit(f"SecantusDB did not start; its log: {self.log.read_text()[-2000:]}")

    def __exit__(self, *exc):
        self._proc.terminate()
        try:
            self._proc.wait(10)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        self._log.close()


def prepare(tmp: Path) -> tuple[Path, Path, list[str]]:
    """The `--data` folder, the task file, and what they hold (for the report)."""
    data = tmp / "data"
    data.mkdir()
    held = []
    for world in sorted(p for p in WORLDS.iterdir() if p.is_dir()):
        (data / world.name).symlink_to(world)
    held.append(f"fixture worlds ({len(list(data.iterdir()))} databases)")
    tasks = [line for path in sorted(TASKS.glob("*.jsonl")) for line in path.read_bytes().splitlines() if line]
    if TEND_V1.exists():
        from tests.differential.harness import load_database

        files = sorted((TEND_V1 / "mongodb_data").glob("*.json"))
        for path in files:
            (data / path.name).write_bytes(io.dumps(load_database(path.stem)))
        imported = _nlq("import", "--format", "tend-v1", str(TEND_V1 / "test.jsonl"))
        tasks += imported.splitlines()
        held.append(f"TEND v1 ({len(files)} databases, {len(imported.splitlines())} golds)")
    else:
        held.append(f"no TEND v1 ({TEND_V1} is absent: skipped)")
    path = tmp / "tasks.jsonl"
    path.write_bytes(b"\n".join(tasks) + b"\n")
    return data, path, held


def load(uri: str, data: Path) -> None:
    """Insert every collection of `data` into the server, in file order."""
    import pymongo

    from nlq.backends import EmbeddedBackend

    files = EmbeddedBackend(data)
    with pymongo.MongoClient(uri) as client:
        for db in files.databases():
            for coll in files.collections(db):
                docs = files.documents(db, coll)
                if docs:
                    client[db][coll].insert_many([dict(doc) for doc in docs])


def _nlq(*args: str) -> bytes:
    done = subprocess.run([str(NLQ), *args], capture_output=True)
    if done.returncode != 0:
        raise SystemExit(f"nlq {' '.join(args)} failed ({done.returncode}): {done.stderr.decode()[-2000:]}")
    return done.stdout


def _records(out: bytes) -> list[dict]:
    return [io.loads(line) for line in out.splitlines() if line.strip()]


def _error_type(execution_or_score: dict):
    error = execution_or_score.get("error")
    return error.get("type") if isinstance(error, dict) else error


def compare_index(uri_out: list[dict], data_out: list[dict]) -> dict[str, str]:
    by_db = {doc["db"]: doc for doc in data_out}
    differences = {}
    for doc in uri_out:
        theirs = by_db.pop(doc["db"], None)
        if theirs is None:
            differences[f"index:{doc['db']}"] = "only --uri lists this database"
        elif doc != theirs:
            key = next(k for k in doc if doc[k] != theirs.get(k))
            differences[f"index:{doc['db']}"] = f"index documents differ first in {key!r}"
    differences.update({f"index:{db}": "only --data lists this database" for db in by_db})
    return differences


def compare_exec(uri_out: list[dict], data_out: list[dict]) -> dict[str, str]:
    from nlq.mql.mongosh import parse_query
    from nlq.score import gold_source
    from tests.differential.harness import compare

    differences = {}
    for mine, theirs in zip(uri_out, data_out, strict=True):
        a, b = mine["execution"], theirs["execution"]
        if _error_type(a) != _error_type(b):
            differences[mine["id"]] = (f"--uri error {_error_type(a)!r} ({(a['error'] or {}).get('message')}) vs "
                                       f"--data error {_error_type(b)!r} ({(b['error'] or {}).get('message')})")
        elif a["error"] is None:
            pipeline = parse_query(gold_source(mine)).pipeline
            difference = compare(pipeline, a["rows"], b["rows"], names=("--uri", "--data"))
            if difference:
                differences[mine["id"]] = difference
    return differences


_SCORE_KEYS = ("outcome", "exc", "exf1", "near_miss", "gold_rows", "pred_rows")


def compare_score(uri_out: list[dict], data_out: list[dict]) -> dict[str, str]:
    differences = {}
    for mine, theirs in zip(uri_out, data_out, strict=True):
        a, b = mine["score"], theirs["score"]
        key = next((k for k in _SCORE_KEYS if a.get(k) != b.get(k)), None)
        if key is None and _error_type(a) != _error_type(b):
            key = "error"
        if key is not None:
            differences[mine["id"]] = f"score.{key}: --uri {a.get(key)!r} vs --data {b.get(key)!r}"
    return differences


def _jsonl(path: Path) -> list[dict]:
    return [io.loads(line) for line in path.read_bytes().splitlines() if line.strip()]


def divergences() -> dict[str, dict]:
    rows = _jsonl(DIVERGENCES)
    for row in rows:
        if set(row) != {"cause", "verdict", "summary", "manual", "collections", "collection", "pipeline", "expected"} \
                or row["verdict"] not in VERDICT_KINDS or not row["manual"].startswith("https://www.mongodb.com/docs/"):
            raise SystemExit(f"{DIVERGENCES}: malformed divergence {row}")
    return {row["cause"]: row for row in rows}


def verdicts(causes: dict[str, dict]) -> dict[str, dict]:
    rows = _jsonl(VERDICTS)
    by_id = {row["id"]: row for row in rows}
    if len(by_id) != len(rows):
        raise SystemExit(f"{VERDICTS}: an id appears twice")
    for row in rows:
        if set(row) != {"id", "cause", "reason"} or row["cause"] not in causes or len(row["reason"]) < 40:
            raise SystemExit(f"{VERDICTS}: malformed verdict {row}")
    return by_id


def check_repros(uri: str, causes: dict[str, dict]) -> list[str]:
    """Each divergence's repro on the server and on the engine; the problems found."""
    import pymongo

    from nlq.mql import engine
    from tests.differential.harness import canonical

    problems = []
    with pymongo.MongoClient(uri, tz_aware=True) as client:
        for cause, row in causes.items():
            db = client[f"nlq_repro_{cause}"[:60]]
            colls = row["collections"]
            for name, docs in colls.items():
                db[name].insert_many([dict(doc) for doc in docs])
            try:
                served = list(db[row["collection"]].aggregate(row["pipeline"]))
            except pymongo.errors.OperationFailure as error:  # a refusal differs from any answer
                served = [{"server error": str(error)}]
            mine = engine.aggregate(colls[row["collection"]], row["pipeline"], catalog=lambda n: colls.get(n, []))
            expected = [canonical(r) for r in row["expected"]]
            if [canonical(r) for r in mine] != expected:
                problems.append(f"REPRO {cause}: the engine gives {mine!r}, the manual {row['expected']!r}: fix nlq")
            if [canonical(r) for r in served] == expected:
                problems.append(f"REPRO {cause}: the server now gives the manual's answer (remove the divergence)")
            client.drop_database(db.name)
    return problems


def compare_find(uri: str) -> tuple[dict[str, str], int]:
    """Each manual find() example's lowered pipeline on the server against the manual's answer."""
    import pymongo

    from nlq.io import from_extjson
    from tests.test_conformance import case_pipeline, result_difference

    cases = [case for case in _jsonl(FIND_CASES) if "expected" in case]  # an `error` case never reaches a server
    differences = {}
    with pymongo.MongoClient(uri, tz_aware=True) as client:
        for case in cases:
            db = client[f"nlq_find_{case['id']}"[:60]]
            db["docs"].insert_many(from_extjson(case["docs"]))
            for name, docs in from_extjson(case.get("collections", {})).items():
                db[name].insert_many(docs)
            try:
                rows = list(db["docs"].aggregate(case_pipeline(case)))
                difference = result_difference(from_extjson(case["expected"]), rows, case)
            except pymongo.errors.OperationFailure as error:
                difference = f"the server refuses the lowered pipeline: {error}"
            if difference:
                differences[f"find:{case['id']}"] = difference
            client.drop_database(db.name)
    return differences, len(cases)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--server", required=True, help="the secantusd-py executable (in its own venv)")
    args = parser.parse_args(argv)
    causes = divergences()
    recorded = verdicts(causes)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="nlq-wire-") as name:
        tmp = Path(name)
        data, tasks, held = prepare(tmp)
        print(f"wire: SecantusDB vs the embedded engine on {', '.join(held)}")
        with Server(args.server, tmp / "secantus.log") as server:
            problems = check_repros(server.uri, causes)
            shared_problems = shared.check(server.uri)
            print(f"  shared cache and run ledger: {len(shared_problems)} problems")
            problems += shared_problems
            find_differences, find_total = compare_find(server.uri)
            load(server.uri, data)
            sides = {"--uri": ["--uri", server.uri], "--data": ["--data", str(data)]}
            runs = {}
            for side, flag in sides.items():
                runs[side] = {
                    "index": _records(_nlq("index", *flag)),
                    "exec": _records(_nlq("exec", *flag, "--tasks", str(tasks), "--rows")),
                    "score": _records(_nlq("score", *flag, "--self-check", str(tasks))),
                }
    comparisons = {"index": compare_index, "exec": compare_exec, "score": compare_score}
    found: dict[str, list[str]] = {}
    for command, compare in comparisons.items():
        differences = compare(runs["--uri"][command], runs["--data"][command])
        total = len(runs["--data"][command])
        unit = "databases" if command == "index" else "records"
        print(f"  {command:5} {total - len(differences)}/{total} {unit} agree")
        for key, difference in sorted(differences.items()):
            found.setdefault(key, []).append(f"{command}: {difference}")
    print(f"  find  {find_total - len(find_differences)}/{find_total} manual find() examples agree")
    for key, difference in sorted(find_differences.items()):
        found.setdefault(key, []).append(f"find: {difference}")
    untriaged = sorted(k for k in found if k not in recorded)
    # a verdict is stale only when its database ran this time (TEND v1 is absent from a bare clone)
    ran = {record.get("db") for record in runs["--data"]["index"]}
    stale = sorted(k for k in recorded if k not in found
                   and (k.removeprefix("index:").split("/")[0] in ran or k.startswith("find:")))
    by_cause: dict[str, int] = {}
    for key in found:
        if key in recorded:
            by_cause[recorded[key]["cause"]] = by_cause.get(recorded[key]["cause"], 0) + 1
    print(f"  {len(found)} records or databases differ, {len(untriaged)} untriaged "
          f"({time.monotonic() - started:.0f} s); triaged by known server divergence:")
    for cause, n in sorted(by_cause.items(), key=lambda item: -item[1]):
        print(f"    {n:3}  {causes[cause]['verdict']}: {cause} — {causes[cause]['manual']}")
    print(f"  {len(causes)} known divergences, repro checked on both: {len(problems)} problems")
    for problem in problems:
        print(problem)
    for key in untriaged:
        print(f"UNTRIAGED {key}:\n    " + "\n    ".join(found[key]))
    for key in stale:
        print(f"STALE {key}: recorded in {VERDICTS.name} but no longer differs (remove it)")
    return 1 if untriaged or stale or problems else 0


if __name__ == "__main__":
    sys.exit(main())
