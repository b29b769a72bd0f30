"""Hypothesis strategies for whole input fleets, and an oracle that judges a render independently.

Shared by tests/test_properties.py (a few hundred examples in CI) and
scripts/nightly_properties.py (thousands). Nothing here asks gpuplan what a fleet means: the GPU
facts below were copied by hand from ../shared/facts/mig-profiles.yaml, capacities are recomputed
from the generated input, and Kueue's admission ceiling is recomputed from the emitted
ClusterQueues and Cohorts.

`fleets(defects=False)` draws fleets that are valid by construction: every rule of
spec/input.md and spec/checks.md that makes an error is respected, so gpuplan must render them
(exit 0; warnings are allowed). `fleets(defects=True)` draws the same fleets and then breaks
0-3 things on purpose (unknown references, wrong units, over-capacity quotas, random MIG layouts
made of real catalog profiles of any model, replicas out of range, limits without a cohort, ...).
Each defect that the spec makes an error is recorded as certain; a render of such a fleet must
fail with a `file:line:col: error:` diagnostic.

`check_compiled()` states the properties for one compile; `check_cli()` does the same through
the command line (exit code, stderr, the written tree).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from fractions import Fraction
from pathlib import Path
from typing import Any

import yaml
from hypothesis import strategies as st

try:  # the C loader is several times faster; the pure-Python one gives the same data
    from yaml import CSafeLoader as _Loader
except ImportError:  # pragma: no cover
    from yaml import SafeLoader as _Loader  # type: ignore[assignment]

# --------------------------------------------------------------------------------------------
# Independent facts: MIG geometry per GPU model (facts/mig-profiles.yaml, copied by hand).
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Profile:
    """A MIG GPU-instance profile: compute slices, memory slices it occupies, max count, starts."""

    compute: int
    size: int
    most: int
    starts: tuple[int, ...]


@dataclass(frozen=True)
class Geometry:
    """The MIG slices of one GPU model and its profiles."""

    compute: int
    memory: int
    profiles: dict[str, Profile]


def _seven(a: int, b: int, c: int, d: int) -> Geometry:
    # nvidia-smi mig -lgipp (facts): 1g {0..6}:1, 1g+me {0..6}:1 (one per GPU), 1g.2x {0,2,4,6}:2,
    # 2g {0,2,4}:2, 3g {0,4}:4, 4g {0}:4, 7g {0}:8.
    return Geometry(7, 8, {
        f"1g.{a}gb": Profile(1, 1, 7, (0, 1, 2, 3, 4, 5, 6)),
        f"1g.{a}gb+me": Profile(1, 1, 1, (0, 1, 2, 3, 4, 5, 6)),
        f"1g.{b}gb": Profile(1, 2, 4, (0, 2, 4, 6)),
        f"2g.{b}gb": Profile(2, 2, 3, (0, 2, 4)),
        f"3g.{c}gb": Profile(3, 4, 2, (0, 4)),
        f"4g.{c}gb": Profile(4, 4, 1, (0,)),
        f"7g.{d}gb": Profile(7, 8, 1, (0,)),
    })  # fmt: skip


MIG_MODELS: dict[str, Geometry] = {
    "H100-SXM5-80GB": _seven(10, 20, 40, 80),
    "A100-SXM4-80GB": _seven(10, 20, 40, 80),
    "A100-SXM4-40GB": _seven(5, 10, 20, 40),  # the trap: 1g.10gb takes TWO memory slices here
    "H100-NVL-94GB": _seven(12, 24, 47, 94),
    "H200-141GB": _seven(18, 35, 71, 141),
    "A30": Geometry(4, 4, {
        "1g.6gb": Profile(1, 1, 4, (0, 1, 2, 3)),
        "1g.6gb+me": Profile(1, 1, 1, (0, 1, 2, 3)),
        "2g.12gb": Profile(2, 2, 2, (0, 2)),
        "2g.12gb+me": Profile(2, 2, 1, (0, 2)),
        "4g.24gb": Profile(4, 4, 1, (0,)),
    }),
}  # fmt: skip
PLAIN_MODELS = ("L40S", "L4", "T4")
ALL_PROFILES = sorted({p for g in MIG_MODELS.values() for p in g.profiles})
MPS_MAX_CLIENTS = 48  # NVIDIA MPS documentation: up to 48 clients per device


def placeable(model: str, layout: dict[str, int]) -> bool | None:
    """Tell whether a MIG layout fits on one GPU of `model`; None where the facts are unclear.

    Brute force over the allowed start slots, independent of gpuplan.gpus.mig.
    """
    geometry = MIG_MODELS.get(model)
    if geometry is None:
        return False
    items = {p: n for p, n in layout.items() if n}
    if not items:
        return None  # an empty layout: not a placement question
    if any(p not in geometry.profiles for p in items):
        return False
    media = [p for p in items if p.endswith("+me")]
    if len(media) > 1:
        return None  # two different +me profiles (A30): the facts do not say
    if any(n > geometry.profiles[p].most for p, n in items.items()):
        return False
    if sum(geometry.profiles[p].compute * n for p, n in items.items()) > geometry.compute:
        return False
    instances = sorted(
        (p for p, n in items.items() for _ in range(n)), key=lambda p: -geometry.profiles[p].size
    )
    used = [False] * geometry.memory

    def place(index: int) -> bool:
        if index == len(instances):
            return True
        spec = geometry.profiles[instances[index]]
        for start in spec.starts:
            span = range(start, start + spec.size)
            if start + spec.size <= geometry.memory and not any(used[s] for s in span):
                for s in span:
                    used[s] = True
                if place(index + 1):
                    return True
                for s in span:
                    used[s] = False
        return False

    return place(0)


# --------------------------------------------------------------------------------------------
# Kubernetes quantities, parsed independently of gpuplan.model.quantity.
# --------------------------------------------------------------------------------------------

_QUANTITY = re.compile(r"^([0-9]+(?:\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+|[KMGTPE]i|[numkMGTPE])?$")
_SCALE = {
    None: Fraction(1), "n": Fraction(1, 10**9), "u": Fraction(1, 10**6), "m": Fraction(1, 1000),
    "k": Fraction(10**3), "M": Fraction(10**6), "G": Fraction(10**9), "T": Fraction(10**12),
    "P": Fraction(10**15), "E": Fraction(10**18), "Ki": Fraction(2**10), "Mi": Fraction(2**20),
    "Gi": Fraction(2**30), "Ti": Fraction(2**40), "Pi": Fraction(2**50), "Ei": Fraction(2**60),
}  # fmt: skip


def quantity(value: Any) -> Fraction | None:
    """Return a Kubernetes quantity's exact value, or None when it is not one."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return Fraction(value) if value >= 0 else None
    if isinstance(value, float):
        return Fraction(str(value)) if math.isfinite(value) and value >= 0 else None
    if not isinstance(value, str):
        return None
    match = _QUANTITY.match(value.strip())
    if match is None:
        return None
    number, suffix = Fraction(match[1]), match[2]
    if suffix and suffix[0] in "eE":
        return number * Fraction(10) ** int(suffix[1:])
    return number * _SCALE[suffix]


# --------------------------------------------------------------------------------------------
# The generated case.
# --------------------------------------------------------------------------------------------

SYSTEM_NAMESPACES = {
    "default",
    "kube-system",
    "kube-public",
    "kube-node-lease",
    "argocd",
    "gpu-operator",
    "kueue-system",
    "volcano-system",
}
K8S_VERSIONS = ("1.30", "1.33", "1.35")
KUEUE_VERSIONS = (
    "v0.19.2",
    "v0.19.2",
    "v0.14.8",
    "v0.12.10",
)  # v1beta2 from 0.15, Cohort kind from 0.13 (supported releases: gpuplan/components/kueue.py)
INSTANCE_TYPE_GPUS = {"p5.48xlarge": 8, "g6e.12xlarge": 4}  # AWS EC2 instance pages


