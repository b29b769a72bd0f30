"""How a gpuplan process starts and ends (gpuplan.cli): the collector's thresholds, ^C and
SIGTERM, a bug's report, the exit, and where the repository is found."""

from __future__ import annotations

import atexit
import os
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import NoReturn, TypeVar

from gpuplan.exitcode import ExitCode

T = TypeVar("T")

# Python's default collector thresholds (700, 10, 10) make a fleet-scale render, which keeps
# about half a million containers alive and frees few cycles, walk all of them in about eight
# full collections: ~0.8 s of CPU at 18k objects for next to no garbage. Collecting the
# youngest generation every 100,000 allocations keeps gpuplan's own cycles in check.
GC_THRESHOLDS = (100_000, 50, 1000)


class Terminated(BaseException):
    """SIGTERM, raised where the process is (as ^C raises KeyboardInterrupt), so clean-up runs."""


def _on_sigterm(signum: int, frame: object) -> None:
    raise Terminated


def catch_signals() -> None:
    """Make ^C raise KeyboardInterrupt and SIGTERM raise Terminated from here on."""
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, _on_sigterm)


def stopping(code: ExitCode, word: str) -> NoReturn:
    """Exit quietly on a signal: a second ^C or SIGTERM now must not print a traceback."""
    for number in (signal.SIGINT, signal.SIGTERM):
        signal.signal(number, signal.SIG_IGN)
    sys.stderr.write(f"{word}\n")
    sys.exit(code)


def crashed() -> NoReturn:
    """Report the exception being handled as gpuplan's bug (exit 3), its traceback in a file."""
    import tempfile  # (only here: every command starts without them)
    import traceback

    handle, path = tempfile.mkstemp(prefix="gpuplan-crash-", suffix=".txt")
    with os.fdopen(handle, "w") as stream:
        traceback.print_exc(file=stream)
    sys.stderr.write(f"internal error: gpuplan has a bug; details were written to {path}\n")
    sys.exit(ExitCode.INTERNAL)


def guarded(run: Callable[[], T]) -> T:
    """Return run(); ^C exits 130, SIGTERM 143 and a bug 3 (with its report), as the CLI does."""
    catch_signals()
    try:
        return run()
    except KeyboardInterrupt:
        stopping(ExitCode.INTERRUPTED, "interrupted")
    except Terminated:
        stopping(ExitCode.TERMINATED, "terminated")
    except SystemExit:
        raise
    except Exception:  # noqa: BLE001 - a bug: say so, keep the details for the report
        crashed()


def code_of(exc: SystemExit) -> int:
    """Return the exit code a SystemExit stands for (a text is printed, and exits 1)."""
    if isinstance(exc.code, str):
        sys.stderr.write(f"{exc.code}\n")
    return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)


def leave(code: int) -> NoReturn:
    """Exit with `code` once exit handlers ran and stdout and stderr are flushed, skipping the
    interpreter's teardown: freeing a fleet-sized object graph object by object costs about half
    a second at 18k objects, and nothing is left to release by then (gpuplan's files are closed
    where they are written, and its worker processes are reaped before their results are used).
    A stdout that cannot be flushed (a closed pipe) exits 120, as Python's own exit does. Under
    a profiler or a tracer (cProfile, coverage), the normal exit runs: they report on the way out.
    """
    if sys.getprofile() is not None or sys.gettrace() is not None:
        sys.exit(code)
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            code = code or 120
    os._exit(code)


def find_root(value: Path | None) -> Path:
    """Return --root, or the nearest folder up from here that holds clusters/ (as git finds .git)."""
    if value is not None:
        return value
    here = Path.cwd()
    for folder in (here, *here.parents):
        if (folder / "clusters").is_dir():
            return Path(os.path.relpath(folder))
        if (folder / ".git").exists():  # never look past the repository we are in
            break
    return Path(".")
