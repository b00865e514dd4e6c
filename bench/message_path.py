"""The message path under load: grove as it runs (`grove up`) against a Bot API stand-in and a stub LLM.

Run: `.venv/bin/python -m bench.message_path [--users 50] [--questions 10] [--skip-contention]
[--dispatch inline,prefect] [--prefect-db postgres,sqlite]`

What it starts (and stops): an embedded Postgres, the Bot API stand-in and a stub
OpenAI-compatible LLM (0.05 s per answer) in this process, then `grove up` as a child with
a bot token, so the bot, the worker, the served flows and the Prefect server run as in
production (the LLM is the stub, so no local model is started).

What it measures, side by side in one run:
  1. **burst**: `--users` users each send `--questions` questions at once (interleaved, as
     a burst arrives): answers/s (all answers / time from the first question to the last
     answer), latency p50/p95/max (question sent → answer received by the stand-in), lost,
     users whose answers came out of order, CPU-seconds per update per process (grove's
     bot, Prefect server, Postgres, worker, served flows; the stand-in + stub in this process
     separately) and how far Prefect's record trails the answers (p50/p95/max over the runs);
     with `--dispatch prefect` the turns run on Prefect task workers: `grove up`'s own
     `grove work` and a second one started beside it, as on another machine;
  2. **one idle question** (p50 of 20, one user, nothing else running): the path's own latency;
  3. **contention**: 5 users ask base questions (retrieval through the real embedding model)
     while nothing else runs, then again while another user's 40-page PDF is indexed:
     medians and their ratio (target ≤ 2×), time to the upload's acknowledgement, progress
     edits, time to its confirmation;
  4. **echo**: the same burst against a bare 15-line python-telegram-bot echo bot.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, ClassVar

import psutil

from bench.support import quiet, tree

ROOT = Path(__file__).resolve().parent.parent

ECHO_BOT = """
import sys
from telegram import Update
from telegram.ext import ApplicationBuilder, MessageHandler, filters

async def echo(update: Update, context) -> None:
    await update.message.reply_text(update.message.text)

api = sys.argv[1]
app = ApplicationBuilder().token("123456:TEST-TOKEN").base_url(api + "/bot").base_file_url(api + "/file/bot") \\
    .concurrent_updates(True).build()
app.add_handler(MessageHandler(filters.TEXT, echo))
print("ready", flush=True)
app.run_polling(timeout=1, poll_interval=0)
"""


QUESTION = re.compile(r"вопрос (\d+) от \d+")


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


class TimedStandin:
    """The stand-in, recording when each bot message arrived (monotonic seconds)."""

    def __new__(cls):  # type: ignore[no-untyped-def]
        from tests.support.telegram_standin import TelegramStandin

        class Timed(TelegramStandin):
            def __init__(self) -> None:
                super().__init__()
                self.arrivals: dict[int, list[tuple[float, str]]] = {}
                self.edits = 0

            def _send_message(self, params: dict, uploads: dict) -> dict:  # type: ignore[override]
                wire = super()._send_message(params, uploads)
                self.arrivals.setdefault(int(params["chat_id"]), []).append((time.monotonic(), params["text"]))
                return wire

            def _edit_message_text(self, params: dict, uploads: dict) -> dict:  # type: ignore[override]
                wire = super()._edit_message_text(params, uploads)
                self.edits += 1
                self.arrivals.setdefault(int(params["chat_id"]), []).append(
                    (time.monotonic(), "EDIT " + params["text"]))
                return wire

        return Timed()


def stub_llm(delay: float = 0.05):  # type: ignore[no-untyped-def]
    """Answers after `delay`: a search first when offered the tool, then a one-line answer."""
    from tests.support.scripted_llm import Response, ScriptedLLM, _completion

    def answer(request: dict) -> Response:
        messages = request["messages"]
        question = next(m["content"] for m in reversed(messages) if m["role"] == "user")
        searched = any(m["role"] == "tool" for m in messages)
        if request.get("tools") and not searched and "в базе" in question:
            call = {"id": "call_0", "type": "function",
                    "function": {"name": "rag-db-query", "arguments": json.dumps({"query": question[:80]}, ensure_ascii=False)}}
            body = _completion({"role": "assistant", "content": None, "tool_calls": [call]}, "tool_calls")
        else:
            body = _completion({"role": "assistant", "content": f"Ответ: {question[-60:]}"}, "stop")
        return Response(body=body, delay=delay)

    return ScriptedLLM(default=answer)


class Processes:
    """CPU time of grove's processes, by role."""

    def __init__(self, up: psutil.Process, pg_data: Path, second: psutil.Process | None = None) -> None:
        self.up, self.pg_data, self.second = up, pg_data, second

    def roles(self) -> dict[str, list[psutil.Process]]:
        found: dict[str, list[psutil.Process]] = {"bot (grove up)": [self.up]}
        if self.second is not None:
            found["second worker"] = [self.second]
        for child in self.up.children(recursive=True):
            line = " ".join(child.cmdline())
            role = ("Prefect server" if "prefect" in line and "server" in line else
                    "worker" if "grove.app.cli work" in line else
                    "served flows" if "grove.app.cli serve" in line else "other")
            found.setdefault(role, []).append(child)
        postmaster = int((self.pg_data / "postmaster.pid").read_text().splitlines()[0])
        pg = psutil.Process(postmaster)
        found["Postgres"] = [pg, *pg.children(recursive=True)]
        return found

    def cpu(self) -> dict[str, float]:
        totals: dict[str, float] = {}
        for role, processes in self.roles().items():
            for process in processes:
                try:
                    times = process.cpu_times()
                    totals[role] = totals.get(role, 0.0) + times.user + times.system
                except psutil.Error:
                    pass
        return totals