@dataclass(frozen=True)
class Defect:
    """Something broken on purpose: which file, what, and whether the spec makes it an error."""

    file: str | None
    what: str
    certain: bool = True
    kind: str = ""  # the defect's name (set by fleets())


@dataclass
class Case:
    """One generated fleet: input data per file, and the defects put in."""

    clusters: dict[str, dict[str, Any]]  # file stem -> data
    tenants: dict[str, dict[str, Any]]
    defects: list[Defect] = field(default_factory=list)
    hierarchy: bool = False
    touched: set[int] = field(default_factory=set, repr=False)  # ids of dicts a defect changed

    def fresh(self, items: list[Any], key: Callable[[Any], dict[str, Any]]) -> list[Any]:
        """Return the items whose dict no defect has changed yet (so no defect undoes another)."""
        return [item for item in items if id(key(item)) not in self.touched]

    def touch(self, *objs: dict[str, Any]) -> None:
        """Mark dicts as changed by a defect."""
        self.touched.update(id(o) for o in objs)

    def files(self) -> dict[str, str]:
        """Return relative path -> YAML text."""
        out = {f"clusters/{stem}.yaml": dump(data) for stem, data in self.clusters.items()}
        out |= {f"tenants/{stem}.yaml": dump(data) for stem, data in self.tenants.items()}
        return out

    def write(self, root: Path) -> Path:
        """Write the input files under root (clusters/ and tenants/ always exist)."""
        (root / "clusters").mkdir(parents=True, exist_ok=True)
        (root / "tenants").mkdir(parents=True, exist_ok=True)
        for relative, text in self.files().items():
            (root / relative).write_text(text, encoding="utf-8")
        return root

    def describe(self) -> str:
        """Return the files and defects, for failure messages."""
        parts = [f"--- {p}\n{t}" for p, t in sorted(self.files().items())]
        parts.append(
            "defects: "
            + (
                "; ".join(
                    f"{d.file or '(any file)'}: {d.what}{'' if d.certain else ' (uncertain)'}"
                    for d in self.defects
                )
                or "none"
            )
        )
        return "\n".join(parts)

    def __repr__(self) -> str:
        return "Case(\n" + self.describe() + "\n)"

    def _repr_pretty_(
        self, printer: Any, cycle: bool
    ) -> None:  # what hypothesis prints for a falsifying example
        printer.text(repr(self))


def dump(data: Any) -> str:
    """Return YAML text for input data (block style, keys in the order written)."""
    return yaml.safe_dump(
        data, sort_keys=False, default_flow_style=False, allow_unicode=True, width=1000
    )


# --------------------------------------------------------------------------------------------
# Valid fleets, by construction.
# --------------------------------------------------------------------------------------------

CPU_CHOICES = (16, 48, 96, 192, "191500m", 64.5)
MEMORY_CHOICES = ("64Gi", "360Gi", "1000Gi", "1900Gi", "2Ti", 549755813888, "400G")


def _draw_layout(draw: Callable, model: str, single: bool) -> dict[str, int]:
    """Draw a layout that the oracle places on one GPU (one profile type when `single`)."""
    geometry = MIG_MODELS[model]
    names = sorted(geometry.profiles)
    if single:
        profile = draw(st.sampled_from([n for n in names if "+" not in n]))
        count = draw(st.integers(1, geometry.profiles[profile].most))
        while count > 1 and not placeable(model, {profile: count}):
            count -= 1
        return {profile: count}
    layout: dict[str, int] = {}
    for pick in draw(st.lists(st.sampled_from(names), min_size=1, max_size=7)):
        trial = dict(layout)
        trial[pick] = trial.get(pick, 0) + 1
        if placeable(model, trial):
            layout = trial
    if not any("+" not in p for p in layout):  # keep at least one profile tenants can be granted
        layout = {
            draw(
                st.sampled_from(
                    [n for n in names if "+" not in n and geometry.profiles[n].most >= 1]
                )
            ): 1
        }
    return layout


def _draw_pool(
    draw: Callable, cluster: str, index: int, autoscale_ok: bool, strategy: str | None
) -> dict[str, Any]:
    name = f"p{index}"
    single = strategy == "single"
    shapes = ["exclusive", "mig", "mig-devices", "time-slicing", "mig+ts"]
    if strategy != "mixed":
        shapes.append("mps")  # the device plugin runs MPS only with migStrategy single
    shape = draw(st.sampled_from(shapes))
    mig = shape in ("mig", "mig-devices", "mig+ts")
    model = draw(
        st.sampled_from(sorted(MIG_MODELS) if mig else sorted(MIG_MODELS) + list(PLAIN_MODELS))
    )
    gpus = draw(st.integers(1, 8))
    pool: dict[str, Any] = {"name": name, "gpu": model, "gpusPerNode": gpus}
    pool["cpu"] = draw(st.sampled_from(CPU_CHOICES))
    pool["memory"] = draw(st.sampled_from(MEMORY_CHOICES))
    if autoscale_ok and draw(st.booleans()):
        low = draw(st.integers(0, 2))
        pool["nodes"] = {"min": low, "max": draw(st.integers(max(low, 1), 6))}
        types = ["p5.48xlarge"] if gpus == 8 and draw(st.booleans()) else [f"gpu-{gpus}x"]
        pool["karpenter"] = {"instanceTypes": types}
        if draw(st.booleans()):
            pool["karpenter"]["capacityTypes"] = draw(
                st.sampled_from([["on-demand"], ["spot"], ["spot", "on-demand"]])
            )
    else:
        pool["nodes"] = {"count": draw(st.integers(0, 4) | st.just(2))}
        pool["hostnames"] = [f"{cluster}-{name}-[0-9]+"]
    if draw(st.integers(0, 3)) == 0:
        pool["labels"] = {"example.com/fabric": f"rack-{index}"}
    if shape == "mig":
        pool["sharing"] = {"mig": {"layout": _draw_layout(draw, model, single)}}
    elif shape == "mig+ts":
        pool["sharing"] = {
            "mig": {"layout": _draw_layout(draw, model, single)},
            "timeSlicing": {"replicas": draw(st.integers(2, 8))},
        }
    elif shape == "mig-devices":
        groups = draw(st.lists(st.integers(0, 2), min_size=gpus, max_size=gpus))
        used = sorted(set(groups))
        devices = []
        for group in used:
            members = [g for g, owner in enumerate(groups) if owner == group]
            devices.append({"gpus": members, "layout": _draw_layout(draw, model, single)})
        if single:  # one profile type per node under migStrategy single
            for device in devices[1:]:
                device["layout"] = dict(devices[0]["layout"])
        pool["sharing"] = {"mig": {"devices": devices}}
    elif shape == "time-slicing":
        slicing: dict[str, Any] = {"replicas": draw(st.integers(2, 8))}
        if draw(st.integers(0, 4)) == 0:
            slicing["renameByDefault"] = False
        pool["sharing"] = {"timeSlicing": slicing}
    elif shape == "mps":
        pool["sharing"] = {"mps": {"replicas": draw(st.integers(2, MPS_MAX_CLIENTS))}}
    elif draw(st.booleans()):
        pool["sharing"] = "exclusive"
    return pool


