"""The docs site's reference pages, generated from the code: input fields, codes, commands, versions.

Nothing here is written twice: the fields come from the input models' JSON Schema (what
`gpuplan schema` prints), the codes from the check registry with an example from the golden
cases that prove them (tests/cases/<case>/errors.txt), the commands from click, the versions from
the component registry. docs/hooks.py adds the pages to the site at build time.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterator, Mapping
from fractions import Fraction
from pathlib import Path
from typing import Any

import click
from pydantic import BaseModel
from pydantic.json_schema import GenerateJsonSchema

from gpuplan.model.quantity import quantity_text

PAGES = (
    "reference/fields.md",
    "reference/codes.md",
    "reference/commands.md",
    "reference/versions.md",
)
QUANTITY = "Kubernetes quantity"  # the description gpuplan.model.common.Quantity's schema carries
EXCERPT = 4  # lines of an example's input shown before and after the line a diagnostic names


class Undocumented(ValueError):
    """Something the reference lists has no description; the message names each one."""

    def __init__(self, what: str, names: list[str]) -> None:
        self.names = names
        super().__init__(f"{len(names)} {what} without a description: {', '.join(names)}")


class _Schema(GenerateJsonSchema):
    """Pydantic's JSON Schema, with a quantity default written as a user writes it (100m)."""

    def encode_default(self, dft: Any) -> Any:
        return super().encode_default(quantity_text(dft) if isinstance(dft, Fraction) else dft)


def reference_pages(cli: click.Group, cases: Path) -> dict[str, str]:
    """Return the four reference pages (path under docs/ -> markdown)."""
    return {
        "reference/fields.md": fields_page(),
        "reference/codes.md": codes_page(cases),
        "reference/commands.md": commands_page(cli),
        "reference/versions.md": versions_page(),
    }


# --- input fields --------------------------------------------------------------------------------


def input_files() -> dict[str, tuple[str, type[BaseModel]]]:
    """Return each input file kind: (where its files live, its model)."""
    from gpuplan.model.cluster import Cluster
    from gpuplan.model.tenant import Tenant

    return {"cluster": ("clusters/<name>.yaml", Cluster), "tenant": ("tenants/<name>.yaml", Tenant)}


def fields_page(files: Mapping[str, tuple[str, type[BaseModel]]] | None = None) -> str:
    """Return the page of every input field; raise Undocumented naming each field without one."""
    files = input_files() if files is None else files
    out = [
        "# Input fields\n",
        "Generated from gpuplan's input models (`gpuplan/model/`): every field of a cluster and a",
        "tenant file, as you write it in YAML, with its type, default, bounds and description. An",
        "unknown field is an error. `gpuplan schema cluster|tenant` prints the same as JSON Schema",
        "for your editor.\n",
    ]
    missing: list[str] = []
    shown: dict[str, list[str]] = {}  # model -> its paths, each "kind: path"
    per_file = []
    for kind, (where, model) in files.items():
        document = model.model_json_schema(by_alias=True, schema_generator=_Schema)
        sections = _sections(model.__name__, document, document.get("$defs", {}))
        new = {name: node for name, (node, _) in sections.items() if name not in shown}
        for name, (_, paths) in sections.items():
            shown.setdefault(name, []).extend(f"{kind}: {p}" if p else kind for p in paths)
        per_file.append((kind, where, new))
    for kind, where, new in per_file:
        out.append(f"## The {kind} file: `{where}`\n")
        for name, node in new.items():
            out += _model_section(name, node, shown[name], missing)
    if missing:
        raise Undocumented("input fields", missing)
    return "\n".join(out).rstrip() + "\n"


def _sections(
    root: str, document: dict[str, Any], defs: dict[str, Any]
) -> dict[str, tuple[dict[str, Any], list[str]]]:
    """Return each model reachable from the file's root, in the order first met, with its paths."""
    found: dict[str, tuple[dict[str, Any], list[str]]] = {}

    def visit(name: str, node: dict[str, Any], path: str) -> None:
        if name in found:
            found[name][1].append(path)
            return
        found[name] = (node, [path])
        for field, prop in node.get("properties", {}).items():
            for ref, suffix in _refs(prop):
                visit(ref, defs[ref], f"{path}.{field}{suffix}".lstrip("."))

    visit(root, document, "")
    return found


