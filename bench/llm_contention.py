"""The local model beside other work: how its speed holds when something else keeps the cores busy.

Run: .venv/bin/python -m bench.llm_contention [--variants default,plain] [--runs 4] [--burners 2]

The local model's server is started as `grove up` starts it (the packaged Qwen2.5-Coder-1.5B, n_ctx
4096, 2 threads), once per variant, and asked `--runs` streamed questions over a ~900-token passage
(each prompt different, so the prefix cache reuses nothing), first on a quiet machine, then beside
`--burners` processes that spin a core each, then with the burners started at each answer's first
token (the machine turning busy while the model writes). Printed per variant and load: the median time to the
first token (reading the prompt) and the median generation speed, with every run's pair.

Variants: `default` — the server as `grove up` starts it (`grove.infra.llm_serve`: before each
evaluation the model takes the cores other processes leave); `plain` — llama-cpp-python's server as
it is (libgomp's own wait policy: its threads spin at every barrier before they sleep). On `plain`:
`passive` (OMP_WAIT_POLICY=PASSIVE: the threads sleep at once), `spinN` (GOMP_SPINCOUNT=N),
`lib:PATH` (another build of llama-cpp-python put first on the server's PYTHONPATH, e.g. one built
with -DGGML_OPENMP=OFF), and `threads:N` (N threads instead of the setting's).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import httpx

from bench.cpu import describe_cpu

PASSAGE = ("Малину поливают редко, но обильно: раз в неделю по ведру на куст. Голубику поливают часто, "
           "два-три раза в неделю, понемногу. Землянику поливают утром, не смачивая листья. ") * 12
_numbers = itertools.count()


def ask(url: str, max_tokens: int, at_first_token: Callable[[], None] = lambda: None) -> tuple[float, float]:
    """One streamed answer: seconds to its first token, and tokens per second after it."""
    system = f"Вопрос номер {next(_numbers) * 7919 % 100003}. Отвечай по-русски кратко."  # no prefix reuse
    body = {"messages": [{"role": "system", "content": system},
                         {"role": "user", "content": PASSAGE + "\nКак поливать малину? Ответь двумя предложениями."}],
            "max_tokens": max_tokens, "temperature": 0, "stream": True}
    began, first, pieces = time.monotonic(), 0.0, 0
    with httpx.stream("POST", f"{url}/chat/completions", json=body, timeout=1800) as response:
        for line in response.iter_lines():
            said = line.startswith("data: ") and line != "data: [DONE]"
            if said and json.loads(line[6:])["choices"][0]["delta"].get("content"):
                pieces += 1
                if not first:
                    first = time.monotonic()
                    at_first_token()
    end = time.monotonic()
    return first - began, (pieces - 1) / (end - first) if pieces > 1 else 0.0


def beside(load: int, midway: bool, url: str, max_tokens: int) -> tuple[float, float]:
    """One answer (`ask`) beside `load` busy loops, started before it or (`midway`) at its first token."""
    burners: list[subprocess.Popen[bytes]] = []

    def burn() -> None:
        burners.extend(subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(load))

    time.sleep(1.0)  # the server's reading of the last run's burners has passed: each run starts quiet
    try:
        if not midway:
            burn()
        return ask(url, max_tokens, burn if midway else lambda: None)
    finally:
        for burner in burners:
            burner.kill()


def environment(variant: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in {"OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "PYTHONPATH"}}
    if variant == "passive":
        env["OMP_WAIT_POLICY"] = "PASSIVE"
    elif variant.startswith("spin"):
        env["GOMP_SPINCOUNT"] = variant.removeprefix("spin")
    elif variant.startswith("lib:"):
        env["PYTHONPATH"] = variant.removeprefix("lib:")
    elif variant not in {"default", "plain"} and not variant.startswith("threads:"):
        raise SystemExit(f"unknown variant {variant!r}")
    return env


def threads(variant: str, default: int) -> int:
    return int(variant.removeprefix("threads:")) if variant.startswith("threads:") else default


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--variants", default="default,plain")
    parser.add_argument("--runs", type=int, default=4)
    parser.add_argument("--burners", type=int, default=2)
    parser.add_argument("--max-tokens", type=int, default=48)
    args = parser.parse_args()

    from grove.core.settings import get_settings
    from grove.infra.llm_server import LocalLLMServer
    from tests.support.ports import free_port

    settings = get_settings()
    model = Path(settings.model_path(settings.local_llm_model))
    print(describe_cpu())
    print("| variant | other load | first token (median) | tokens/s (median) | runs (first token s, tokens/s) |")
    print("|---|---|---|---|---|")
    logs = Path(tempfile.mkdtemp(prefix="grove-llm-contention-"))
    for variant in args.variants.split(","):
        saved = dict(os.environ)
        os.environ.clear()
        os.environ.update(environment(variant))  # the server child inherits it
        try:
            server = LocalLLMServer(model, free_port(), logs / f"{variant.replace('/', '_')}.log",
                                    context=settings.local_llm_context, threads=threads(variant, settings.cpu_threads),
                                    chat_format=settings.local_llm_chat_format,
                                    module="grove.infra.llm_serve" if variant == "default" else "llama_cpp.server")
            url = server.start()
        finally:
            os.environ.clear()
            os.environ.update(saved)
        try:
            ask(url, 8)  # warm: weights paged in
            for load, midway in ((0, False), (args.burners, False), (args.burners, True)):
                runs = [beside(load, midway, url, args.max_tokens) for _ in range(args.runs)]
                first = statistics.median(r[0] for r in runs)
                speed = statistics.median(r[1] for r in runs)
                pairs = ", ".join(f"{a:.1f}/{b:.1f}" for a, b in runs)
                other = (f"{load} burners" + (" from the first token" if midway else "")) if load else "quiet"
                print(f"| {variant} | {other} | {first:.2f} s | {speed:.1f} | {pairs} |", flush=True)
        finally:
            server.stop()


if __name__ == "__main__":
    main()
