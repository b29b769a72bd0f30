#!/usr/bin/env python3
"""Refresh the upstream CRDs shipped in gpuplan/crds/, one set per supported component version.

    python scripts/fetch_crds.py                      # download from the upstream tags (network)
    python scripts/fetch_crds.py --from-git MIRRORS   # read the tags from local git clones/mirrors
    python scripts/fetch_crds.py --check              # offline: shipped files match SOURCES.json
    python scripts/fetch_crds.py --only kai-scheduler/v0.16.8 --from-git MIRRORS   # add or refresh one set

Each CRD is read at its release tag, cut down to what validation uses (schema `description`
annotations go; every other keyword, CEL rule, default and enum stays), written as compact JSON,
gzip-compressed, and recorded in gpuplan/crds/SOURCES.json with the repository, tag, commit,
upstream path, licence and the sha256 of the shipped bytes. Each repository's LICENSE (and NOTICE,
which Apache-2.0 section 4(d) asks redistributors to keep) is copied to gpuplan/crds/LICENSES/.

With --from-git DIR, a repository owner/name is looked up as DIR/owner+name/repo, DIR/owner+name,
DIR/owner/name or DIR/name (bare or not).
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import shutil
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

DATA = Path(__file__).resolve().parent.parent / "gpuplan" / "crds"
SOURCES = "SOURCES.json"
LARGE = 32_000  # bytes: licence files above this are shipped gzip-compressed
LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

KUEUE = "kubernetes-sigs/kueue"
GPU_OPERATOR = "NVIDIA/gpu-operator"
VOLCANO = "volcano-sh/volcano"
KARPENTER = "kubernetes-sigs/karpenter"
KARPENTER_AWS = "aws/karpenter-provider-aws"
KARPENTER_AZURE = "Azure/karpenter-provider-azure"
NFD = "kubernetes-sigs/node-feature-discovery"
NAD = "k8snetworkplumbingwg/network-attachment-definition-client"
ARGO_CD = "argoproj/argo-cd"
KAI = "kai-scheduler/KAI-Scheduler"
PROMETHEUS_OPERATOR = "prometheus-operator/prometheus-operator"


@dataclass(frozen=True)
class Entry:
    """One shipped CRD set: a component version, its repository tag and the upstream files."""

    component: str
    version: str
    repo: str
    tag: str
    paths: tuple[str, ...]  # "path" or "path#crd-name" to pick one CRD out of a multi-document file


def _each(component: str, repo: str, tags: str, paths: tuple[str, ...]) -> list[Entry]:
    """One Entry per tag (the version is the tag)."""
    return [Entry(component, tag, repo, tag, paths) for tag in tags.split()]


# Kueue: the kinds gpuplan emits or reads, and the admission-check and MultiKueue configuration
# users keep beside them (not Workload: Kueue creates those).
_KUEUE_PATHS = tuple(
    f"config/components/crd/bases/kueue.x-k8s.io_{name}.yaml"
    for name in (
        "admissionchecks",
        "clusterqueues",
        "cohorts",
        "localqueues",
        "multikueueclusters",
        "multikueueconfigs",
        "provisioningrequestconfigs",
        "resourceflavors",
        "topologies",
        "workloadpriorityclasses",
    )
)
_GPU_OPERATOR_PATHS = (
    "config/crd/bases/nvidia.com_clusterpolicies.yaml",
    "config/crd/bases/nvidia.com_nvidiadrivers.yaml",
)
_VOLCANO_PATHS = tuple(
    f"config/crd/volcano/bases/{name}.yaml"
    for name in (
        "batch.volcano.sh_jobs",
        "scheduling.volcano.sh_podgroups",
        "scheduling.volcano.sh_queues",
    )
)
_KARPENTER_PATHS = (
    "pkg/apis/crds/karpenter.sh_nodeclaims.yaml",
    "pkg/apis/crds/karpenter.sh_nodepools.yaml",
)

# Versions: the latest patch of each supported minor (plus the patches the example fleet uses),
# and for the GPU Operator every release of the last 18 months (tags dated 2025-06-05 to 2026-08-20).
TABLE: tuple[Entry, ...] = (
    *_each(
        "kueue",
        KUEUE,
        "v0.12.10 v0.13.10 v0.14.4 v0.14.8 v0.15.8 v0.16.9 v0.17.8 v0.18.6 v0.19.2",
        _KUEUE_PATHS,
    ),
    *_each(
        "gpu-operator",
        GPU_OPERATOR,
        "v25.3.1 v25.3.2 v25.3.3 v25.3.4 v25.10.0 v25.10.1 v26.3.0 v26.3.1 v26.3.2 v26.3.3 v26.7.0",
        _GPU_OPERATOR_PATHS,
    ),
    *_each("volcano", VOLCANO, "v1.11.2 v1.12.4 v1.13.3 v1.14.4 v1.15.1", _VOLCANO_PATHS),
    *_each(
        "karpenter",
        KARPENTER,
        "v1.0.9 v1.1.5 v1.2.5 v1.3.5 v1.4.2 v1.5.5 v1.6.4 v1.7.2 "
        "v1.8.3 v1.9.1 v1.10.1 v1.11.2 v1.12.1 v1.13.0 v1.14.1",
        _KARPENTER_PATHS,
    ),
    *_each(
        "karpenter-provider-aws",
        KARPENTER_AWS,
        "v1.0.14 v1.1.10 v1.2.8 v1.3.8 v1.4.4 v1.5.8 "
        "v1.6.8 v1.7.6 v1.8.8 v1.9.2 v1.10.2 v1.11.3 v1.12.2 v1.13.1 v1.14.1",
        ("pkg/apis/crds/karpenter.k8s.aws_ec2nodeclasses.yaml", *_KARPENTER_PATHS),
    ),
    *_each(
        "karpenter-provider-azure",
        KARPENTER_AZURE,
        "v1.6.2 v1.6.8 v1.7.2 v1.10.2 v1.12.2 v1.13.1 v1.14.2",
        ("pkg/apis/crds/karpenter.azure.com_aksnodeclasses.yaml", *_KARPENTER_PATHS),
    ),
    # The upstream file defines NodeFeature, NodeFeatureGroup and NodeFeatureRule; gpuplan emits rules.
    *_each(
        "nfd",
        NFD,
        "v0.18.3 v0.19.0",
        ("deployment/base/nfd-crds/nfd-api-crds.yaml#nodefeaturerules.nfd.k8s-sigs.io",),
    ),
    # The NAD client Multus v4.2.4 vendors (v1.7.6), and v1.7.7 for v4.3.0: the same v1 schema.
    *_each("multus", NAD, "v1.7.6 v1.7.7", ("artifacts/networks-crd.yaml",)),
    *_each(
        "argo-cd",
        ARGO_CD,
        "v3.5.1",
        tuple(
            f"manifests/crds/{name}-crd.yaml"
            for name in ("application", "appproject", "applicationset")
        ),
    ),
    *_each(
        "kai-scheduler",
        KAI,
        "v0.16.8 v0.17.0",
        (
            "deployments/kai-scheduler/crds/scheduling.run.ai_queues.yaml",
            "deployments/kai-scheduler/crds/kai.scheduler_topologies.yaml",
        ),
    ),
    # The monitoring component emits ServiceMonitors and PrometheusRules (PodMonitor kept for users).
    *_each(
        "prometheus-operator",
        PROMETHEUS_OPERATOR,
        "v0.92.1 v0.93.0",
        tuple(
            f"example/prometheus-operator-crd/monitoring.coreos.com_{name}.yaml"
            for name in ("podmonitors", "prometheusrules", "servicemonitors")
        ),
    ),
)


class FetchError(Exception):
    """An upstream file or tag could not be read."""


# --- reading upstream ------------------------------------------------------------------------


class GitSource:
    """Read files at tags from local git clones or mirrors."""

    def __init__(self, folder: Path):
        self.folder = folder

    def git_dir(self, repo: str) -> Path:
        """Return the git directory of owner/name under the folder."""
        owner, name = repo.split("/")
        for candidate in (
            self.folder / f"{owner}+{name}" / "repo",
            self.folder / f"{owner}+{name}",
            self.folder / owner / name,
            self.folder / name,
            self.folder / f"{name}.git",
        ):
            if (candidate / "HEAD").is_file() or (candidate / ".git").exists():
                return candidate
        raise FetchError(f"no git clone of {repo} under {self.folder}")

    def _git(self, repo: str, *args: str) -> bytes:
        done = subprocess.run(
            ["git", f"--git-dir={self._dot_git(repo)}", *args], capture_output=True
        )
        if done.returncode != 0:
            raise FetchError(f"{repo}: git {' '.join(args)}: {done.stderr.decode().strip()}")
        return done.stdout

    def _dot_git(self, repo: str) -> Path:
        found = self.git_dir(repo)
        return found / ".git" if (found / ".git").exists() else found

    def commit(self, repo: str, tag: str) -> str:
        """Return the commit a tag points at."""
        return self._git(repo, "rev-parse", f"refs/tags/{tag}^{{commit}}").decode().strip()

    def read(self, repo: str, tag: str, path: str) -> bytes | None:
        """Return a file's bytes at a tag, None when absent."""
        try:
            return self._git(repo, "show", f"refs/tags/{tag}:{path}")
        except FetchError:
            return None


