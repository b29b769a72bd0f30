"""The hidden staging folders a render makes beside the output, and their clean-up after a kill.

A render builds the new tree in `.<output>.gpuplan-staging-PID` and swaps it with the output;
the two-rename fallback parks the old output in `.<output>.gpuplan-retired-PID` for an instant;
An earlier `render --watch` kept a copy of the output in `.<output>.gpuplan-spare-PID`.
A killed render leaves one of them behind: the next run removes it (or, for a retired folder
with no output beside it, puts it back). An entry with these names that is not a real folder is
never followed, moved or removed.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from gpuplan.writer import safefs

STAGING = ".gpuplan-staging-"
RETIRED = ".gpuplan-retired-"
SPARE = ".gpuplan-spare-"  # an older render --watch's copy of the output: removed like the others


def _ours(name: str, out_name: str) -> bool:
    return name.startswith(
        (f".{out_name}{STAGING}", f".{out_name}{RETIRED}", f".{out_name}{SPARE}")
    )


def clean_stale_at(parent_fd: int, out_name: str) -> None:
    """Remove this output's staging folders that a killed render left; put back a half-swapped output.

    Where the two-rename fallback was killed between its renames, the output is missing and the
    retired folder holds the old output: it is put back first.
    """
    names = sorted(n for n in os.listdir(parent_fd) if _ours(n, out_name))
    retired = [
        n for n in names if n.startswith(f".{out_name}{RETIRED}") and _is_dir_at(parent_fd, n)
    ]
    try:
        os.stat(out_name, dir_fd=parent_fd, follow_symlinks=False)
    except FileNotFoundError:
        if retired:
            os.rename(retired[-1], out_name, src_dir_fd=parent_fd, dst_dir_fd=parent_fd)
            names.remove(retired[-1])
    for name in names:
        pid = name.rsplit("-", 1)[-1]
        if pid.isdigit() and int(pid) != os.getpid() and _alive(int(pid)):
            continue  # another render is running beside us
        safefs.remove_tree(parent_fd, name)


def _is_dir_at(dir_fd: int, name: str) -> bool:
    """Tell whether an entry is a real folder (a link named like ours is never followed or moved)."""
    try:
        return stat.S_ISDIR(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
    except OSError:
        return False


def clean_stale(out: Path) -> None:
    """Remove staging folders that a killed render left beside the output folder."""
    try:
        parent_fd = os.open(out.parent, safefs.DIR_FLAGS & ~os.O_NOFOLLOW)
    except OSError:
        return
    try:
        clean_stale_at(parent_fd, out.name)
    except OSError:
        pass  # best effort: the next render tries again
    finally:
        os.close(parent_fd)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