def _draw_cluster(draw: Callable, index: int, hierarchy: bool) -> dict[str, Any]:
    name = f"c{index}"
    # No gcp: without a GPU Operator a GKE cluster runs Google's GPU stack, whose units (MIG partitions and
    # time-shared GPUs as nvidia.com/gpu) this oracle does not recompute; tests/test_gke.py covers them.
    provider = draw(st.sampled_from(["aws", "azure", "onprem"]))
    data: dict[str, Any] = {
        "name": name,
        "kubernetesVersion": draw(st.sampled_from(K8S_VERSIONS)),
        "provider": provider,
        "gitops": {"repoURL": "https://git.example.com/fleet.git"},
    }
    components: dict[str, Any] = {}
    strategy = None
    if draw(st.integers(0, 4)) > 0:
        strategy = draw(st.sampled_from(["mixed", "mixed", "single"]))
        components["gpuOperator"] = {
            "version": "v26.7.0",
            "driverVersion": "580.82.07",
            "migStrategy": strategy,
        }
    if hierarchy:  # Cohort objects (and so cohort trees) exist from Kueue v0.13 on
        components["kueue"] = {"version": "v0.19.2"}
    elif draw(st.integers(0, 4)) > 0:
        components["kueue"] = {"version": draw(st.sampled_from(KUEUE_VERSIONS))}
    if draw(st.booleans()):
        components["volcano"] = {"version": "v1.15.1"}
        if "kueue" in components:
            components["quotaAuthority"] = "kueue"  # one quota authority per cluster
    karpenter = provider in ("aws", "azure") and draw(st.booleans())
    if karpenter:
        # gpuplan renders the provider's node class; the provider's own release line (gpuplan/components/karpenter.py)
        if provider == "aws":
            node_class: dict[str, Any] = {
                "group": "karpenter.k8s.aws",
                "kind": "EC2NodeClass",
                "name": "gpu",
            }
            node_class["aws"] = {"role": f"KarpenterNodeRole-{name}"}
            version = "v1.14.1"
        else:
            node_class = {
                "group": "karpenter.azure.com",
                "kind": "AKSNodeClass",
                "name": "gpu",
                "azure": {"imageFamily": "Ubuntu2204"},
            }
            version = "v1.14.2"
        components["karpenter"] = {"version": version, "nodeClass": node_class}
    data["components"] = components
    classes = draw(
        st.lists(
            st.sampled_from([("high", 1000), ("low", 10), ("batch", 1)]),
            unique_by=lambda c: c[0],
            max_size=2,
        )
    )
    if classes:
        data["priorityClasses"] = [{"name": n, "value": v} for n, v in classes]
    cohorts = draw(
        st.lists(
            st.sampled_from(["shared", "research", "infra"]),
            unique=True,
            min_size=2 if hierarchy else 0,
            max_size=3,
        )
    )
    if cohorts:
        data["cohorts"] = []
        for position, cohort in enumerate(cohorts):
            entry: dict[str, Any] = {"name": cohort}
            if hierarchy and position > 0 and draw(st.integers(0, 3)) > 0:
                entry["parent"] = cohorts[draw(st.integers(0, position - 1))]
            data["cohorts"].append(entry)
    data["nodePools"] = [
        _draw_pool(draw, name, i, karpenter, strategy) for i in range(draw(st.integers(1, 3)))
    ]
    networks = []
    for n_index in range(draw(st.integers(0, 2))):
        kind = draw(st.sampled_from(["macvlan", "sriov", "host-device"]))
        network: dict[str, Any] = {"name": f"net{n_index}", "type": kind}
        if (
            kind == "sriov"
        ):  # sriov-cni takes VFs from the SR-IOV device plugin (never an RDMA shared device)
            network["resourceName"] = "nvidia.com/sriov_vf"
            network["sriov"] = {"pfNames": ["ens1f0"], "numVfs": 64}
        else:
            network["master"] = f"eth{n_index + 1}"
        network["ipam"] = {"type": "whereabouts", "range": f"10.{index}.{n_index * 16}.0/20"}
        pools = [p["name"] for p in data["nodePools"]]
        network["pools"] = draw(
            st.lists(st.sampled_from(pools), min_size=1, max_size=len(pools), unique=True)
        )
        networks.append(network)
    if networks:
        data["networks"] = networks
    return data


def pool_resources(cluster: dict[str, Any], pool: dict[str, Any]) -> dict[str, int]:
    """Return resource -> units per node, from the input alone (spec/input.md, "MIG", sharing)."""
    strategy = cluster.get("components", {}).get("gpuOperator", {}).get("migStrategy", "mixed")
    gpus = pool.get("gpusPerNode")
    if gpus is None:
        types = {INSTANCE_TYPE_GPUS.get(t) for t in pool["karpenter"]["instanceTypes"]}
        (gpus,) = types
    sharing = pool.get("sharing") or {}
    if sharing == "exclusive":
        sharing = {}
    sharer = sharing.get("timeSlicing") or sharing.get("mps")
    replicas = sharer["replicas"] if sharer else 1
    suffix = ".shared" if sharer and sharer.get("renameByDefault", True) else ""
    if "mig" not in sharing:
        return {"nvidia.com/gpu" + suffix: gpus * replicas}
    mig = sharing["mig"]
    groups = (
        [(list(range(gpus)), mig["layout"])]
        if "layout" in mig
        else [(d["gpus"], d["layout"]) for d in mig["devices"]]
    )
    out: dict[str, int] = {}
    for members, layout in groups:
        for profile, count in layout.items():
            resource = (
                "nvidia.com/gpu" if strategy == "single" else f"nvidia.com/mig-{profile}"
            ) + suffix
            out[resource] = out.get(resource, 0) + len(members) * count * replicas
    return out


def nodes_most(pool: dict[str, Any]) -> int:
    """Return the pool's node count at its largest size."""
    nodes = pool["nodes"]
    return nodes["count"] if "count" in nodes else nodes["max"]


def _profile_resource(cluster: dict[str, Any], pool: dict[str, Any], profile: str) -> str:
    strategy = cluster.get("components", {}).get("gpuOperator", {}).get("migStrategy", "mixed")
    sharing = pool["sharing"]
    sharer = sharing.get("timeSlicing")
    suffix = ".shared" if sharer and sharer.get("renameByDefault", True) else ""
    return ("nvidia.com/gpu" if strategy == "single" else f"nvidia.com/mig-{profile}") + suffix


def mig_profiles(pool: dict[str, Any]) -> list[str]:
    """Return the profiles a MIG pool's layouts give (non-zero counts), sorted."""
    sharing = pool.get("sharing")
    if not isinstance(sharing, dict) or "mig" not in sharing:
        return []
    mig = sharing["mig"]
    layouts = [mig["layout"]] if "layout" in mig else [d["layout"] for d in mig["devices"]]
    return sorted({p for layout in layouts for p, n in layout.items() if n})


def _gpu_share(pools: list[dict[str, Any]], quotas: list[dict[str, Any]], what: str) -> Fraction:
    """Return the cpu or memory that goes with the quotas' GPUs: per GPU of a pool, times the GPU
    fraction of each unit (a share: 1/replicas; a MIG instance: its compute slices / all)."""
    by_name = {p["name"]: p for p in pools}
    total = Fraction(0)
    for quota in quotas:
        pool = by_name[quota["pool"]]
        per_gpu = quantity(pool[what]) / pool["gpusPerNode"]
        sharing = pool.get("sharing") if isinstance(pool.get("sharing"), dict) else {}
        replicas = (sharing.get("timeSlicing") or sharing.get("mps") or {}).get("replicas", 1)
        if "mig" in quota:
            geometry = MIG_MODELS[pool["gpu"]]
            for profile, count in quota["mig"].items():
                total += (
                    per_gpu
                    * count
                    * Fraction(geometry.profiles[profile].compute, geometry.compute)
                    / replicas
                )
        else:
            total += per_gpu * quota["gpus"] / replicas
    return total


