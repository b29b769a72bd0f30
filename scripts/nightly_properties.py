#!/usr/bin/env python3
"""Nightly property run: the properties of tests/test_properties.py with many more examples.

    GPUPLAN_CRDS=../shared/crds python scripts/nightly_properties.py --examples 5000

Each property draws fresh random fleets (a new seed every night unless --seed is given; the seed
is printed so a failure can be replayed). Prints a summary per
property (examples, rendered vs refused, defects put in, time) and, for a failure, the shrunk
fleet. Exit 0 when every property held, 1 otherwise.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
import traceback
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

PROJECT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(PROJECT))

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import seed as with_seed
from hypothesis import strategies as st

from tests import strategies as S
from tests import test_properties as P


@dataclass
class Property:
    """One property: what it checks, the fleets it draws, its share of the examples."""

    name: str
    check: Callable[[S.Case], str]
    fleets: st.SearchStrategy[S.Case]
    share: float
    outcomes: Counter[str] = field(default_factory=Counter)
    defects: Counter[str] = field(default_factory=Counter)
    failure: str | None = None
    seconds: float = 0.0


def properties() -> list[Property]:
    """Return the nightly properties (the same functions the CI tests call)."""
    return [
        Property("valid fleets render and keep the invariants", P.prop_valid_fleet_renders, S.fleets(defects=False, max_clusters=3, max_tenants=6), 0.35),
        Property("any fleet renders correctly or is refused with a diagnostic", P.prop_renders_or_refuses, S.fleets(defects=True, max_clusters=3, max_tenants=6), 0.45),
        Property("the command line exits 0/1 and --check is clean after a render", P.prop_command_line, S.fleets(defects=True), 0.10),
        Property("cpu/memory quotas of a pool fit its nodes", P.prop_cpu_memory_fit, S.fleets(defects=False), 0.05),
        Property("hierarchical cohorts: ResourceQuota covers the cohort tree", P.prop_valid_fleet_renders, S.fleets(defects=False, hierarchy=True), 0.05),
    ]  # fmt: skip


def run_property(prop: Property, examples: int, seed: int, shrink: bool) -> None:
    """Run one property under hypothesis; record outcomes or the (shrunk) falsifying example."""
    phases = [Phase.explicit, Phase.generate] + ([Phase.shrink] if shrink else [])
    config = settings(
        max_examples=examples,
        deadline=None,
        database=None,
        phases=phases,
        print_blob=True,
        suppress_health_check=list(HealthCheck),
    )

    def body(case: S.Case) -> None:
        outcome = prop.check(case)
        prop.outcomes[outcome] += 1
        for defect in case.defects:
            prop.defects[defect.kind + ("" if defect.certain else " (not certainly an error)")] += 1

    test = with_seed(seed)(settings(config)(given(prop.fleets)(body)))
    started = time.perf_counter()
    try:
        test()
    except Exception as exc:  # noqa: BLE001 - a falsified property: report it, go on
        prop.failure = "".join(
            traceback.format_exception_only(type(exc), exc)
        ).strip()  # with hypothesis' notes
    prop.seconds = time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--examples", type=int, default=5000, help="examples over all properties (default 5000)"
    )
    parser.add_argument(
        "--seed", type=int, default=None, help="replay a run (default: random, printed)"
    )
    parser.add_argument(
        "--no-shrink",
        action="store_true",
        help="report the first failing example as found (faster)",
    )
    parser.add_argument(
        "--only", default=None, help="run only properties whose name contains this text"
    )
    args = parser.parse_args(argv)
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(2**32)
    crds = P.CRDS
    print(f"gpuplan nightly properties: {args.examples} examples, seed {seed}")
    print(
        f"CRDs: {crds if crds else 'the newest shipped sets (GPUPLAN_CRDS adds or replaces kinds)'}"
    )
    chosen = [p for p in properties() if args.only is None or args.only in p.name]
    total_share = sum(p.share for p in chosen) or 1.0
    failed = 0
    for index, prop in enumerate(chosen):
        count = max(1, round(args.examples * prop.share / total_share))
        print(
            f"\n== {prop.name}: {count} examples",
            flush=True,
        )
        run_property(prop, count, seed + index, shrink=not args.no_shrink)
        ran = sum(prop.outcomes.values())
        outcomes = ", ".join(f"{k} {v}" for k, v in sorted(prop.outcomes.items())) or "none"
        print(f"   {ran} passing runs, shrinking included ({outcomes}) in {prop.seconds:.1f}s")
        for kind, n in sorted(prop.defects.items()):
            print(f"   defect {kind}: {n}")
        if prop.failure:
            failed += 1
            print("   FAILED:\n" + "\n".join("   | " + line for line in prop.failure.splitlines()))
    print("\n== summary")
    for prop in chosen:
        status = "FAILED" if prop.failure else "ok"
        print(
            f"   {status:6} {sum(prop.outcomes.values()):6} runs {prop.seconds:7.1f}s  {prop.name}"
        )
    print(f"seed {seed}; {failed} of {len(chosen)} properties falsified")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
