"""gpuplan: plan, prove and compile shared GPU Kubernetes fleets into GitOps manifests."""

__version__ = "0.1.0"
