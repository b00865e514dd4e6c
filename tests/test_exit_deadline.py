"""`grove up` always ends after its orderly stop, even when a thread is stuck (grove/app/runtime.py)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent("""
    import threading
    from grove.app.runtime import leave_within

    stuck = threading.Event()
    threading.Thread(target=stuck.wait, name="stuck-on-a-socket").start()  # never set: blocks exit
    leave_within(0.5)
    print("stopped", flush=True)
""")


def test_a_stuck_thread_does_not_keep_the_process_alive_and_is_named() -> None:
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines()[0] == "stopped"
    assert "still stopping after 0 s (threads: stuck-on-a-socket); leaving now" in done.stdout
    assert "stuck.wait" in done.stderr or "in wait" in done.stderr  # its stack, to read the cause


def test_a_clean_exit_is_not_held_up_by_the_deadline() -> None:
    script = "from grove.app.runtime import leave_within\nleave_within(300)\nprint('stopped')"
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0 and done.stdout == "stopped\n", done.stdout + done.stderr
    assert "still stopping" not in done.stdout
