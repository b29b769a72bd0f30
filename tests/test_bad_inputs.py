"""A corpus of bad inputs: each is refused with exit 1, a diagnostic at the right file:line:col,
no traceback, and the output folder rendered before left byte-for-byte as it was.

Every case starts from the minimal valid repository below (one cluster, one tenant) and breaks ONE
thing. The expected positions were worked out by hand against the (broken) text: 1-based line and
column of the offending value, or of the key for unknown fields. Line numbers below refer to the
numbered listings in the comments next to CLUSTER and TENANT.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.conftest import PROJECT, run, snapshot, write_repo

CLUSTER_FILE = "clusters/c1.yaml"
TENANT_FILE = "tenants/team-a.yaml"

# Line numbers, for working out positions by hand:
#  1 name: c1                              28   - name: infer
#  2 kubernetesVersion: "1.33"             29     gpu: H100-SXM5-80GB
#  3 provider: aws                         30     gpusPerNode: 8
#  4 gitops:                               31     cpu: 192
#  5   repoURL: https://...                32     memory: 1900Gi
#  6 components:                           33     nodes: {count: 2}
#  7   gpuOperator:                        34     hostnames: ["infer-[0-9]+"]
#  8     version: v26.7.0                  35     sharing:
#  9     driverVersion: "580.82.07"        36       mig:
# 10   kueue:                              37         layout: {1g.10gb: 3, 2g.20gb: 2}
# 11     version: v0.19.2                  38   - name: dev
# 12   karpenter:                          39     gpu: L40S
# 13     version: v1.14.1                  40     gpusPerNode: 4
# 14     nodeClass: {...}                  41     cpu: 48
# 15 priorityClasses:                      42     memory: 360Gi
# 16   - {name: research, value: 100}      43     nodes: {count: 1}
# 17 cohorts:                              44     labels: {example.com/fabric: dev}
# 18   - name: shared                       45     hostnames: ["dev-[0-9]+"]
# 19 nodePools:                            46     sharing:
# 20   - name: train                       47       timeSlicing: {replicas: 4}
# 21     gpu: H100-SXM5-80GB               48 networks:
# 22     gpusPerNode: 8                    49   - name: ib-net
# 23     cpu: 192                          50     type: macvlan
# 24     memory: 1900Gi                    51     master: ens1f0
# 25     nodes: {min: 1, max: 4}           52     ipam: {type: whereabouts, range: 192.168.20.0/24}
# 26     karpenter:                        53     pools: [train]
# 27       instanceTypes: [p5.48xlarge]
CLUSTER = """\
name: c1
kubernetesVersion: "1.33"
provider: aws
gitops:
  repoURL: https://git.example.com/fleet.git
components:
  gpuOperator:
    version: v26.7.0
    driverVersion: "580.82.07"
  kueue:
    version: v0.19.2
  karpenter:
    version: v1.14.1
    nodeClass: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: gpu, aws: {role: KarpenterNodeRole-c1}}
priorityClasses:
  - {name: research, value: 100}
cohorts:
  - name: shared
nodePools:
  - name: train
    gpu: H100-SXM5-80GB
    gpusPerNode: 8
    cpu: 192
    memory: 1900Gi
    nodes: {min: 1, max: 4}
    karpenter:
      instanceTypes: [p5.48xlarge]
  - name: infer
    gpu: H100-SXM5-80GB
    gpusPerNode: 8
    cpu: 192
    memory: 1900Gi
    nodes: {count: 2}
    hostnames: ["infer-[0-9]+"]
    sharing:
      mig:
        layout: {1g.10gb: 3, 2g.20gb: 2}
  - name: dev
    gpu: L40S
    gpusPerNode: 4
    cpu: 48
    memory: 360Gi
    nodes: {count: 1}
    labels: {example.com/fabric: dev}
    hostnames: ["dev-[0-9]+"]
    sharing:
      timeSlicing: {replicas: 4}
networks:
  - name: ib-net
    type: macvlan
    master: ens1f0
    ipam: {type: whereabouts, range: 192.168.20.0/24}
    pools: [train]
"""

#  1 name: team-a
#  2 owners: [group:team-a-admins]
#  3 priorityClass: research
#  4 allocations:
#  5   - cluster: c1
#  6     cohort: shared
#  7     quotas:
#  8       - pool: train
#  9         gpus: 8
# 10       - pool: infer
# 11         mig: {1g.10gb: 12}
# 12       - pool: dev
# 13         gpus: 8
# 14     networks: [ib-net]
TENANT = """\
name: team-a
owners: [group:team-a-admins]
priorityClass: research
allocations:
  - cluster: c1
    cohort: shared
    quotas:
      - pool: train
        gpus: 8
      - pool: infer
        mig: {1g.10gb: 12}
      - pool: dev
        gpus: 8
    networks: [ib-net]