def _draw_allocation(
    draw: Callable, cluster: dict[str, Any], left: dict[tuple[str, str, str], int]
) -> dict[str, Any] | None:
    pools = cluster["nodePools"]
    chosen = draw(
        st.lists(st.sampled_from(range(len(pools))), min_size=1, max_size=len(pools), unique=True)
    )
    cohorts = [c["name"] for c in cluster.get("cohorts", [])]
    cohort = draw(st.sampled_from(cohorts)) if cohorts and draw(st.integers(0, 3)) > 0 else None
    alloc: dict[str, Any] = {"cluster": cluster["name"]}
    if cohort:
        alloc["cohort"] = cohort
    if draw(st.booleans()):
        alloc["weight"] = draw(st.integers(1, 100))
    quotas = []
    whole_gpu_pools = []
    for p_index in chosen:
        pool = pools[p_index]
        quota: dict[str, Any] = {"pool": pool["name"]}
        profiles = [p for p in mig_profiles(pool) if "+" not in p]
        if isinstance(pool.get("sharing"), dict) and "mig" in pool["sharing"]:
            if not profiles:
                continue
            picked = draw(
                st.lists(st.sampled_from(profiles), min_size=1, max_size=len(profiles), unique=True)
            )
            mig = {}
            for profile in picked:
                key = (cluster["name"], pool["name"], _profile_resource(cluster, pool, profile))
                mig[profile] = draw(st.integers(0, max(left[key], 0)))
                left[key] -= mig[profile]
            quota["mig"] = mig
            if cohort and draw(st.integers(0, 2)) == 0:
                quota["lendingLimit"] = {p: draw(st.integers(0, n)) for p, n in mig.items()}
            if cohort and draw(st.integers(0, 2)) == 0:
                quota["borrowingLimit"] = {p: draw(st.integers(0, 16)) for p in mig}
        else:
            (resource,) = pool_resources(cluster, pool)
            key = (cluster["name"], pool["name"], resource)
            gpus = draw(st.integers(0, max(left[key], 0)))
            left[key] -= gpus
            quota["gpus"] = gpus
            if resource == "nvidia.com/gpu":
                whole_gpu_pools.append(pool)
            if cohort and draw(st.integers(0, 2)) == 0:
                quota["lendingLimit"] = draw(st.integers(0, gpus))
            if cohort and draw(st.integers(0, 2)) == 0:
                quota["borrowingLimit"] = draw(st.integers(0, 16))
        quotas.append(quota)
    if not quotas:
        return None
    alloc["quotas"] = quotas
    granted = [p for p in pools if p["name"] in {q["pool"] for q in quotas}]
    # An explicit total is spread over the pools like the GPUs; at most the GPU-derived amount
    # keeps every pool within its nodes whatever the other tenants ask (more is a defect).
    if draw(st.integers(0, 3)) == 0:
        total = _gpu_share(pools, quotas, "cpu")
        if total >= 1:
            alloc["cpu"] = draw(st.integers(1, int(total)))
    if draw(st.integers(0, 3)) == 0:
        total = _gpu_share(pools, quotas, "memory")
        if total >= 2**30:
            alloc["memory"] = f"{draw(st.integers(1, int(total / 2**30)))}Gi"
    if whole_gpu_pools and draw(st.integers(0, 3)) == 0:
        alloc["maxGpusPerPod"] = draw(
            st.integers(1, max(p["gpusPerNode"] for p in whole_gpu_pools))
        )
    networks = [
        n["name"]
        for n in cluster.get("networks", [])
        if set(n["pools"]) & {p["name"] for p in granted}
    ]
    if networks and draw(st.booleans()):
        alloc["networks"] = draw(st.lists(st.sampled_from(networks), min_size=1, unique=True))
    return alloc


def _draw_tenant(
    draw: Callable,
    index: int,
    clusters: list[dict[str, Any]],
    left: dict[tuple[str, str, str], int],
) -> dict[str, Any]:
    name = f"team-{index}"
    tenant: dict[str, Any] = {"name": name}
    if draw(st.integers(0, 3)) == 0:
        tenant["namespaces"] = [name, f"{name}-batch"]
    if draw(st.booleans()):
        tenant["owners"] = [f"group:{name}-admins"]
    if draw(st.integers(0, 3)) == 0:
        tenant["podSecurity"] = draw(st.sampled_from(["restricted", "baseline", "privileged"]))
    # A GPU share's cpu can be below the default container request (100m: a time-sliced GPU of a
    # 16-core node split 48 ways is 41m); gpuplan refuses that (check container-defaults), so a
    # valid fleet's tenants ask for less by default.
    tenant["containerDefaults"] = {"requests": {"cpu": "10m", "memory": "16Mi"}}
    on = draw(st.lists(st.sampled_from(range(len(clusters))), max_size=len(clusters), unique=True))
    allocations = []
    for c_index in sorted(on):
        alloc = _draw_allocation(draw, clusters[c_index], left)
        if alloc is not None:
            allocations.append(alloc)
    if allocations:
        tenant["allocations"] = allocations
        common = None
        for alloc in allocations:
            cluster = next(c for c in clusters if c["name"] == alloc["cluster"])
            names = {p["name"] for p in cluster.get("priorityClasses", [])}
            common = names if common is None else common & names
        if common and draw(st.booleans()):
            tenant["priorityClass"] = draw(st.sampled_from(sorted(common)))
    return tenant


def capacities(case_clusters: Iterable[dict[str, Any]]) -> dict[tuple[str, str, str], int]:
    """Return (cluster, pool, resource) -> units at nodes.max (or count), from the input alone."""
    out: dict[tuple[str, str, str], int] = {}
    for cluster in case_clusters:
        for pool in cluster["nodePools"]:
            for resource, per_node in pool_resources(cluster, pool).items():
                out[(cluster["name"], pool["name"], resource)] = per_node * nodes_most(pool)
    return out


# --------------------------------------------------------------------------------------------
# Defects: each breaks one thing; `certain` when the spec makes it an error.
# --------------------------------------------------------------------------------------------


def _quotas(case: Case) -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
    return [
        (stem, alloc, q)
        for stem, t in case.tenants.items()
        for alloc in t.get("allocations", [])
        for q in alloc["quotas"]
    ]


def _pool_of(case: Case, cluster: str, pool: str) -> tuple[dict[str, Any], dict[str, Any]] | None:
    for data in case.clusters.values():
        if data.get("name") == cluster:
            for item in data.get("nodePools", []):
                if item.get("name") == pool:
                    return data, item
    return None


def _defect_unknown_pool(draw: Callable, case: Case) -> Defect | None:
    quotas = case.fresh(_quotas(case), lambda x: x[2])
    if not quotas:
        return None
    stem, _, quota = draw(st.sampled_from(quotas))
    case.touch(quota)
    quota["pool"] = draw(st.sampled_from(["gpu-pool-x", "p9"]))
    return Defect(f"tenants/{stem}.yaml", "quota on an unknown pool")


def _defect_unknown_cluster(draw: Callable, case: Case) -> Defect | None:
    allocs = [(s, a) for s, t in case.tenants.items() for a in t.get("allocations", [])]
    if not allocs:
        return None
    stem, alloc = draw(st.sampled_from(allocs))
    alloc["cluster"] = "c7"
    return Defect(f"tenants/{stem}.yaml", "allocation on an unknown cluster")


def _defect_unknown_cohort(draw: Callable, case: Case) -> Defect | None:
    allocs = [(s, a) for s, t in case.tenants.items() for a in t.get("allocations", [])]
    if not allocs:
        return None
    stem, alloc = draw(st.sampled_from(allocs))
    alloc["cohort"] = "no-such-cohort"
    return Defect(f"tenants/{stem}.yaml", "unknown cohort")


