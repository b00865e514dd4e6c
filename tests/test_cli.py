"""`grove ingest` and `grove ask` as a user runs them: own Postgres and Prefect, real models."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from tests.support.ports import free_port
from tests.support.documents import make_pdf
from tests.support.scripted_llm import ScriptedLLM, text, tool_call

pytestmark = [pytest.mark.models, pytest.mark.timeout(600)]


def grove(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "grove.app.cli", *args], env=env, capture_output=True,
                          text=True, timeout=500, check=False)


def test_ingest_then_ask_from_the_command_line() -> None:
    data = Path(tempfile.mkdtemp(prefix="grove-cli-"))
    data.chmod(0o755)
    pdf = make_pdf(["Жимолость зацветает первой из ягодных культур, уже в апреле.",
                    "Её ягоды созревают в конце мая, раньше клубники."], data / "жимолость.pdf")
    env = {k: v for k, v in os.environ.items() if k not in {"PREFECT_API_URL", "DATABASE_URL"}}
    env.update(GROVE_DATA_DIR=str(data), GROVE_PG_PORT=str(free_port()),
               GROVE_PREFECT_PORT=str(free_port()), COLUMNS="200")
    try:
        ingested = grove("ingest", str(pdf), "--user", "77", env=env)
        assert ingested.returncode == 0, ingested.stdout + ingested.stderr
        assert "indexed" in ingested.stdout and "жимолость.pdf" in ingested.stdout
        said = ingested.stdout + ingested.stderr  # what the user sees: no library noise
        assert "Loading weights" not in said and "without a flow run id" not in said, said

        missing = grove("ingest", str(data / "нет-такого.pdf"), env=env)
        assert missing.returncode != 0 and "no such file" in missing.stderr

        with ScriptedLLM([tool_call({"query": "когда цветёт жимолость"}),
                          text("Жимолость цветёт в апреле [1].")]) as llm:
            env.update(GROVE_LLM_API_KEY="k", GROVE_LLM_BASE_URL=llm.base_url)
            asked = grove("ask", "Когда цветёт жимолость по моему файлу?", "--user", "77", "--verbose",
                          env=env)
        assert asked.returncode == 0, asked.stdout + asked.stderr
        assert "n_ctx_seq" not in asked.stdout + asked.stderr  # llama.cpp's vocabulary-load warning
        assert "Жимолость цветёт в апреле" in asked.stdout
        assert "Информация взята из:" in asked.stdout and "жимолость.pdf" in asked.stdout
        assert "rag-db-query" in asked.stdout  # --verbose shows the search and its fragments
        assert "зацветает первой" in asked.stdout
    finally:
        stop = grove("db", "stop", env=env)
        assert stop.returncode == 0, stop.stderr


@pytest.mark.parametrize(("setting", "value", "said_wrong", "a_choice"), [
    ("GROVE_RERANKER", "bm25fusion", "unknown reranker 'bm25fusion'", "bm25-fusion"),
    ("GROVE_QUOTE_SELECTOR", "meanin", "unknown quote selector 'meanin'", "meaning"),
])
def test_a_command_with_a_misspelt_plugin_stops_at_once_with_the_choices(setting: str, value: str, said_wrong: str,
                                                                         a_choice: str) -> None:
    data = Path(tempfile.mkdtemp(prefix="grove-cli-rr-"))
    env = {k: v for k, v in os.environ.items() if k not in {"PREFECT_API_URL", "DATABASE_URL"}}
    env.update(GROVE_DATA_DIR=str(data), GROVE_PG_PORT=str(free_port()), GROVE_PREFECT_PORT=str(free_port()),
               **{setting: value})
    for command in (["up"], ["ask", "Когда цветёт жимолость?"], ["work"], ["serve"]):
        run = grove(*command, env=env)
        said = run.stdout + run.stderr
        assert run.returncode == 2, (command, said)
        assert said_wrong in said and a_choice in said and setting in said, command
        assert "Postgres" not in said and "Traceback" not in said, command  # nothing was started
