"""The one prompt-building and decoding path of the LLM methods.

    class CardMethod(PromptedMethod):
        name, prompt_name, channels = "card", "card", ("question", "path_card", "value_witnesses")
        def slots(self, task, context, index): return {"card": ..., "witnesses": ...}

Prompts are package data (`nlq/methods/prompts/<name>.txt`), never code: a
file holds `[system]` and `[user]` sections (and more named sections for
multi-call methods), `{{slot}}` placeholders filled from the channels the
method declares, and `{{> part}}` includes of shared parts (the decoder
instructions). Each prediction records `prompt = {id, sha256}` of the fully
expanded file, so a published run names the exact prompt.

The channel renderers below are the only way a method turns data into prompt
text, so what a method sees is what its `slots` call, listed in `channels`.
"""

from __future__ import annotations

import functools
import hashlib
import re
from dataclasses import dataclass
from importlib import resources

from nlq import card as path_card
from nlq import io
from nlq.errors import BackendError, InputError, ModelBadOutputError
from nlq.llm import chat_decoded, decode_pipeline, pipeline_schema
from nlq.witness import database_of, question_of
from nlq.text import escape_invisible, safe_name

_SECTION = re.compile(r"^\[([a-z_]+)\]\s*$", re.M)
_INCLUDE = re.compile(r"\{\{>\s*([a-z0-9_-]+)\s*\}\}")
_SLOT = re.compile(r"\{\{\s*([a-z_]+)\s*\}\}")

SAMPLE_SEED = 0           # the backend's deterministic sample: a rerun sends the same prompt
MAX_DOCUMENT_CHARS = 6000  # one raw sample document in a prompt, at most


@dataclass(frozen=True)
class Prompt:
    """One prompt file, expanded: its sections and its identity."""

    id: str
    sha256: str
    sections: dict

    @property
    def ref(self) -> dict:
        return {"id": self.id, "sha256": self.sha256}

    def render(self, section: str, **slots) -> str:
        """A section with every `{{slot}}` filled (InputError naming a slot left unfilled)."""
        def fill(match):
            name = match.group(1)
            if name not in slots:
                raise InputError(f"prompt {self.id}: no value for {{{{{name}}}}} in [{section}]")
            return str(slots[name])

        return _SLOT.sub(fill, self.sections[section]).strip()

    def messages(self, **slots) -> list[dict]:
        """`[system, user]` chat messages."""
        return [{"role": "system", "content": self.render("system", **slots)},
                {"role": "user", "content": self.render("user", **slots)}]


def _read(name: str) -> str:
    try:
        return (resources.files("nlq.methods") / "prompts" / f"{name}.txt").read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(f"no prompt file {name}.txt in nlq/methods/prompts") from None


@functools.lru_cache(maxsize=None)
def load(name: str) -> Prompt:
    """The prompt `name`, includes expanded, with its sha256."""
    text = _INCLUDE.sub(lambda m: _read(m.group(1)).strip(), _read(name))
    parts = _SECTION.split(text)
    sections = {parts[i]: parts[i + 1] for i in range(1, len(parts) - 1, 2)}
    if "system" not in sections or "user" not in sections:
        raise InputError(f"prompt {name}.txt needs a [system] and a [user] section")
    return Prompt(name, hashlib.sha256(text.encode("utf-8")).hexdigest(), sections)


# ---------------------------------------------------------------------------
# channel renderers


def collection_names(index: dict) -> list[str]:
    return sorted(index.get("collections") or {})


def collections_text(index: dict) -> str:
    """`collection_names`: one name per line."""
    return "\n".join(f"- {safe_name(name)}" for name in collection_names(index))


def field_names_text(index: dict) -> str:
    """`field_names`: per collection, the document field names in dot notation.

    Names only: no types, counts or stored values, and nothing below a dynamic
    map (its keys are data, not names)."""
    fields: dict[str, list[str]] = {name: [] for name in collection_names(index)}
    for entry in index.get("lattice") or []:
        path = entry["path"]
        if "<*>" in path or entry["collection"] not in fields:
            continue
        dotted = path.replace("[]", "")
        if dotted and dotted not in fields[entry["collection"]]:
            fields[entry["collection"]].append(dotted)
    return "\n".join(f"{safe_name(name)}: {', '.join(map(safe_name, names)) or '(no fields seen)'}"
                     for name, names in fields.items())