def _defect_unknown_network(draw: Callable, case: Case) -> Defect | None:
    allocs = [(s, a) for s, t in case.tenants.items() for a in t.get("allocations", [])]
    if not allocs:
        return None
    stem, alloc = draw(st.sampled_from(allocs))
    alloc["networks"] = list(alloc.get("networks", [])) + ["no-such-net"]
    return Defect(f"tenants/{stem}.yaml", "unknown network")


def _defect_unknown_priority(draw: Callable, case: Case) -> Defect | None:
    stems = [s for s, t in case.tenants.items() if t.get("allocations")]
    if not stems:
        return None
    stem = draw(st.sampled_from(stems))
    case.tenants[stem]["priorityClass"] = "urgent"
    return Defect(f"tenants/{stem}.yaml", "unknown priority class")


WRONG_COUNTS = ("8", 2.5, -1, "8 GPUs", True, None, [4])


def _defect_wrong_gpus_unit(draw: Callable, case: Case) -> Defect | None:
    quotas = case.fresh(_quotas(case), lambda x: x[2])
    if not quotas:
        return None
    stem, _, quota = draw(st.sampled_from(quotas))
    case.touch(quota)
    bad = draw(st.sampled_from(WRONG_COUNTS))
    if "gpus" in quota:
        quota["gpus"] = bad
    else:
        profile = min(quota["mig"])
        quota["mig"][profile] = bad
    return Defect(f"tenants/{stem}.yaml", f"quota count {bad!r}")


WRONG_QUANTITIES = ("12 cores", "1.5XB", "-4", "1900GB", "Gi", "", True, [1], "0x10", "1e400")


def _defect_wrong_quantity(draw: Callable, case: Case) -> Defect | None:
    targets: list[tuple[str, dict[str, Any], str]] = []
    for stem, data in case.clusters.items():
        for pool in data.get("nodePools", []):
            targets += [
                (f"clusters/{stem}.yaml", pool, "cpu"),
                (f"clusters/{stem}.yaml", pool, "memory"),
            ]
    for stem, data in case.tenants.items():
        for alloc in data.get("allocations", []):
            targets += [
                (f"tenants/{stem}.yaml", alloc, "cpu"),
                (f"tenants/{stem}.yaml", alloc, "memory"),
            ]
    if not targets:
        return None
    file, where, key = draw(st.sampled_from(targets))
    bad = draw(st.sampled_from(WRONG_QUANTITIES))
    where[key] = bad
    return Defect(file, f"{key}: {bad!r}")


def _defect_wrong_quota_kind(draw: Callable, case: Case) -> Defect | None:
    quotas = []
    for stem, alloc, quota in _quotas(case):
        found = _pool_of(case, alloc["cluster"], quota["pool"])
        if found is not None:
            quotas.append((stem, quota, found[1]))
    quotas = case.fresh(quotas, lambda x: x[1])
    if not quotas:
        return None
    stem, quota, pool = draw(st.sampled_from(quotas))
    case.touch(quota)
    for key in ("gpus", "mig", "borrowingLimit", "lendingLimit"):
        quota.pop(key, None)
    if mig_profiles(pool):
        quota["gpus"] = 1
        return Defect(f"tenants/{stem}.yaml", "gpus on a MIG pool")
    quota["mig"] = {draw(st.sampled_from(ALL_PROFILES)): 1}
    return Defect(f"tenants/{stem}.yaml", "mig on a pool without MIG")


def _defect_over_capacity(draw: Callable, case: Case) -> Defect | None:
    quotas = [
        (s, a, q)
        for s, a, q in case.fresh(_quotas(case), lambda x: x[2])
        if _pool_of(case, a["cluster"], q["pool"])
    ]
    quotas = [
        (s, a, q)
        for s, a, q in quotas
        if id(_pool_of(case, a["cluster"], q["pool"])[1]) not in case.touched
    ]  # type: ignore[index]
    if not quotas:
        return None
    _, alloc, quota = draw(st.sampled_from(quotas))
    cluster, pool = _pool_of(case, alloc["cluster"], quota["pool"])  # type: ignore[misc]
    case.touch(quota, pool)
    extra = draw(st.integers(1, 3))
    if "gpus" in quota:
        (per_node,) = pool_resources(cluster, pool).values()
        quota["gpus"] = per_node * nodes_most(pool) + extra
    else:
        profile = min(quota["mig"])
        per_node = pool_resources(cluster, pool)[_profile_resource(cluster, pool, profile)]
        quota["mig"][profile] = per_node * nodes_most(pool) + extra
    quota.pop("lendingLimit", None)
    return Defect(
        None, "a quota above the pool's capacity"
    )  # reported at the last grant of the pool


def _defect_random_layout(draw: Callable, case: Case) -> Defect | None:
    pools = case.fresh(
        [(s, p) for s, c in case.clusters.items() for p in c.get("nodePools", [])], lambda x: x[1]
    )
    if not pools:
        return None
    stem, pool = draw(st.sampled_from(pools))
    case.touch(pool)
    model = (
        pool["gpu"]
        if pool["gpu"] in MIG_MODELS and draw(st.integers(0, 3)) > 0
        else draw(st.sampled_from(sorted(MIG_MODELS) + list(PLAIN_MODELS)))
    )
    own = sorted(MIG_MODELS[model].profiles) if model in MIG_MODELS else []
    names = st.sampled_from(own) if own and draw(st.booleans()) else st.sampled_from(ALL_PROFILES)
    layout = draw(st.dictionaries(names, st.integers(1, 4), min_size=1, max_size=4))
    pool["gpu"] = model
    sharing = pool.get("sharing") if isinstance(pool.get("sharing"), dict) else {}
    sharing = {k: v for k, v in sharing.items() if k == "timeSlicing"}
    sharing["mig"] = {"layout": layout}
    pool["sharing"] = sharing
    verdict = placeable(model, layout)
    return Defect(
        f"clusters/{stem}.yaml", f"MIG layout {layout} on {model}", certain=verdict is False
    )


def _defect_replicas(draw: Callable, case: Case) -> Defect | None:
    pools = case.fresh(
        [(s, p) for s, c in case.clusters.items() for p in c.get("nodePools", [])], lambda x: x[1]
    )
    if not pools:
        return None
    stem, pool = draw(st.sampled_from(pools))
    case.touch(pool)
    kind = draw(st.sampled_from(["timeSlicing", "mps"]))
    bad = draw(
        st.sampled_from([0, 1, -2] + ([MPS_MAX_CLIENTS + 1, 100] if kind == "mps" else [2000]))
    )
    pool["sharing"] = {kind: {"replicas": bad}}
    return Defect(f"clusters/{stem}.yaml", f"{kind} replicas {bad}")


def _defect_limit_without_cohort(draw: Callable, case: Case) -> Defect | None:
    quotas = [
        (s, a, q)
        for s, a, q in case.fresh(_quotas(case), lambda x: x[2])
        if "gpus" in q and not a.get("cohort")
    ]
    if not quotas:
        return None
    stem, _, quota = draw(st.sampled_from(quotas))
    case.touch(quota)
    quota[draw(st.sampled_from(["borrowingLimit", "lendingLimit"]))] = 0
    return Defect(f"tenants/{stem}.yaml", "a limit without a cohort")


def _defect_lending_above_nominal(draw: Callable, case: Case) -> Defect | None:
    quotas = [
        (s, a, q)
        for s, a, q in case.fresh(_quotas(case), lambda x: x[2])
        if "gpus" in q and a.get("cohort")
    ]
    if not quotas:
        return None
    stem, _, quota = draw(st.sampled_from(quotas))
    case.touch(quota)
    quota["lendingLimit"] = quota["gpus"] + draw(st.integers(1, 4))
    return Defect(f"tenants/{stem}.yaml", "lendingLimit above gpus")


