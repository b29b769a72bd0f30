"""Karpenter node class rules: settings for the provider the cluster runs on."""

from __future__ import annotations

from collections.abc import Iterator

from gpuplan.check.registry import check, clusters_with
from gpuplan.components.karpenter import NODE_CLASSES, KarpenterRelease
from gpuplan.diagnostics import Diagnostic
from gpuplan.plan.fleet import Fleet

SETTINGS = {"aws": "aws", "azure": "azure"}  # nodeClass key -> provider it renders for


@check
def check_node_class_settings(fleet: Fleet) -> Iterator[Diagnostic]:
    """Error on node class settings for another provider, or on a reference to another provider's kind."""
    for cluster in clusters_with(fleet, "karpenter"):
        karpenter = cluster.spec.components.karpenter
        assert karpenter is not None
        ref, provider, source = karpenter.node_class, cluster.spec.provider, cluster.located.source
        where = ("components", "karpenter", "nodeClass")
        for key in ("aws", "azure"):
            if getattr(ref, key) is not None and provider != key:
                yield source.diagnostic(
                    (*where, key),
                    f"{key} node class settings on a cluster whose provider is {provider}: remove them",
                    at_key=True,
                )
        expected = NODE_CLASSES.get(provider)
        rendered = getattr(ref, provider, None) if provider in SETTINGS else None
        if (
            rendered is not None
            and expected is not None
            and (ref.group, ref.kind) != (expected.group, expected.kind)
        ):
            yield source.diagnostic(
                (*where, "kind"),
                f"gpuplan renders a {expected.kind} ({expected.group}) from nodeClass.{provider}: name that kind and group",
            )


# nodeClass.aws setting -> the EC2NodeClass field it renders (absent from older provider releases).
AWS_FIELDS = {
    "capacityReservationIds": ("capacity_reservation_ids", "capacityReservationSelectorTerms"),
    "placementGroup": ("placement_group", "placementGroupSelector"),
    "efaNetworkCards": ("efa_network_cards", "networkInterfaces"),
}


@check
def check_node_class_fields(fleet: Fleet) -> Iterator[Diagnostic]:
    """Error on an EC2NodeClass setting the cluster's Karpenter release has no field for."""
    for cluster in clusters_with(fleet, "karpenter"):
        karpenter = cluster.spec.components.karpenter
        release = cluster.release("karpenter")
        settings = karpenter.node_class.aws if karpenter is not None else None
        if settings is None or not isinstance(release, KarpenterRelease) or release.line != "aws":
            continue
        for key, (attribute, field) in AWS_FIELDS.items():
            if getattr(settings, attribute) and field not in release.node_class_fields:
                yield cluster.located.source.diagnostic(
                    ("components", "karpenter", "nodeClass", "aws", key),
                    f"the EC2NodeClass of Karpenter {release.version} has no spec.{field}: upgrade Karpenter or remove {key}",
                    at_key=True,
                )
