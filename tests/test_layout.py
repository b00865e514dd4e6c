"""The house rules: top-level layout and one-way imports (flows → nodes → chunking/prompts)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# grove modules that belong to the kernel (importable by nodes) vs the app layer on top.
GROVE_APP = {"grove.cli", "grove.runtime", "grove.dispatch", "grove.console", "grove.serve", "grove.worker",
             "grove.ingest_cli", "grove.ask_cli"}
FORBIDDEN = {
    "tools": {"flows", "nodes", "grove", "chunking"},  # build tools stand outside the service
    "grove": {"tools"},
    "chunking": {"flows", "nodes", "grove"},
    "prompts": {"flows", "nodes", "grove", "chunking"},
    "nodes": {"flows", "tools", *GROVE_APP},
    "flows": {"tools", *GROVE_APP},
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


def _environment_writes(path: Path) -> list[str]:
    """Names written to `os.environ` in a module (assignments, setdefault, update); "?" when not literal."""
    written: list[str] = []

    def is_environ(node: ast.AST) -> bool:
        return isinstance(node, ast.Attribute) and node.attr == "environ" and \
            isinstance(node.value, ast.Name) and node.value.id == "os"

    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Assign | ast.AugAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if isinstance(target, ast.Subscript) and is_environ(target.value):
                    key = target.slice
                    written.append(key.value if isinstance(key, ast.Constant) else "?")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and is_environ(node.func.value) \
                and node.func.attr in {"setdefault", "update", "__setitem__"}:
            first = node.args[0] if node.args else None
            written.append(first.value if isinstance(first, ast.Constant) else "?")
    return written


def test_grove_is_configured_by_settings_handed_on_not_by_writing_the_environment() -> None:
    """Only other libraries' own switches (Prefect's, Hugging Face's) are set in the environment;
    grove's settings change through `grove.settings.configure` and reach child processes through
    `child_environment`."""
    problems = [
        f"{path.relative_to(ROOT)} writes os.environ[{name!r}]"
        for package in ("grove", "flows", "nodes", "chunking")
        for path in (ROOT / package).rglob("*.py")
        for name in _environment_writes(path)
        if not (name.startswith("PREFECT_") or name.startswith("HF_"))
    ]
    assert problems == []


def test_chunking_a_document_does_not_load_media_decoding() -> None:
    """PyAV is for voice and video; a PDF's chunks must not pay for importing it."""
    import subprocess
    import sys

    probe = "import sys, nodes.chunk_document; print('av' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False"


# The places that send: a turn (the dispatcher), a deployment run by itself, a job's end.
SENDERS = {"grove/dispatch.py", "grove/serve.py", "grove/worker.py", "flows/ingest.py", "nodes/telegram_reply.py"}


def _calls(path: Path) -> set[str]:
    """Names of what a module calls (`send_reply(…)`, `outbox.add(…)` → `send_reply`, `outbox.add`)."""
    called: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call):
            if isinstance(node.func, ast.Name):
                called.add(node.func.id)
            elif isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name):
                called.add(f"{node.func.value.id}.{node.func.attr}")
    return called


def test_replies_go_out_through_one_sender() -> None:
    """Handlers and flows return their replies; only a turn, a deployment's entry point and a job's
    end hand them to `send_reply`, and nothing but the sender writes to the outbox."""
    problems = [
        f"{path.relative_to(ROOT)} calls {name}"
        for package in ("grove", "flows", "nodes")
        for path in (ROOT / package).rglob("*.py")
        if str(path.relative_to(ROOT)) not in SENDERS
        for name in _calls(path) & {"send_reply", "send_replies", "send_now", "outbox.add"}
    ]
    assert problems == []
    writers = [str(p.relative_to(ROOT)) for package in ("grove", "flows", "nodes") for p in (ROOT / package).rglob("*.py")
               if "outbox.add" in _calls(p)]
    assert writers == ["nodes/telegram_reply.py"]
