"""`gpuplan render --check` answered from the render cache before click is imported.

CI and pre-commit hooks run this command more than any other, and on an unchanged fleet the
last render's record answers it (gpuplan.cache) in about a tenth of a second, of which importing
click and parsing with it would be a tenth. Only the plainest forms are answered here:
`render --check` with `--root`, `--out`, `--crds`, `--strict` and `--format`, each at most once
and each value one click would take as it is (an existing folder for --root and --crds, a
format it knows). Anything else, and every case the record cannot answer, goes on to the CLI
with nothing printed, which then does what it always does; the answers are the CLI's own
(gpuplan.commands.render.check_from_record), and a test holds them to it.
"""

from __future__ import annotations

import gc
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gpuplan.commands.common import Options

_VALUED = {"--root": "root", "--out": "out", "--crds": "crds", "--format": "fmt"}
_FLAGS = {"--check": "check", "--strict": "strict"}
_FORMATS = ("text", "github", "json")  # gpuplan.cli's --format choices


def answer(argv: list[str]) -> None:
    """Exit with the answer to `render --check` when argv asks exactly that and the render
    cache's record answers it; else return, having printed nothing."""
    options = parse(argv)
    if options is None:
        return
    from gpuplan import process

    gc.set_threshold(*process.GC_THRESHOLDS)
    try:
        code = process.guarded(lambda: _from_record(options))
    except SystemExit as exc:
        code = process.code_of(exc)
    if code is not None:
        process.leave(code)


def _from_record(options: Options) -> int | None:
    from gpuplan.commands.render import check_from_record

    return check_from_record(options)


def parse(argv: list[str]) -> Options | None:
    """Return the options of `render --check ...` in its plainest forms, else None."""
    if not argv or argv[0] != "render":
        return None
    given: dict[str, str | bool] = {}
    rest = iter(argv[1:])
    for token in rest:
        name, equals, value = token.partition("=")
        found: str | bool
        if name in _FLAGS and not equals:
            key, found = _FLAGS[name], True
        elif name in _VALUED:
            text = value if equals else next(rest, "")
            if not text or text.startswith("-"):
                return None  # a value click would read otherwise (or miss)
            key, found = _VALUED[name], text
        else:
            return None
        if key in given:
            return None
        given[key] = found
    return _options(given) if given.pop("check", False) else None


def _options(given: dict[str, str | bool]) -> Options | None:
    from gpuplan.commands.common import Options
    from gpuplan.process import find_root

    folders = {key: Path(str(given[key])) for key in ("root", "out", "crds") if key in given}
    if any(not folders[key].is_dir() for key in ("root", "crds") if key in folders):
        return None  # click words what is wrong with it
    if "out" in folders and folders["out"].exists() and not folders["out"].is_dir():
        return None
    fmt = str(given.get("fmt", "text"))
    if fmt not in _FORMATS:
        return None
    return Options(
        find_root(folders.get("root")),
        folders.get("out"),
        (),
        bool(given.get("strict", False)),
        fmt,
        folders.get("crds"),
    )
