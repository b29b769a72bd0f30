"""`python -m gpuplan` and the `gpuplan` command."""

import signal
import sys

from gpuplan.exitcode import ExitCode  # an enum and nothing else: quick to import


def main() -> None:
    """Answer a cached `render --check` at once (gpuplan.quick), else run the CLI."""
    # A signal while the CLI is still being imported: exit quietly with the code main() would give.
    signal.signal(signal.SIGINT, lambda *_: sys.exit(ExitCode.INTERRUPTED))
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(ExitCode.TERMINATED))

    from gpuplan.quick import answer

    answer(sys.argv[1:])  # returns only when it cannot answer, having printed nothing

    from gpuplan.cli import main as cli_main

    cli_main()


if __name__ == "__main__":
    main()
