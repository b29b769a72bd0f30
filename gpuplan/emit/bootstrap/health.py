"""The argocd-cm patch that makes sync waves wait for Applications: Argo CD's Application health check.

Argo CD ships no health assessment for argoproj.io/Application (removed in 1.8), so a wave of
Applications counts as done as soon as it is applied and the next wave syncs before its operators
run. argoproj/argo-cd v3.5.1 docs/operator-manual/health.md ("Argocd App") gives the resource
customization to restore it: the key and Lua script below, byte for byte, on the ConfigMap
argocd-cm labelled `app.kubernetes.io/part-of: argocd` (the only ConfigMaps Argo CD's settings
informer watches: util/settings/settings.go tweakConfigMap, so an edit takes effect without a restart).

gpuplan does not own argocd-cm (it holds SSO, repositories and the rest of Argo CD's settings), so
the file is a patch written beside the root, not an object the root syncs: merge it in
(`kubectl patch --type merge --patch-file`, or list it under `patches:` of the kustomization that
installs Argo CD). Like every object gpuplan writes (../shared/spec/output.md) it carries
`app.kubernetes.io/managed-by: gpuplan` and a sync wave (0, Argo CD's default: inert on an object
the root does not sync), beside upstream's labels.
"""

from __future__ import annotations

from typing import Any

from gpuplan.emit.meta import MANAGED_BY, SYNC_WAVE, Manifest, k8s
from gpuplan.plan.fleet import Fleet

FOLDER = "argocd/argocd-cm"
CONFIG_MAP = "argocd-cm"
KEY = "resource.customizations.health.argoproj.io_Application"
SCRIPT = """\
hs = {}
hs.status = "Progressing"
hs.message = ""
if obj.status ~= nil then
  if obj.status.health ~= nil then
    hs.status = obj.status.health.status
    if obj.status.health.message ~= nil then
      hs.message = obj.status.health.message
    end
  end
end
return hs
"""
LABELS = {"app.kubernetes.io/name": CONFIG_MAP, "app.kubernetes.io/part-of": "argocd"}


def patch(namespace: str) -> dict[str, Any]:
    """Return the argocd-cm fragment holding the Application health check."""
    obj = k8s("v1", "ConfigMap", CONFIG_MAP, namespace, data={KEY: SCRIPT})
    obj["metadata"]["labels"] = LABELS | MANAGED_BY
    obj["metadata"]["annotations"] = {SYNC_WAVE: "0"}
    return obj


def manifests(fleet: Fleet) -> list[Manifest]:
    """Return the patch for the Argo CD the root lives in (the first cluster's gitops.namespace)."""
    if not fleet.clusters:
        return []
    first = fleet.clusters[sorted(fleet.clusters)[0]]
    sources = tuple(sorted(c.located.source.path for c in fleet.clusters.values()))
    return [Manifest(f"{FOLDER}/{CONFIG_MAP}.yaml", patch(first.spec.gitops.namespace), sources)]
