"""The machine a figure was measured on: CPU model, the SIMD flags that change kernels, load.

Every bench prints this line beside its figures, because the machines here differ (AVX2-only
and AVX-512/VNNI both occur) and a figure means little without the CPU it ran on.
"""

from __future__ import annotations

import os

from grove.core.cpu import FLAGS, cpu_flags, cpu_model

__all__ = ["FLAGS", "cpu_flags", "cpu_model", "describe_cpu"]


def describe_cpu() -> str:
    """One line: model, cores, the flags that matter, the load average when the bench started."""
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    flags = " ".join(cpu_flags()) or "none of " + ",".join(FLAGS)
    return f"CPU: {cpu_model()} · {os.cpu_count()} cores · {flags} · load {load:.2f} at start"
