"""`gpuplan schema cluster|tenant`: the JSON Schema of an input file kind."""

from __future__ import annotations

import json
import sys

from gpuplan.exitcode import ExitCode


def schema(kind: str) -> int:
    """Print the JSON Schema of an input file kind; return the exit code."""
    from gpuplan.model.cluster import Cluster
    from gpuplan.model.common import Model
    from gpuplan.model.tenant import Tenant

    models: dict[str, type[Model]] = {"cluster": Cluster, "tenant": Tenant}
    model = models[kind]
    document = model.model_json_schema(by_alias=True)
    document["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    sys.stdout.write(json.dumps(document, indent=2, sort_keys=True) + "\n")
    return ExitCode.OK
