"""A small static on-prem cluster for the tenant tests: no autoscaler, so only tenant rules speak."""

from __future__ import annotations

CLUSTER = """\
name: c1
kubernetesVersion: "1.33"
provider: onprem
gitops: {{repoURL: https://git.example.com/fleet.git}}
components:
{components}
priorityClasses: [{{name: research, value: 100}}]
cohorts: [{{name: shared}}]
nodePools:
  - name: train
    gpu: H100-SXM5-80GB
    gpusPerNode: 8
    cpu: 192
    memory: 1900Gi
    nodes: {{count: 4}}
    hostnames: ["train-[0-9]+"]
  - name: infer
    gpu: H100-SXM5-80GB
    gpusPerNode: 8
    cpu: 192
    memory: 1900Gi
    nodes: {{count: 2}}
    hostnames: ["infer-[0-9]+"]
    sharing: {sharing}
"""
COMPONENTS = """\
  gpuOperator: {version: v26.7.0, driverVersion: "580.82.07", migStrategy: mixed}
  kueue: {version: v0.19.2}"""
MIG = "{mig: {layout: {1g.10gb: 7}}}"


def _tenant(name: str, body: str) -> str:
    return f"name: {name}\nallocations:\n  - cluster: c1\n{body}"