def sample_documents_text(backend, db: str, index: dict, n: int, rendering: str = "seeded") -> str:
    """`sample_documents`: `n` documents per collection, one per line as relaxed Extended JSON.

    `rendering` (the profile element `documents`): `seeded`, the backend's seeded sample raw, each
    cut at MAX_DOCUMENT_CHARS; `first-compact`, the first `n` documents in natural order, compacted
    (`compact`: strings of at most 160 characters, lists of 8 items, objects of 24 keys, 5 levels)
    and followed by a summary of the string values they hold per path (as the paper's reference)."""
    if backend is None:
        raise BackendError("this method reads sample documents: give --data DIR or --uri URI")
    if rendering not in ("seeded", "first-compact"):
        raise InputError(f"unknown document rendering {rendering!r}; choose seeded or first-compact")
    blocks = []
    for name in collection_names(index):
        lines = []
        if rendering == "first-compact":
            documents = backend.aggregate(db, name, [{"$limit": n}], max_rows=n)
            lines = [escape_invisible(io.dumps(compact(d)).decode()) for d in documents]
            summary = string_summary(documents)
            if summary:
                lines.append("string values in these documents: " + summary)
        else:
            for document in backend.sample(db, name, n, seed=SAMPLE_SEED):
                text = escape_invisible(io.dumps(document).decode())
                if len(text) > MAX_DOCUMENT_CHARS:
                    text = text[:MAX_DOCUMENT_CHARS] + " ...(document cut)"
                lines.append(text)
        blocks.append(f"{safe_name(name)}:\n" + ("\n".join(lines) if lines else "(empty collection)"))
    return "\n\n".join(blocks)


COMPACT_STRING, COMPACT_LIST, COMPACT_KEYS, COMPACT_DEPTH = 160, 8, 24, 5
SUMMARY_PATHS, SUMMARY_VALUES, SUMMARY_CHARS = 24, 6, 40


def compact(value, depth: int = 0):
    """A document cut to size: strings to 160 characters, lists to 8 items, objects to 24 keys,
    nesting to 5 levels (deeper values become "...")."""
    if isinstance(value, str):
        return value if len(value) <= COMPACT_STRING else value[:COMPACT_STRING] + "..."
    if isinstance(value, list):
        if depth >= COMPACT_DEPTH:
            return "..."
        return [compact(v, depth + 1) for v in value[:COMPACT_LIST]] + (["..."] if len(value) > COMPACT_LIST else [])
    if isinstance(value, dict):
        if depth >= COMPACT_DEPTH:
            return "..."
        items = list(value.items())
        out = {k: compact(v, depth + 1) for k, v in items[:COMPACT_KEYS]}
        if len(items) > COMPACT_KEYS:
            out["..."] = f"{len(items) - COMPACT_KEYS} more keys"
        return out
    return value


def string_summary(documents: list) -> str:
    """`path: "a", "b", ...` for the string values the documents hold (distinct, first seen first)."""
    seen: dict[str, list[str]] = {}

    def walk(value, path: str):
        if isinstance(value, str):
            if len(value) <= SUMMARY_CHARS and path:
                found = seen.setdefault(path, [])
                if value not in found and len(found) < SUMMARY_VALUES:
                    found.append(value)
        elif isinstance(value, dict):
            for k, v in value.items():
                walk(v, f"{path}.{k}" if path else k)
        elif isinstance(value, list):
            for v in value[:COMPACT_LIST]:
                walk(v, path)

    for document in documents:
        walk(document, "")
    parts = [f"{path}: " + ", ".join(io.dumps(v).decode() for v in values)
             for path, values in list(seen.items())[:SUMMARY_PATHS]]
    return "; ".join(parts)


def documents_rendering(context) -> str:
    """The profile's document rendering of a generation context (`seeded` without a profile)."""
    return (context.options.get("profile") or {}).get("documents", "seeded")


def card_text(index: dict) -> str:
    """`path_card`: the induced path card (`nlq card`)."""
    return path_card.render(index)


def witness_text(witnesses) -> str:
    """`value_witnesses`: one line per question literal and where its stored forms live."""
    lines = []
    for witness in witnesses or []:
        matches = witness.get("matches") or []
        if not matches:
            lines.append(f"- {witness.get('term')!r}: not found in the data")
            continue
        where = "; ".join(f"{m.get('kind', 'value')} {escape_invisible(io.dumps(m.get('stored')).decode())} at "
                          f"{safe_name(m.get('collection'))}.{safe_name(m.get('path'))}"
                          + (f" ({safe_name(m['part'])})" if m.get("part") else "")
                          for m in matches[:6])
        more = f"; and {len(matches) - 6} more" if len(matches) > 6 else ""
        lines.append(f"- {witness.get('term')!r}{' [hard]' if witness.get('hard') else ''}: {where}{more}")
    return "\n".join(lines) if lines else "(no literals in the question matched the data)"


