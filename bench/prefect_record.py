"""What it costs Prefect's server to record a turn, by the way it is written.

Run: `.venv/bin/python -m bench.prefect_record [--runs 200] [--ways reporter,flow1,...] [--services default,lean,quiet]`

A fresh embedded Postgres and a Prefect server on it (as `grove up` starts them); then, for
each way of writing, `--runs` finished turns of the shape a stub-LLM turn has (eight stages
of 1–100 ms, one markdown artifact, two log lines) are written, and once the server has gone
quiet again (its CPU still for 2 s), its CPU, Postgres' CPU and the writer's own CPU are
divided by the runs. The ways:

* ``reporter-old`` — `grove.core.prefect_reporter.PrefectReporter` as it was at f4a04ad
  (created Pending, then set final; an artifact of its own; stages ≥ 0.25 s as task runs, here none);
* ``reporter`` — the reporter as it is (created in its final state, one summary artifact);
* ``flow1`` — the flow run created directly in its final state (one call);
* ``…~plain`` — any way, its calls asking for uncompressed answers (the server's GZip
  middleware then skips them; the reporter asks so);
* ``flow2`` — created Running at its start time, then set to its final state at its end
  (two calls: Prefect's bookkeeping then shows the run's start, end and duration);
* ``flow2+art`` — and the artifact and the logs (four calls);
* ``flow2+art+stages-api`` — and every stage as a task run created in its final state (+8);
* ``flow2+art+stages-events`` — and every stage as one task-run event (Prefect's own
  client-side way of recording task runs; sent in batches over one websocket);

`--servers uvloop-httptools,asyncio-h11` serves Prefect's app with each event loop and HTTP
parser (grove's server names the first); `--rounds N` interleaves the combinations N times, so
a busy machine's drift falls on all of them alike. `--services lean` starts the server with the services grove does not use switched off
(automations' triggers and actions, the scheduler, late runs, the foreman, cancellation
cleanup, pause expirations, the repossessor, telemetry); `--services quiet` also the event
persister (the Events feed; runs, task runs, logs and artifacts stay).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import psutil

from bench.support import cpu_of, quiet, tree

STAGES = [("load-history", 0.002), ("route", 0.001), ("embed-query", 0.1), ("retrieve", 0.02),
          ("draft", 0.05), ("check-answer", 0.005), ("store-pair", 0.003), ("queue-replies", 0.002)]

LEAN = {f"PREFECT_SERVER_SERVICES_{name}_ENABLED": "false" for name in (
    "TRIGGERS", "SCHEDULER", "LATE_RUNS", "FOREMAN", "CANCELLATION_CLEANUP", "PAUSE_EXPIRATIONS",
    "REPOSSESSOR", "TELEMETRY")}
# And the event feed: every state change and every task-run event also stored as an event row.
QUIET = {**LEAN, "PREFECT_SERVER_SERVICES_EVENT_PERSISTER_ENABLED": "false"}
SERVICES = {"default": {}, "lean": LEAN, "quiet": QUIET}




class Turn:
    def __init__(self, index: int) -> None:
        self.id = uuid.uuid4()
        self.user = 1000 + index % 50
        self.name = f"text-user{self.user} · вопрос {index} про обрезку малины"
        self.ended = datetime.now(UTC)
        total = sum(seconds for _, seconds in STAGES)
        self.started = self.ended - timedelta(seconds=total + 0.01)
        at = self.started
        self.stages = []
        for name, seconds in STAGES:
            self.stages.append((uuid.uuid4(), name, at, at + timedelta(seconds=seconds)))
            at += timedelta(seconds=seconds)
        self.markdown = ("**Вопрос:** как обрезать малину осенью?\n\n**Ответ:** " + "текст ответа " * 30 +
                         "\n\n**Источники:** malina.pdf, с. 3")


def state(kind: str, at: datetime, message: str | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"type": kind, "name": kind.capitalize()}  # the API stamps states itself
    if message:
        body["message"] = message
    return body


class Writer:
    def __init__(self, api: str, gzip: bool = True) -> None:
        self.api = api
        # `~plain` ways ask for uncompressed answers: the server's GZip middleware then skips them.
        self.client = httpx.Client(base_url=api, timeout=30,
                                   headers={} if gzip else {"Accept-Encoding": "identity"})
        self.flow_id = self.client.post("/flows/", json={"name": "handle-update"}).json()["id"]
        self.calls = 0

    def post(self, path: str, body: Any) -> Any:
        self.calls += 1
        response = self.client.post(path, json=body)
        response.raise_for_status()
        return response.json() if response.content else None

    def flow_run(self, turn: Turn, two: bool) -> str:
        first = state("RUNNING", turn.started) if two else state("COMPLETED", turn.ended, "stages …")
        created = self.post("/flow_runs/", {"flow_id": self.flow_id, "name": turn.name, "state": first,
                                            "parameters": {"update_id": turn.user}, "tags": ["grove"],
                                            "idempotency_key": str(turn.id)})
        if two:
            self.post(f"/flow_runs/{created['id']}/set_state",
                      {"state": state("COMPLETED", turn.ended, "stages …"), "force": True})
        return str(created["id"])

    def artifact_and_logs(self, turn: Turn, flow_run_id: str) -> None:
        self.post("/artifacts/", {"type": "markdown", "data": turn.markdown, "description": "the turn",
                                  "flow_run_id": flow_run_id})
        self.post("/logs/", [{"name": "grove.run", "level": 20, "message": f"line {i}",
                              "timestamp": turn.ended.isoformat(), "flow_run_id": flow_run_id}
                             for i in range(2)])

    def stages_api(self, turn: Turn, flow_run_id: str) -> None:
        for index, (stage_id, name, _began, ended) in enumerate(turn.stages):
            self.post("/task_runs/", {"id": str(stage_id), "flow_run_id": flow_run_id, "task_key": name,
                                      "dynamic_key": str(index), "name": name,
                                      "state": state("COMPLETED", ended)})


def stage_events(turn: Turn, flow_run_id: str) -> list[Any]:
    from prefect.events import Event

    events = []
    for index, (stage_id, name, began, ended) in enumerate(turn.stages):
        seconds = (ended - began).total_seconds()
        events.append(Event(
            occurred=ended, event="prefect.task-run.Completed",
            resource={"prefect.resource.id": f"prefect.task-run.{stage_id}", "prefect.resource.name": name,
                      "prefect.state-name": "Completed", "prefect.state-type": "COMPLETED",
                      "prefect.orchestration": "client"},
            related=[{"prefect.resource.id": f"prefect.flow-run.{flow_run_id}", "prefect.resource.role": "flow-run"}],
            payload={"intended": {"from": "RUNNING", "to": "COMPLETED"},
                     "initial_state": {"type": "RUNNING", "name": "Running"},
                     "validated_state": {"type": "COMPLETED", "name": "Completed"},
                     "task_run": {"name": name, "task_key": name, "dynamic_key": str(index),
                                  "start_time": began.isoformat(), "end_time": ended.isoformat(),
                                  "total_run_time": seconds, "run_count": 1, "tags": ["grove"]}}))
    return events


async def send_events(api: str, events: list[Any]) -> None:
    from prefect.events.clients import PrefectEventsClient

    async with PrefectEventsClient(api_url=api) as client:
        for event in events:
            await client.emit(event)


def old_reporter_class(ref: str = "f4a04ad") -> Any:
    """The reporter as it was before the record was cut down (for side-by-side runs)."""
    import subprocess
    import types

    source = subprocess.run(["git", "show", f"{ref}:grove/core/prefect_reporter.py"], capture_output=True,
                            text=True, check=True, cwd=Path(__file__).resolve().parent.parent).stdout
    module = types.ModuleType("old_prefect_reporter")
    sys.modules[module.__name__] = module  # dataclasses look their module up
    exec(compile(source, "old_prefect_reporter.py", "exec"), module.__dict__)  # noqa: S102 - our own file
    return module.PrefectReporter


def reporter_way(api: str, turns: list[Turn], old: bool = False) -> int:
    from grove.core.prefect_reporter import PrefectReporter
    from grove.core.runs import Run, Stage

    reporter = (old_reporter_class() if old else PrefectReporter).start(api)
    for turn in turns:
        run = Run(flow_name="handle-update", name=turn.name, parameters={"update_id": turn.user},
                  started=turn.started)
        for stage_id, name, began, ended in turn.stages:
            run.stages.append(Stage(name=name, key=name, index=0, id=stage_id, started=began, ended=ended,
                                    state="COMPLETED"))
        if old:
            run.add_artifact(turn.markdown, "the turn")
        else:
            run.summary_markdown = turn.markdown
            run.add_summary()
        run.ended, run.state = turn.ended, "COMPLETED"
        reporter.touch(run)
    reporter.flush(600)
    reporter.stop(1)
    return reporter.calls if hasattr(reporter, "calls") else -1


def write(way: str, api: str, turns: list[Turn]) -> int:
    if way in ("reporter", "reporter-old"):
        return reporter_way(api, turns, old=way == "reporter-old")
    writer = Writer(api, gzip=not way.endswith("~plain"))
    events: list[Any] = []
    for turn in turns:
        flow_run_id = writer.flow_run(turn, two=not way.startswith("flow1"))
        if "+art" in way:
            writer.artifact_and_logs(turn, flow_run_id)
        if way.endswith("stages-api"):
            writer.stages_api(turn, flow_run_id)
        if way.endswith("stages-events"):
            events.extend(stage_events(turn, flow_run_id))
    if events:
        asyncio.run(send_events(api, events))
    return writer.calls


def measure(services: str, ways: list[str], runs: int, profile: str | None = None,
            server_kind: str = "uvloop-httptools") -> list[str]:
    from grove.infra.postgres_server import EmbeddedPostgres
    from grove.infra.prefect_server import PrefectServer
    from grove.app.runtime import prefect_database
    from grove.core.settings import configure
    from tests.support.ports import free_port

    work = Path(tempfile.mkdtemp(prefix="grove-prefect-record-"))
    work.chmod(0o755)
    pg = EmbeddedPostgres(root=work / "pg", port=free_port())
    url = pg.start()
    settings = configure(database_url=url, prefect_database="postgres")
    saved = dict(os.environ)
    os.environ.update(SERVICES[services])
    loop, http = server_kind.split("-")
    server = PrefectServer(home=work / "prefect", port=free_port(), database_url=prefect_database(settings, True),
                           loop=loop, http=http)
    api = server.start()
    os.environ.clear()
    os.environ.update(saved)
    os.environ["PREFECT_API_URL"] = api
    lines = [f"## services: {services} · uvicorn: {server_kind}",
             "| way | API calls / run | Prefect server CPU / run | Postgres CPU / run | writer CPU / run | "
             "written in | quiet after |", "|---|---|---|---|---|---|---|"]
    pg_pid = int((pg.data_dir / "postmaster.pid").read_text().splitlines()[0])
    assert server.child is not None and server.child.process is not None
    server_pid = server.child.process.pid

    def server_tree() -> list[psutil.Process]:
        return tree(server_pid)

    def pg_tree() -> list[psutil.Process]:
        return tree(pg_pid)

    def both() -> list[psutil.Process]:
        return server_tree() + pg_tree()
    try:
        write("flow2+art", api, [Turn(i) for i in range(5)])  # warm: the flow, the first queries
        quiet(both)
        for way in ways:
            turns = [Turn(i) for i in range(runs)]
            s0, p0 = cpu_of(server_tree()), cpu_of(pg_tree())
            spy = None
            if profile == way:  # where the server's time goes: py-spy's collapsed stacks
                import subprocess
                spy = subprocess.Popen(["py-spy", "record", "--format", "raw", "--rate", "50", "--subprocesses",
                                        "-o", f"/tmp/prefect-record-{services}-{way}.txt",
                                        "--pid", str(server_pid)],
                                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                time.sleep(1)
            me0 = psutil.Process().cpu_times()
            began = time.monotonic()
            calls = write(way, api, turns)
            written = time.monotonic() - began
            me1 = psutil.Process().cpu_times()
            settled = quiet(both)
            if spy is not None:
                spy.send_signal(2)
                spy.wait(30)
            s1, p1 = cpu_of(server_tree()), cpu_of(pg_tree())
            mine = (me1.user + me1.system - me0.user - me0.system) / runs
            lines.append(f"| {way} | {calls / runs if calls >= 0 else '—'} | {(s1 - s0) / runs * 1000:.1f} ms | "
                         f"{(p1 - p0) / runs * 1000:.1f} ms | {mine * 1000:.1f} ms | {written:.1f} s | {settled:.1f} s |")
            print(lines[-1], flush=True)
    finally:
        server.stop()
        pg.stop()
        shutil.rmtree(work, ignore_errors=True)
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--ways", default="reporter-old,reporter,flow1,flow2,flow2+art,flow2+art+stages-api,flow2+art+stages-events")
    parser.add_argument("--services", default="default,lean")
    parser.add_argument("--servers", default="uvloop-httptools",
                        help="uvicorn's event loop and HTTP parser, e.g. uvloop-httptools,asyncio-h11")
    parser.add_argument("--rounds", type=int, default=1, help="measure every combination this many times, interleaved")
    parser.add_argument("--profile", default=None, help="a way to record py-spy stacks of the server for")
    args = parser.parse_args()
    from bench.cpu import describe_cpu

    print(describe_cpu())
    for _ in range(args.rounds):
        for services in args.services.split(","):
            for server_kind in args.servers.split(","):
                print("\n".join(measure(services, args.ways.split(","), args.runs, args.profile, server_kind)),
                      flush=True)


if __name__ == "__main__":
    main()
