"""Argo CD: the release gpuplan supports and its facts.

Read from argoproj/argo-cd at v3.5.1: manifests/crds/{application,appproject,applicationset}-crd.yaml
(argoproj.io/v1alpha1, the only version served). Argo CD itself is installed by the platform team
(manifests/install.yaml at the tag); gpuplan writes the Applications that sync each cluster's folder,
for the whole fleet at once (scope "fleet").
"""

from __future__ import annotations

from dataclasses import dataclass

from gpuplan.components.base import Component, Release

REPO = "argoproj/argo-cd"


@dataclass(frozen=True, kw_only=True)
class ArgoCdRelease(Release):
    """An Argo CD release: the Application apiVersion gpuplan emits."""

    application_api_version: str


RELEASES: tuple[ArgoCdRelease, ...] = (
    ArgoCdRelease(
        version="v3.5.1",
        sources=(
            f"{REPO}@v3.5.1:manifests/crds/application-crd.yaml",
            f"{REPO}@v3.5.1:manifests/install.yaml",
        ),
        chart=None,  # installed by the platform team, not by gpuplan
        crds="v3.5.1",
        application_api_version="argoproj.io/v1alpha1",
    ),
)

ARGO_CD = Component(
    name="argo-cd",
    field="argoCD",
    releases=RELEASES,
    emitter="gpuplan.emit.argocd:emit_fleet",
    checks=("gpuplan.check.bootstrap",),
    configured=False,
    scope="fleet",
)
