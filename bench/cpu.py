"""The machine a figure was measured on: CPU model, the SIMD flags that change kernels, load.

Every bench prints this line beside its figures, because the machines here differ (AVX2-only
and AVX-512/VNNI both occur) and a figure means little without the CPU it ran on.
"""

from __future__ import annotations

import os
import platform
from pathlib import Path

FLAGS = ("avx2", "fma", "avx512f", "avx512bw", "avx512_vnni", "avx_vnni", "avx512_bf16", "amx_tile")


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def cpu_flags() -> list[str]:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("flags"):
                present = set(line.split(":", 1)[1].split())
                return [flag for flag in FLAGS if flag in present]
    except OSError:
        pass
    return []


def describe_cpu() -> str:
    """One line: model, cores, the flags that matter, the load average when the bench started."""
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    flags = " ".join(cpu_flags()) or "none of " + ",".join(FLAGS)
    return f"CPU: {cpu_model()} · {os.cpu_count()} cores · {flags} · load {load:.2f} at start"