def own_cpu() -> float:
    times = psutil.Process().cpu_times()
    return times.user + times.system


def set_modes(url: str, users: list[int], mode: str) -> None:
    import psycopg

    with psycopg.connect(url) as conn:
        conn.cursor().executemany("insert into user_state (user_id, chat_id, current_mode) values (%s, %s, %s)"
                         " on conflict (user_id) do update set current_mode = excluded.current_mode",
                         [(u, u, mode) for u in users])


def burst(standin: Any, users: list[int], questions: int, timeout: float) -> dict[str, Any]:
    """Everyone sends everything at once; returns the figures."""
    sent: dict[tuple[int, str], float] = {}
    start = time.monotonic()
    for i in range(questions):
        for uid in users:
            text = f"вопрос {i} от {uid}"
            sent[(uid, text)] = time.monotonic()
            standin.send_text(uid, text)
    expected = len(users) * questions
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = sum(len(standin.arrivals.get(u, [])) for u in users)
        if got >= expected:
            break
        time.sleep(0.05)
    latencies, out_of_order, answered = [], 0, 0
    last = start
    for uid in users:
        arrivals = standin.arrivals.get(uid, [])
        answered += len(arrivals)
        order = []
        for at, text in arrivals:
            found = QUESTION.search(text)  # the answer repeats its question, however it is framed
            question = found.group(0) if found else ""
            if (uid, question) in sent:
                latencies.append(at - sent[(uid, question)])
                order.append(int(found.group(1)))  # type: ignore[union-attr]
            last = max(last, at)
        if order != sorted(order) or len(order) < len(arrivals):
            out_of_order += 1
    elapsed = last - start
    return {"answered": answered, "lost": expected - answered, "out_of_order_users": out_of_order,
            "seconds": elapsed, "answers_per_s": answered / elapsed if elapsed else 0.0,
            "p50": percentile(latencies, 0.5) if latencies else float("nan"),
            "p95": percentile(latencies, 0.95) if latencies else float("nan"),
            "max": max(latencies) if latencies else float("nan")}


def ask_and_wait(standin: Any, uid: int, text: str, timeout: float = 300) -> float:
    before = len(standin.arrivals.get(uid, []))
    started = time.monotonic()
    standin.send_text(uid, text)
    while time.monotonic() - started < timeout:
        if len(standin.arrivals.get(uid, [])) > before:
            return time.monotonic() - started
        time.sleep(0.01)
    raise TimeoutError(f"no answer to {text!r} for user {uid}")


def base_questions(standin: Any, users: list[int], rounds: int) -> list[float]:
    """Each user asks `rounds` base questions one after another; users in parallel."""
    latencies: list[float] = []
    lock = threading.Lock()

    def user_loop(uid: int) -> None:
        for r in range(rounds):
            seconds = ask_and_wait(standin, uid, f"Проверь в базе: когда обрезать малину? ({r})")
            with lock:
                latencies.append(seconds)

    threads = [threading.Thread(target=user_loop, args=(u,)) for u in users]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return latencies


