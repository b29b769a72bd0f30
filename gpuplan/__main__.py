"""`python -m gpuplan` and the `gpuplan` command."""

import signal
import sys

from gpuplan.exitcode import ExitCode  # an enum and nothing else: quick to import


def main() -> None:
    """Run the CLI."""
    # A signal while the CLI is still being imported: exit quietly with the code main() would give.
    signal.signal(signal.SIGINT, lambda *_: sys.exit(ExitCode.INTERRUPTED))
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(ExitCode.TERMINATED))

    from gpuplan.cli import main as cli_main

    cli_main()


if __name__ == "__main__":
    main()
