"""The local console's line reader: lines as typed, and Ctrl-C that always ends the wait."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading

from grove.core.settings import PROJECT_ROOT

_READ_ALL = textwrap.dedent("""
    from grove.channels.console import LineReader
    reader = LineReader()
    try:
        while True:
            print(repr(reader.read("> ")))
    except EOFError:
        print("EOF")
""")

# SIGINT taken by a thread that is not the main one (the kernel may hand a process's signal to
# any thread): the main thread, waiting for a line, must still be interrupted. The handler is set
# as `grove up` sets it (grove/app/runtime.py): a suite run as a shell's background job inherits
# SIGINT ignored, and Python keeps it so — the signal was then lost and the test hung.
_INTERRUPTED_ELSEWHERE = textwrap.dedent("""
    import signal, sys, threading
    from grove.channels.console import LineReader
    signal.signal(signal.SIGINT, signal.default_int_handler)
    reader = LineReader()
    main = threading.get_ident()

    def interrupt_from_here() -> None:
        while sys._current_frames()[main].f_code.co_name != "read":  # the main thread waits for a line
            threading.Event().wait(0.01)
        signal.pthread_kill(threading.get_ident(), signal.SIGINT)

    threading.Thread(target=interrupt_from_here).start()
    try:
        reader.read("> ")
    except KeyboardInterrupt:
        print("interrupted")
""")


def _run(script: str, stdin: str | None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", script], input=stdin, capture_output=True, text=True,
                          cwd=PROJECT_ROOT, timeout=60, check=False)


def test_lines_written_at_once_are_read_one_by_one_then_end_of_input() -> None:
    done = _run(_READ_ALL, "/start\nЧат\nбез перевода строки")
    assert done.returncode == 0, done.stderr
    said = [line.removeprefix("> ") for line in done.stdout.split("> ") if line]
    assert said == ["'/start'\n", "'Чат'\n", "'без перевода строки'\n", "EOF\n"]


def test_ctrl_c_taken_by_another_thread_ends_the_wait_for_a_line() -> None:
    with subprocess.Popen([sys.executable, "-c", _INTERRUPTED_ELSEWHERE], stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=PROJECT_ROOT) as child:
        assert child.stdout is not None and child.stderr is not None
        watchdog = threading.Timer(60, child.kill)  # stdin stays open: only the signal ends the wait
        watchdog.start()
        out, err = child.stdout.read(), child.stderr.read()
        watchdog.cancel()
    assert "interrupted" in out, ("the console kept waiting for a line after Ctrl-C", out, err)