def _defect_unknown_field(draw: Callable, case: Case) -> Defect | None:
    targets = [(f"clusters/{s}.yaml", c) for s, c in case.clusters.items()]
    targets += [
        (f"clusters/{s}.yaml", p) for s, c in case.clusters.items() for p in c.get("nodePools", [])
    ]
    targets += [(f"tenants/{s}.yaml", t) for s, t in case.tenants.items()]
    targets += [(f"tenants/{s}.yaml", q) for s, _, q in _quotas(case)]
    file, where = draw(st.sampled_from(targets))
    where[draw(st.sampled_from(["gpusPerNodes", "nodepools", "quota", "Name", "borrowLimit"]))] = 1
    return Defect(file, "an unknown field")


def _defect_stem(draw: Callable, case: Case) -> Defect | None:
    if not case.tenants:
        return None
    stem = draw(st.sampled_from(sorted(case.tenants)))
    case.tenants[f"{stem}-renamed"] = case.tenants.pop(stem)
    return Defect(f"tenants/{stem}-renamed.yaml", "file stem differs from name")


def _defect_mig_on_plain_gpu(draw: Callable, case: Case) -> Defect | None:
    pools = case.fresh(
        [
            (s, p)
            for s, c in case.clusters.items()
            for p in c.get("nodePools", [])
            if mig_profiles(p)
        ],
        lambda x: x[1],
    )
    if not pools:
        return None
    stem, pool = draw(st.sampled_from(pools))
    case.touch(pool)
    pool["gpu"] = draw(st.sampled_from(PLAIN_MODELS))
    return Defect(f"clusters/{stem}.yaml", "MIG on a GPU without MIG")


def _defect_devices_gap(draw: Callable, case: Case) -> Defect | None:
    pools = [(s, p) for s, c in case.clusters.items() for p in c.get("nodePools", [])
             if isinstance(p.get("sharing"), dict) and "devices" in p["sharing"].get("mig", {})]  # fmt: skip
    pools = case.fresh(pools, lambda x: x[1])
    if not pools:
        return None
    stem, pool = draw(st.sampled_from(pools))
    case.touch(pool)
    devices = pool["sharing"]["mig"]["devices"]
    if draw(st.booleans()) and len(devices[0]["gpus"]) > 0:
        devices[0]["gpus"] = devices[0]["gpus"] + [
            pool["gpusPerNode"]
        ]  # an index past the last GPU
    else:
        devices.append({"gpus": [0], "layout": dict(devices[0]["layout"])})  # GPU 0 twice
    return Defect(f"clusters/{stem}.yaml", "mig.devices miss or repeat a GPU")


def _defect_single_strategy(draw: Callable, case: Case) -> Defect | None:
    pools = [
        (s, c, p)
        for s, c in case.clusters.items()
        for p in c.get("nodePools", [])
        if len(mig_profiles(p)) > 1
    ]
    if not pools:
        return None
    stem, cluster, _ = draw(st.sampled_from(pools))
    cluster.setdefault("components", {})["gpuOperator"] = {
        "version": "v26.7.0",
        "driverVersion": "580.82.07",
        "migStrategy": "single",
    }
    return Defect(f"clusters/{stem}.yaml", "migStrategy single with two profile types on a node")


def _defect_system_namespace(draw: Callable, case: Case) -> Defect | None:
    if not case.tenants:
        return None
    stem = draw(st.sampled_from(sorted(case.tenants)))
    case.tenants[stem]["namespaces"] = [draw(st.sampled_from(["kube-system", "default", "kube-x"]))]
    return Defect(f"tenants/{stem}.yaml", "a system namespace")


def _defect_version(draw: Callable, case: Case) -> Defect | None:
    stem = draw(st.sampled_from(sorted(case.clusters)))
    data = case.clusters[stem]
    key, bad = draw(
        st.sampled_from(
            [("kubernetesVersion", "1.99"), ("kubernetesVersion", 13.0), ("provider", "ibm")]
        )
    )
    data[key] = bad
    return Defect(f"clusters/{stem}.yaml", f"{key}: {bad!r}")


DEFECTS = (  # hypothesis favours the first entries a little: the most telling ones go first
    _defect_over_capacity, _defect_random_layout, _defect_wrong_quantity, _defect_wrong_gpus_unit,
    _defect_unknown_pool, _defect_unknown_cluster, _defect_unknown_cohort, _defect_unknown_network,
    _defect_unknown_priority, _defect_wrong_quota_kind, _defect_over_capacity, _defect_random_layout, _defect_replicas,
    _defect_limit_without_cohort, _defect_lending_above_nominal, _defect_unknown_field, _defect_stem,
    _defect_mig_on_plain_gpu, _defect_devices_gap, _defect_single_strategy, _defect_system_namespace,
    _defect_version,
)  # fmt: skip


@st.composite
def fleets(
    draw: Callable,
    defects: bool = False,
    hierarchy: bool = False,
    max_clusters: int = 2,
    max_tenants: int = 4,
) -> Case:
    """Draw a fleet: valid by construction, or (defects=True) with 0-3 defects put in.

    hierarchy=True also draws cohorts with parents (hierarchical cohorts, Kueue v0.11+).
    """
    clusters = [
        _draw_cluster(draw, i, hierarchy) for i in range(draw(st.integers(1, max_clusters)))
    ]
    left = dict(capacities(clusters))
    tenants = [
        _draw_tenant(draw, i, clusters, left) for i in range(draw(st.integers(0, max_tenants)))
    ]
    case = Case(
        {c["name"]: c for c in clusters}, {t["name"]: t for t in tenants}, hierarchy=hierarchy
    )
    if defects:
        for _ in range(draw(st.integers(0, 3))):
            make = draw(st.sampled_from(DEFECTS))
            defect = make(draw, case)
            if defect is not None:
                case.defects.append(replace(defect, kind=make.__name__.removeprefix("_defect_")))
    return case


# --------------------------------------------------------------------------------------------
# The oracle: what must hold after a render, recomputed without gpuplan.
# --------------------------------------------------------------------------------------------

DIAGNOSTIC = re.compile(r"^(?P<file>[^\s:]+):(?P<line>[0-9]+):(?P<col>[0-9]+): error: .+")


def expected_errors(case: Case) -> list[str]:
    """Return why this fleet must be refused (spec/checks.md), judged from the input alone."""
    reasons = [f"{d.file or '(some tenant file)'}: {d.what}" for d in case.defects if d.certain]
    try:
        caps = capacities(case.clusters.values())
    except (KeyError, TypeError, ValueError, AttributeError):
        return reasons  # the defects made the input unreadable to the oracle: they are certain
    asked: Counter[tuple[str, str, str]] = Counter()
    for _stem, alloc, quota in _quotas(case):
        found = _pool_of(case, alloc.get("cluster"), quota.get("pool"))
        if found is None:
            continue
        cluster, pool = found
        try:
            if isinstance(quota.get("gpus"), int) and not isinstance(quota["gpus"], bool):
                (resource,) = pool_resources(cluster, pool)
                asked[(cluster["name"], pool["name"], resource)] += quota["gpus"]
            elif isinstance(quota.get("mig"), dict) and mig_profiles(pool):
                for profile, count in quota["mig"].items():
                    if (
                        isinstance(count, int)
                        and not isinstance(count, bool)
                        and profile in mig_profiles(pool)
                    ):
                        asked[
                            (
                                cluster["name"],
                                pool["name"],
                                _profile_resource(cluster, pool, profile),
                            )
                        ] += count
        except (KeyError, TypeError, ValueError, AttributeError):
            continue
    for key, total in asked.items():
        if key in caps and total > caps[key]:
            reasons.append(f"{key}: tenants ask {total}, capacity {caps[key]}")
    for stem, cluster in case.clusters.items():
        for pool in cluster.get("nodePools", []):
            sharing = pool.get("sharing")
            if isinstance(sharing, dict) and isinstance(sharing.get("mig"), dict):
                mig = sharing["mig"]
                layouts = (
                    [mig.get("layout")]
                    if "layout" in mig
                    else [d.get("layout") for d in mig.get("devices", []) if isinstance(d, dict)]
                )
                for layout in layouts:
                    if isinstance(layout, dict) and placeable(pool.get("gpu"), layout) is False:
                        reasons.append(
                            f"clusters/{stem}.yaml: layout {layout} cannot be placed on {pool.get('gpu')}"
                        )
    return reasons