def shot_turns(task: dict, context, index: dict, answer=None) -> tuple[list[dict], dict | None]:
    """`verified_examples`: the `--shots K` memory entries most like the question, as example turns
    (a user turn with the entry's question, an assistant turn with its verified query, shaped by
    `answer(collection, pipeline)` as the method's replies are), and what the prediction records of
    them (`{file, entries, shots}`); `([], None)` without a memory."""
    memory, k = context.options.get("memory"), context.options.get("shots") or 0
    if memory is None:
        return [], None
    if k <= 0:
        return [], {"file": memory.name, "entries": [], "shots": 0}
    from nlq.memory import nearest

    shape = answer or (lambda collection, pipeline: {"collection": collection, "pipeline": pipeline})
    cache = context.memo(("memory", memory.name), dict)
    found = nearest(memory, task, index, k, cache=cache)
    turns = []
    taught = lessons(memory, task, context, index, k, cache)
    if taught:
        turns += [{"role": "user", "content": "Lessons from earlier repairs on this database (checked on the "
                                              "current data):\n" + "\n".join(f"- {note}" for note in taught)},
                  {"role": "assistant", "content": "Noted."}]
    for recalled, _ in found:
        entry = recalled.entry
        turns += [{"role": "user", "content": f"Question: {entry.question}"},
                  {"role": "assistant", "content": io.dumps(shape(entry.collection, entry.pipeline)).decode()}]
    return turns, {"file": memory.name, "entries": [r.entry.id for r, _ in found], "shots": k,
                   **({"lessons": len(taught)} if taught else {})}


def lessons(memory, task: dict, context, index: dict, k: int, cache: dict) -> list[str]:
    """What earlier repairs on this database learned (the notes of the `lesson` entries most like the
    question), each re-run on the current data first: one that no longer answers is not shown."""
    if context.backend is None:
        return []
    from nlq.memory import nearest
    from nlq.memory.stage import usable

    timeout, max_rows = context.options.get("timeout") or 20.0, context.options.get("max_rows") or 100_000
    return [r.entry.note for r, _ in nearest(memory, task, index, k, kinds=("lesson",), cache=cache)
            if usable(r.entry, context.backend, timeout=timeout, max_rows=max_rows)]


def with_shots(messages: list[dict], task: dict, context, index: dict, answer=None) -> tuple[list[dict], dict]:
    """`messages` with the example turns of `shot_turns` after the system message, and the fields
    the prediction gains (`memory`, and `disclosure: [verified_examples]` when examples were shown)."""
    turns, used = shot_turns(task, context, index, answer)
    if used is None:
        return messages, {}
    return messages[:1] + turns + messages[1:], {"memory": used, "disclosure": ["verified_examples"] if turns else []}


# ---------------------------------------------------------------------------
# decoding


def decode_answer(client, messages: list[dict], collections, *, disclose_collections: bool = True):
    """Ask for `{"collection", "pipeline"}` and decode it, with the shared repair turns.

    `disclose_collections=False` (a method that must not see collection names)
    keeps them out of the response schema and out of the repair feedback."""
    names = list(collections)

    def decode(text: str):
        try:
            return decode_pipeline(text, names)
        except ModelBadOutputError as exc:
            if disclose_collections or not exc.message.startswith("unknown collection"):
                raise
            raise ModelBadOutputError(exc.message, feedback="that collection does not exist in this database") \
                from None

    schema = pipeline_schema(names if disclose_collections else None)
    return chat_decoded(client, messages, decode, schema=schema)


def prediction(decoded, prompt: Prompt, **extra) -> dict:
    """The prediction of a pipeline-producing method."""
    return {"collection": decoded.value["collection"], "pipeline": decoded.value["pipeline"],
            "prompt": prompt.ref, "repairs": decoded.repairs, **extra}


class PromptedMethod:
    """A one-call method: fill the prompt's slots from the channels, decode a pipeline.

    A subclass sets `name`, `prompt_name`, `channels` and defines
    `slots(task, context, index) -> dict` (the prompt's placeholders besides `question`)."""

    name: str
    prompt_name: str
    channels: tuple
    needs_model = True
    needs_backend = False
    disclose_collections = True

    def generate(self, task: dict, context) -> dict:
        index = context.index_for(database_of(task))
        prompt = load(self.prompt_name)
        messages = prompt.messages(question=question_of(task), **self.slots(task, context, index))
        messages, shown = with_shots(messages, task, context, index)
        decoded = decode_answer(context.model, messages, collection_names(index),
                                disclose_collections=self.disclose_collections)
        return prediction(decoded, prompt, **shown)


def database(task: dict, index: dict) -> str:
    """The database a task runs on: its `db`, else the index's."""
    return database_of(task) or index["db"]
