import signal
import sys

# A signal while the CLI is still being imported: exit quietly with the code main() would give.
signal.signal(signal.SIGINT, lambda *_: sys.exit(130))
signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))

from gpuplan.cli import main  # noqa: E402 - after the handlers above

main()
