"""What the cloud's node groups must carry for gpuplan's output to work: printed, never written to output/.

gpuplan does not create node groups (they are IaC), and every file under output/<cluster>/ must be in
the cluster's kustomization (a file Argo CD would apply), so these requirements are a command's output
(`gpuplan requirements`), derived from the checked model: as cloud CLI commands and tags (text), or as
the Terraform attributes of each node group's resource (terraform).
"""

from __future__ import annotations

from gpuplan.plan.fleet import Fleet
from gpuplan.requirements import terraform, text

FORMATS = {"text": text.cluster_requirements, "terraform": terraform.cluster_requirements}


def requirements(fleet: Fleet, only: str | None = None, fmt: str = "text") -> str:
    """Return the fleet's node-group requirements in a format (empty when no cluster has any)."""
    render = FORMATS[fmt]
    lines = []
    for name in sorted(fleet.clusters):
        if only is None or name == only:
            lines += render(fleet.clusters[name])
    return "".join(line + "\n" for line in lines)