def _refs(node: dict[str, Any], suffix: str = "") -> Iterator[tuple[str, str]]:
    """Yield (model name, path suffix such as [] or {}) of the models a property holds."""
    if "$ref" in node:
        yield node["$ref"].rsplit("/", 1)[-1], suffix
    for key in ("anyOf", "oneOf", "allOf"):
        for sub in node.get(key, []):
            yield from _refs(sub, suffix)
    if isinstance(node.get("items"), dict):
        yield from _refs(node["items"], suffix + "[]")
    for values in _map_values(node):
        yield from _refs(values, suffix + "{}")


def _map_values(node: dict[str, Any]) -> list[dict[str, Any]]:
    """Return the schemas of a map's values (additionalProperties, or those of patternProperties)."""
    found = list(node.get("patternProperties", {}).values())
    if isinstance(node.get("additionalProperties"), dict):
        found.append(node["additionalProperties"])
    return found


def _model_section(
    name: str, node: dict[str, Any], paths: list[str], missing: list[str]
) -> list[str]:
    """Return the lines of one model's section: where it stands, then each field."""
    shown = [f"`{p}`" if ": " in p else f"the top of a {p} file" for p in sorted(set(paths))]
    out = [f"### {name}\n", f"At {', '.join(shown)}.\n"]
    if node.get("description"):
        out.append(_one_paragraph(node["description"]) + "\n")
    required = set(node.get("required", []))
    for field, prop in sorted(node.get("properties", {}).items()):
        description = _one_paragraph(str(prop.get("description", "")))
        if not description:
            missing.append(f"{name}.{field}")
        if field in required:
            default = "required"
        elif "default" in prop:
            default = f"default `{_compact(prop['default'])}`"
        else:
            default = "optional"
        out.append(f"- **`{field}`** ({_type(prop)}; {default}): {description}")
    out.append("")
    return out


def _one_paragraph(text: str) -> str:
    """Return text on one line, with `<` and `>` outside code spans escaped (clusters/<name>.yaml)."""
    parts = " ".join(text.split()).split("`")
    for i in range(0, len(parts), 2):  # the even parts are outside backticks
        parts[i] = parts[i].replace("<", "&lt;").replace(">", "&gt;")
    return "`".join(parts)


def _compact(value: Any) -> str:
    return json.dumps(value, separators=(", ", ": "), sort_keys=True)


def _type(node: dict[str, Any]) -> str:
    """Return a property's type as a reader says it, with its bounds."""
    options = [n for n in node.get("anyOf", node.get("oneOf", [])) if n.get("type") != "null"]
    if len(options) > 1 and QUANTITY in str(node.get("description", "")) + str(
        [o.get("description", "") for o in options]
    ):
        return "quantity such as 500m, 64 or 2Gi"
    if options and _is_quantity(options):
        return "quantity such as 500m, 64 or 2Gi"
    if options:
        return " or ".join(_type(o) for o in options)
    if "$ref" in node:
        name = node["$ref"].rsplit("/", 1)[-1]
        return f"[{name}](#{name.lower()})"
    if "allOf" in node:
        return " and ".join(_type(o) for o in node["allOf"])
    if "enum" in node:
        return "one of " + ", ".join(f"`{v}`" for v in node["enum"])
    if "const" in node:
        return f"`{node['const']}`"
    kind = node.get("type", "any")
    if kind == "array":
        text = f"list of {_type(node.get('items', {}))}"
    elif kind == "object":
        values = _map_values(node)
        keys = "".join(f" matching `{k}`" for k in node.get("patternProperties", {}))
        text = f"map of string{keys} to {_type(values[0])}" if values else "map"
    else:
        text = {"string": "string", "integer": "integer", "number": "number"}.get(kind, str(kind))
    bounds = _bounds(node)
    return f"{text}, {bounds}" if bounds else text


def _is_quantity(options: list[dict[str, Any]]) -> bool:
    kinds = sorted(str(o.get("type")) for o in options)
    return kinds == ["number", "string"] and any("pattern" in o for o in options)


def _bounds(node: dict[str, Any]) -> str:
    said = []
    pairs = (
        ("minimum", "at least {}"),
        ("exclusiveMinimum", "above {}"),
        ("maximum", "at most {}"),
        ("exclusiveMaximum", "below {}"),
        ("minLength", "at least {} characters"),
        ("maxLength", "at most {} characters"),
        ("minItems", "at least {} item(s)"),
        ("maxItems", "at most {} item(s)"),
        ("minProperties", "at least {} key(s)"),
        ("pattern", "matching `{}`"),
    )
    for key, text in pairs:
        if key in node:
            said.append(text.format(node[key]))
    return ", ".join(said)