class GroveUp:
    def __init__(self, data: Path, env: dict[str, str]) -> None:
        self.process = subprocess.Popen([sys.executable, "-m", "grove.app.cli", "up"], cwd=ROOT, env=env,
                                        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.lines: list[str] = []
        self.stamps: list[float] = []
        threading.Thread(target=self._read, daemon=True).start()
        deadline = time.monotonic() + 300
        while not any("Telegram bot polling" in line for line in self.lines):
            if time.monotonic() > deadline or self.process.poll() is not None:
                raise RuntimeError("grove up did not start:\n" + "".join(self.lines[-40:]))
            time.sleep(0.2)
        self.settle()

    def settle(self, still: float = 2.0, limit: float = 300.0) -> None:
        """Wait until grove's processes have gone quiet: the warm-up (vocabulary, morphology,
        query embedder) loads in the background after "ready", and its seconds of CPU belong
        to the start, not to the updates of the burst that follows."""
        quiet(lambda: tree(self.process.pid), still=still, limit=limit, tolerance=0.05)

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.append(line)
            self.stamps.append(time.monotonic())

    def stop(self) -> float:
        started = time.monotonic()
        self.process.send_signal(2)
        try:
            self.process.wait(120)
        except subprocess.TimeoutExpired:
            self.process.kill()
        time.sleep(0.2)
        for at, line in zip(self.stamps, self.lines):
            if at >= started:
                print(f"  +{at - started:5.1f} s  {line.rstrip()}")
        return time.monotonic() - started


def run(users_n: int, questions: int, contention: bool, prefect_dbs: list[str], dispatches: list[str]) -> None:
    from bench.cpu import describe_cpu
    from bench.support import temporary_store

    report: list[str] = [describe_cpu()]
    cases = [(db, dispatch) for db in prefect_dbs for dispatch in dispatches]
    with temporary_store() as url, stub_llm() as llm:
        for number, (prefect_db, dispatch) in enumerate(cases):
            report += grove_case(url, llm.base_url, users_n, questions, prefect_db, dispatch,
                                 contention and number == 0, base=10_000_000 * (number + 1))
            print("\n".join(report), flush=True)
    report += echo_case(users_n, questions)
    print("\n".join(report))


def grove_case(url: str, llm_url: str, users_n: int, questions: int, prefect_db: str, dispatch: str,
               contention: bool, base: int) -> list[str]:
    from grove.core.settings import get_settings
    from tests.support.ports import free_port

    standin = TimedStandin()
    standin.start()
    data = Path(tempfile.mkdtemp(prefix="grove-bench-up-"))
    data.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k not in {"PREFECT_API_URL", "PREFECT_HOME"}}
    env.update(GROVE_DATA_DIR=str(data), GROVE_PREFECT_PORT=str(free_port()), DATABASE_URL=url,
               TELEGRAM_BOT_TOKEN="123456:TEST-TOKEN", GROVE_TELEGRAM_API_URL=standin.api_url,
               GROVE_TELEGRAM_POLL_TIMEOUT="1", GROVE_LLM_API_KEY="stub", GROVE_LLM_BASE_URL=llm_url,
               GROVE_LLM_MODEL="stub", GROVE_PLANNER="off", PYTHONUNBUFFERED="1",
               GROVE_PREFECT_DATABASE=prefect_db, GROVE_MODELS_DIR=str(get_settings().models_dir),
               GROVE_DISPATCH=dispatch)
    up = GroveUp(data, env)
    second = second_worker(up) if dispatch == "prefect" else None
    try:
        return _measure(up, second, url, env, standin, users_n, questions, prefect_db, contention, base)
    finally:
        if second is not None and second.poll() is None:
            second.terminate()
            second.wait(60)
        if up.process.poll() is None:
            up.process.send_signal(2)
            up.process.wait(120)
        standin.stop()
        shutil.rmtree(data, ignore_errors=True)


