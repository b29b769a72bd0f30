"""Output that does not drift (issue 7): what gpuplan emits is what the API server stores.

Argo CD compares the rendered object with the live one. Two things the API server does on
its own would make them differ for ever:

- CRD structural defaulting: a property the CRD gives a ``default:`` and gpuplan left out
  appears on the live object (also inside an object gpuplan emits, and inside a defaulted
  object). So every custom resource gpuplan renders must already carry every default its
  CRD would apply: ``apply_defaults(obj) == obj``, for every CRD that serves its kind
  (karpenter/ and karpenter-provider-aws/ both ship NodePool).
- Quantity canonicalisation: core objects (ResourceQuota, LimitRange) are stored through
  k8s.io/apimachinery ``resource.Quantity``, which rewrites "0.5" as "500m" and "1000" as
  "1k"; Kueue's defaulting webhook decodes ClusterQueues into Go types and patches back what
  re-encoding changed, the same rewrite. So every quantity gpuplan renders must already be in
  the form resource.Quantity keeps (``stored_quantity``).

Checked on a render of the repository's example fleet and on every golden case's expected
output (tests/cases/*/expected).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpuplan.crds import index_for, parse_components
from gpuplan.model.quantity import format_bytes, format_count, format_cpu
from gpuplan.validate.cel import apply_defaults
from gpuplan.validate.crds import CrdIndex
from tests.conftest import copy_example, run

CASES = Path(__file__).resolve().parent / "cases"
GOLDEN = (
    sorted(p / "expected" for p in CASES.iterdir() if (p / "expected").is_dir())
    if CASES.is_dir()
    else []
)
EXAMPLE = "example"  # the repository's example fleet, rendered fresh

# Every custom resource kind gpuplan emits (group, kind); the sources together must show each.
CUSTOM_KINDS = {
    ("kueue.x-k8s.io", "ClusterQueue"),
    ("kueue.x-k8s.io", "ResourceFlavor"),
    ("kueue.x-k8s.io", "LocalQueue"),
    ("kueue.x-k8s.io", "Cohort"),
    ("kueue.x-k8s.io", "WorkloadPriorityClass"),
    ("scheduling.volcano.sh", "Queue"),
    ("scheduling.run.ai", "Queue"),
    ("kai.scheduler", "Topology"),
    ("kueue.x-k8s.io", "Topology"),
    ("karpenter.sh", "NodePool"),
    ("nfd.k8s-sigs.io", "NodeFeatureRule"),
    ("k8s.cni.cncf.io", "NetworkAttachmentDefinition"),
    ("argoproj.io", "Application"),
    ("argoproj.io", "AppProject"),
    ("argoproj.io", "ApplicationSet"),
    ("karpenter.azure.com", "AKSNodeClass"),
    ("nvidia.com", "ClusterPolicy"),
    ("nvidia.com", "NVIDIADriver"),
    ("karpenter.k8s.aws", "EC2NodeClass"),
    ("monitoring.coreos.com", "ServiceMonitor"),
    ("monitoring.coreos.com", "PrometheusRule"),
}
# Groups with no CRD: built-in Kubernetes APIs, and kustomize files that are never applied.
BUILT_IN_GROUPS = {
    "",
    "apps",  # the Multus DaemonSet (output/<cluster>/multus/)
    "apiextensions.k8s.io",  # the NetworkAttachmentDefinition CRD of Multus' manifest
    "networking.k8s.io",
    "rbac.authorization.k8s.io",
    "scheduling.k8s.io",
    "resource.k8s.io",  # DeviceClass, ResourceClaimTemplate (DRA): core API, no CRD
    "admissionregistration.k8s.io",  # ValidatingAdmissionPolicies (admission:)
    "kustomize.config.k8s.io",
}


# --- rendered objects ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def crd_index(crds_dir: Path) -> CrdIndex:
    return CrdIndex.load(crds_dir)


@pytest.fixture(scope="module")
def example_output(tmp_path_factory: pytest.TempPathFactory, crds_dir: Path) -> Path:
    """The example fleet rendered (with the CRDs, so render validates) into a copy of the repo."""
    repo = copy_example(tmp_path_factory.mktemp("no-drift") / "repo")
    result = run("render", "--root", str(repo))
    assert result.code == 0, result.stderr
    return repo / "output"


def _source(request: pytest.FixtureRequest, source: str | Path) -> Path:
    return request.getfixturevalue("example_output") if source == EXAMPLE else Path(source)


def _objects(folder: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    """(file relative to the folder, object) for every rendered file."""
    for path in sorted(folder.rglob("*.yaml")):
        obj = yaml.safe_load(path.read_text())
        assert isinstance(obj, dict), path
        yield path.relative_to(folder).as_posix(), obj


def _group_version(obj: dict[str, Any]) -> tuple[str, str]:
    group, _, version = str(obj["apiVersion"]).rpartition("/")
    return group, version


def _differences(before: Any, after: Any, path: str = "") -> Iterator[str]:
    """Where ``after`` differs from ``before``, as readable field paths."""
    if isinstance(before, dict) and isinstance(after, dict):
        for key in sorted(set(before) | set(after), key=str):
            where = f"{path}.{key}" if path else str(key)
            if key not in before:
                yield f"{where} defaulted to {after[key]!r}"
            elif key not in after:
                yield f"{where} removed"
            else:
                yield from _differences(before[key], after[key], where)
    elif isinstance(before, list) and isinstance(after, list) and len(before) == len(after):
        for index, (a, b) in enumerate(zip(before, after)):
            yield from _differences(a, b, f"{path}[{index}]")
    elif before != after:
        yield f"{path}: {before!r} -> {after!r}"


SOURCES = [EXAMPLE, *GOLDEN]
SOURCE_IDS = [EXAMPLE, *(p.parent.name for p in GOLDEN)]


# --- CRD defaults --------------------------------------------------------------------------------


def _cluster_index(folder: Path, name: str, fallback: CrdIndex) -> CrdIndex:
    """The shipped CRDs of the component versions in the file's cluster folder header, else ``fallback``."""
    header = folder / name.split("/")[0] / "kustomization.yaml"
    line = next((ln for ln in header.read_text().splitlines() if ln.startswith("# Components: ")), None) \
        if header.is_file() else None  # fmt: skip
    if line is None:
        return fallback
    return index_for(parse_components(line.removeprefix("# Components: ").split()))


