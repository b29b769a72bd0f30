"""Kubernetes name and label patterns, in a module that imports nothing heavy.

gpuplan.model.common re-exports them; `gpuplan validate` imports them from here so it starts without
pydantic. Source: kubernetes/apimachinery pkg/util/validation/validation.go (the same patterns the
API server applies).
"""

from __future__ import annotations

import re

DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
LABEL_NAME = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)$")
DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")

# The label each cloud puts on a node with its node group (../shared/facts/upstream-components.md,
# "NFD's system.name/nodename feature"): what a static pool's nodeGroup selects by.
NODE_GROUP_LABELS = {
    "aws": "eks.amazonaws.com/nodegroup",
    "azure": "kubernetes.azure.com/agentpool",
    "gcp": "cloud.google.com/gke-nodepool",
}
