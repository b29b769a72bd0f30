"""A synthetic, valid fleet of C clusters x P pools x T tenants (every tenant on every cluster)."""

from __future__ import annotations

from pathlib import Path

SHAPES = ("exclusive", "mig", "time-slicing")


def cluster_text(index: int, pools: int, tenants: int) -> str:
    """Return one cluster file; pools cycle through exclusive, MIG and time-sliced shapes."""
    lines = [
        f"name: c{index:02d}",
        'kubernetesVersion: "1.33"',
        "provider: aws",
        "gitops: {repoURL: https://git.example.com/fleet.git}",
        "components:",
        '  gpuOperator: {version: v26.7.0, driverVersion: "580.82.07"}',
        "  kueue: {version: v0.19.2}",
        "  volcano: {version: v1.15.1}",
        "  quotaAuthority: kueue",
        f"  karpenter: {{version: v1.14.1, nodeClass: {{group: karpenter.k8s.aws, kind: EC2NodeClass, name: gpu, aws: {{role: KarpenterNodeRole-c{index:02d}}}}}}}",
        "priorityClasses: [{name: high, value: 1000}, {name: low, value: 10}]",
        "cohorts: [{name: all}]",
        "nodePools:",
    ]
    nodes = max(1, -(-tenants // 8))  # enough nodes that every tenant gets a slice
    for p in range(pools):
        shape = SHAPES[p % len(SHAPES)]
        lines += [
            f"  - name: pool-{p:02d}",
            "    gpu: H100-SXM5-80GB",
            "    gpusPerNode: 8",
            "    cpu: 192",
            "    memory: 1900Gi",
        ]
        if p % 2 == 0:
            lines += [
                f"    nodes: {{min: 0, max: {nodes}}}",
                "    karpenter: {instanceTypes: [p5.48xlarge]}",
            ]
        else:
            lines += [
                f"    nodes: {{count: {nodes}}}",
                f'    hostnames: ["c{index:02d}-p{p:02d}-[0-9]+"]',
            ]
        if shape == "mig":
            lines.append("    sharing: {mig: {layout: {1g.10gb: 7}}}")
        elif shape == "time-slicing":
            lines.append("    sharing: {timeSlicing: {replicas: 4}}")
    return "\n".join(lines) + "\n"


def tenant_text(index: int, clusters: int, pools: int, variant: int = 0) -> str:
    """Return one tenant with an allocation on every cluster and a quota on every pool."""
    lines = [
        f"name: t{index:03d}",
        f"owners: [group:t{index:03d}-admins]",
        "priorityClass: low",
        "allocations:",
    ]
    for c in range(clusters):
        lines += [
            f"  - cluster: c{c:02d}",
            "    cohort: all",
            f"    weight: {1 + index % 5}",
            "    quotas:",
        ]
        for p in range(pools):
            shape = SHAPES[p % len(SHAPES)]
            if shape == "mig":
                lines.append(f"      - {{pool: pool-{p:02d}, mig: {{1g.10gb: {7 + variant}}}}}")
            elif shape == "time-slicing":
                lines.append(f"      - {{pool: pool-{p:02d}, gpus: {4 + variant}}}")
            else:
                lines.append(f"      - {{pool: pool-{p:02d}, gpus: {1 + variant}}}")
    return "\n".join(lines) + "\n"


def write_fleet(
    root: Path, clusters: int, pools: int, tenants: int, changed_tenant: int | None = None
) -> Path:
    """Write the fleet's input files under root (optionally one tenant with bigger quotas)."""
    (root / "clusters").mkdir(parents=True, exist_ok=True)
    (root / "tenants").mkdir(parents=True, exist_ok=True)
    for c in range(clusters):
        (root / "clusters" / f"c{c:02d}.yaml").write_text(cluster_text(c, pools, tenants + 1))
    for t in range(tenants):
        variant = 1 if t == changed_tenant else 0
        (root / "tenants" / f"t{t:03d}.yaml").write_text(tenant_text(t, clusters, pools, variant))
    return root