@pytest.mark.parametrize("source", SOURCES, ids=SOURCE_IDS)
def test_crd_defaults_change_no_rendered_object(
    source: str | Path, crd_index: CrdIndex, request: pytest.FixtureRequest
) -> None:
    drift = []
    folder = _source(request, source)
    for name, obj in _objects(folder):
        group, version = _group_version(obj)
        if group in BUILT_IN_GROUPS:
            continue
        # Each cluster against the CRDs of its own component versions (an older GPU Operator's
        # ClusterPolicy lacks fields the newest CRD would default).
        kind = obj["kind"]
        candidates = _cluster_index(folder, name, crd_index).versions(group, version, kind) \
            or crd_index.versions(group, version, kind)  # fmt: skip
        assert candidates, f"{name}: no CRD serves {obj['apiVersion']} {obj['kind']}"
        for crd_version in candidates:
            defaulted = apply_defaults(obj, crd_version)
            crd = "/".join(
                crd_version.crd.source.parts[-2:]
            )  # e.g. karpenter/karpenter.sh_nodepools.yaml
            drift += [f"{name} ({crd}): {d}" for d in _differences(obj, defaulted)]
    assert not drift, "the API server would change these objects:\n" + "\n".join(drift)


def test_every_custom_kind_is_checked(crd_index: CrdIndex, example_output: Path) -> None:
    seen = set()
    for folder in [example_output, *GOLDEN]:
        for _, obj in _objects(folder):
            group, _ = _group_version(obj)
            if group not in BUILT_IN_GROUPS:
                seen.add((group, obj["kind"]))
    assert seen >= CUSTOM_KINDS, f"never rendered, so never checked: {sorted(CUSTOM_KINDS - seen)}"
    assert seen <= CUSTOM_KINDS, f"new custom kinds, add them here: {sorted(seen - CUSTOM_KINDS)}"


def _crd_version(index: CrdIndex, api_version: str, kind: str, folder: str = "") -> Any:
    group, _, version = api_version.rpartition("/")
    found = [v for v in index.versions(group, version, kind) if folder in str(v.crd.source)]
    assert found, f"no CRD for {api_version} {kind}"
    return found[0]


