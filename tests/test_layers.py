"""The import graph of nlq/ and commands/ (installed as nlq.commands): no cycle, and only the allowed directions.

Every import statement counts, also one inside a function: a lazy import
hides a cycle from Python, not from this test. A package's own `__init__`
(which re-exports its children) is not an edge from its children.

Rules are written by module group, so a new module is covered by the group
its path falls in (see docs/ARCHITECTURE.md, "Who may import whom").
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# group -> module name prefixes (the longest matching prefix wins)
GROUPS = {
    "language": ("nlq.mql",),
    "foundation": ("nlq.errors", "nlq.text", "nlq.examples", "nlq.profiles"),
    "io": ("nlq.io", "nlq.importers", "nlq.shard"),
    "backends": ("nlq.backends",),
    "grounding": ("nlq.index", "nlq.card", "nlq.witness", "nlq.probe"),
    "llm": ("nlq.llm",),
    "generation": ("nlq.methods", "nlq.generate", "nlq.repair", "nlq.selection", "nlq.feedback", "nlq.gate",
                   "nlq.memory", "nlq.ledger"),
    "evaluation": ("nlq.execute", "nlq.score", "nlq.report", "nlq.report_stats", "nlq.report_html", "nlq.normexec"),
    "application": ("nlq.ask",),  # question -> answer: generation, then execution
    "commands": ("nlq.commands",),
    "api": ("nlq",),  # the package itself (exactly): re-exports only
}

# group -> groups it must never import
FORBIDDEN = {
    "foundation": {"language", "io", "backends", "grounding", "llm", "generation", "evaluation", "application",
                   "commands", "api"},
    "language": {"io", "backends", "grounding", "llm", "generation", "evaluation", "application", "commands", "api"},
    "io": {"backends", "grounding", "llm", "generation", "evaluation", "application", "commands", "api"},
    "backends": {"grounding", "llm", "generation", "evaluation", "application", "commands", "api"},
    "grounding": {"generation", "evaluation", "application", "commands", "api"},
    "llm": {"generation", "evaluation", "application", "commands", "api"},
    "generation": {"application", "commands", "api"},  # may score candidates (repair votes on result rows)
    "evaluation": {"generation", "llm", "application", "commands", "api"},
    "application": {"commands", "api"},
    "commands": set(),
    "api": {"commands"},
}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[0] == "commands":  # the repository's commands/ installs as nlq.commands (setup.py)
        parts.insert(0, "nlq")
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def project_modules() -> dict[str, Path]:
    files = list((ROOT / "nlq").rglob("*.py")) + list((ROOT / "commands").rglob("*.py"))
    return {module_name(p): p for p in files}


def imported(path: Path, modules: dict[str, Path]) -> set[str]:
    """The project modules a file imports, anywhere in it."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            # `from a import b` imports the module a.b when there is one, else names of a
            targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base
                       for alias in node.names]
        else:
            continue
        for target in targets:
            while target and target not in modules:
                target = target.rpartition(".")[0]
            if target and target != name and not name.startswith(target + "."):
                out.add(target)
    return out


def graph() -> dict[str, set[str]]:
    modules = project_modules()
    return {name: imported(path, modules) for name, path in modules.items()}


def group_of(module: str) -> str:
    best, group = "", None
    for g, prefixes in GROUPS.items():
        for prefix in prefixes:
            inside = module == prefix or (g != "api" and module.startswith(prefix + "."))
            if inside and len(prefix) > len(best):
                best, group = prefix, g
    assert group is not None, f"{module} belongs to no group: add it to GROUPS and docs/ARCHITECTURE.md"
    return group


def find_cycle(edges: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node):
        state[node] = 1
        stack.append(node)
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        state[node] = 2
        stack.pop()
        return None

    for node in sorted(edges):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def test_every_module_has_a_group():
    for module in project_modules():
        group_of(module)


def test_no_import_cycle():
    cycle = find_cycle(graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_forbidden_directions():
    wrong = [f"{src} ({group_of(src)}) imports {dst} ({group_of(dst)})"
             for src, targets in sorted(graph().items()) for dst in sorted(targets)
             if group_of(dst) in FORBIDDEN[group_of(src)]]
    assert not wrong, "\n".join(wrong)


def test_package_inits_import_only_their_children():
    for src, targets in graph().items():
        for dst in targets:
            if dst != "nlq" and project_modules()[dst].name == "__init__.py":
                # importing a package's names (not one of its modules) from outside it is fine,
                # from inside it would make the package's re-exports a cycle
                assert not src.startswith(dst + "."), f"{src} imports the names of its own package {dst}"


@pytest.mark.parametrize("source, target, expected", [
    ("nlq.mql.values", "nlq.io", True),
    ("nlq.index", "nlq.methods.rules", True),
    ("nlq.score", "nlq.generate", True),
    ("nlq.repair", "nlq.normexec", False),
    ("nlq.methods.rules", "nlq.index", False),
    ("nlq.llm.client", "nlq.methods.sag", True),
    ("nlq.report", "nlq.mql.engine", False),
])
def test_rules_by_group(source, target, expected):
    assert (group_of(target) in FORBIDDEN[group_of(source)]) is expected


def test_cycle_finder_finds_a_cycle():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None