# --- diagnostic codes ----------------------------------------------------------------------------


def codes_page(cases: Path, described: Mapping[str, str] | None = None) -> str:
    """Return the page of every diagnostic code with its description and an example that fires it.

    `cases` is tests/cases: each code's example is the first golden case whose errors.txt reports
    it (tests/test_golden.py proves each errors.txt is what gpuplan prints). Raise Undocumented
    naming each code without a description.
    """
    from gpuplan.check import RETIRED_CODES, code_descriptions

    described = code_descriptions() if described is None else described
    missing = sorted(code for code, text in described.items() if not text.strip())
    if missing:
        raise Undocumented("diagnostic codes", missing)
    examples = code_examples(cases)
    out = [
        "# Diagnostic codes\n",
        "Generated from the check registry (`gpuplan/check/`): every code a finding of gpuplan",
        "can carry. Each diagnostic ends with its code in brackets; a warning is accepted where it",
        "stands with an `ignore` entry naming the code and the reason (errors are never",
        "silenced). The example under each code is a golden test case (`tests/cases/`) whose",
        "`gpuplan render` (or the command it names) reports, exactly as shown.\n",
    ]
    for code in sorted(described):
        out.append(f"## `{code}`\n")
        out.append(_help_paragraphs(described[code]) + "\n")
        if code in examples:
            out += _example(cases, *examples[code])
        elif code not in RETIRED_CODES:
            out.append("No example case reports this code yet.\n")
    return "\n".join(out).rstrip() + "\n"


DIAGNOSTIC = re.compile(
    r"^(?P<file>[^:\s]+):(?P<line>\d+):(?P<col>\d+): .* \[(?P<code>[a-z0-9-]+)\]$"
)


def code_examples(cases: Path) -> dict[str, tuple[str, str]]:
    """Return each code reported by a golden case: (case name, the first diagnostic line with it)."""
    found: dict[str, tuple[str, str]] = {}
    for errors in sorted(cases.glob("*/errors.txt")):
        for line in errors.read_text(encoding="utf-8").splitlines():
            match = DIAGNOSTIC.match(line)
            if match and match["code"] not in found:
                found[match["code"]] = (errors.parent.name, line)
    return found


def _example(cases: Path, case: str, line: str) -> list[str]:
    match = DIAGNOSTIC.match(line)
    assert match is not None  # code_examples kept only the lines that match
    source = cases / case / "input" / match["file"]
    args = cases / case / "args.txt"  # more render flags (tests/test_golden.py)
    flags = f" (`gpuplan render {args.read_text().strip()}`)" if args.is_file() else ""
    if (cases / case / "base").is_dir():  # checked against its base revision (tests/test_golden.py)
        flags = " (`gpuplan check --base REF`, REF holding the case's `base/`)"
    elif (cases / case / "validate.txt").is_file():
        flags = " (`gpuplan validate`)"
    out = [f"Example: case `{case}`{flags}, `{match['file']}`:\n"]
    if source.is_file():
        lines = source.read_text(encoding="utf-8").splitlines()
        at = int(match["line"])
        first, last = max(1, at - EXCERPT), min(len(lines), at + EXCERPT)
        # numbered as in the file, the diagnostic's line marked (pymdownx.highlight)
        out.append(f'```yaml linenums="{first}" hl_lines="{at - first + 1}"')
        out += lines[first - 1 : last]
        out.append("```\n")
    out += ["```text", line, "```\n"]
    return out


# --- commands ------------------------------------------------------------------------------------


def commands_page(cli: click.Group) -> str:
    """Return the page of every command and option, from click; raise Undocumented for a bare one."""
    from gpuplan.exitcode import ExitCode, meaning

    out = [
        "# Commands\n",
        "Generated from the command line itself (`gpuplan --help`, `gpuplan COMMAND --help`).\n",
        "## Exit codes\n",
    ]
    out += [f"- `{code.value}` ({code.name.lower()}): {meaning(code)}" for code in ExitCode]
    out.append("")
    missing: list[str] = []
    parent = click.Context(cli, info_name="gpuplan")
    out += _command_section(parent, cli, "gpuplan", missing, group=True)
    for name in sorted(cli.list_commands(parent)):
        command = cli.get_command(parent, name)
        if command is None or command.hidden:
            continue
        ctx = click.Context(command, info_name=name, parent=parent)
        out += _command_section(ctx, command, f"gpuplan {name}", missing)
    if missing:
        raise Undocumented("commands or options", missing)
    return "\n".join(out).rstrip() + "\n"