class GitHubSource:
    """Read files at tags from GitHub (raw file URLs; the commit from `git ls-remote`)."""

    def commit(self, repo: str, tag: str) -> str:
        """Return the commit a tag points at (peeled, for annotated tags)."""
        done = subprocess.run(
            [
                "git",
                "ls-remote",
                f"https://github.com/{repo}",
                f"refs/tags/{tag}",
                f"refs/tags/{tag}^{{}}",
            ],
            capture_output=True,
            text=True,
        )
        refs = dict(reversed(line.split("\t")) for line in done.stdout.split("\n") if "\t" in line)
        commit = refs.get(f"refs/tags/{tag}^{{}}") or refs.get(f"refs/tags/{tag}")
        if done.returncode != 0 or not commit:
            raise FetchError(f"{repo}: no tag {tag}: {done.stderr.strip()}")
        return commit

    def read(self, repo: str, tag: str, path: str) -> bytes | None:
        """Return a file's bytes at a tag, None when absent."""
        url = f"https://raw.githubusercontent.com/{repo}/refs/tags/{tag}/{path}"
        try:
            with urllib.request.urlopen(url, timeout=60) as response:
                return bytes(response.read())
        except urllib.error.HTTPError as exc:
            if exc.code == 404:
                return None
            raise FetchError(f"{url}: {exc}") from exc
        except OSError as exc:
            raise FetchError(f"{url}: {exc}") from exc