def test_apply_defaults_applies_nested_defaults_without_touching_the_input(
    crd_index: CrdIndex,
) -> None:
    queue = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ClusterQueue",
        "metadata": {"name": "q"},
        "spec": {"resourceGroups": []},
    }
    spec = apply_defaults(queue, _crd_version(crd_index, queue["apiVersion"], "ClusterQueue"))[
        "spec"
    ]
    assert queue["spec"] == {"resourceGroups": []}  # the input is not modified
    # preemption defaults to {} and is then defaulted inside, as the API server does
    assert spec["preemption"] == {
        "borrowWithinCohort": {"policy": "Never"},
        "reclaimWithinCohort": "Never",
        "withinClusterQueue": "Never",
    }
    assert spec["flavorFungibility"] == {
        "whenCanBorrow": "MayStopSearch",
        "whenCanPreempt": "TryNextFlavor",
    }
    assert spec["queueingStrategy"] == "BestEffortFIFO" and spec["stopPolicy"] == "None"
    assert "fairSharing" not in spec  # weight is defaulted only inside a fairSharing that exists
    with_weight = {**queue, "spec": {"fairSharing": {}}}
    defaulted = apply_defaults(
        with_weight, _crd_version(crd_index, queue["apiVersion"], "ClusterQueue")
    )
    assert defaulted["spec"]["fairSharing"] == {"weight": 1}


def test_apply_defaults_defaults_list_items_and_defaulted_objects(crd_index: CrdIndex) -> None:
    version = _crd_version(crd_index, "karpenter.sh/v1", "NodePool", "/karpenter/")
    pool = {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": "p"},
        "spec": {"template": {"spec": {"requirements": []}}},
    }
    spec = apply_defaults(pool, version)["spec"]
    assert spec["disruption"] == {
        "consolidateAfter": "0s",
        "budgets": [{"nodes": "10%"}],
        "consolidationPolicy": "WhenEmptyOrUnderutilized",
    }
    assert spec["template"]["spec"]["expireAfter"] == "720h"
    budgets = {
        **pool,
        "spec": {**pool["spec"], "disruption": {"budgets": [{"reasons": ["Empty"]}]}},
    }
    assert apply_defaults(budgets, version)["spec"]["disruption"]["budgets"] == [
        {"reasons": ["Empty"], "nodes": "10%"}
    ]
    unchanged = apply_defaults(pool, version)
    assert apply_defaults(unchanged, version) is unchanged  # nothing left to default: same object


# --- quantities ----------------------------------------------------------------------------------

