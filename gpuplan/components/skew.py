"""Kubernetes' own upgrade rule: the control plane moves one minor version at a time.

kube-apiserver 1.N needs every instance at 1.N-1 first, and a kubelet may be up to three minors
older than kube-apiserver, never newer (kubernetes/website@release-1.35:
content/en/releases/version-skew-policy.md, "Supported version skew" and "Supported component
upgrade order"). `gpuplan diff` plans a cluster's bump by it, `check --base` refuses a skip.
"""

from __future__ import annotations

from gpuplan.components.upgrades import RequiredStop

SKEW = "kubernetes/website@release-1.35:content/en/releases/version-skew-policy.md"
WHY = "kube-apiserver moves one minor at a time (every instance at the previous minor first)"


def minor(version: str) -> tuple[int, int]:
    """Return (major, minor) of a Kubernetes version such as "1.33"."""
    major, _, rest = version.partition(".")
    return int(major), int(rest.split(".")[0])


def kubernetes_stops(old: str, new: str) -> list[RequiredStop]:
    """Return the minors a Kubernetes bump from `old` to `new` must stop at, oldest first."""
    (major, low), (same, high) = minor(old), minor(new)
    if major != same:
        return []
    return [RequiredStop("kubernetes", f"{major}.{m}", WHY, SKEW) for m in range(low + 1, high)]
