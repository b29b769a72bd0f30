"""The exit codes of every command, declared once (../shared/spec/cli.md, "Exit codes")."""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    """What a gpuplan process tells its caller."""

    OK = 0
    FAILED = (
        1  # the input or the manifests have errors; or, with --check / --exit-code, differences
    )
    USAGE = 2
    INTERNAL = 3  # a bug in gpuplan: the traceback went to a file
    INTERRUPTED = 130  # 128 + SIGINT, as shells report it
    TERMINATED = 143  # 128 + SIGTERM


_MEANINGS = {
    ExitCode.OK: "success",
    ExitCode.FAILED: "errors in the input or the manifests; with --check, a stale output; with "
    "--exit-code or --fail-on, differences or the findings named",
    ExitCode.USAGE: "a usage error: an unknown flag, format or revision",
    ExitCode.INTERNAL: "an internal error (a bug in gpuplan): the traceback is written to a file "
    "named in the message",
    ExitCode.INTERRUPTED: "interrupted (^C)",
    ExitCode.TERMINATED: "terminated (SIGTERM)",
}


def meaning(code: ExitCode) -> str:
    """Return what an exit code tells the caller (the docs' command reference lists them)."""
    return _MEANINGS[code]