"""

C, T = CLUSTER_FILE, TENANT_FILE


@dataclass(frozen=True)
class Bad:
    """One broken repository and the diagnostic it must produce."""

    id: str
    where: str  # "FILE:LINE:COL" (or "FILE:LINE" when the column is not meaningful)
    phrase: str  # a key phrase of the message (a regular expression)
    edits: tuple[tuple[str, str, str], ...] = ()  # (file, old text (unique), new text)
    files: dict[str, str | bytes] = field(default_factory=dict)  # whole files written (or replaced)
    remove: tuple[str, ...] = ()  # files deleted
    subprocess: bool = False  # hostile input: run the real CLI in a child with a timeout
    bug: str | None = None  # a known gpuplan bug: the test is xfail(strict) with this reason


def _alias_bomb() -> str:
    lines = [
        "name: team-a",
        'a: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]',
    ]
    previous = "a"
    for name in "bcdefghij":
        lines.append(f"{name}: &{name} [" + ", ".join([f"*{previous}"] * 9) + "]")
        previous = name
    return "\n".join(lines) + "\n"


DEEP = 20_000  # brackets: refused at the 65th, so the work is bounded by the limit, not the file
LONG = "tenants/" + "a" * 64 + ".yaml"  # a 64-character name: one more than DNS-1123 allows
HUGE_DIGITS = 5000

MIG_DEVICES_MISSING = """\
        devices:
          - {gpus: [0, 1, 2, 3], layout: {3g.40gb: 2}}
          - {gpus: [4, 5, 6], layout: {1g.10gb: 7}}
"""
MIG_DEVICES_REPEATED = """\
        devices:
          - {gpus: [0, 1, 2, 3], layout: {3g.40gb: 2}}
          - {gpus: [3, 4, 5, 6, 7], layout: {1g.10gb: 7}}
"""
MIG_DEVICES_OUT_OF_RANGE = """\
        devices:
          - {gpus: [0, 1, 2, 3], layout: {3g.40gb: 2}}
          - {gpus: [4, 5, 6, 7, 8], layout: {1g.10gb: 7}}
"""
SECOND_NETWORK = """\
  - name: ib2
    type: macvlan
    master: ens1f0
    ipam: {type: whereabouts, range: 192.168.20.0/25}
    pools: [train]
