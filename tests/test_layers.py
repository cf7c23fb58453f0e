"""The house rules of docs/DESIGN.md, checked on the source: import direction, where languages are named,
where processes start, and module/function sizes."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "arbiter"

# Layer rank of each top-level part of the package; a module may import only parts of a lower rank (or its own).
RANKS = {
    "strenum": 0, "sandbox": 1, "languages": 2, "checkers": 3, "timing": 3, "judge": 4,
    "datasets": 5, "rewards": 6, "cluster": 6.5, "pipelines": 7, "server": 7.5, "client": 7.5,
    "cli": 8, "verl": 8, "integrations": 8.5,
}
# "issue N" of arbiter's own tracker (a peer project's issue, "verl issue 1962", is a fine citation).
OWN_ISSUE = re.compile(r"(?<!verl )(?<!LCB )(?<!LiveCodeBench )\bissue #?\d+\b", re.IGNORECASE)
# A file of the shared reference folder, which a clone does not have.
SHARED_FILE = re.compile(r"\b(realdata|reference)/[\w.]+\.md\b")
MAX_MODULE_LINES = 500
MAX_FUNCTION_LINES = 80
MAX_MODULE_DOCSTRING_LINES = 15  # the long story lives in docs/
# Parts allowed to start processes; everything above reaches programs through the judge.
PROCESS_PARTS = {"sandbox", "languages", "timing", "judge"}
PROCESS_CALLS = re.compile(r"\b(subprocess|os\.fork|os\.exec\w*|os\.spawn\w*|Popen|Sandbox\()")
LANGUAGE_BRANCH = re.compile(r"""(language|lang)\s*(==|!=)|==\s*["'](python|cpp|c)["']|["'](python|cpp)["']\s*==""")


def _modules() -> list[Path]:
    return sorted(p for p in SRC.rglob("*.py") if "data" not in p.relative_to(SRC).parts[:1])


def _part(path: Path) -> str:
    rel = path.relative_to(SRC)
    return rel.parts[0].removesuffix(".py") if len(rel.parts) > 1 or rel.name != "__init__.py" else ""


def _imported_parts(path: Path) -> set[str]:
    """Top-level arbiter parts imported anywhere in ``path`` (function-level imports included)."""
    parts: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        elif isinstance(node, ast.ImportFrom) and node.level > 0:
            base = path.relative_to(SRC).parts[: -node.level]
            names = ["arbiter." + ".".join(base + ((node.module,) if node.module else ()))]
        for name in names:
            bits = name.split(".")
            if bits[0] == "arbiter" and len(bits) > 1:
                parts.add(bits[1])
    return parts


def test_every_part_has_a_rank():
    unknown = {_part(p) for p in _modules()} - set(RANKS) - {""}
    assert unknown == set(), f"add these packages to RANKS and docs/DESIGN.md: {sorted(unknown)}"


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(SRC)))
def test_imports_point_down_the_layers(path):
    own = _part(path)
    if not own:
        return
    upward = {p for p in _imported_parts(path) if p != own and p in RANKS and RANKS[p] >= RANKS[own]}
    assert upward == set(), f"{path.relative_to(SRC)} ({own}) imports {sorted(upward)}"


def test_only_languages_branch_on_a_language():
    offenders = [
        f"{p.relative_to(SRC)}:{i}: {line.strip()}"
        for p in _modules() if _part(p) not in {"languages", "sandbox"}
        for i, line in enumerate(p.read_text().splitlines(), 1)
        if LANGUAGE_BRANCH.search(line) and not line.lstrip().startswith("#")
    ]
    assert offenders == []


def test_no_process_is_started_above_the_judge():
    offenders = [
        f"{p.relative_to(SRC)}:{i}: {line.strip()}"
        for p in _modules() if _part(p) not in PROCESS_PARTS
        for i, line in enumerate(p.read_text().splitlines(), 1)
        if PROCESS_CALLS.search(line) and not line.lstrip().startswith(("#", '"', "'"))
    ]
    assert offenders == []


def test_sandboxes_are_constructed_only_below_the_judge():
    """``Sandbox(...)`` only in sandbox/, languages/, timing/ and judge/: everything above reaches
    programs through the judge (or the warm pool the judge asks)."""
    offenders = []
    for p in _modules():
        if _part(p) in PROCESS_PARTS or not _part(p):
            continue
        for node in ast.walk(ast.parse(p.read_text())):
            if isinstance(node, ast.Call):
                f = node.func
                name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
                if name == "Sandbox":
                    offenders.append(f"{p.relative_to(SRC)}:{node.lineno}")
    assert offenders == []


def test_no_two_public_classes_share_a_name():
    """A class name says which concept it is, wherever it is imported from."""
    seen: dict[str, list[str]] = {}
    for p in _modules():
        for node in ast.walk(ast.parse(p.read_text())):
            if isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
                seen.setdefault(node.name, []).append(str(p.relative_to(SRC)))
    assert {name: where for name, where in seen.items() if len(where) > 1} == {}


def test_no_private_name_is_imported_from_another_module():
    """A name with a leading underscore belongs to its module: what another module needs is public."""
    offenders = [
        f"{p.relative_to(SRC)}:{node.lineno}: {node.module}.{a.name}"
        for p in _modules() for node in ast.walk(ast.parse(p.read_text()))
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("arbiter")
        for a in node.names if a.name.startswith("_") and not a.name.startswith("__")
    ]
    assert offenders == []


def test_no_class_is_built_from_mixins():
    """One concept a class, composed rather than cut into mixins (docs/sandbox.md, "Files")."""
    offenders = [
        f"{p.relative_to(SRC)}:{node.lineno}: {node.name}"
        for p in _modules() for node in ast.walk(ast.parse(p.read_text()))
        if isinstance(node, ast.ClassDef) and (node.name.endswith("Mixin") or any(
            (b.id if isinstance(b, ast.Name) else getattr(b, "attr", "")).endswith("Mixin") for b in node.bases))
    ]
    assert offenders == []


def test_modules_and_functions_are_small():
    too_big = []
    for p in _modules():
        text = p.read_text()
        if text.count("\n") > MAX_MODULE_LINES:
            too_big.append(f"module {p.relative_to(SRC)}: {text.count(chr(10))} lines")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = node.end_lineno - node.lineno + 1
                if length > MAX_FUNCTION_LINES:
                    too_big.append(f"function {p.relative_to(SRC)}:{node.name}: {length} lines")
    assert too_big == []


def test_module_docstrings_are_short():
    long_ones = []
    for p in _modules():
        doc = ast.get_docstring(ast.parse(p.read_text()), clean=False) or ""
        if doc.count("\n") + 1 > MAX_MODULE_DOCSTRING_LINES:
            long_ones.append(f"{p.relative_to(SRC)}: {doc.count(chr(10)) + 1} lines")
    assert long_ones == []


def test_the_product_stands_on_its_own():
    roots = [SRC, SRC.parents[1] / "docs", SRC.parents[1] / "README.md"]
    files = [f for r in roots for f in ([r] if r.is_file() else r.rglob("*")) if f.suffix in {".py", ".md"}]
    offenders = [
        f"{f}:{i}" for f in files for i, line in enumerate(f.read_text().splitlines(), 1)
        if "../shared" in line or OWN_ISSUE.search(line) or SHARED_FILE.search(line)
    ]
    assert offenders == []
