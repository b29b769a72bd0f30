"""A small, deterministic writer of Terraform (HCL) blocks, laid out as `terraform fmt` lays them out."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

INDENT = "  "


class Expr(str):
    """An HCL expression written as is (a reference, a list of references), not as a string."""


@dataclass
class Block:
    """One HCL block: a type, its labels, then attributes and nested blocks in the given order."""

    kind: str
    labels: tuple[str, ...] = ()
    body: list[tuple[str, Any] | Block] = field(default_factory=list)

    def set(self, name: str, value: Any) -> Block:
        """Add an attribute; return the block."""
        self.body.append((name, value))
        return self

    def comment(self, text: str) -> Block:
        """Add a comment line; return the block."""
        self.body.append(("#", text))
        return self

    def add(self, block: Block) -> Block:
        """Add a nested block; return the block it was added to."""
        self.body.append(block)
        return self


def identifier(*parts: str) -> str:
    """Return a Terraform resource name from parts: letters, digits and underscores, not starting with a digit."""
    name = "_".join(re.sub(r"[^A-Za-z0-9_]", "_", p) for p in parts)
    return name if not name[:1].isdigit() else "_" + name


def _string(text: str) -> str:
    # JSON's escapes are HCL's; a template sequence must be doubled to stay literal.
    return json.dumps(text, ensure_ascii=False).replace("${", "$${").replace("%{", "%%{")


def _value(value: Any, depth: int) -> list[str]:
    if isinstance(value, Expr):
        return [str(value)]
    if isinstance(value, bool):
        return ["true" if value else "false"]
    if isinstance(value, int):
        return [str(value)]
    if isinstance(value, str):
        return [_string(value)]
    if isinstance(value, list):
        return ["[" + ", ".join(_value(v, depth)[0] for v in value) + "]"]
    if isinstance(value, dict):
        keys = [_string(str(k)) for k in value]
        width = max((len(k) for k in keys), default=0)
        pad = INDENT * (depth + 1)
        inner = [
            f"{pad}{k.ljust(width)} = {_value(v, depth + 1)[0]}"
            for k, v in zip(keys, value.values(), strict=True)
        ]
        return ["{", *inner, INDENT * depth + "}"]
    raise TypeError(f"no HCL form for {value!r}")


def _attributes(run: list[tuple[str, Any]], depth: int) -> list[str]:
    # terraform fmt aligns the `=` of consecutive single-line attributes.
    width = max((len(name) for name, value in run if not isinstance(value, dict)), default=0)
    lines = []
    for name, value in run:
        rendered = _value(value, depth)
        key = name if isinstance(value, dict) else name.ljust(width)
        lines.append(f"{INDENT * depth}{key} = {rendered[0]}")
        lines += rendered[1:]
    return lines


def render(block: Block, depth: int = 0) -> list[str]:
    """Return the lines of a block."""
    head = " ".join([block.kind, *(_string(label) for label in block.labels)])
    lines = [INDENT * depth + head + " {"]
    run: list[tuple[str, Any]] = []
    for item in block.body:
        if isinstance(item, Block):
            if run:
                lines += _attributes(run, depth + 1)
                run = []
            lines += render(item, depth + 1)
        elif item[0] == "#":
            if run:
                lines += _attributes(run, depth + 1)
                run = []
            lines.append(f"{INDENT * (depth + 1)}# {item[1]}")
        elif isinstance(item[1], dict):
            if run:
                lines += _attributes(run, depth + 1)
            lines += _attributes([item], depth + 1)
            run = []
        else:
            run.append(item)
    if run:
        lines += _attributes(run, depth + 1)
    lines.append(INDENT * depth + "}")
    return lines