def load_tree(files: dict[str, bytes]) -> dict[str, dict[str, Any]]:
    """Parse rendered files (path -> bytes) with PyYAML, checking the byte format on the way."""
    objects = {}
    for path, data in files.items():
        text = data.decode("utf-8")
        assert text.startswith("# Generated by gpuplan"), f"{path}: no ownership header"
        assert "\r" not in text and text.endswith("\n") and not text.endswith("\n\n"), (
            f"{path}: not LF with one trailing newline"
        )
        obj = yaml.load(text, Loader=_Loader)
        assert isinstance(obj, dict) and {"apiVersion", "kind"} <= obj.keys(), (
            f"{path}: not an object"
        )
        assert obj["kind"] == "Kustomization" or "name" in obj.get("metadata", {}), (
            f"{path}: no metadata.name"
        )
        objects[path] = obj
    return objects


def _amount(text: Any) -> Fraction:
    value = quantity(text)
    assert value is not None, f"{text!r} is not a quantity"
    return value


def _resource_capacity(
    case: Case, cluster: dict[str, Any], pool: dict[str, Any], resource: str
) -> Fraction:
    most = nodes_most(pool)
    if resource == "cpu":
        return _amount(pool["cpu"]) * most
    if resource == "memory":
        return _amount(pool["memory"]) * most
    return Fraction(pool_resources(cluster, pool).get(resource, 0) * most)


def _input_grants(case: Case) -> dict[tuple[str, str, str, str], int]:
    """Return (tenant, cluster, pool, resource) -> nominal units, from the input."""
    out: dict[tuple[str, str, str, str], int] = {}
    for tenant in case.tenants.values():
        for alloc in tenant.get("allocations", []):
            for quota in alloc["quotas"]:
                cluster, pool = _pool_of(case, alloc["cluster"], quota["pool"])  # type: ignore[misc]
                if "gpus" in quota:
                    (resource,) = pool_resources(cluster, pool)
                    key = (tenant["name"], cluster["name"], pool["name"], resource)
                    out[key] = out.get(key, 0) + quota["gpus"]
                else:
                    for profile, count in quota["mig"].items():
                        key = (
                            tenant["name"],
                            cluster["name"],
                            pool["name"],
                            _profile_resource(cluster, pool, profile),
                        )
                        out[key] = out.get(key, 0) + count
    return out


def admission_ceiling(cluster_objects: list[dict[str, Any]]) -> dict[str, dict[str, Fraction]]:
    """Return ClusterQueue -> resource -> the most Kueue can ever admit for it.

    Kueue: a ClusterQueue uses its nominal quota plus what it borrows; it may borrow from every
    ClusterQueue of its cohort tree (hierarchical cohorts: the tree of Cohort objects joined by
    spec.parentName), each lending its lendingLimit or, without one, its whole nominal quota; its
    own borrowingLimit caps what it takes (Kueue docs, concepts/cohort.md "Hierarchical Cohorts"
    and concepts/cluster_queue.md "Borrowing"/"LendingLimit").
    """
    parents = {
        o["metadata"]["name"]: (o.get("spec") or {}).get("parentName")
        for o in cluster_objects
        if o["kind"] == "Cohort"
    }

    def root(cohort: str) -> str:
        seen = set()
        while parents.get(cohort) and cohort not in seen:
            seen.add(cohort)
            cohort = parents[cohort]
        return cohort

    queues = [o for o in cluster_objects if o["kind"] == "ClusterQueue"]
    rows: dict[str, dict[tuple[str, str], tuple[Fraction, Fraction | None, Fraction]]] = {}
    tree: dict[str, str | None] = {}
    for queue in queues:
        spec = queue["spec"]
        cohort = spec.get("cohortName") or spec.get("cohort")
        tree[queue["metadata"]["name"]] = root(cohort) if cohort else None
        table = {}
        for group in spec.get("resourceGroups", []):
            for flavor in group["flavors"]:
                for res in flavor["resources"]:
                    nominal = _amount(res["nominalQuota"])
                    borrowing = _amount(res["borrowingLimit"]) if "borrowingLimit" in res else None
                    lending = _amount(res["lendingLimit"]) if "lendingLimit" in res else nominal
                    table[(flavor["name"], res["name"])] = (nominal, borrowing, lending)
        rows[queue["metadata"]["name"]] = table
    ceiling: dict[str, dict[str, Fraction]] = {}
    for name, table in rows.items():
        out: dict[str, Fraction] = {}
        for (flavor, resource), (nominal, borrowing, _) in table.items():
            lendable = Fraction(0)
            if tree[name] is not None:
                for other, other_table in rows.items():
                    if (
                        other != name
                        and tree[other] == tree[name]
                        and (flavor, resource) in other_table
                    ):
                        lendable += other_table[(flavor, resource)][2]
            borrow = lendable if borrowing is None else min(borrowing, lendable)
            out[resource] = out.get(resource, Fraction(0)) + nominal + borrow
        ceiling[name] = out
    return ceiling


CORE_API_VERSIONS = (
    "v1",
    "apps/v1",
    "rbac.authorization.k8s.io/v1",
    "networking.k8s.io/v1",
    "scheduling.k8s.io/v1",
)


