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