_QUANTITY = re.compile(
    r"^(?P<sign>[+-]?)(?P<num>[0-9]*)(?:\.(?P<denom>[0-9]*))?"
    r"(?P<suffix>[eE][+-]?[0-9]+|[KMGTPE]i|[numkMGTPE]|)$"
)
_BINARY = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_BINARY_BY_POWER = {0: "", **{exponent // 10: suffix for suffix, exponent in _BINARY.items()}}
_DECIMAL_BY_EXPONENT = {exponent: suffix for suffix, exponent in _DECIMAL.items()}
_INT64_MAX = 2**63 - 1


def stored_quantity(text: str) -> str:
    """The string k8s.io/apimachinery resource.Quantity keeps for ``text`` (ParseQuantity,
    then MarshalJSON), so the form the API server stores and Kueue's webhook re-serialises.

    ParseQuantity keeps the input string itself when it takes the int64 fast path (at most 18
    digits, no precision below nano, for binary suffixes no fraction) and the string already
    looks canonical: decimal with a scale that is a multiple of 3, digits that do not end in
    "000" and do not start with 0 once leading zeros of the whole part are dropped
    ("1460.357", "1275428m", "1500"); binary with a value that is not a multiple of 8
    ("1123474Mi"). So "1000" becomes "1k" but "1500" stays, "0.5" becomes "500m".
    Every other input is stored in canonical form (Quantity.CanonicalizeBytes):

    - The format comes from the suffix: Ki..Ei is BinarySI, e<n> DecimalExponent, none or
      n/u/m/k/M/G/T/P/E DecimalSI. Precision below nano is rounded up to 1n; BinarySI is
      capped at 2^63-1.
    - Zero is "0".
    - BinarySI below 1024 in magnitude, or not a whole number, is written as DecimalSI.
      Else the largest power of 1024 dividing the value is the suffix (none when 1).
    - DecimalSI / DecimalExponent: the value is mantissa x 10^exponent with trailing zeros
      moved into the exponent, then the exponent lowered to a multiple of 3 (the mantissa
      takes the zeros back): 1000 -> 1k, 1500 -> 1500, 0.5 -> 500m, 0.0001 -> 100u. The
      exponent is a suffix for DecimalSI and e<exponent> for DecimalExponent.
    """
    match = _QUANTITY.fullmatch(text)
    if match is None or not (match["num"] or match["denom"]):
        raise ValueError(f"{text!r} is not a quantity")
    if text == "0":
        return text
    negative = match["sign"] == "-"
    num, denom, suffix = match["num"].lstrip("0") or "0", match["denom"] or "", match["suffix"]
    if suffix[:1] in ("e", "E"):
        fmt, base, exponent = "DecimalExponent", 10, int(suffix[1:])
    elif suffix in _BINARY:
        fmt, base, exponent = "BinarySI", 2, _BINARY[suffix]
    else:
        fmt, base, exponent = "DecimalSI", 10, _DECIMAL[suffix]

    # The fast path of ParseQuantity, which keeps a canonical-looking input string as it is.
    if base == 10:
        scale, multiplier, precision = exponent, 1, 18 - len(num) - len(denom)
    elif not denom:
        scale, multiplier, precision = 0, 2**exponent, 15 - len(num) - exponent * 3 // 10 - 1
    else:
        scale, multiplier, precision = 0, 1, -1
    scale -= len(denom)
    if precision >= 0 and scale >= -9 and int(num + denom) * multiplier <= _INT64_MAX:
        shifted = num + denom
        if fmt == "BinarySI":
            if int(shifted) & 7:
                return text
        elif scale % 3 == 0 and not shifted.endswith("000") and shifted[0] != "0":
            return text

    # The slow path and Quantity.CanonicalizeBytes.
    value = Fraction(f"{num}.{denom or 0}") * (
        Fraction(10) ** exponent if base == 10 else 2**exponent
    )
    nano = value * 10**9
    if nano.denominator != 1:  # round up to nano
        value = Fraction(-(-nano.numerator // nano.denominator), 10**9)
    if fmt == "BinarySI":
        value = min(value, Fraction(_INT64_MAX))
    if value == 0:
        return "0"
    sign = "-" if negative else ""
    if fmt == "BinarySI":
        if value < 1024 or value.denominator != 1:
            fmt = "DecimalSI"
        else:
            whole, power = int(value), 0
            while whole % 1024 == 0 and power < 6:
                whole, power = whole // 1024, power + 1
            return f"{sign}{whole}{_BINARY_BY_POWER[power]}"
    exponent = 0
    while value.denominator != 1:
        value, exponent = value * 10, exponent - 1
    mantissa = int(value)
    while mantissa % 10 == 0:
        mantissa, exponent = mantissa // 10, exponent + 1
    shift = exponent % 3  # Python's % is never negative: lower the exponent to a multiple of 3
    mantissa, exponent = mantissa * 10**shift, exponent - shift
    if fmt == "DecimalExponent":
        return f"{sign}{mantissa}" + (f"e{exponent}" if exponent else "")
    if exponent not in _DECIMAL_BY_EXPONENT:
        raise ValueError(f"{text!r}: exponent {exponent} has no DecimalSI suffix")
    return f"{sign}{mantissa}{_DECIMAL_BY_EXPONENT[exponent]}"


# Checked against kubectl v1.32 (`kubectl set resources --local --requests=cpu=<q> -o yaml`,
# which parses each value into a resource.Quantity and prints it back).
@pytest.mark.parametrize(
    ("text", "stored"),
    [
        ("0", "0"),
        ("0m", "0"),
        ("0Gi", "0"),
        ("1000", "1k"),
        ("3000", "3k"),
        ("12000", "12k"),
        ("1536000", "1536k"),
        ("1024000", "1024k"),
        ("1536", "1536"),
        ("1540", "1540"),
        ("1048576", "1048576"),
        ("64", "64"),
        ("0.5", "500m"),
        ("2000m", "2"),
        ("10m", "10m"),
        ("1275428m", "1275428m"),
        ("0.0001", "100u"),
        ("1.5Gi", "1536Mi"),
        ("0.5Ki", "512"),
        ("1.5Ki", "1536"),
        ("1000Ki", "1000Ki"),
        ("1024Mi", "1Gi"),
        ("1123474Mi", "1123474Mi"),
        ("800Gi", "800Gi"),
        ("1e3", "1e3"),
        ("1500e3", "1500e3"),
        ("1e9", "1e9"),
        ("1500", "1500"),
        ("1.5", "1500m"),
        ("1460.357", "1460.357"),
        ("6428150.", "6428150."),
        ("2048Mi", "2Gi"),
        ("7Ki", "7Ki"),
        ("8Ki", "8Ki"),
        ("1536Mi", "1536Mi"),
        ("2000Mi", "2000Mi"),
    ],
)
def test_stored_quantity_follows_apimachinery(text: str, stored: str) -> None:
    assert stored_quantity(text) == stored


# Where the rendered objects carry quantities, per kind: maps of resource name -> quantity.
def _quantities(obj: dict[str, Any]) -> Iterator[tuple[str, Any]]:
    kind, spec = obj.get("kind"), obj.get("spec") or {}

    def each(mapping: Any, where: str) -> Iterator[tuple[str, Any]]:
        for key, value in (mapping or {}).items():
            yield f"{where}[{key}]", value

    if kind == "ResourceQuota":
        yield from each(spec.get("hard"), "spec.hard")
    elif kind == "LimitRange":
        for i, limit in enumerate(spec.get("limits") or []):
            for field in ("default", "defaultRequest", "max", "min", "maxLimitRequestRatio"):
                yield from each(limit.get(field), f"spec.limits[{i}].{field}")
    elif kind in ("ClusterQueue", "Cohort"):
        for g, group in enumerate(spec.get("resourceGroups") or []):
            for f, flavor in enumerate(group.get("flavors") or []):
                for r, resource in enumerate(flavor.get("resources") or []):
                    where = f"spec.resourceGroups[{g}].flavors[{f}].resources[{r}]"
                    for field in ("nominalQuota", "borrowingLimit", "lendingLimit"):
                        if field in resource:
                            yield f"{where}.{field}", resource[field]
        if "weight" in (spec.get("fairSharing") or {}):
            yield "spec.fairSharing.weight", spec["fairSharing"]["weight"]
    elif kind == "Queue":  # Volcano: Go resource.Quantity too
        yield from each(spec.get("capability"), "spec.capability")
        yield from each(spec.get("deserved"), "spec.deserved")
        yield from each((spec.get("guarantee") or {}).get("resource"), "spec.guarantee.resource")
    elif kind == "NodePool":
        yield from each(spec.get("limits"), "spec.limits")


@pytest.mark.parametrize("source", SOURCES, ids=SOURCE_IDS)
def test_rendered_quantities_are_stored_as_written(
    source: str | Path, request: pytest.FixtureRequest
) -> None:
    wrong, count = [], 0
    for name, obj in _objects(_source(request, source)):
        for where, value in _quantities(obj):
            count += 1
            if not isinstance(value, str):
                wrong.append(f"{name} {where}: {value!r} is not a string")
            elif stored_quantity(value) != value:
                wrong.append(f"{name} {where}: {value!r} is stored as {stored_quantity(value)!r}")
    assert count, "no quantities found: the paths above no longer match the output"
    assert not wrong, "quantities the API server would rewrite:\n" + "\n".join(wrong)


# gpuplan.model.quantity's formatters against the canonical form, on values the fleet can produce.
@pytest.mark.parametrize(
    "value",
    [Fraction(n) for n in (0, 1, 7, 64, 384, 999, 1001, 1024, 1500)]
    + [Fraction(1, 2), Fraction(1, 3), Fraction(3, 2), Fraction(1275428, 1000)],
)
def test_format_cpu_is_canonical(value: Fraction) -> None:
    text = format_cpu(value)
    assert stored_quantity(text) == text


@pytest.mark.parametrize(
    "value",
    [0, 1, 1023, 1536, 1540, 2**20, 1123474 * 2**20, 1536 * 2**20, 3800 * 2**30, 2**40, 1024000],
)
def test_format_bytes_is_canonical(value: int) -> None:
    text = format_bytes(Fraction(value))
    assert stored_quantity(text) == text


@pytest.mark.parametrize("value", [0, 1, 8, 70, 128, 999, 1024])
def test_format_count_is_canonical(value: int) -> None:
    text = format_count(value)
    assert stored_quantity(text) == text


# Values the API server would rewrite if gpuplan wrote them naively: a plain number ending in
# "000" is stored as "1k", a cpu amount floored to whole cores as "2", one below a millicore as "0".
@pytest.mark.parametrize(
    ("formatter", "value"),
    [
        (format_cpu, Fraction(1000)),  # "1000", stored "1k"
        (format_cpu, Fraction(1, 10000)),  # "0m", stored "0"
        (format_cpu, Fraction(20001, 10000)),  # "2000m" (floored), stored "2"
        (format_bytes, Fraction(3000)),  # "3000", stored "3k"
        (format_bytes, Fraction(5 * 10**6)),  # "5000000", stored "5M"
        (format_count, 1000),  # "1000", stored "1k"
    ],
    ids=[
        "cpu-1000",
        "cpu-sub-milli",
        "cpu-floored-to-whole",
        "bytes-3000",
        "bytes-5000000",
        "count-1000",
    ],
)
def test_formatter_edge_cases_are_canonical(formatter: Any, value: Any) -> None:
    text = formatter(value)
    assert stored_quantity(text) == text
