"""gpuplan: plan, prove and compile shared GPU Kubernetes fleets into GitOps manifests."""

from typing import Any

__version__: str  # bound on first use by __getattr__ below


def __getattr__(name: str) -> Any:
    """Look __version__ up on first use: importlib.metadata costs ~0.05 s of every start-up."""
    if name != "__version__":
        raise AttributeError(f"module 'gpuplan' has no attribute {name!r}")
    from importlib.metadata import PackageNotFoundError, version

    global __version__
    try:
        __version__ = version("gpuplan")  # single source: [project] version in pyproject.toml
    except PackageNotFoundError:  # a source tree run without installing it: no version to claim
        __version__ = "0+unknown"
    return __version__
