"""The house rules: the layers, each a package with one job, and imports that point one way."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SERVICE = ("grove", "nodes", "flows", "chunking", "prompts")

# Every package of the service and what it may import of the service (besides itself). Read
# bottom-up: the kernel and the store know nothing of nodes or flows; the users' tables sit
# under ingestion, retrieval and answering; the Telegram sender under all of them; flows compose
# nodes; the app on top starts everything. A new import across packages is a decision: make it
# here, or move the code.
LAYERS: dict[str, set[str]] = {
    "prompts": set(),
    "chunking": set(),
    "grove.core": {"prompts"},
    "grove.store": {"grove.core"},
    "grove.infra": {"grove.core"},
    "grove.channels": {"grove.core", "grove.store"},  # handed the turn to run, never the app
    "nodes.embedding": {"grove.core", "chunking"},
    "nodes.store": {"grove.core", "grove.store", "nodes.embedding"},
    "nodes.telegram": {"grove.core", "grove.store"},
    "nodes.ingestion": {"grove.core", "grove.store", "nodes.store", "nodes.embedding", "nodes.telegram",
                        "chunking", "prompts"},
    "nodes.retrieval": {"grove.core", "grove.store", "nodes.store", "nodes.embedding", "chunking", "prompts"},
    "nodes.answering": {"grove.core", "grove.store", "nodes.store", "nodes.embedding", "nodes.retrieval",
                        "nodes.telegram", "chunking", "prompts"},
}
LAYERS["flows"] = {name for name in LAYERS if name.startswith("nodes.")} | {"grove.core", "grove.store", "prompts",
                                                                              "chunking"}
LAYERS["grove.app"] = set(LAYERS) | {"grove.infra", "grove.channels"}


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def _layer(module: str) -> str | None:
    """The layer a dotted name belongs to (`grove.core.settings` → `grove.core`), None outside the service."""
    parts = module.split(".")
    if parts[0] not in SERVICE:
        return None
    if parts[0] in ("grove", "nodes"):
        return ".".join(parts[:2]) if len(parts) > 1 else parts[0]
    return parts[0]


def _modules(package: str) -> list[Path]:
    return sorted((ROOT / package.replace(".", "/")).rglob("*.py"))


def test_every_module_sits_in_a_layer() -> None:
    """No loose module at the top of grove/ or nodes/: each belongs to a package with one job."""
    loose = [str(p.relative_to(ROOT)) for top in ("grove", "nodes") for p in (ROOT / top).glob("*.py")
             if p.name != "__init__.py"]
    assert loose == []
    unknown = sorted({_layer(".".join(p.relative_to(ROOT).with_suffix("").parts)) or "?"
                      for top in ("grove", "nodes") for p in (ROOT / top).rglob("*.py")
                      if p.parent != ROOT / top} - set(LAYERS))
    assert unknown == []


def test_imports_point_one_way() -> None:
    problems = []
    for layer, allowed in LAYERS.items():
        for path in _modules(layer):
            for name in _imports(path):
                target = _layer(name)
                if target in (None, layer) or target in ("grove", "nodes"):
                    continue
                if target not in allowed:
                    problems.append(f"{path.relative_to(ROOT)} ({layer}) imports {name} ({target})")
    assert problems == []


def test_the_layers_form_no_cycle() -> None:
    seen: dict[str, int] = {}

    def visit(layer: str, path: tuple[str, ...]) -> None:
        assert layer not in path, " → ".join((*path, layer))
        if seen.get(layer):
            return
        for below in LAYERS.get(layer, set()):
            visit(below, (*path, layer))
        seen[layer] = 1

    for layer in LAYERS:
        visit(layer, ())


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


# A package whose refusal text lists what its registry found: `formats.base.unsupported` asks the
# package for that list when it raises (a function-level import), while the package imports base.
KNOWN_KNOTS = [{"nodes.ingestion.formats", "nodes.ingestion.formats.base"}]


def test_modules_form_no_circle() -> None:
    """No two modules import each other, not even inside a function (where a circle hides): the
    lower one is handed what it needs instead (`runs.record_with`, the reporter given by observe)."""
    paths = {_module_name(p): p for top in SERVICE for p in _modules(top)}
    graph = {name: {m for m in _imports(path) if m in paths and m != name} for name, path in paths.items()}
    circles: list[set[str]] = []
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []

    def strong(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = {stack.pop()}
            while v not in component:
                component.add(stack.pop())
            if len(component) > 1:
                circles.append(component)

    for name in graph:
        if name not in index:
            strong(name)
    assert [c for c in circles if c not in KNOWN_KNOTS] == []


# Process-global state, each place with why; a new one is a design change, made here on purpose.
GLOBAL_STATE = {
    "grove/app/engine.py": "the task worker process's one lane worker, set by its entry point",
    "grove/core/observe.py": "the thread pool that runs `.submit` tasks, made once per process",
    "grove/core/runs.py": "the run tracer: the current run, stage and deadline, the reporter and recorder",
    "grove/core/settings.py": "the settings, read from the environment once per process",
    "grove/core/shutdown.py": "the stop switch of the turn a thread runs",
    "grove/store/db.py": "the connection pool and the current unit of work",
    "nodes/embedding/embedder.py": "the embedding model, loaded once per process",
    "nodes/ingestion/transcribe.py": "the speech model, loaded once per process",
}


def _makes_context_var(node: ast.AST) -> bool:
    """`ContextVar(…)` or `contextvars.ContextVar(…)`."""
    if not isinstance(node, ast.Call):
        return False
    called = node.func
    return (isinstance(called, ast.Name) and called.id == "ContextVar") or \
        (isinstance(called, ast.Attribute) and called.attr == "ContextVar")


def _holds_global_state(path: Path) -> bool:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return any(isinstance(node, ast.Global) or _makes_context_var(node) for node in ast.walk(tree))


def test_process_global_state_lives_only_in_the_named_places() -> None:
    """A ContextVar or a `global` statement is state no parameter shows; the ones that stay are named
    above with why, and no other module adds one."""
    found = {str(p.relative_to(ROOT)) for top in SERVICE for p in _modules(top) if _holds_global_state(p)}
    assert found - set(GLOBAL_STATE) == set()
    assert set(GLOBAL_STATE) - found == set(), "a place no longer holds global state: drop it from the list"


# Nodes are handed the settings (or the values) they use by the flow that calls them; the ones that
# still read the process's settings themselves, each with why. A new one is a step back, made here on purpose.
NODES_READING_SETTINGS = {
    "nodes/answering/model_speed.py": "the local model's measured speed starts from the settings' guess, once",
    "nodes/answering/quote.py": "the configured quote selector, the default of every `select_quote`",
    "nodes/answering/token_budget.py": "the vocabulary the tokens are counted in: the model the settings name",
    "nodes/embedding/embedder.py": "the embedding model, loaded once per process from the settings",
    "nodes/embedding/embedding_runtime.py": "the embedding runtime chosen for this CPU, once per process",
    "nodes/ingestion/transcribe.py": "the speech model, loaded once per process from the settings",
}


def _reads_settings(path: Path) -> bool:
    return any(isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "get_settings"
               for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))))


def test_nodes_are_handed_their_settings() -> None:
    """The answering, retrieval and store nodes read no settings of their own: their flow hands them
    (`settings`, a value, or a client built from them). The nodes that still do are named above."""
    found = {str(p.relative_to(ROOT)) for p in _modules("nodes") if _reads_settings(p)}
    assert found - set(NODES_READING_SETTINGS) == set()
    assert set(NODES_READING_SETTINGS) - found == set(), "a node no longer reads the settings: drop it from the list"


def test_the_chat_flow_reads_as_a_turn() -> None:
    """flows/chat.py is the turn top to bottom; its drafts and prompts live in nodes/answering/."""
    assert len((ROOT / "flows" / "chat.py").read_text(encoding="utf-8").splitlines()) < 150


def test_build_tools_stand_outside_the_service() -> None:
    problems = [f"{p.relative_to(ROOT)} imports {name}" for p in _modules("tools") for name in _imports(p)
                if _layer(name) is not None]
    assert problems == []


def test_top_level_layout() -> None:
    for name in ("flows", "nodes", "chunking", "prompts", "supabase/migrations", "tests",
                 "pyproject.toml", "README.md", ".ci/run"):
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
    grove's settings change through `grove.core.settings.configure` and reach child processes through
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

    probe = "import sys, nodes.ingestion.chunk_document; print('av' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False"


# The places that send: a turn (the dispatcher), a deployment run by itself, a job's end.
SENDERS = {"grove/app/dispatch.py", "grove/app/serve.py", "grove/app/worker.py", "flows/ingest.py", "nodes/telegram/reply.py"}


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
    assert writers == ["nodes/telegram/reply.py"]


def _imported_names(path: Path, module: str) -> set[str]:
    """Names a module imports from `module`, at the top or inside a function."""
    return {alias.name for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
            if isinstance(node, ast.ImportFrom) and node.module == module for alias in node.names}


def test_a_bot_is_made_by_an_entry_point_and_handed_in() -> None:
    """Only `nodes.telegram.api` makes the Bot grove replies with, and only entry points open one
    (`LoopBot.open`, or `opened` around it) to hand to what they run; the receiving Application's
    Bot is made in `grove.channels.bot`."""
    makers = sorted(str(p.relative_to(ROOT)) for package in ("grove", "flows", "nodes") for p in (ROOT / package).rglob("*.py")
                    if _calls(p) & {"Bot", "TolerantBot"})
    assert makers == ["grove/channels/bot.py", "nodes/telegram/api.py"]
    openers = sorted(str(p.relative_to(ROOT)) for package in ("grove", "flows", "nodes") for p in (ROOT / package).rglob("*.py")
                     if "LoopBot.open" in _calls(p)
                     or {"opened", "sender_for"} & _imported_names(p, "nodes.telegram.reply"))
    assert openers == ["grove/app/engine.py", "grove/app/runtime.py", "grove/app/serve.py", "grove/app/worker.py",
                       "nodes/telegram/reply.py"]


DOCSTRING_LINES = 15


def test_module_docstrings_say_what_and_why_in_a_few_lines() -> None:
    """Figures go stale in prose: a module says what it is and why, and points to the bench that holds the
    figures (bench/README.md, one current table per bench)."""
    long = [f"{p.relative_to(ROOT)}: {len(doc.splitlines())} lines"
            for package in ("grove", "nodes", "flows", "chunking", "prompts") for p in _modules(package)
            if (doc := ast.get_docstring(ast.parse(p.read_text(encoding="utf-8")))) is not None
            and len(doc.splitlines()) > DOCSTRING_LINES]
    assert long == []