def check_output(
    case: Case,
    files: dict[str, bytes],
    validators: Callable[[str], Any] | None = None,
    core: Callable[[dict[str, Any], str], None] | None = None,
) -> None:
    """Assert the properties of a successful render's files, recomputed from the input.

    validators: Kubernetes version -> gpuplan.validate.Validator, to re-validate every object as
    parsed back from the written bytes. core: (object, Kubernetes version) -> raises, an
    independent validator for core kinds (kubernetes-validate).
    """
    objects = load_tree(files)
    clusters = {c["name"]: c for c in case.clusters.values()}
    grants = _input_grants(case)
    by_cluster: dict[str, list[dict[str, Any]]] = {}
    for path, obj in objects.items():
        top = path.split("/", 1)[0]
        by_cluster.setdefault(top, []).append(obj)
        if obj["kind"] != "Kustomization":  # spec/output.md, "Safety for Argo CD"
            metadata = obj["metadata"]
            assert metadata.get("labels", {}).get("app.kubernetes.io/managed-by") == "gpuplan", (
                f"{path}: no managed-by label"
            )
            assert "argocd.argoproj.io/sync-wave" in metadata.get("annotations", {}), (
                f"{path}: no sync-wave"
            )
            if obj["kind"] == "Namespace":
                options = metadata["annotations"].get("argocd.argoproj.io/sync-options", "")
                assert {"Prune=false", "Delete=false"} <= set(options.split(",")), (
                    f"{path}: a namespace Argo CD may delete"
                )
        if validators is not None and obj["kind"] != "Kustomization":
            validator = validators(clusters[top]["kubernetesVersion"] if top in clusters else "")
            problems = validator.validate(obj)
            assert not problems, f"{path} does not validate: {problems}"
        if core is not None and obj["apiVersion"] in CORE_API_VERSIONS and top in clusters:
            core(obj, clusters[top]["kubernetesVersion"])
    for name, cluster in clusters.items():
        objs = by_cluster.get(name, [])
        queues = {o["metadata"]["name"]: o for o in objs if o["kind"] == "ClusterQueue"}
        pools = {p["name"]: p for p in cluster["nodePools"]}
        # 1. per pool and resource, the nominal quotas of all ClusterQueues fit the pool
        asked: dict[tuple[str, str], Fraction] = {}
        for queue in queues.values():
            for group in queue["spec"]["resourceGroups"]:
                for flavor in group["flavors"]:
                    for res in flavor["resources"]:
                        key = (flavor["name"], res["name"])
                        asked[key] = asked.get(key, Fraction(0)) + _amount(res["nominalQuota"])
                        # 2. a tenant's GPU nominal quota is what its input grants, no more, no less
                        if res["name"] not in ("cpu", "memory"):
                            want = grants.get(
                                (queue["metadata"]["name"], name, flavor["name"], res["name"]), 0
                            )
                            assert _amount(res["nominalQuota"]) == want, (
                                f"ClusterQueue {queue['metadata']['name']} flavor {flavor['name']} {res['name']}: "
                                f"nominalQuota {res['nominalQuota']}, the input grants {want}"
                            )
        for (flavor, resource), total in asked.items():
            if resource in ("cpu", "memory"):
                continue  # see check_cpu_memory_capacity
            cap = _resource_capacity(case, cluster, pools[flavor], resource)
            assert total <= cap, (
                f"{name}/{flavor} {resource}: ClusterQueues hold {total}, the pool has {cap}"
            )
        # 3. every GPU unit the input grants appears in a ClusterQueue when Kueue runs
        if queues:
            for (tenant, c_name, pool, resource), count in grants.items():
                if c_name == name and count:
                    assert (pool, resource) in asked, (
                        f"{tenant} on {name}/{pool}: {resource} {count} missing"
                    )
        # 4. a tenant's ResourceQuotas (split over its namespaces, README) hold together exactly
        # what its ClusterQueue can admit: never less, so Kueue's total fits, and never more, so
        # pods that skip Kueue cannot use the quota once per namespace
        ceilings = admission_ceiling(objs)
        quotas = {
            (o["metadata"]["namespace"], o["metadata"]["name"]): o
            for o in objs
            if o["kind"] == "ResourceQuota"
        }
        for queue_name, ceiling in ceilings.items():
            selector = queues[queue_name]["spec"]["namespaceSelector"]["matchExpressions"][0][
                "values"
            ]
            for namespace in selector:
                assert (namespace, queue_name) in quotas, (
                    f"{name}: no ResourceQuota {queue_name} in namespace {namespace}"
                )
            for resource, most in ceiling.items():
                have = sum(
                    _amount(
                        quotas[(ns, queue_name)]["spec"]["hard"].get(f"requests.{resource}", "0")
                    )
                    for ns in selector
                )
                assert have >= most, (
                    f"{name}: ResourceQuotas {queue_name} requests.{resource} add up to {have}, "
                    f"but ClusterQueue {queue_name} can admit {most} (nominal + borrowable in its cohort tree)"
                )
        # 5. without Kueue the tenant's ResourceQuotas still cover the input's grants, together
        for tenant, c_name, _pool, resource in grants:
            if c_name != name:
                continue
            total = sum(
                n for (t, c, _, r), n in grants.items() if (t, c, r) == (tenant, name, resource)
            )
            have = sum(
                _amount(q["spec"]["hard"].get(f"requests.{resource}", "0"))
                for (ns, qn), q in quotas.items()
                if qn == tenant
            )
            assert have >= total, (
                f"{name}: ResourceQuotas {tenant} {resource} add up to {have} < granted {total}"
            )
        # 6. Karpenter NodePools stop at nodes.max (spec/output.md: limits = nodes.max x per node)
        node_pools = {o["metadata"]["name"]: o for o in objs if o["kind"] == "NodePool"}
        if cluster.get("components", {}).get("karpenter"):
            autoscaled = {p["name"] for p in cluster["nodePools"] if "min" in p["nodes"]}
            assert set(node_pools) == autoscaled, (
                f"{name}: NodePools {sorted(node_pools)}, autoscaled pools {sorted(autoscaled)}"
            )
        for pool_name, node_pool in node_pools.items():
            pool = pools[pool_name]
            limits = node_pool["spec"]["limits"]
            assert _amount(limits["nodes"]) == pool["nodes"]["max"], (
                f"{name}/{pool_name}: NodePool limits {limits}"
            )
            assert (
                _amount(limits["nvidia.com/gpu"]) == pool["nodes"]["max"] * pool["gpusPerNode"]
            ), f"{name}/{pool_name}: {limits}"
        # 7. Volcano guarantees fit the cluster's GPUs
        guarantees: dict[str, Fraction] = {}
        for queue in (o for o in objs if o["kind"] == "Queue"):
            for resource, value in (
                (queue["spec"].get("guarantee") or {}).get("resource") or {}
            ).items():
                guarantees[resource] = guarantees.get(resource, Fraction(0)) + _amount(value)
        for resource, total in guarantees.items():
            if resource in ("cpu", "memory"):
                continue
            cap = sum(
                (_resource_capacity(case, cluster, p, resource) for p in cluster["nodePools"]),
                Fraction(0),
            )
            assert total <= cap, (
                f"{name}: Volcano queues guarantee {total} {resource}, the cluster has {cap}"
            )


def cpu_memory_overcommit(case: Case, files: dict[str, bytes]) -> list[str]:
    """Return per pool where ClusterQueues' cpu or memory nominal quotas exceed the pool's nodes."""
    objects = load_tree(files)
    found = []
    for name, cluster in {c["name"]: c for c in case.clusters.values()}.items():
        pools = {p["name"]: p for p in cluster["nodePools"]}
        asked: dict[tuple[str, str], Fraction] = {}
        for path, obj in objects.items():
            if path.startswith(f"{name}/") and obj["kind"] == "ClusterQueue":
                for group in obj["spec"]["resourceGroups"]:
                    for flavor in group["flavors"]:
                        for res in flavor["resources"]:
                            if res["name"] in ("cpu", "memory"):
                                key = (flavor["name"], res["name"])
                                asked[key] = asked.get(key, Fraction(0)) + _amount(
                                    res["nominalQuota"]
                                )
        for (flavor, resource), total in sorted(asked.items()):
            cap = _resource_capacity(case, cluster, pools[flavor], resource)
            if total > cap:
                found.append(
                    f"{name}/{flavor} {resource}: ClusterQueues hold {float(total):g}, the pool's nodes have {float(cap):g}"
                )
    return found


def check_failure(case: Case, diagnostics_text: list[str]) -> None:
    """Assert a refused render says why: at least one `file:line:col: error:` in an input file."""
    errors = [m for m in (DIAGNOSTIC.match(line) for line in diagnostics_text) if m]
    assert errors, "render failed without a file:line:col: error: diagnostic:\n" + "\n".join(
        diagnostics_text
    )
    inputs = set(case.files())
    for match in errors:
        assert int(match["line"]) >= 1 and int(match["col"]) >= 1, match.group()
    assert any(m["file"] in inputs for m in errors), (
        "no error points at an input file:\n" + "\n".join(diagnostics_text)
    )
    certain = [d for d in case.defects if d.certain and d.file]
    if len(case.defects) == 1 and certain:
        assert any(m["file"] == certain[0].file for m in errors), (
            f"the defect in {certain[0].file} ({certain[0].what}) got no error there:\n"
            + "\n".join(diagnostics_text)
        )
