#!/usr/bin/env python3
"""Refresh the exporters' published metric lists shipped in gpuplan/components/metrics/.

    python scripts/fetch_metrics.py --from-git MIRRORS   # read the tags from local git mirrors
    python scripts/fetch_metrics.py --check              # offline: shipped files match SOURCES.json

- DCGM exporter: etc/dcp-metrics-included.csv at each exporter tag, the collector list the GPU
  Operator runs it with (DCGM_EXPORTER_COLLECTORS in NVIDIA/gpu-operator
  assets/state-dcgm-exporter/0800_daemonset.yaml, v25.10.0 to v26.7.0). Kept verbatim.
- Kueue: the metric tables of site/content/en/docs/reference/metrics.md at each tag, reduced to
  {metric: [labels]} JSON (every table row, optional metrics included).

A repository owner/name is looked up as DIR/owner+name/repo (the layout of the search tool's mirrors).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import subprocess
import sys
from pathlib import Path

DATA = Path(__file__).resolve().parent.parent / "gpuplan" / "components" / "metrics"
DCGM = "NVIDIA/dcgm-exporter"
KUEUE = "kubernetes-sigs/kueue"
DCGM_FILE = "etc/dcp-metrics-included.csv"
KUEUE_FILE = "site/content/en/docs/reference/metrics.md"
DCGM_TAGS = (
    "4.2.3-4.1.3",
    "4.3.1-4.4.0",
    "4.4.1-4.6.0",
    "4.4.2-4.7.0",
    "4.5.1-4.8.0",
    "4.5.3-4.8.2",
)
KUEUE_TAGS = (
    "v0.12.10", "v0.13.10", "v0.14.4", "v0.14.8", "v0.15.8", "v0.16.9", "v0.17.8", "v0.18.6", "v0.19.2",
)  # fmt: skip
_ROW = re.compile(r"^\|\s*`([a-z_:][a-z0-9_:]*)`\s*\|[^|]*\|[^|]*\|([^|]*)\|", re.M)
_LABEL = re.compile(r"^`?([a-zA-Z_][a-zA-Z0-9_]*)`?\s*:")


def git_show(mirrors: Path, repo: str, tag: str, path: str) -> tuple[bytes, str]:
    """Return a file's bytes at a tag and the tag's commit."""
    git_dir = mirrors / repo.replace("/", "+") / "repo"
    show = ["git", f"--git-dir={git_dir}"]
    raw = subprocess.run([*show, "show", f"{tag}:{path}"], capture_output=True, check=True).stdout
    commit = subprocess.run([*show, "rev-list", "-n1", tag], capture_output=True, check=True)
    return raw, commit.stdout.decode().strip()


def kueue_metrics(markdown: str) -> dict[str, list[str]]:
    """Return {metric: sorted labels} from the rows of Kueue's metrics tables."""
    found: dict[str, list[str]] = {}
    for name, cell in _ROW.findall(markdown):
        labels = {m.group(1) for part in cell.split("<br>") if (m := _LABEL.match(part.strip()))}
        found[name] = sorted(labels)
    return dict(sorted(found.items()))


def refresh(mirrors: Path) -> list[dict[str, str]]:
    """Write every metric list and return the SOURCES records."""
    records = []
    for tag in DCGM_TAGS:
        raw, commit = git_show(mirrors, DCGM, tag, DCGM_FILE)
        records.append(_write(f"dcgm-exporter/{tag}.csv", raw, DCGM, tag, commit, DCGM_FILE))
    for tag in KUEUE_TAGS:
        raw, commit = git_show(mirrors, KUEUE, tag, KUEUE_FILE)
        text = json.dumps(kueue_metrics(raw.decode("utf-8")), indent=1) + "\n"
        records.append(_write(f"kueue/{tag}.json", text.encode(), KUEUE, tag, commit, KUEUE_FILE))
    (DATA / "SOURCES.json").write_text(
        json.dumps({"files": records}, indent=1) + "\n", encoding="utf-8"
    )
    return records


def _write(
    relative: str, data: bytes, repo: str, tag: str, commit: str, path: str
) -> dict[str, str]:
    target = DATA / relative
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(data)
    sha = hashlib.sha256(data).hexdigest()
    return {
        "file": relative,
        "repository": f"https://github.com/{repo}",
        "tag": tag,
        "commit": commit,
        "path": path,
        "sha256": sha,
    }


def check() -> list[str]:
    """Return the shipped files that are missing or differ from SOURCES.json."""
    records = json.loads((DATA / "SOURCES.json").read_text(encoding="utf-8"))["files"]
    problems = []
    for record in records:
        path = DATA / record["file"]
        if not path.is_file() or hashlib.sha256(path.read_bytes()).hexdigest() != record["sha256"]:
            problems.append(f"{record['file']}: missing or differs from SOURCES.json")
    return problems


def main(argv: list[str] | None = None) -> int:
    """Refresh or check the shipped metric lists; return the exit code."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="offline: verify the shipped files")
    parser.add_argument("--from-git", type=Path, metavar="DIR", help="git mirrors under DIR")
    args = parser.parse_args(argv)
    if args.check or args.from_git is None:
        problems = check()
        for problem in problems:
            print(f"error: {problem}", file=sys.stderr)
        return 1 if problems else 0
    records = refresh(args.from_git)
    print(f"wrote {len(records)} metric lists into {DATA}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
