#!/usr/bin/env python3
"""Refresh the upstream install manifests shipped in gpuplan/manifests/, one per supported release.

    python scripts/fetch_manifests.py                     # download from the upstream tags (network)
    python scripts/fetch_manifests.py --from-git MIRRORS  # read the tags from local git clones/mirrors
    python scripts/fetch_manifests.py --check             # offline: shipped files match SOURCES.json

Some components publish no chart, only a manifest at each tag whose image is not the release's
(Multus: deployments/multus-daemonset-thick.yml runs `:snapshot-thick`). gpuplan ships that manifest
byte for byte, renders its objects with the release image and lets Argo CD sync them from the fleet's
own repository. SOURCES.json records the repository, tag, commit, path, licence and sha256 of each
file; each repository's LICENSE and NOTICE go to gpuplan/manifests/LICENSES/<owner>_<name>/.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from fetch_crds import FetchError, GitHubSource, GitSource

DATA = Path(__file__).resolve().parent.parent / "gpuplan" / "manifests"
SOURCES = "SOURCES.json"
MULTUS = "k8snetworkplumbingwg/multus-cni"
MULTUS_MANIFEST = "deployments/multus-daemonset-thick.yml"


@dataclass(frozen=True)
class Entry:
    """One shipped manifest: a component release and the upstream file at its tag."""

    component: str
    repo: str
    tag: str
    path: str

    @property
    def file(self) -> str:
        """Return the shipped file, relative to gpuplan/manifests/."""
        return f"{self.component}/{self.tag}/{self.path.rpartition('/')[2]}"


ENTRIES = tuple(Entry("multus", MULTUS, tag, MULTUS_MANIFEST) for tag in ("v4.2.4", "v4.3.0"))
LEGAL = ("LICENSE", "NOTICE")


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def fetch(source: GitSource | GitHubSource) -> int:
    """Write every manifest and licence, and SOURCES.json."""
    records = []
    for entry in ENTRIES:
        data = source.read(entry.repo, entry.tag, entry.path)
        if data is None:
            raise FetchError(f"{entry.repo}@{entry.tag}: no {entry.path}")
        target = DATA / entry.file
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        legal = DATA / "LICENSES" / entry.repo.replace("/", "_")
        legal.mkdir(parents=True, exist_ok=True)
        for name in LEGAL:
            text = source.read(entry.repo, entry.tag, name)
            if text is not None:
                (legal / name).write_bytes(text)
        records.append({
            "component": entry.component,
            "version": entry.tag,
            "file": entry.file,
            "repository": f"https://github.com/{entry.repo}",
            "tag": entry.tag,
            "commit": source.commit(entry.repo, entry.tag),
            "path": entry.path,
            "license": f"Apache-2.0; Copyright the {entry.repo} authors; see LICENSES/{entry.repo.replace('/', '_')}/LICENSE",
            "sha256": _sha(data),
        })  # fmt: skip
    text = json.dumps({"files": records}, indent=1, sort_keys=True) + "\n"
    (DATA / SOURCES).write_text(text, encoding="utf-8")
    print(f"wrote {len(records)} manifests to {DATA}")
    return 0


def check() -> int:
    """Offline: every entry is shipped, recorded, and matches its recorded sha256."""
    records = json.loads((DATA / SOURCES).read_text(encoding="utf-8"))["files"]
    by_file = {r["file"]: r for r in records}
    problems = []
    for entry in ENTRIES:
        record = by_file.pop(entry.file, None)
        path = DATA / entry.file
        if record is None:
            problems.append(f"{entry.file}: not in {SOURCES}")
        elif not path.is_file():
            problems.append(f"{entry.file}: missing")
        elif _sha(path.read_bytes()) != record["sha256"]:
            problems.append(f"{entry.file}: sha256 differs from {SOURCES}")
        elif (record["tag"], record["path"]) != (entry.tag, entry.path):
            problems.append(f"{entry.file}: {SOURCES} names another tag or path")
    problems += [f"{name}: in {SOURCES} but no longer fetched" for name in sorted(by_file)]
    for problem in problems:
        print(problem, file=sys.stderr)
    return 1 if problems else 0


def main(argv: list[str] | None = None) -> int:
    """Run the command line."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="verify the shipped files offline")
    parser.add_argument("--from-git", type=Path, help="a folder of git clones or mirrors")
    args = parser.parse_args(argv)
    if args.check:
        return check()
    try:
        return fetch(GitSource(args.from_git) if args.from_git else GitHubSource())
    except FetchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