def second_worker(up: GroveUp) -> subprocess.Popen[str]:
    """One more `grove work`, as on a second machine: the environment `grove up` gives its own."""
    own = next(p for p in psutil.Process(up.process.pid).children(recursive=True)
               if "grove.app.cli work" in " ".join(p.cmdline()))
    process = subprocess.Popen([sys.executable, "-m", "grove.app.cli", "work"], cwd=ROOT, env=own.environ(),
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(10)  # subscribed to its lanes
    return process


def _measure(up: GroveUp, second: subprocess.Popen[str] | None, url: str, env: dict[str, str], standin: Any,
             users_n: int, questions: int, prefect_db: str, contention: bool, base: int) -> list[str]:
    report: list[str] = []
    procs = Processes(psutil.Process(up.process.pid), _pg_data_dir(url),
                      psutil.Process(second.pid) if second is not None else None)
    time.sleep(15)  # let the served flows and the worker finish starting

    users = [base + i for i in range(users_n)]
    set_modes(url, users, "chat")
    idle_user = base + 9_999
    set_modes(url, [idle_user], "chat")
    idle = [ask_and_wait(standin, idle_user, f"вопрос {i} от {idle_user}") for i in range(20)]

    api = f"http://127.0.0.1:{env['GROVE_PREFECT_PORT']}/api"
    updates = users_n * questions
    record = RecordWatch(api, updates)
    cpu0, own0 = procs.cpu(), own_cpu()
    figures = burst(standin, users, questions, timeout=1800)
    cpu1, own1 = procs.cpu(), own_cpu()
    dispatch = env.get("GROVE_DISPATCH", "inline")
    where = ("turns on Prefect task workers: `grove up`'s own and one more `grove work`"
             if dispatch == "prefect" else "turns inline in `grove up`'s worker")
    report.append(f"## grove ({where}), Prefect on {prefect_db}: burst of {users_n} users × {questions} "
                  "questions, stub LLM 0.05 s")
    report.append(f"- {figures['answers_per_s']:.1f} answers/s, p50 {figures['p50']:.2f} s, "
                  f"p95 {figures['p95']:.2f} s, max {figures['max']:.2f} s, lost {figures['lost']}, "
                  f"users out of order {figures['out_of_order_users']}")
    report.append(f"- one idle question (20, one at a time): p50 {statistics.median(idle) * 1000:.0f} ms")
    report.append("- CPU-seconds per update during the burst:")
    for role in sorted(cpu1):
        spent = cpu1[role] - cpu0.get(role, 0.0)
        report.append(f"    - {role}: {spent / updates * 1000:.1f} ms")
    report.append(f"    - stand-in + stub LLM (bench process): {(own1 - own0) / updates * 1000:.1f} ms")
    total = sum(cpu1[r] - cpu0.get(r, 0.0) for r in cpu1)
    report.append(f"    - grove in all: {total / updates * 1000:.1f} ms")
    lags = record.lags(answer_times(standin, users))
    cpu2 = procs.cpu()
    late = {role: cpu2[role] - cpu0.get(role, 0.0) for role in ("Prefect server", "Postgres")}
    report.append(f"- Prefect's record behind the answers: p50 {percentile(lags, 0.5):.1f} s, "
                  f"p95 {percentile(lags, 0.95):.1f} s, max {max(lags):.1f} s (the k-th run recorded vs the "
                  f"k-th answer); CPU for the burst with the catch-up: Prefect server "
                  f"{late['Prefect server'] / updates * 1000:.1f} ms, Postgres {late['Postgres'] / updates * 1000:.1f} ms "
                  "per update")
    if contention:
        report += contention_case(url, standin, base + 20_000)
    seconds = up.stop()
    report.append(f"- Ctrl-C of `grove up`: stopped in {seconds:.1f} s")
    return report


class RecordWatch:
    """How far Prefect's record trails the answers: from the burst's start it samples how many
    finished question runs Prefect holds, so the k-th recorded run can be set beside the k-th answer."""

    BODY: ClassVar[dict[str, Any]] = {"flow_runs": {"name": {"like_": "text-user"}, "state": {"type": {"any_": ["COMPLETED", "FAILED"]}}}}

    def __init__(self, api: str, expected: int, every: float = 0.5) -> None:
        self.api, self.expected, self.every = api, expected, every
        self.before = self._count()
        self.samples: list[tuple[float, int]] = []
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()

    def _count(self) -> int:
        import httpx

        return int(httpx.post(f"{self.api}/flow_runs/count", json=self.BODY, timeout=10).json())

    def _watch(self, timeout: float = 3600) -> None:
        import httpx

        started = time.monotonic()
        while time.monotonic() - started < timeout:
            try:
                recorded = self._count() - self.before
            except httpx.HTTPError:
                recorded = self.samples[-1][1] if self.samples else 0
            self.samples.append((time.monotonic(), recorded))
            if recorded >= self.expected:
                return
            time.sleep(self.every)

    def lags(self, answered: list[float]) -> list[float]:
        """Per answer (in time order): seconds until Prefect held as many runs as answers by then."""
        self._thread.join()
        lags = []
        for k, at in enumerate(sorted(answered), start=1):
            seen = next((t for t, n in self.samples if n >= k), float("nan"))
            lags.append(max(0.0, seen - at))
        return lags


def answer_times(standin: Any, users: list[int]) -> list[float]:
    return [at for uid in users for at, text in standin.arrivals.get(uid, []) if not text.startswith("EDIT")]


def _pg_data_dir(url: str) -> Path:
    import psycopg

    with psycopg.connect(url) as conn:
        return Path(conn.execute("show data_directory").fetchone()[0])


def contention_case(url: str, standin: Any, base: int) -> list[str]:
    from tests.support.documents import make_pdf

    chatters = [base + i for i in range(5)]
    uploader = base + 99
    set_modes(url, [*chatters, uploader], "chat")
    set_modes(url, [uploader], "documents")
    # Each chatter's base: one short note, indexed through the bot like any upload.
    set_modes(url, chatters, "documents")
    for uid in chatters:
        ask_and_wait(standin, uid, "Малину обрезают весной до первой здоровой почки, а ремонтантную "
                                   "малину осенью срезают под корень. Это заметка для базы.")
    _wait_jobs(url, chatters)
    set_modes(url, chatters, "chat")
    base_questions(standin, chatters, 1)  # warm-up: the query model loads
    idle = base_questions(standin, chatters, 4)

    pages = [(f"Страница {n}. " + "Малина любит солнечные места и рыхлую почву; подкормка весной азотом, "
              "летом калием и фосфором, осенью обрезка отплодоносивших побегов. " * 14) for n in range(1, 41)]
    pdf = Path(tempfile.mkdtemp()) / "book.pdf"
    make_pdf(pages, pdf)
    started = time.monotonic()
    standin.send_document(uploader, pdf.read_bytes(), "book.pdf", "application/pdf")
    ack = None
    while ack is None and time.monotonic() - started < 120:
        if standin.arrivals.get(uploader):
            ack = standin.arrivals[uploader][0][0] - started
        time.sleep(0.02)
    busy = base_questions(standin, chatters, 4)
    start_also = ask_and_wait(standin, uploader, "/start")  # the uploader is answered meanwhile
    done = _wait_jobs(url, [uploader], timeout=3600)
    edits = sum(1 for _, text in standin.arrivals.get(uploader, []) if text.startswith("EDIT"))
    return [
        "## contention: 5 users ask base questions while a 40-page PDF is indexed",
        f"- base question idle: p50 {statistics.median(idle) * 1000:.0f} ms (n={len(idle)})",
        f"- base question during indexing: p50 {statistics.median(busy) * 1000:.0f} ms (n={len(busy)}), "
        f"ratio {statistics.median(busy) / statistics.median(idle):.2f}×",
        f"- upload acknowledged after {ack:.2f} s; the uploader's /start meanwhile answered in {start_also:.2f} s",
        f"- indexing done after {done - started:.0f} s with {edits} progress edits",
    ]


def _wait_jobs(url: str, users: list[int], timeout: float = 600) -> float:
    import psycopg

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with psycopg.connect(url) as conn:
            open_jobs = conn.execute("select count(*) from jobs where user_id = any(%s) and status in"
                                     " ('queued', 'running')", (users,)).fetchone()[0]
            total = conn.execute("select count(*) from jobs where user_id = any(%s)", (users,)).fetchone()[0]
        if total and not open_jobs:
            return time.monotonic()
        time.sleep(0.5)
    raise TimeoutError("jobs did not finish")


def echo_case(users_n: int, questions: int) -> list[str]:
    standin = TimedStandin()
    standin.start()
    process = subprocess.Popen([sys.executable, "-c", ECHO_BOT, standin.api_url], stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True)
    assert process.stdout is not None and process.stdout.readline().strip() == "ready"
    time.sleep(2)
    users = [20_000_000 + i for i in range(users_n)]
    cpu0 = psutil.Process(process.pid).cpu_times()
    figures = burst(standin, users, questions, timeout=600)
    cpu1 = psutil.Process(process.pid).cpu_times()
    process.terminate()
    process.wait(30)
    standin.stop()
    spent = (cpu1.user + cpu1.system - cpu0.user - cpu0.system) / (users_n * questions)
    return ["## bare python-telegram-bot echo bot, same stand-in and burst",
            f"- {figures['answers_per_s']:.1f} answers/s, p50 {figures['p50']:.2f} s, p95 {figures['p95']:.2f} s, "
            f"lost {figures['lost']}, CPU {spent * 1000:.1f} ms per update"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--users", type=int, default=50)
    parser.add_argument("--questions", type=int, default=10)
    parser.add_argument("--skip-contention", action="store_true")
    parser.add_argument("--prefect-db", default="postgres",
                        help="where grove up's Prefect server keeps runs (postgres, sqlite); several are run in turn")
    parser.add_argument("--dispatch", default="inline,prefect",
                        help="GROVE_DISPATCH cases: inline (grove up's worker) and prefect (task workers: "
                             "grove up's own and a second `grove work`); several are run in turn")
    args = parser.parse_args()
    run(args.users, args.questions, not args.skip_contention, args.prefect_db.split(","), args.dispatch.split(","))


if __name__ == "__main__":
    main()
