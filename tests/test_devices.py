"""The GPU path as settings: what the local LLM server is told and what `grove up` announces.

No GPU exists here, so these tests cover the selection logic and the commands, not a GPU run.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from typing import ClassVar

from grove.infra import llm_server
from grove.app import runtime
from grove.core.settings import Settings


class _Child:
    """Stands in for the server process: records the command instead of running it."""

    commands: ClassVar[list[list[str]]] = []

    def __init__(self, name: str, argv: list[str], **_: object) -> None:
        _Child.commands.append(argv)

    def start(self) -> None:
        pass

    def wait_until(self, ready: object, timeout: float) -> None:
        pass


@pytest.mark.parametrize(("layers", "device"), [(0, "CPU, 2 threads"), (-1, "GPU, all layers offloaded"),
                                                 (20, "GPU, 20 layers offloaded")])
def test_the_local_llm_is_told_its_gpu_layers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                              layers: int, device: str) -> None:
    model = tmp_path / "model.gguf"
    model.write_bytes(b"GGUF")
    monkeypatch.setattr(llm_server, "ChildProcess", _Child)
    _Child.commands.clear()
    server = llm_server.LocalLLMServer(model_path=model, port=1, log_file=tmp_path / "log", gpu_layers=layers)
    server.start()
    argv = _Child.commands[0]
    assert argv[argv.index("--n_gpu_layers") + 1] == str(layers)
    assert server.device == device


@pytest.mark.parametrize("chat_format", [None, "chatml-function-calling"])
def test_the_local_llm_is_told_its_chat_template(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                               chat_format: str | None) -> None:
    model = tmp_path / "model.gguf"
    model.write_bytes(b"GGUF")
    monkeypatch.setattr(llm_server, "ChildProcess", _Child)
    _Child.commands.clear()
    given = {"chat_format": chat_format} if chat_format else {}
    llm_server.LocalLLMServer(model_path=model, port=1, log_file=tmp_path / "log", **given).start()
    argv = _Child.commands[0]
    assert argv[argv.index("--chat_format") + 1] == (chat_format or "chatml")  # unescaped by default


@pytest.mark.parametrize(("draft", "expected"), [("", None), ("prompt-lookup-decoding", ["prompt-lookup-decoding", "7"])])
def test_the_local_llm_is_told_its_draft_decoding(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                  draft: str, expected: list[str] | None) -> None:
    model = tmp_path / "model.gguf"
    model.write_bytes(b"GGUF")
    monkeypatch.setattr(llm_server, "ChildProcess", _Child)
    _Child.commands.clear()
    llm_server.LocalLLMServer(model_path=model, port=1, log_file=tmp_path / "log", draft=draft, draft_tokens=7).start()
    argv = _Child.commands[0]
    if expected is None:
        assert "--draft_model" not in argv
    else:
        at = argv.index("--draft_model")
        assert [argv[at + 1], argv[argv.index("--draft_model_num_pred_tokens") + 1]] == expected


def test_up_announces_the_embedding_runtime_and_device(capsys: pytest.CaptureFixture[str]) -> None:
    runtime.announce_embeddings(Settings(embedding_runtime="onnx-int8", embedding_device="auto"))
    assert "via onnx-int8 on cpu" in capsys.readouterr().out


def test_up_says_onnx_auto_checks_int8_on_first_use_before_a_verdict(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    settings = Settings(embedding_runtime="onnx-auto", embedding_device="cpu", models_folder=tmp_path,
                        data_dir=tmp_path / "data")
    runtime.announce_embeddings(settings)
    assert "via onnx-auto (int8 checked against fp32 on this CPU at first use) on cpu" in capsys.readouterr().out


def test_up_refuses_a_gpu_it_cannot_see(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        runtime.announce_embeddings(Settings(embedding_runtime="torch", embedding_device="cuda"))
    assert "no CUDA device" in capsys.readouterr().out