"""
LAYOUT = "        layout: {1g.10gb: 3, 2g.20gb: 2}\n"
TRAIN_GPUS = "      - pool: train\n        gpus: 8\n"

# fmt: off
CASES: list[Bad] = [
    # --- YAML itself -------------------------------------------------------------------------
    Bad("yaml-syntax", f"{T}:6:19", r"YAML syntax: mapping values are not allowed",
        edits=((T, "    cohort: shared\n", "    cohort: shared: x\n"),)),
    # An unclosed quote is noticed at the end of the file; the place to fix is where it opens.
    Bad("yaml-unclosed-quote", f"{T}:1:7", r"YAML syntax: .*quoted scalar",
        edits=((T, "name: team-a\n", 'name: "team-a\n'),)),
    Bad("duplicate-key", f"{C}:4:1", r"duplicate key \"?provider",
        edits=((C, "provider: aws\n", "provider: aws\nprovider: gcp\n"),)),
    Bad("duplicate-key-nested", f"{T}:10:9", r"duplicate key \"?gpus",
        edits=((T, "        gpus: 8\n      - pool: infer\n", "        gpus: 8\n        gpus: 4\n      - pool: infer\n"),)),
    Bad("tab-indentation", f"{T}:9:1", r"YAML syntax: .*(tab|'\\t')",
        edits=((T, TRAIN_GPUS, "      - pool: train\n\tgpus: 8\n"),)),
    # gpuplan's input has no use for YAML tags: a tagged value is refused where it stands.
    Bad("yaml-tag-on-list", f"{T}:2", r"tag",
        edits=((T, "owners: [group:team-a-admins]", "owners: !foo [group:team-a-admins]"),)),
    Bad("empty-file", f"{T}:1:1", r"file is empty", files={T: ""}),
    Bad("only-comments", f"{T}:1:1", r"file is empty", files={T: "# nothing here yet\n"}),
    Bad("non-utf8", f"{T}:2", r"not valid UTF-8",
        files={T: TENANT.encode().replace(b"team-a-admins", b"team-\xffa-admins")}),
    Bad("list-at-top", f"{T}:1:1", r"expected a mapping",
        files={T: "- " + TENANT.replace("\n", "\n  ").rstrip() + "\n"}),
    Bad("scalar-at-top", f"{T}:1:1", r"expected a mapping", files={T: "team-a\n"}),
    # The second document starts at line 15 (its `---` marker): that is where the problem is.
    Bad("multiple-documents", f"{T}:15:1", r"more than one YAML document",
        files={T: TENANT + "---\nname: team-b\n"}),
    Bad("alias-bomb", f"{T}:2", r"refused.*(alias|nodes)", files={T: _alias_bomb()}, subprocess=True),
    # Line 15 is `deep: [[[...`; `deep` is level 1, so the 65th bracket (column 71) is one too many.
    Bad("deep-nesting", f"{T}:15:71", r"refused.*(nest|deep)",
        files={T: TENANT + "deep: " + "[" * DEEP + "]" * DEEP + "\n"}, subprocess=True),
    Bad("deep-nesting-mixed", f"{T}:16:164", r"refused.*(nest|deep)",
        files={T: TENANT + "deep:\n  - " + "{a: [" * DEEP + "]}" * DEEP + "\n"}, subprocess=True),
    Bad("nul-byte", f"{T}:3:20", r"control character U\+0000",
        edits=((T, "priorityClass: research", "priorityClass: rese\x00arch"),)),
    Bad("nul-byte-in-comment", f"{T}:15:8", r"control character U\+0000",
        files={T: TENANT + "# note \x00\n"}),
    Bad("escape-character", f"{T}:2:20", r"control character U\+001B",
        edits=((T, "owners: [group:team-a-admins]", "owners: [group:team\x1b-a-admins]"),)),
    Bad("deep-nesting-blocks", f"{T}:80", r"refused.*(nest|deep)",
        files={T: TENANT + "deep:\n" + "".join("  " * (i + 1) + f"k{i}:\n" for i in range(200)) + "  " * 201 + "x: 1\n"},
        subprocess=True),
    # --- field shapes and types (pydantic) ---------------------------------------------------
    Bad("unknown-field-top", f"{T}:3:1", r"unknown field 'priorityClas' \(did you mean 'priorityClass'\?\)",
        edits=((T, "priorityClass: research", "priorityClas: research"),)),
    Bad("unknown-field-nested", f"{C}:22:5", r"unknown field 'gpusPerNod' \(did you mean 'gpusPerNode'\?\)",
        edits=((C, "  - name: train\n    gpu: H100-SXM5-80GB\n    gpusPerNode: 8\n",
                   "  - name: train\n    gpu: H100-SXM5-80GB\n    gpusPerNod: 8\n"),)),
    Bad("missing-required-field", f"{C}:20:5", r"missing required field 'gpu'",
        edits=((C, "  - name: train\n    gpu: H100-SXM5-80GB\n", "  - name: train\n"),)),
    Bad("wrong-type-string-for-int", f"{C}:22:18", r"valid integer",
        edits=((C, "  - name: train\n    gpu: H100-SXM5-80GB\n    gpusPerNode: 8\n",
                   "  - name: train\n    gpu: H100-SXM5-80GB\n    gpusPerNode: \"8\"\n"),)),
    Bad("wrong-type-word-for-int", f"{T}:9:15", r"valid integer",
        edits=((T, TRAIN_GPUS, "      - pool: train\n        gpus: eight\n"),)),
    # `quotas:` with nothing after it is null, on line 7 (the next line holds networks).
    Bad("wrong-type-null-list", f"{T}:7", r"valid list",
        edits=((T, "    quotas:\n" + TENANT.split("    quotas:\n")[1].split("    networks")[0], "    quotas:\n"),)),
    # An unquoted `kubernetesVersion: 1.30` is read as written (tests/test_new_users.py); a number
    # that is no version text (1.3e1) is refused with a hint to quote it, never read as 13.0.
    Bad("unquoted-kubernetes-version", f"{C}:2:20", r"is a number in YAML.*quote it",
        edits=((C, 'kubernetesVersion: "1.33"', "kubernetesVersion: 1.3e1"),)),
    Bad("bad-provider", f"{C}:3:11", r"'aws'.*'onprem'",
        edits=((C, "provider: aws\n", "provider: aws2\n"),)),
    Bad("huge-integer", f"{T}:9:15", r"less than or equal to 10000000",
        edits=((T, TRAIN_GPUS, "      - pool: train\n        gpus: 99999999999999999999999999999999\n"),)),
    Bad("huge-integer-5000-digits", f"{T}:9:15", r"(too large|less than or equal)",
        edits=((T, TRAIN_GPUS, "      - pool: train\n        gpus: " + "9" * HUGE_DIGITS + "\n"),)),
    Bad("negative-gpus", f"{T}:9:15", r"greater than or equal to 0",
        edits=((T, TRAIN_GPUS, "      - pool: train\n        gpus: -1\n"),)),
    Bad("quantity-not-a-quantity", f"{C}:24:13", r"not a Kubernetes quantity",
        edits=((C, "    cpu: 192\n    memory: 1900Gi\n    nodes: {min", "    cpu: 192\n    memory: 1900GB\n    nodes: {min"),)),
    Bad("quantity-infinite", f"{C}:23:10", r"finite",
        edits=((C, "    cpu: 192\n    memory: 1900Gi\n    nodes: {min", "    cpu: .inf\n    memory: 1900Gi\n    nodes: {min"),)),
    Bad("gpus-and-mig-both", f"{T}:8:9", r"not both",
        edits=((T, TRAIN_GPUS, TRAIN_GPUS + "        mig: {1g.10gb: 1}\n"),)),
    Bad("sharing-unknown-word", f"{C}:46:14", r"'shared' is not a sharing mode",
        edits=((C, "    sharing:\n      timeSlicing: {replicas: 4}\n", "    sharing: shared\n"),)),
    Bad("owner-not-a-subject", f"{T}:2:10", r"is not a subject",
        edits=((T, "owners: [group:team-a-admins]", "owners: [team-a-admins]"),)),
    # RBAC: system identities and other namespaces' service accounts are refused (check/rbac.py).
    Bad("owner-system-unauthenticated", f"{T}:2:10", r"system identity \(every anonymous request\).*rbac\.allowedSubjects",
        edits=((T, "owners: [group:team-a-admins]", "owners: [group:system:unauthenticated]"),)),
    Bad("owner-other-namespace-service-account", f"{T}:2:10", r"service account of namespace ci",
        edits=((T, "owners: [group:team-a-admins]", "owners: [serviceaccount:ci:deployer]"),)),
    Bad("driver-version-yaml-breaking", f"{C}:9:20", r"not an NVIDIA driver version",
        edits=((C, 'driverVersion: "580.82.07"', 'driverVersion: "580.82.07\\n  x: {y: z}"'),)),
    Bad("hostname-bad-regex", f"{C}:34:17", r"not a valid regular expression",
        edits=((C, '["infer-[0-9]+"]', '["infer-[0-9+"]'),)),
    Bad("label-key-invalid", f"{C}:44:14", r"not a valid Kubernetes label key",
        edits=((C, "labels: {example.com/fabric: dev}", 'labels: {"fab ric": dev}'),)),
    Bad("destination-server-and-name", f"{C}:6:16", r"exactly one of server or name",
        edits=((C, "  repoURL: https://git.example.com/fleet.git\n",
                   "  repoURL: https://git.example.com/fleet.git\n  destination: {server: https://kubernetes.default.svc, name: c1}\n"),)),
    # --- names -------------------------------------------------------------------------------
    Bad("name-not-dns-1123", f"{C}:20:11", r"is not a DNS-1123 label",
        edits=((C, "  - name: train\n", "  - name: Train_1\n"),)),
    Bad("name-too-long", f"{LONG}:1:7", r"is not a DNS-1123 label",
        files={LONG: TENANT.replace("name: team-a", "name: " + "a" * 64)}, remove=(T,)),
    Bad("file-stem-differs", f"{T}:1:7", r"differs from the file name",
        edits=((T, "name: team-a\n", "name: team-x\n"),)),
    Bad("duplicate-cluster-yaml-yml", "clusters/c1.yml:1:7", r"duplicate cluster 'c1'",
        files={"clusters/c1.yml": CLUSTER}),
    Bad("duplicate-pool-name", f"{C}:38:11", r"duplicate name 'infer'",
        edits=((C, "  - name: dev\n", "  - name: infer\n"),)),
    Bad("duplicate-quota-pool", f"{T}:12:15", r"pool train has a quota already",
        edits=((T, "      - pool: dev\n", "      - pool: train\n"),)),
    # --- references --------------------------------------------------------------------------
    Bad("unresolved-cluster", f"{T}:5:14", r"unknown cluster 'c2'",
        edits=((T, "  - cluster: c1\n", "  - cluster: c2\n"),)),
    Bad("unresolved-pool", f"{T}:8:15", r"has no pool 'trian' \(did you mean 'train'\?\)",
        edits=((T, "      - pool: train\n", "      - pool: trian\n"),)),
    Bad("unresolved-cohort", f"{T}:6:13", r"has no cohort 'shard'",
        edits=((T, "    cohort: shared\n", "    cohort: shard\n"),)),
    Bad("unresolved-priority-class", f"{T}:3:16", r"has no priority class 'reserch'",
        edits=((T, "priorityClass: research", "priorityClass: reserch"),)),
    Bad("unresolved-network", f"{T}:14:16", r"has no network 'ib-nte'",
        edits=((T, "networks: [ib-net]", "networks: [ib-nte]"),)),
    Bad("unresolved-network-pool", f"{C}:53:13", r"unknown pool 'trian'",
        edits=((C, "    pools: [train]\n", "    pools: [trian]\n"),)),
    Bad("unresolved-cohort-parent", f"{C}:18:28", r"unknown cohort 'root'",
        edits=((C, "  - name: shared\n", "  - {name: shared, parent: root}\n"),)),
    # Kueue disables every ClusterQueue of a cohort tree with a cycle (Cohort CRD, parentName): the
    # fleet would render and then admit nothing.
    Bad("cohort-parent-cycle", f"{C}:18:28", r"cycle",
        edits=((C, "  - name: shared\n", "  - {name: shared, parent: shared}\n"),)),
    # --- GPU sharing -------------------------------------------------------------------------
    Bad("gpus-on-mig-pool", f"{T}:11:15", r"is a MIG pool: use mig",
        edits=((T, "        mig: {1g.10gb: 12}\n", "        gpus: 12\n"),)),
    Bad("mig-on-exclusive-pool", f"{T}:9:14", r"is not a MIG pool: use gpus",
        edits=((T, TRAIN_GPUS, "      - pool: train\n        mig: {1g.10gb: 8}\n"),)),
    # The cause, not its knock-on: with mig on an exclusive pool, a scalar borrowingLimit is right
    # for the gpus the user meant; the error is the mig line.
    Bad("mig-on-exclusive-pool-with-scalar-limit", f"{T}:9:14", r"is not a MIG pool: use gpus",
        edits=((T, TRAIN_GPUS, "      - pool: train\n        mig: {1g.10gb: 8}\n        borrowingLimit: 4\n"),)),
    Bad("limit-mapping-on-gpus-quota", f"{T}:10:25", r"borrowingLimit: must be a number on a gpus quota",
        edits=((T, TRAIN_GPUS, TRAIN_GPUS + "        borrowingLimit: {1g.10gb: 4}\n"),)),
    Bad("mig-profile-not-in-layout", f"{T}:11:24", r"has no 3g.40gb instances",
        edits=((T, "        mig: {1g.10gb: 12}\n", "        mig: {3g.40gb: 1}\n"),)),
    Bad("mig-layout-impossible", f"{C}:37:17",
        r"2x1g\.10gb \+ 2x2g\.20gb \+ 1x3g\.40gb cannot be placed on one H100-SXM5-80GB \(9 of 7 compute slices\)",
        edits=((C, LAYOUT, "        layout: {1g.10gb: 2, 2g.20gb: 2, 3g.40gb: 1}\n"),)),
    Bad("mig-profile-unknown-for-model", f"{C}:37:17", r"1g\.12gb",
        edits=((C, LAYOUT, "        layout: {1g.12gb: 7}\n"),)),
    Bad("mig-on-l40s", f"{C}:37:9", r"L40S does not support MIG",
        edits=((C, "  - name: infer\n    gpu: H100-SXM5-80GB\n", "  - name: infer\n    gpu: L40S\n"),)),
    Bad("unknown-gpu-model", f"{C}:21:10", r"unknown GPU model 'H100-SXM5-80G' \(did you mean 'H100-SXM5-80GB'\?\)",
        edits=((C, "  - name: train\n    gpu: H100-SXM5-80GB\n", "  - name: train\n    gpu: H100-SXM5-80G\n"),)),
    Bad("mig-devices-missing-index", f"{C}:38:11", r"leave GPU index 7 without a layout",
        edits=((C, LAYOUT, MIG_DEVICES_MISSING),)),
    Bad("mig-devices-repeated-index", f"{C}:39:21", r"GPU index 3 is already given a layout in devices\[0\]",
        edits=((C, LAYOUT, MIG_DEVICES_REPEATED),)),
    Bad("mig-devices-index-out-of-range", f"{C}:39:33", r"GPU index 8 does not exist",
        edits=((C, LAYOUT, MIG_DEVICES_OUT_OF_RANGE),)),
    Bad("mig-strategy-single-two-profiles", f"{C}:38:9", r"migStrategy single allows one MIG profile type per node",
        edits=((C, '    driverVersion: "580.82.07"\n', '    driverVersion: "580.82.07"\n    migStrategy: single\n'),)),
    Bad("time-slicing-replicas-1", f"{C}:47:31", r"greater than or equal to 2",
        edits=((C, "timeSlicing: {replicas: 4}", "timeSlicing: {replicas: 1}"),)),
    Bad("mps-replicas-49", f"{C}:47:23", r"less than or equal to 48",
        edits=((C, "timeSlicing: {replicas: 4}", "mps: {replicas: 49}"),)),
    # A rule between two keys of `sharing` points at the sharing mapping (its first key, 36:7).
    Bad("mps-with-mig", f"{C}:36:7", r"mps cannot be combined with mig",
        edits=((C, LAYOUT, LAYOUT + "      mps: {replicas: 4}\n"),)),
    # --- capacity and quotas -----------------------------------------------------------------
    Bad("quota-over-capacity", f"{T}:9:15", r"tenants ask 40 GPUs of pool train, which has at most 32 \(4 nodes x 8\)",
        edits=((T, TRAIN_GPUS, "      - pool: train\n        gpus: 40\n"),)),
    Bad("mig-quota-over-capacity", f"{T}:11:24", r"tenants ask 49 1g\.10gb instances of pool infer, which has at most 48",
        edits=((T, "        mig: {1g.10gb: 12}\n", "        mig: {1g.10gb: 49}\n"),)),
    Bad("shares-over-capacity", f"{T}:13:15", r"tenants ask 17 shares of pool dev, which has at most 16",
        edits=((T, "      - pool: dev\n        gpus: 8\n", "      - pool: dev\n        gpus: 17\n"),)),
    Bad("lending-limit-above-gpus", f"{T}:10:23", r"lendingLimit 9 is above the quota 8",
        edits=((T, TRAIN_GPUS, TRAIN_GPUS + "        lendingLimit: 9\n"),)),
    # The tenant without its cohort line: quotas at 6, train at 7, gpus at 8, borrowingLimit at 9.
    Bad("borrowing-limit-without-cohort", f"{T}:9:25", r"borrowingLimit needs a cohort",
        edits=((T, "    cohort: shared\n", ""), (T, TRAIN_GPUS, TRAIN_GPUS + "        borrowingLimit: 4\n"))),
    # The offending value is lendingLimit's 2 (12:23), not the quota item.
    Bad("limit-number-on-mig-quota", f"{T}:12:23", r"lendingLimit: .*mapping per MIG profile",
        edits=((T, "        mig: {1g.10gb: 12}\n", "        mig: {1g.10gb: 12}\n        lendingLimit: 2\n"),)),
    Bad("max-gpus-per-pod-above-node", f"{T}:14:20", r"maxGpusPerPod 16 is above the largest gpusPerNode 8",
        edits=((T, "    networks: [ib-net]\n", "    maxGpusPerPod: 16\n    networks: [ib-net]\n"),)),
    Bad("cpu-over-pools", f"{T}:14:10", r"cpu 100000 is more than",
        edits=((T, "    networks: [ib-net]\n", "    cpu: 100000\n    networks: [ib-net]\n"),)),
    # --- namespaces --------------------------------------------------------------------------
    # Without a git base neither file is known to be the newer one: both are blamed (see test_security).
    Bad("namespace-two-tenants", "tenants/team-b.yaml:2:14", r"namespace 'team-a' is claimed by tenant team-a as well",
        files={"tenants/team-b.yaml": "name: team-b\nnamespaces: [team-a]\n"}),
    Bad("system-namespace", f"{T}:2:14", r"namespace 'kube-system' is a system or component namespace",
        edits=((T, "name: team-a\n", "name: team-a\nnamespaces: [kube-system]\n"),)),
    Bad("component-namespace", f"{T}:2:14", r"namespace 'gpu-operator' is a system or component namespace",
        edits=((T, "name: team-a\n", "name: team-a\nnamespaces: [gpu-operator]\n"),)),
    # --- node pool shape ---------------------------------------------------------------------
    Bad("nodes-min-above-max", f"{C}:25:12", r"min 5 is above max 4",
        edits=((C, "nodes: {min: 1, max: 4}", "nodes: {min: 5, max: 4}"),)),
    Bad("nodes-count-and-min", f"{C}:33:12", r"either count .* or min and max",
        edits=((C, "nodes: {count: 2}", "nodes: {count: 2, min: 1}"),)),
    # Without lines 12-14 (the karpenter component) the train pool's nodes move to line 22.
    Bad("autoscaled-without-karpenter", f"{C}:22:12", r"needs components\.karpenter",
        edits=((C, "  karpenter:\n    version: v1.14.1\n    nodeClass: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: gpu, aws: {role: KarpenterNodeRole-c1}}\n", ""),)),
    Bad("autoscaled-on-gcp", f"{C}:25:12", r"Karpenter does not serve provider gcp",
        edits=((C, "provider: aws\n", "provider: gcp\n"),)),
    Bad("static-without-hostnames", f"{C}:33:12", r"a static pool needs nodeGroup, hostnames or labels",
        edits=((C, '    hostnames: ["infer-[0-9]+"]\n', ""),)),
    # --- networks ----------------------------------------------------------------------------
    Bad("invalid-cidr", f"{C}:52:38", r"is not a valid CIDR",
        edits=((C, "range: 192.168.20.0/24", "range: 192.168.20.0/33"),)),
    Bad("cidr-host-bits", f"{C}:52:38", r"is not a valid CIDR",
        edits=((C, "range: 192.168.20.0/24", "range: 192.168.20.1/24"),)),
    # checks.md, Networks: "ranges that overlap inside one cluster". ib2 is appended at lines 54-58.
    Bad("overlapping-cidrs", f"{C}:57:38", r"overlap",
        edits=((C, "    pools: [train]\n", "    pools: [train]\n" + SECOND_NETWORK),)),
    # --- components --------------------------------------------------------------------------
    Bad("unknown-kubernetes-version", f"{C}:2:20", r"1\.99",
        edits=((C, 'kubernetesVersion: "1.33"', 'kubernetesVersion: "1.99"'),)),
    Bad("unknown-gpu-operator-version", f"{C}:8:14", r"gpu-operator v99\.0\.0 is not supported",
        edits=((C, "    version: v26.7.0\n", "    version: v99.0.0\n"),)),
]
# fmt: on


def _params() -> list:
    out = []
    for case in CASES:
        marks = [pytest.mark.xfail(reason=f"BUG: {case.bug}", strict=True)] if case.bug else []
        out.append(pytest.param(case, id=case.id, marks=marks))
    return out


def _edit(text: str, old: str, new: str) -> str:
    assert text.count(old) == 1, f"test bug: {old!r} must occur exactly once"
    return text.replace(old, new)


def _valid_repo(root: Path) -> Path:
    return write_repo(root, {CLUSTER_FILE: CLUSTER, TENANT_FILE: TENANT})


def _break(root: Path, case: Bad) -> None:
    for relative, old, new in case.edits:
        path = root / relative
        path.write_bytes(_edit(path.read_bytes().decode(), old, new).encode())
    for relative, content in case.files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content if isinstance(content, bytes) else content.encode())
    for relative in case.remove:
        (root / relative).unlink()


def _render(root: Path, hostile: bool) -> tuple[int, str, str]:
    if not hostile:
        result = run("render", "--root", str(root))
        return result.code, result.stdout, result.stderr
    env = dict(os.environ, PYTHONPATH=str(PROJECT))
    command = [sys.executable, "-m", "gpuplan", "render", "--root", str(root)]
    done = subprocess.run(
        command, env=env, capture_output=True, text=True, timeout=600, check=False
    )
    return done.returncode, done.stdout, done.stderr


def test_corpus_is_large_and_distinct() -> None:
    ids = [case.id for case in CASES]
    assert len(ids) == len(set(ids))
    assert len(ids) >= 35


def test_the_base_repository_is_valid(tmp_path: Path) -> None:
    repo = _valid_repo(tmp_path / "repo")
    result = run("render", "--root", str(repo))
    assert result.code == 0, result.stderr
    warnings = [line for line in result.stderr.splitlines() if ": warning: " in line]
    # Its tenant has no CPU pool quota and attaches an RDMA network under PSA restricted (tests/test_tenant_policy.py);
    # its aws static pools are found by hostnames (tests/test_node_groups.py has the node-group form).
    # Its autoscaled pool states nodes.min 1, which Karpenter does not keep, so its quota depends on
    # autoscaling (tests/test_static_pools.py).
    codes = (
        "[cpu-only-work]",
        "[rdma-pod-security]",
        "[cloud-hostnames]",
        "[karpenter-minimum]",
        "[pool-capacity-autoscaled]",
    )
    assert all(line.endswith(codes) for line in warnings), result.stderr
    assert ": error: " not in result.stderr


@pytest.mark.parametrize("case", _params())
def test_bad_input_is_refused(tmp_path: Path, case: Bad) -> None:
    repo = _valid_repo(tmp_path / "repo")
    first = run("render", "--root", str(repo))
    assert first.code == 0, first.stderr
    before = snapshot(repo / "output")
    assert len(before) > 10

    _break(repo, case)
    code, stdout, stderr = _render(repo, case.subprocess)

    assert "Traceback" not in stdout + stderr, stderr
    assert "internal error" not in stderr, stderr
    assert code == 1, f"exit {code}\n{stderr}"
    prefix = case.where + (":" if case.where.count(":") == 1 else "")
    found = [
        line for line in stderr.splitlines() if line.startswith(prefix) and ": error: " in line
    ]
    assert found, f"no error at {case.where}:\n{stderr}"
    if case.where.count(":") == 2:
        assert any(line.startswith(f"{case.where}: error: ") for line in found), stderr
    assert any(re.search(case.phrase, line) for line in found), f"{case.phrase!r} not in:\n{stderr}"
    assert snapshot(repo / "output") == before, "a refused render touched output/"


# --- a valid file with a byte-order mark and CRLF line ends --------------------------------------


def test_bom_and_crlf_file_is_valid(tmp_path: Path) -> None:
    repo = _valid_repo(tmp_path / "repo")
    expected = run("render", "--root", str(repo), "--out", str(tmp_path / "lf"))
    assert expected.code == 0, expected.stderr
    for relative, text in ((CLUSTER_FILE, CLUSTER), (TENANT_FILE, TENANT)):
        (repo / relative).write_bytes(b"\xef\xbb\xbf" + text.replace("\n", "\r\n").encode())
    result = run("render", "--root", str(repo), "--out", str(tmp_path / "crlf"))
    assert "Traceback" not in result.stdout + result.stderr
    assert result.code == 0, result.stderr
    # the same inputs, only encoded differently: byte-identical output
    assert snapshot(tmp_path / "crlf") == snapshot(tmp_path / "lf")


def test_bom_and_crlf_positions_stay_right(tmp_path: Path) -> None:
    """A BOM and CRLF must not shift the reported line or column."""
    repo = _valid_repo(tmp_path / "repo")
    broken = _edit(TENANT, "      - pool: train\n", "      - pool: trian\n")
    (repo / TENANT_FILE).write_bytes(b"\xef\xbb\xbf" + broken.replace("\n", "\r\n").encode())
    result = run("check", "--root", str(repo))
    assert result.code == 1
    assert f"{TENANT_FILE}:8:15: error: allocations[0].quotas[0].pool: " in result.stderr, (
        result.stderr
    )


# --- several errors in several files, in every output format -------------------------------------

SECOND_TENANT = """\
name: team-b
allocations:
  - cluster: c1
    quotas:
      - pool: train
        gpus: 8
        borrowingLimit: 8