# --- pruning ---------------------------------------------------------------------------------

_SCHEMA_MAPS = ("properties", "patternProperties", "definitions", "dependencies")
_SCHEMA_LISTS = ("allOf", "anyOf", "oneOf")
_SCHEMA_ONE = ("items", "additionalProperties", "additionalItems", "not")


def strip_descriptions(node: Any) -> Any:
    """Return a schema without `description` annotations; values (default, enum, CEL) untouched."""
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "description":
            continue
        if key in _SCHEMA_MAPS and isinstance(value, dict):
            out[key] = {name: strip_descriptions(sub) for name, sub in value.items()}
        elif key in _SCHEMA_LISTS and isinstance(value, list):
            out[key] = [strip_descriptions(sub) for sub in value]
        elif key in _SCHEMA_ONE:
            out[key] = (
                [strip_descriptions(s) for s in value]
                if isinstance(value, list)
                else strip_descriptions(value)
            )
        else:
            out[key] = value
    return out


def prune_crd(doc: dict[str, Any]) -> dict[str, Any]:
    """Keep what validation reads: names, scope, versions with their schemas (no descriptions)."""
    spec = dict(doc["spec"])
    spec.pop("conversion", None)  # a webhook service of the install, not part of the API
    versions = []
    for version in spec.get("versions") or []:
        version = dict(version)
        schema = (version.get("schema") or {}).get("openAPIV3Schema")
        if schema is not None:
            version["schema"] = {"openAPIV3Schema": strip_descriptions(schema)}
        versions.append(version)
    if versions:
        spec["versions"] = versions
    return {
        "apiVersion": doc["apiVersion"],
        "kind": doc["kind"],
        "metadata": {"name": doc["metadata"]["name"]},
        "spec": spec,
    }


def crds_of(raw: bytes, where: str, pick: str | None) -> list[dict[str, Any]]:
    """Return the CRD documents of one upstream file (only `pick` when given)."""
    try:
        docs = [d for d in yaml.load_all(raw.decode("utf-8"), Loader=LOADER) if isinstance(d, dict)]
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise FetchError(f"{where}: {exc}") from exc
    crds = [d for d in docs if d.get("kind") == "CustomResourceDefinition"]
    if pick is not None:
        crds = [d for d in crds if (d.get("metadata") or {}).get("name") == pick]
    if not crds:
        raise FetchError(f"{where}: no CustomResourceDefinition{f' named {pick}' if pick else ''}")
    return crds


def packed(crd: dict[str, Any]) -> tuple[bytes, str]:
    """Return the shipped bytes of one CRD (gzip of compact JSON) and the JSON's sha256."""
    text = json.dumps(crd, ensure_ascii=False, separators=(",", ":")) + "\n"
    data = text.encode("utf-8")
    return gzip.compress(data, compresslevel=9, mtime=0), hashlib.sha256(data).hexdigest()


