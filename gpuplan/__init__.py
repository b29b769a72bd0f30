"""gpuplan: plan, prove and compile shared GPU Kubernetes fleets into GitOps manifests."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("gpuplan")  # single source: [project] version in pyproject.toml
except PackageNotFoundError:  # a source tree run without installing it: no version to claim
    __version__ = "0+unknown"
