"""Input models: one file per kind."""

from gpuplan.model.cluster import Cluster, NodePool
from gpuplan.model.tenant import Tenant

__all__ = ["Cluster", "NodePool", "Tenant"]
