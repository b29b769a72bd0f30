"""gpuplan: plan, prove and compile shared GPU Kubernetes fleets into GitOps manifests."""

from typing import Any

__version__: str  # bound on first use by __getattr__ below


def __getattr__(name: str) -> Any:
    """Look __version__ up on first use, in the installed distribution's metadata folder.

    The single source is the [project] version in pyproject.toml, which installing writes into
    the name of `gpuplan-<version>.dist-info` (the first one on sys.path, as importlib.metadata
    finds it). Reading that name costs a folder listing per sys.path entry; importing
    importlib.metadata to ask for it cost ~0.02 s of every `render --check`.
    """
    if name != "__version__":
        raise AttributeError(f"module 'gpuplan' has no attribute {name!r}")
    global __version__
    __version__ = _installed_version() or "0+unknown"  # a source tree run without installing it
    return __version__


def _installed_version() -> str | None:
    """Return the version in the name of the first gpuplan-*.dist-info folder on sys.path."""
    import os
    import sys

    for entry in sys.path:
        try:
            names = sorted(os.listdir(entry or "."))
        except OSError:
            continue
        for found in names:
            if found.startswith("gpuplan-") and found.endswith(".dist-info"):
                return found[len("gpuplan-") : -len(".dist-info")]
    return None
