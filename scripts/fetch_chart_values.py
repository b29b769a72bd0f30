#!/usr/bin/env python3
"""Refresh the chart default values shipped in gpuplan/components/values/, one file per supported release.

    python scripts/fetch_chart_values.py                      # download from the upstream tags (network)
    python scripts/fetch_chart_values.py --from-git MIRRORS   # read the tags from local git clones/mirrors
    python scripts/fetch_chart_values.py --check              # offline: shipped files match SOURCES.json

The upgrade plan of `gpuplan diff` compares a chart's defaults between two releases, minus what gpuplan
sets in the Application's values. Each chart's values.yaml is read at the release's tag, parsed, and
written back as plain YAML (comments dropped, keys sorted: the diff reads values, never prose), as
gpuplan/components/values/<component>/<version>.yaml (Karpenter: <component>/<line>/<version>.yaml).
SOURCES.json names repository, tag, commit, path and the sha256 of each shipped file.

kube-prometheus-stack's values.yaml (over 200 kB) is cut to the keys whose defaults decide what runs
on a cluster gpuplan renders (the Prometheus Operator, Prometheus, kube-state-metrics, node-exporter,
Alertmanager, Grafana and the default rules); the diff reads nothing else of it.

With --from-git DIR, a repository owner/name is looked up as DIR/owner+name/repo, DIR/owner+name,
DIR/owner/name or DIR/name (bare or not).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from fetch_crds import FetchError, GitHubSource, GitSource  # the same readers of upstream tags

from gpuplan.components import REGISTRY
from gpuplan.components.values import COMPONENTS

DATA = Path(__file__).resolve().parent.parent / "gpuplan" / "components" / "values"
SOURCES = "SOURCES.json"
STACK_KEYS = (
    "alertmanager",
    "defaultRules",
    "grafana",
    "kube-state-metrics",
    "nodeExporter",
    "prometheus",
    "prometheus-node-exporter",
    "prometheusOperator",
)


@dataclass(frozen=True)
class Entry:
    """One shipped values file: a component release, the repository, tag and path it comes from."""

    component: str
    line: str
    version: str
    repo: str
    tag: str
    path: str
    keys: tuple[str, ...] = ()  # only these top-level keys are kept (all when empty)

    @property
    def target(self) -> str:
        """Return the shipped file, relative to the values folder."""
        line = f"{self.line}/" if self.line else ""
        return f"{self.component}/{line}{self.version}.yaml"


def _where(component: str, line: str, version: str) -> tuple[str, str, str, tuple[str, ...]]:
    """Return (repository, tag, path, kept keys) of one release's chart values."""
    if component == "gpu-operator":
        return "NVIDIA/gpu-operator", version, "deployments/gpu-operator/values.yaml", ()
    if component == "kueue":
        return "kubernetes-sigs/kueue", version, "charts/kueue/values.yaml", ()
    if component == "volcano":
        return "volcano-sh/volcano", version, "installer/helm/chart/volcano/values.yaml", ()
    if component == "karpenter":
        repo = "aws/karpenter-provider-aws" if line == "aws" else "Azure/karpenter-provider-azure"
        return repo, version, "charts/karpenter/values.yaml", ()
    if component == "kai-scheduler":
        return "kai-scheduler/KAI-Scheduler", version, "deployments/kai-scheduler/values.yaml", ()
    if component == "dra-driver":
        if version.startswith("v25."):
            return (
                "NVIDIA/k8s-dra-driver-gpu",
                version,
                "deployments/helm/nvidia-dra-driver-gpu/values.yaml",
                (),
            )
        return (
            "kubernetes-sigs/dra-driver-nvidia-gpu",
            version,
            "deployments/helm/dra-driver-nvidia-gpu/values.yaml",
            (),
        )
    if component == "monitoring":
        stack = REGISTRY["monitoring"].release(version).stack_chart.version  # type: ignore[attr-defined]
        return (
            "prometheus-community/helm-charts",
            f"kube-prometheus-stack-{stack}",
            "charts/kube-prometheus-stack/values.yaml",
            STACK_KEYS,
        )
    raise KeyError(component)


def entries() -> list[Entry]:
    """Return one entry per supported release of the components whose upgrades the diff plans."""
    out = []
    for name in COMPONENTS:
        for release in REGISTRY[name].releases:
            repo, tag, path, keys = _where(name, release.line, release.version)
            out.append(Entry(name, release.line, release.version, repo, tag, path, keys))
    return out


def read(source: GitSource | GitHubSource, repo: str, tag: str, path: str) -> bytes:
    """Return a file's bytes at a tag; a file that is not there is an error here."""
    found = source.read(repo, tag, path)
    if found is None:
        raise FetchError(f"{repo}@{tag}: no {path}")
    return found


def shipped_text(raw: bytes, keys: tuple[str, ...]) -> str:
    """Return the values as plain YAML: comments dropped, keys sorted, only `keys` when given."""
    values: Any = yaml.safe_load(raw) or {}
    if keys:
        values = {k: v for k, v in values.items() if k in keys}
    return yaml.safe_dump(values, sort_keys=True, allow_unicode=True, width=1000)


def fetch(source: GitSource | GitHubSource) -> int:
    """Write every values file and SOURCES.json."""
    records = {}
    for entry in entries():
        try:
            text = shipped_text(read(source, entry.repo, entry.tag, entry.path), entry.keys)
            commit = source.commit(entry.repo, entry.tag)
        except FetchError as exc:
            print(f"error: {entry.target}: {exc}", file=sys.stderr)
            return 1
        target = DATA / entry.target
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
        records[entry.target] = {
            "source": f"{entry.repo}@{entry.tag}:{entry.path}",
            "commit": commit,
            "keys": list(entry.keys),
            "sha256": hashlib.sha256(text.encode()).hexdigest(),
        }
        print(f"{entry.target}: {entry.repo}@{entry.tag}:{entry.path}")
    (DATA / SOURCES).write_text(json.dumps(records, indent=2, sort_keys=True) + "\n")
    return 0


def check() -> int:
    """Verify offline that every shipped file is listed and matches its recorded sha256."""
    records = json.loads((DATA / SOURCES).read_text())
    bad = 0
    for entry in entries():
        record = records.get(entry.target)
        path = DATA / entry.target
        if record is None or not path.is_file():
            print(f"missing: {entry.target}", file=sys.stderr)
            bad += 1
        elif hashlib.sha256(path.read_bytes()).hexdigest() != record["sha256"]:
            print(f"changed: {entry.target}", file=sys.stderr)
            bad += 1
    return 1 if bad else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--from-git", type=Path, help="folder of local clones or mirrors")
    parser.add_argument("--check", action="store_true", help="verify the shipped files offline")
    args = parser.parse_args()
    if args.check:
        return check()
    return fetch(GitSource(args.from_git) if args.from_git else GitHubSource())


if __name__ == "__main__":
    sys.exit(main())
