"""`gpuplan schema`: every default and example the JSON Schema states is valid by the schema and by gpuplan."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema_rs
import pytest
import yaml

from tests.conftest import copy_example, run


def stated(node: Any, path: str = "") -> Iterator[tuple[str, dict[str, Any], Any]]:
    """Yield (where, subschema, value) for every default and example in a schema."""
    if isinstance(node, dict):
        own = {k: v for k, v in node.items() if k not in ("default", "examples")}
        if "default" in node:
            yield f"{path} default", own, node["default"]
        for example in node.get("examples", []):
            yield f"{path} example", own, example
        for key, value in node.items():
            yield from stated(value, f"{path}/{key}")
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from stated(value, f"{path}[{index}]")


@pytest.mark.parametrize("kind", ["cluster", "tenant"])
def test_every_default_and_example_validates_against_the_schema(kind: str) -> None:
    result = run("schema", kind)
    assert result.code == 0
    document = json.loads(result.stdout)
    wrong = []
    values = list(stated(document))
    for where, subschema, value in values:
        schema = {"$defs": document.get("$defs", {}), **subschema}
        if not jsonschema_rs.validator_for(schema).is_valid(value):
            wrong.append((where, value))
    assert len(values) > 30 and wrong == []
    if kind == "cluster":
        ami = document["$defs"]["Ec2NodeClassSettings"]["properties"]["amiVersion"]
        assert ami["examples"] == ["v20250505", "1.39.0", "latest"]


def test_the_stated_container_defaults_are_accepted_by_gpuplan(tmp_path: Path) -> None:
    document = json.loads(run("schema", "cluster").stdout)
    defaults = document["properties"]["containerDefaults"]["default"]
    assert defaults["requests"] == {"cpu": "100m", "memory": "256Mi"}
    root = copy_example(tmp_path / "repo")
    path = root / "clusters/h100-prod.yaml"
    cluster = yaml.safe_load(path.read_text())
    cluster["containerDefaults"] = {
        "requests": defaults["requests"],
        "limits": {k: v for k, v in defaults["limits"].items() if v is not None},
    }
    path.write_text(yaml.safe_dump(cluster, sort_keys=False))
    result = run("check", "--root", str(root))
    assert result.code == 0, result.stderr