# --- refreshing ------------------------------------------------------------------------------


def _licence_files(source: Any, repo: str, tag: str, staging: Path) -> str:
    """Copy a repository's LICENSE and NOTICE at a tag; return the licence notice for SOURCES."""
    folder = staging / "LICENSES" / repo.replace("/", "_")
    kept = []
    for name in ("LICENSE", "NOTICE", "NOTICE.txt"):
        raw = source.read(repo, tag, name)
        if raw is not None:
            folder.mkdir(parents=True, exist_ok=True)
            if len(raw) > LARGE:  # e.g. a NOTICE listing every vendored dependency
                raw, name = gzip.compress(raw, compresslevel=9, mtime=0), f"{name}.gz"
            (folder / name).write_bytes(raw)
            kept.append(f"LICENSES/{folder.name}/{name}")
    if not kept:
        raise FetchError(f"{repo}@{tag}: no LICENSE file")
    head = source.read(repo, tag, "LICENSE") or b""
    spdx = "Apache-2.0" if b"Apache License" in head and b"Version 2.0" in head else "see LICENSE"
    return f"{spdx}; Copyright the {repo} authors; see {', '.join(kept)}"


def refresh(source: Any, entries: tuple[Entry, ...], data: Path = DATA) -> list[dict[str, Any]]:
    """Fetch, prune and write every entry into a staging folder, then swap it into place."""
    staging = Path(tempfile.mkdtemp(prefix="crds-", dir=data.parent))
    records: list[dict[str, Any]] = []
    licences: dict[str, str] = {}
    try:
        newest = {e.repo: e.tag for e in entries}  # the last row of each repository is its newest
        for repo, tag in sorted(newest.items()):
            licences[repo] = _licence_files(source, repo, tag, staging)
        for entry in entries:
            records += _refresh_entry(source, entry, staging, licences[entry.repo])
        data.mkdir(parents=True, exist_ok=True)
        for old in data.iterdir():
            if old.is_dir() and old.name != "__pycache__":
                shutil.rmtree(old)
        for new in staging.iterdir():
            new.rename(data / new.name)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    records.sort(key=lambda r: r["file"])
    (data / SOURCES).write_text(
        json.dumps({"files": records}, indent=1, sort_keys=True) + "\n", encoding="utf-8"
    )
    return records


def _refresh_entry(source: Any, entry: Entry, staging: Path, licence: str) -> list[dict[str, Any]]:
    """Write one component version's CRDs and return their SOURCES records."""
    commit = source.commit(entry.repo, entry.tag)
    records = []
    for spec in entry.paths:
        path, _, pick = spec.partition("#")
        raw = source.read(entry.repo, entry.tag, path)
        if raw is None:
            raise FetchError(f"{entry.repo}@{entry.tag}: no file {path}")
        for crd in crds_of(raw, f"{entry.repo}@{entry.tag}:{path}", pick or None):
            data, json_sha = packed(prune_crd(crd))
            relative = f"{entry.component}/{entry.version}/{crd['metadata']['name']}.json.gz"
            target = staging / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
            records.append(
                {
                    "file": relative,
                    "component": entry.component,
                    "version": entry.version,
                    "repository": f"https://github.com/{entry.repo}",
                    "tag": entry.tag,
                    "commit": commit,
                    "path": spec,
                    "license": licence,
                    "sha256": hashlib.sha256(data).hexdigest(),
                    "json_sha256": json_sha,
                    "upstream_sha256": hashlib.sha256(raw).hexdigest(),
                }
            )
    return records


def refresh_only(
    source: Any, entries: tuple[Entry, ...], data: Path = DATA
) -> list[dict[str, Any]]:
    """Fetch some entries and merge them into the shipped sets, leaving every other set as it is.

    A repository already shipped keeps its licence files and notice (those of its newest tag); a new
    one gets them from the newest of the entries fetched.
    """
    fetched = Path(tempfile.mkdtemp(prefix="crds-only-", dir=data.parent))
    try:
        records = refresh(source, entries, fetched)
        shipped = json.loads((data / SOURCES).read_text(encoding="utf-8"))["files"]
        licences = {r["repository"]: r["license"] for r in shipped}
        replaced = {(e.component, e.version) for e in entries}
        for entry in sorted(replaced):
            shutil.rmtree(data / entry[0] / entry[1], ignore_errors=True)
            shutil.copytree(fetched / entry[0] / entry[1], data / entry[0] / entry[1])
        for record in records:
            record["license"] = licences.get(record["repository"], record["license"])
        for folder in (fetched / "LICENSES").iterdir():
            if not (data / "LICENSES" / folder.name).exists():
                shutil.copytree(folder, data / "LICENSES" / folder.name)
    finally:
        shutil.rmtree(fetched, ignore_errors=True)
    kept = [r for r in shipped if (r["component"], r["version"]) not in replaced]
    merged = sorted(kept + records, key=lambda r: r["file"])
    (data / SOURCES).write_text(
        json.dumps({"files": merged}, indent=1, sort_keys=True) + "\n", encoding="utf-8"
    )
    return records


