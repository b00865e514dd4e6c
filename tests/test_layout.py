"""The house rules: top-level layout and one-way imports (flows → nodes → chunking/prompts)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# grove modules that belong to the kernel (importable by nodes) vs the app layer on top.
GROVE_APP = {"grove.cli", "grove.runtime", "grove.dispatch", "grove.console", "grove.serve", "grove.worker",
             "grove.ingest_cli", "grove.ask_cli"}
FORBIDDEN = {
    "chunking": {"flows", "nodes", "grove"},
    "prompts": {"flows", "nodes", "grove", "chunking"},
    "nodes": {"flows", *GROVE_APP},
    "flows": set(GROVE_APP),
}


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def _violations(package: str, forbidden: set[str]) -> list[str]:
    found = []
    for path in (ROOT / package).rglob("*.py"):
        for name in _imports(path):
            if any(name == f or name.startswith(f + ".") for f in forbidden):
                found.append(f"{path.relative_to(ROOT)} imports {name}")
    return found


def test_imports_point_one_way() -> None:
    problems = [v for package, forbidden in FORBIDDEN.items() for v in _violations(package, forbidden)]
    assert problems == []


def test_grove_kernel_does_not_import_flows_or_nodes() -> None:
    kernel = [p for p in (ROOT / "grove").glob("*.py")
              if f"grove.{p.stem}" not in GROVE_APP]
    problems = [
        f"{p.name} imports {name}" for p in kernel for name in _imports(p)
        if name.split(".")[0] in {"flows", "nodes"}
    ]
    assert problems == []


def test_top_level_layout() -> None:
    for name in ("flows", "nodes", "chunking", "prompts", "supabase/migrations", "tests",
                 "prefect.yaml", "pyproject.toml", "README.md", ".ci/run"):
        assert (ROOT / name).exists(), name
