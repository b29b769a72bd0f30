"""Cross-object and capacity checks over the resolved fleet: small named functions, one registry.

A check is `def check_x(fleet) -> Iterable[Diagnostic]`, registered with @check; adding one is
one function in the module of its topic. A component's check modules are named by its registry
entry (gpuplan/components/), so a new component's checks need no line here.

A check whose findings are each allocation's own is written `def check_x(alloc)` and registered
with @allocation_check, which runs it over every allocation of the fleet.
"""

from __future__ import annotations

import importlib

# re-exported: the pipeline and the docs read the registry from here, once every check is in it
from gpuplan.check.registry import CHECKS as CHECKS
from gpuplan.check.registry import EXTRA_CODES as EXTRA_CODES
from gpuplan.check.registry import RETIRED_CODES as RETIRED_CODES
from gpuplan.check.registry import STAGE_CODES as STAGE_CODES
from gpuplan.check.registry import allocation_check as allocation_check
from gpuplan.check.registry import check as check
from gpuplan.check.registry import clusters_with as clusters_with
from gpuplan.check.registry import code_descriptions as code_descriptions
from gpuplan.check.registry import code_of as code_of
from gpuplan.check.registry import codes as codes
from gpuplan.check.registry import known_codes as known_codes
from gpuplan.diagnostics import Diagnostic, with_code
from gpuplan.plan.fleet import Fleet


def run_checks(fleet: Fleet) -> list[Diagnostic]:
    """Run every registered check and return all findings."""
    return [d for fn in CHECKS for d in with_code(fn(fleet), code_of(fn))]


def _register() -> None:
    """Import the checks of no one component, then each registry component's check modules."""
    # register the checks (gke: GKE's GPU stack, which is no registry component)
    from gpuplan.check import (  # noqa: F401
        admission,
        gke,
        overrun,
        quotas,
        rbac,
        tenants,
        topology,
        version_bumps,
    )
    from gpuplan.components import REGISTRY

    for component in REGISTRY.values():
        for module in component.checks:
            importlib.import_module(module)


_register()