def _command_section(
    ctx: click.Context, command: click.Command, title: str, missing: list[str], group: bool = False
) -> list[str]:
    out = [f"## `{title}`\n"]
    usage = " ".join(command.collect_usage_pieces(ctx))
    out += ["```text", f"{title} {usage}".rstrip(), "```\n"]
    help_text = (command.help or "").strip()
    if not help_text:
        missing.append(title)
    out += [_help_paragraphs(help_text), ""]
    params = [p for p in command.get_params(ctx) if not getattr(p, "hidden", False)]
    arguments = [p for p in params if isinstance(p, click.Argument)]
    options = [p for p in params if isinstance(p, click.Option)]
    if arguments:
        out.append("Arguments:\n")
        for argument in arguments:
            out.append(f"- `{argument.make_metavar(ctx)}`{_argument_text(argument)}")
        out.append("")
    if options:
        out.append("Options:\n")
        for option in options:
            record = option.get_help_record(ctx)
            if record is None:
                continue
            flags, text = record
            if not (option.help or "").strip():
                missing.append(f"{title} {option.opts[0]}")
            out.append(f"- `{flags}`: {_one_paragraph(text)}")
        out.append("")
    return out


def _help_paragraphs(text: str) -> str:
    """Return click help text as markdown paragraphs (click's \\b marks a block kept as written)."""
    paragraphs = [p for p in re.split(r"\n\s*\n", text) if p.strip()]
    return "\n\n".join(_one_paragraph(p.replace("\b", "")) for p in paragraphs)


def _argument_text(argument: click.Argument) -> str:
    kind = argument.type
    if isinstance(kind, click.Choice):
        return ": one of " + ", ".join(f"`{c}`" for c in kind.choices)
    extra = " (optional)" if not argument.required else ""
    many = " (one or more)" if argument.nargs == -1 else ""
    return many + extra


# --- component versions --------------------------------------------------------------------------


def versions_page() -> str:
    """Return the page of every supported component version: chart and shipped CRD set."""
    from gpuplan.components import REGISTRY
    from gpuplan.crds import __file__ as crds_init
    from gpuplan.model.cluster import Components

    crds = Path(crds_init).parent
    fields = Components.model_fields
    out = [
        "# Component versions\n",
        "Generated from the component registry (`gpuplan/components/`): every release gpuplan",
        "has facts for, the Helm chart that installs it and the CRDs gpuplan validates its objects",
        "against (shipped in `gpuplan/crds/`). A version outside this list is an error at its",
        "line, with the supported ones and a did-you-mean.\n",
    ]
    missing: list[str] = []
    for component in REGISTRY.values():
        field = next(
            (f for f in fields.values() if f.alias == component.field),
            None,
        )
        if field is not None:
            where = f"`components.{component.field}` in a cluster file: "
            description = _one_paragraph(field.description or "")
        else:  # not set under components: (Argo CD): its module says what it is
            where = ""
            module = sys.modules[type(component.releases[0]).__module__]
            description = _one_paragraph((module.__doc__ or "").split("\n\n")[0])
        if not description:
            missing.append(component.name)
        out.append(f"## {component.name}\n")
        out.append(f"{where}{description}\n")
        if component.line_field:
            out.append(f"Release lines, picked by the cluster's `{component.line_field}`: "
                       + ", ".join(f"`{line}`" for line in component.lines) + ".\n")  # fmt: skip
        for release in component.releases:
            line = f" ({release.line})" if release.line else ""
            out.append(f"### {component.name} {release.version}{line}\n")
            chart = release.chart
            out.append(
                f"- chart: `{chart.repo}` `{chart.name}` {chart.version}"
                if chart
                else "- chart: none (gpuplan writes its manifests)"
            )
            crd_set = component.crd_set(release)
            if crd_set is None:
                out.append("- CRDs: none shipped")
            else:
                names = sorted(
                    p.name.removesuffix(".json.gz") for p in (crds / crd_set).glob("*.json.gz")
                )
                out.append(f"- CRDs (`gpuplan/crds/{crd_set}/`): " + ", ".join(names))
            out.append("")
    if missing:
        raise Undocumented("components", missing)
    return "\n".join(out).rstrip() + "\n"
