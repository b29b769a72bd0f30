"""`gpuplan schema cluster|tenant`: the JSON Schema of an input file kind."""

from __future__ import annotations

import json
import sys
from fractions import Fraction
from typing import Any

from pydantic.json_schema import GenerateJsonSchema

from gpuplan.exitcode import ExitCode
from gpuplan.model.quantity import quantity_text


class _Schema(GenerateJsonSchema):
    """Pydantic's JSON Schema, with a quantity default written as a user writes it (100m, not 1/10)."""

    def encode_default(self, dft: Any) -> Any:
        return super().encode_default(quantity_text(dft) if isinstance(dft, Fraction) else dft)


def schema(kind: str) -> int:
    """Print the JSON Schema of an input file kind; return the exit code."""
    from gpuplan.model.cluster import Cluster
    from gpuplan.model.common import Model
    from gpuplan.model.tenant import Tenant

    models: dict[str, type[Model]] = {"cluster": Cluster, "tenant": Tenant}
    model = models[kind]
    document = model.model_json_schema(by_alias=True, schema_generator=_Schema)
    document["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    sys.stdout.write(json.dumps(document, indent=2, sort_keys=True) + "\n")
    return ExitCode.OK