"""


def _many_errors_repo(root: Path) -> Path:
    repo = _valid_repo(root)
    cluster = _edit(CLUSTER, "range: 192.168.20.0/24", "range: 192.168.20.0/33")  # 52:38
    (repo / CLUSTER_FILE).write_text(cluster)
    tenant = _edit(TENANT, "priorityClass: research", "priorityClas: research")  # 3:1
    (repo / TENANT_FILE).write_text(tenant)
    (repo / "tenants/team-b.yaml").write_text(SECOND_TENANT)  # 7:25 borrowingLimit without cohort
    return repo


EXPECTED_MANY = [
    ("clusters/c1.yaml", 52, 38, "networks[0].ipam.range"),
    ("tenants/team-a.yaml", 3, 1, "priorityClas"),
]


def test_all_errors_of_all_files_in_one_run(tmp_path: Path) -> None:
    repo = _many_errors_repo(tmp_path / "repo")
    result = run("check", "--root", str(repo))
    assert result.code == 1
    assert "Traceback" not in result.stderr
    for file, line, col, path in EXPECTED_MANY:
        assert f"{file}:{line}:{col}: error: {path}: " in result.stderr, result.stderr
    # team-b's borrowing limit needs the cluster; with the cluster file broken it may be skipped, so
    # only what does not depend on the broken cluster is required above.
    lines = [line for line in result.stderr.splitlines() if line]
    errors = [line for line in lines if ": error: " in line]
    warnings = [line for line in lines if ": warning: " in line]
    files = {line.split(":", 1)[0] for line in errors + warnings}
    summary = f"{len(errors)} error{'s' if len(errors) != 1 else ''}, {len(warnings)} warning{'s' if len(warnings) != 1 else ''} in {len(files)} file{'s' if len(files) != 1 else ''}"
    assert summary in lines, result.stderr
    assert len(errors) >= 2 and len(files) >= 2


def test_errors_in_three_files_are_all_reported(tmp_path: Path) -> None:
    """Three independent breaks in three files (the cluster stays loadable): three errors."""
    repo = _valid_repo(tmp_path / "repo")
    (repo / CLUSTER_FILE).write_text(
        _edit(CLUSTER, "    pools: [train]\n", "    pools: [trian]\n")
    )  # 53:13
    (repo / TENANT_FILE).write_text(
        _edit(TENANT, "networks: [ib-net]", "networks: [ib-nte]")
    )  # 14:16
    (repo / "tenants/team-b.yaml").write_text(SECOND_TENANT)  # 7:25
    result = run("render", "--root", str(repo))
    assert result.code == 1
    assert (
        f"{CLUSTER_FILE}:53:13: error: networks[0].pools[0]: unknown pool 'trian'" in result.stderr
    ), result.stderr
    assert f"{TENANT_FILE}:14:16: error: allocations[0].networks[0]: " in result.stderr
    assert (
        "tenants/team-b.yaml:7:25: error: allocations[0].quotas[0].borrowingLimit: "
        in result.stderr
    )
    assert (
        "clusters/c1.yaml:25:18: warning: nodePools[0].nodes.min: tenants' 16 GPUs of pool train (team-a 8 + team-b 8) all depend on autoscaling"
        in result.stderr
    )
    assert result.stderr.splitlines()[-1] == "3 errors, 6 warnings in 3 files", (
        result.stderr
    )  # 2 cloud-hostnames, karpenter-minimum
    assert not (repo / "output").exists()


def test_github_format(tmp_path: Path) -> None:
    repo = _many_errors_repo(tmp_path / "repo")
    result = run("check", "--root", str(repo), "--format", "github")
    assert result.code == 1
    lines = result.stderr.splitlines()
    assert (
        "::error file=clusters/c1.yaml,line=52,col=38::networks[0].ipam.range: " in result.stderr
    ), result.stderr
    assert (
        "::error file=tenants/team-a.yaml,line=3,col=1::priorityClas: unknown field"
        in result.stderr
    )
    annotations = [line for line in lines if line.startswith("::")]
    assert len(annotations) >= 2
    assert all(
        re.match(r"^::(error|warning) file=[^,]+,line=\d+,col=\d+::", line) for line in annotations
    )


@pytest.mark.parametrize("command", ["check", "render"])
def test_json_format(tmp_path: Path, command: str) -> None:
    repo = _many_errors_repo(tmp_path / "repo")
    result = run(command, "--root", str(repo), "--format", "json")
    assert result.code == 1 and not (repo / "output").exists()
    # the result, on stdout and nothing else: `check --format json > f` keeps all of it
    assert result.stderr == ""
    rows = json.loads(result.stdout)
    assert isinstance(rows, list) and len(rows) >= 2
    want = {
        "file": "clusters/c1.yaml",
        "line": 52,
        "col": 38,
        "severity": "error",
        "path": "networks[0].ipam.range",
    }
    assert any(want.items() <= row.items() for row in rows), rows
    assert any(
        row["file"] == "tenants/team-a.yaml" and row["line"] == 3 and row["col"] == 1
        for row in rows
    )
    assert all({"file", "line", "col", "severity", "message"} <= set(row) for row in rows)


# --- errors that follow from another error -------------------------------------------------------


def test_an_invalid_cluster_file_is_not_reported_as_unknown(tmp_path: Path) -> None:
    repo = _valid_repo(tmp_path / "repo")
    (repo / CLUSTER_FILE).write_text(_edit(CLUSTER, "provider: aws\n", "provider: aws2\n"))
    result = run("check", "--root", str(repo))
    assert result.code == 1
    assert f"{CLUSTER_FILE}:3:11: error: provider: " in result.stderr
    assert "unknown cluster" not in result.stderr, result.stderr


# --- YAML merge keys (a common way to template pools) --------------------------------------------

MERGE_POOLS = """\
  - &dev
    name: dev
    gpu: L40S
    gpusPerNode: 4
    cpu: 48
    memory: 360Gi
    nodes: {count: 1}
    labels: {example.com/fabric: dev}
    hostnames: ["dev-[0-9]+"]
    sharing:
      timeSlicing: {replicas: 4}
  - <<: *dev
    name: dev2
    labels: {example.com/fabric: dev2}
    hostnames: ["dev2-[0-9]+"]
"""


def test_yaml_merge_key_does_not_crash(tmp_path: Path) -> None:
    repo = _valid_repo(tmp_path / "repo")
    old = CLUSTER[CLUSTER.index("  - name: dev\n") : CLUSTER.index("networks:")]
    (repo / CLUSTER_FILE).write_text(_edit(CLUSTER, old, MERGE_POOLS))
    try:
        result = run("check", "--root", str(repo))
    except Exception as exc:  # noqa: BLE001 - the in-process CLI lets a crash through
        pytest.fail(f"crash: {type(exc).__name__}: {exc}")
    assert "Traceback" not in result.stderr
    # Either supported (the fleet is valid) or refused cleanly at the merge key (line 49, col 5).
    assert result.code == 0 or f"{CLUSTER_FILE}:49:5: error: " in result.stderr, result.stderr