def selected(names: list[str]) -> tuple[Entry, ...]:
    """Return the table's entries named component/version, or raise FetchError naming an unknown one."""
    by_name = {f"{e.component}/{e.version}": e for e in TABLE}
    unknown = [n for n in names if n not in by_name]
    if unknown:
        raise FetchError(f"not in the table: {', '.join(unknown)}")
    return tuple(by_name[n] for n in dict.fromkeys(names))


# --- checking --------------------------------------------------------------------------------


def check(entries: tuple[Entry, ...], data: Path = DATA) -> list[str]:
    """Return every disagreement between the table, SOURCES.json and the shipped files."""
    try:
        records = json.loads((data / SOURCES).read_text(encoding="utf-8"))["files"]
    except (OSError, ValueError, KeyError) as exc:
        return [f"{data / SOURCES}: {exc}"]
    problems = list(_check_records(records, data))
    recorded = {(r["component"], r["version"], r["path"]) for r in records}
    for entry in entries:
        for path in entry.paths:
            if (entry.component, entry.version, path) not in recorded:
                problems.append(f"{entry.component} {entry.version}: {path} is not shipped")
    known = {r["file"] for r in records}
    for shipped in sorted(data.rglob("*.json.gz")):
        if shipped.relative_to(data).as_posix() not in known:
            problems.append(f"{shipped.relative_to(data)}: not in SOURCES.json")
    return problems


def _check_records(records: list[dict[str, Any]], data: Path) -> Iterator[str]:
    """Yield the records whose file is missing, differs from its hashes or is not a CRD."""
    for record in records:
        path = data / record["file"]
        try:
            raw = path.read_bytes()
        except OSError:
            yield f"{record['file']}: missing"
            continue
        if hashlib.sha256(raw).hexdigest() != record["sha256"]:
            yield f"{record['file']}: sha256 differs from SOURCES.json"
            continue
        text = gzip.decompress(raw)
        if hashlib.sha256(text).hexdigest() != record["json_sha256"]:
            yield f"{record['file']}: content differs from SOURCES.json"
        elif json.loads(text).get("kind") != "CustomResourceDefinition":
            yield f"{record['file']}: not a CustomResourceDefinition"
        for licence in record["license"].split("see ", 1)[-1].split(", "):
            if licence.startswith("LICENSES/") and not (data / licence).is_file():
                yield f"{record['file']}: licence file {licence} is missing"


def main(argv: list[str] | None = None) -> int:
    """Refresh or check the shipped CRDs; return the exit code."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="offline: verify the shipped files")
    parser.add_argument(
        "--from-git",
        type=Path,
        metavar="DIR",
        help="read upstream tags from git clones or mirrors under DIR (offline)",
    )
    parser.add_argument(
        "--only",
        action="append",
        default=[],
        metavar="COMPONENT/VERSION",
        help="refresh only this table entry (repeatable), keeping the other shipped sets",
    )
    parser.add_argument(
        "--data",
        type=Path,
        default=DATA,
        metavar="DIR",
        help="the shipped CRD folder (default: gpuplan/crds beside this script)",
    )
    args = parser.parse_args(argv)
    if args.check:
        problems = check(TABLE, args.data)
        for problem in problems:
            print(f"error: {problem}", file=sys.stderr)
        if not problems:
            print(f"{len(TABLE)} CRD sets match SOURCES.json", file=sys.stderr)
        return 1 if problems else 0
    source = GitSource(args.from_git) if args.from_git else GitHubSource()
    try:
        entries = selected(args.only) if args.only else TABLE
        records = (refresh_only if args.only else refresh)(source, entries, args.data)
    except FetchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(
        f"wrote {len(records)} CRDs of {len(entries)} component versions into {args.data}",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
