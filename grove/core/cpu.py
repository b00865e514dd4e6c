"""The CPU grove runs on: its model name and the SIMD flags that change ONNX Runtime's kernels.

The int8 embedding export is checked per CPU kind (`nodes/embedding/int8_verdict.py`): on a CPU
without VNNI, ONNX Runtime's u8·s8 kernels add pairs of products in saturating int16 and the
vectors drift. The benches print the same line beside their figures (`bench/cpu.py`).
"""

from __future__ import annotations

import platform
from pathlib import Path

__all__ = ["FLAGS", "cpu_flags", "cpu_kind", "cpu_model"]

FLAGS = ("avx2", "fma", "avx512f", "avx512bw", "avx512_vnni", "avx_vnni", "avx512_bf16", "amx_tile")
"""The flags that decide which kernels ONNX Runtime and PyTorch pick."""


def _cpuinfo(field: str) -> str | None:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith(field):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


def cpu_model() -> str:
    return _cpuinfo("model name") or platform.processor() or platform.machine()


def cpu_flags() -> list[str]:
    """Which of :data:`FLAGS` this CPU has, in that order."""
    present = set((_cpuinfo("flags") or "").split())
    return [flag for flag in FLAGS if flag in present]


def cpu_kind(flags: list[str] | None = None) -> str:
    """``AMD EPYC (avx2 fma, no vnni)``: the model and the flags that matter for int8."""
    flags = cpu_flags() if flags is None else flags
    vnni = "" if {"avx512_vnni", "avx_vnni"} & set(flags) else ", no vnni"
    return f"{cpu_model()} ({' '.join(flags) or 'no avx2'}{vnni})"
