"""`render --watch` keeps each tenant allocation's figures and objects between runs (gpuplan.warm):
every run must still give the output bytes and the findings, text and order, of a cold render.

A small fleet of two clusters (a cohort tree, priority classes, container defaults, an own manifest
and a patch) and
three tenants is edited at random where the kept results read: a tenant's quotas, lending limit,
owners, namespaces, cohort and priority class, a tenant added or removed, a cluster's pools, its
cohort tree and its priority classes, the own manifest and the patch.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpuplan import warm
from tests.test_render_watch import between_runs, hold_to_cold, touch_all, watch_for

pytestmark = pytest.mark.usefixtures("cache_home", "quick_settle")  # a render cache of its own

CLUSTERS = ("c00", "c01")
KINDS = (
    "quota",
    "lending",
    "owners",
    "namespaces",
    "cohort",
    "priority",
    "add",
    "remove",
    "pools",
    "cohort-tree",
    "class-value",
    "extra",
    "patch",
)


@dataclass
class Tenant:
    """What the edits change of one tenant."""

    gpus: int = 1
    lending: int | None = None
    owners: int = 1
    namespaces: int = 1
    cohort: str = "all"
    priority: str = "low"


@dataclass
class Fleet:
    """The inputs, edited step by step."""

    pools: dict[str, int] = field(default_factory=lambda: dict.fromkeys(CLUSTERS, 2))
    tree: dict[str, bool] = field(default_factory=lambda: dict.fromkeys(CLUSTERS, False))
    high: dict[str, int] = field(default_factory=lambda: dict.fromkeys(CLUSTERS, 1000))
    tenants: dict[str, Tenant] = field(
        default_factory=lambda: {"t0": Tenant(), "t1": Tenant(gpus=2), "t2": Tenant()}
    )
    extra: int = 0  # the own ConfigMap's content
    patch: bool = True  # the ClusterPolicy patch (it points at the own ConfigMap)

    def apply(self, edit: tuple[str, int]) -> None:
        what, n = edit
        names = sorted(self.tenants)
        tenant = self.tenants[names[n % len(names)]]
        cluster = CLUSTERS[n % len(CLUSTERS)]
        if what == "quota":
            tenant.gpus = tenant.gpus % 3 + 1  # 1, 2, 3, 1...: always a change
        elif what == "lending":
            tenant.lending = None if tenant.lending is not None else n % 2
        elif what == "owners":
            tenant.owners = 1 + n % 3
        elif what == "namespaces":
            tenant.namespaces = 1 + n % 2
        elif what == "cohort":
            tenant.cohort = {"all": "other", "other": "child", "child": "all"}[tenant.cohort]
        elif what == "priority":
            tenant.priority = "high" if tenant.priority == "low" else "low"
        elif what == "add":
            self.tenants[f"t{len(names) + n % 5 + 3}"] = Tenant(gpus=1 + n % 2)
        elif what == "remove" and len(names) > 1:
            del self.tenants[names[n % len(names)]]
        elif what == "pools":
            self.pools[cluster] = 1 + n % 3
        elif what == "cohort-tree":
            self.tree[cluster] = not self.tree[cluster]
        elif what == "class-value":
            self.high[cluster] = 1000 + n
        elif what == "extra":
            self.extra = n % 3
        elif what == "patch":
            self.patch = not self.patch

    def write(self, root: Path) -> None:
        for folder in ("clusters", "tenants", "extra", "patches"):
            shutil.rmtree(root / folder, ignore_errors=True)
            (root / folder).mkdir(parents=True)
        for name in CLUSTERS:
            (root / f"clusters/{name}.yaml").write_text(self._cluster(name))
        for name, tenant in self.tenants.items():
            (root / f"tenants/{name}.yaml").write_text(self._tenant(name, tenant))
        configmap = root / "extra/c00/gpu-operator/configmap-dcgm-metrics.yaml"
        configmap.parent.mkdir(parents=True)
        configmap.write_text(
            "apiVersion: v1\nkind: ConfigMap\n"
            "metadata: {name: dcgm-metrics, namespace: gpu-operator}\n"
            f"data: {{dcgm-metrics.csv: 'DCGM_FI_DEV_GPU_UTIL, gauge, utilization {self.extra}'}}\n"
        )
        if self.patch:
            patch = root / "patches/c00/clusterpolicy-dcgm-metrics.yaml"
            patch.parent.mkdir(parents=True)
            patch.write_text(
                "apiVersion: nvidia.com/v1\nkind: ClusterPolicy\nmetadata: {name: cluster-policy}\n"
                "spec: {dcgmExporter: {config: {name: dcgm-metrics}}}\n"
            )

    def _cluster(self, name: str) -> str:
        parent = ", parent: all" if self.tree[name] else ""
        lines = [
            f"name: {name}",
            'kubernetesVersion: "1.33"',
            "provider: aws",
            "gitops: {repoURL: https://git.example.com/fleet.git}",
            "components:",
            '  gpuOperator: {version: v26.7.0, driverVersion: "580.82.07"}',
            "  kueue: {version: v0.19.2}",
            "  volcano: {version: v1.15.1}",
            "  quotaAuthority: kueue",
            f"  karpenter: {{version: v1.14.1, nodeClass: {{group: karpenter.k8s.aws, kind: EC2NodeClass, name: gpu, aws: {{role: KarpenterNodeRole-{name}}}}}}}",
            f"priorityClasses: [{{name: high, value: {self.high[name]}}}, {{name: low, value: 10}}]",
            f"cohorts: [{{name: all}}, {{name: other}}, {{name: child{parent}}}]",
            # above the namespace quota of a tenant alone in its cohort (a finding that moves)
            "containerDefaults: {requests: {cpu: 40}}" if name == "c01" else "",
            "nodePools:",
        ]
        for p in range(self.pools[name]):
            lines += [
                f"  - name: pool-{p:02d}",
                "    gpu: H100-SXM5-80GB",
                "    gpusPerNode: 8",
                "    cpu: 192",
                "    memory: 1900Gi",
                "    nodes: {min: 0, max: 4}",
                "    karpenter: {instanceTypes: [p5.48xlarge]}",
            ]
            if p % 2:
                lines.append("    sharing: {timeSlicing: {replicas: 4}}")
        return "\n".join(lines) + "\n"

    def _tenant(self, name: str, tenant: Tenant) -> str:
        owners = ", ".join(f"group:{name}-g{i}" for i in range(tenant.owners))
        spaces = ", ".join(name if i == 0 else f"{name}-n{i}" for i in range(tenant.namespaces))
        lending = f", lendingLimit: {tenant.lending}" if tenant.lending is not None else ""
        lines = [
            f"name: {name}",
            f"namespaces: [{spaces}]",
            f"owners: [{owners}]",
            f"priorityClass: {tenant.priority}",
            "allocations:",
        ]
        for cluster in CLUSTERS:
            lines += [f"  - cluster: {cluster}", f"    cohort: {tenant.cohort}", "    quotas:"]
            lines += [
                f"      - {{pool: pool-{p:02d}, gpus: {tenant.gpus}{lending}}}"
                for p in range(self.pools[cluster])
            ]
        return "\n".join(lines) + "\n"


EDITS = st.lists(st.tuples(st.sampled_from(KINDS), st.integers(0, 20)), min_size=1, max_size=5)


@settings(
    max_examples=6,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(edits=EDITS)
def test_each_run_gives_the_bytes_and_findings_of_a_cold_render(
    edits: list[tuple[str, int]],
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    hold_to_cold(Fleet(), edits, tmp_path_factory.mktemp("watch"), monkeypatch)


@pytest.mark.parametrize(
    ("change", "remade"),
    [
        # its owners: its own objects only
        (
            ("owners", 1),
            {("tenants", "t1"), ("tenants-quota", "t1"), ("kueue", "t1"), ("volcano", "t1")},
        ),
        # its quota moves what its cohort lends: the cohort's ResourceQuotas and Volcano Queues
        # (every tenant is in cohort "all"), and its own objects only
        (
            ("quota", 1),
            {
                ("tenants-quota", "t0"),
                ("tenants-quota", "t1"),
                ("tenants-quota", "t2"),
                ("volcano", "t0"),
                ("volcano", "t1"),
                ("volcano", "t2"),
                ("tenants", "t1"),
                ("kueue", "t1"),
            },
        ),
    ],
)
def test_an_edit_of_one_tenant_makes_only_what_it_changes_again(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    change: tuple[str, int],
    remade: set[tuple[str, str]],
) -> None:
    """The other allocations' objects are the very ones of the run before (one of each per cluster)."""
    from gpuplan.emit import allocations

    made: list[tuple[str, str]] = []
    real = allocations.objects

    def counted(kind, alloc, build, cohort):  # type: ignore[no-untyped-def]
        def build_counted(alloc):  # type: ignore[no-untyped-def]
            made.append((kind, alloc.name))
            return build(alloc)

        return real(kind, alloc, build_counted, cohort)

    monkeypatch.setattr(allocations, "objects", counted)
    fleet = Fleet()
    fleet.write(tmp_path)

    def edit() -> None:
        assert len(made) == 4 * 3 * len(CLUSTERS)  # the first run made every one
        made.clear()
        fleet.apply(change)
        fleet.write(tmp_path)
        touch_all(tmp_path)

    between_runs(monkeypatch, [edit])
    code, stderr = watch_for(tmp_path, 2)
    assert code == 0, stderr
    assert sorted(made) == sorted(item for item in remade for _ in CLUSTERS)
    assert not warm.active()


@settings(
    max_examples=3,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(edits=EDITS)
def test_each_record_taken_for_a_scan_of_the_output_is_what_a_scan_finds(
    edits: list[tuple[str, int]],
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A run takes its spare's record for a scan of the output while the spare's watch saw no
    event (gpuplan.spare.view): each record taken must equal a fresh scan of the output."""
    from tests.test_watch_output_notify import checked_views

    base = tmp_path_factory.mktemp("watch")
    with pytest.MonkeyPatch.context() as patched:
        used = checked_views(patched, base / "live/output")
        hold_to_cold(Fleet(), edits, base, monkeypatch)
    assert used and not used[0]  # the first run scans
    assert any(used[1:])  # and a later one takes a record (each checked against a scan)
