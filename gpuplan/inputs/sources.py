"""From input files to validated models, with pydantic's errors turned into file:line:col."""

from __future__ import annotations

import difflib
import typing
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from gpuplan.diagnostics import Diagnostic, Key, Located, SourceFile
from gpuplan.inputs.load import gather, parse, parse_items, screen
from gpuplan.model.cluster import Cluster
from gpuplan.model.tenant import Tenant

M = TypeVar("M", bound=BaseModel)


@dataclass
class Inputs:
    """Every input file of a repository, validated one by one."""

    clusters: list[Located[Cluster]]
    tenants: list[Located[Tenant]]
    files: list[str]
    broken: set[str] = field(default_factory=set)  # stems of cluster files that did not validate
    # cluster -> node class name -> (the OS its image runs, the file and key that say so): extra/<cluster>/
    node_images: dict[str, dict[str, NodeImage]] = field(default_factory=dict)


def _field_names(model: type[BaseModel] | None, loc: Key) -> list[str]:
    """Return the aliases a model accepts at `loc` (for did-you-mean on unknown fields)."""
    current: Any = model
    for part in loc:
        current = _step(current, part)
        if current is None:
            return []
    if isinstance(current, type) and issubclass(current, BaseModel):
        return [f.alias or n for n, f in current.model_fields.items()]
    return []


def _step(current: Any, part: str | int) -> Any:
    if isinstance(part, int):
        return current  # list items: the annotation was unwrapped to the item model already
    if isinstance(current, type) and issubclass(current, BaseModel):
        for name, info in current.model_fields.items():
            if (info.alias or name) == part:
                return _unwrap(info.annotation)
        return None
    return _unwrap(current) if isinstance(part, int) or current is not None else None


def _unwrap(annotation: Any) -> Any:
    """Strip Optional, list[...] and Annotated down to a model class when there is one."""
    for _ in range(6):
        args = typing.get_args(annotation)
        if not args:
            return annotation
        models = [a for a in args if isinstance(a, type) and issubclass(a, BaseModel)]
        if models:
            return models[0]
        nested = [a for a in args if typing.get_args(a)]
        annotation = nested[0] if nested else args[0]
    return annotation


def _message(err: ErrorDetails, model: type[BaseModel], loc: Key) -> str:
    kind = err["type"]
    if kind == "extra_forbidden":
        known = _field_names(model, loc[:-1])
        guess = difflib.get_close_matches(str(loc[-1]), known, n=1)
        hint = (
            f" (did you mean {guess[0]!r}?)"
            if guess
            else (f"; expected one of: {', '.join(known)}" if known else "")
        )
        return f"unknown field {loc[-1]!r}{hint}"
    if kind == "missing":
        return f"missing required field {loc[-1]!r}"
    message = str(err["msg"])
    for prefix in ("Value error, ", "Assertion failed, "):
        message = message.removeprefix(prefix)
    if (
        kind.endswith("_type")
        or kind == "literal_error"
        or kind.startswith(("greater", "less", "too_"))
    ):
        value = err.get("input")
        if isinstance(value, (str, int, float, bool)) and len(repr(value)) <= 60:
            message += f" (got {value!r})"
    return message


def validate_file(source: SourceFile, model: type[M]) -> tuple[M | None, list[Diagnostic]]:
    """Validate one parsed file against its model; return the model or the diagnostics."""
    try:
        return model.model_validate(source.data), []
    except ValidationError as exc:
        problems = []
        for err in exc.errors():
            raw = tuple(err["loc"])
            at_key = err["type"] == "extra_forbidden" or raw[-1:] == ("[key]",)
            loc = source.existing(raw[:-1] if raw[-1:] == ("[key]",) else raw)
            problems.append(source.diagnostic(loc, _message(err, model, loc), at_key=at_key))
        return None, problems


def _stem_check(located: Located[Any]) -> list[Diagnostic]:
    stem = PurePosixPath(located.source.path).stem
    name = located.model.name
    if stem != name:
        return [
            located.at(
                "name", message=f"name {name!r} differs from the file name {stem!r}: rename one"
            )
        ]
    return []


def _unique(items: list[Located[Any]], what: str) -> list[Diagnostic]:
    seen: dict[str, str] = {}
    problems = []
    for item in items:
        name = item.model.name
        if name in seen:
            problems.append(
                item.at("name", message=f"duplicate {what} {name!r} (also in {seen[name]})")
            )
        else:
            seen[name] = item.source.path
    return problems


def read_inputs(root: Path) -> tuple[Inputs, list[Diagnostic]]:
    """Read and validate every cluster and tenant file under a repository root."""
    problems: list[Diagnostic] = []
    clusters: list[Located[Cluster]] = []
    tenants: list[Located[Tenant]] = []
    files: list[str] = []
    broken: set[str] = set()
    gathered = {folder: gather(root, folder) for folder in ("clusters", "tenants")}
    screened = screen([item for items, _ in gathered.values() for item in items])
    stop = screened.stop
    if stop:  # fail fast: a file that is not YAML stops the run before any file is parsed in full
        found = [d for _, listed in gathered.values() for d in listed] + stop
        paths = sorted(
            {d.file for d in found}
            | {shown for items, _ in gathered.values() for shown, _ in items}
        )
        return Inputs(
            [],
            [],
            paths,
            {PurePosixPath(d.file).stem for d in found if d.file.startswith("clusters/")},
        ), found
    kinds: tuple[tuple[str, type[BaseModel], list[Any]], ...] = (
        ("clusters", Cluster, clusters),
        ("tenants", Tenant, tenants),
    )
    for folder, model, out in kinds:
        items, found = gathered[folder]
        sources, parsed_found = parse_items(items, screened)
        found = found + parsed_found
        problems.extend(found)
        files.extend(d.file for d in found)
        if folder == "clusters":
            broken |= {PurePosixPath(d.file).stem for d in found}
        for source in sources:
            files.append(source.path)
            parsed, found = validate_file(source, model)
            problems.extend(found)
            if parsed is None and folder == "clusters":
                broken.add(PurePosixPath(source.path).stem)
            if parsed is not None:
                located = Located(parsed, source)
                problems.extend(_stem_check(located))
                out.append(located)
    problems.extend(_unique(clusters, "cluster"))
    problems.extend(_unique(tenants, "tenant"))
    if not (root / "clusters").is_dir():
        from gpuplan.diagnostics import error

        problems.append(
            error("clusters", 0, 0, "", f"no clusters/ folder under {root}: is --root right?")
        )
    return Inputs(clusters, tenants, sorted(set(files)), broken, node_images(root)), problems


# The node OS an own node class's image runs, by its image family. EC2NodeClass
# spec.amiSelectorTerms[].alias is "<family>@<version>", family one of al2, al2023, bottlerocket,
# windows2019/2022/2025 (aws/karpenter-provider-aws v1.14.1 pkg/apis/v1/ec2nodeclass.go, the CEL rules
# on Alias); AKSNodeClass spec.imageFamily is Ubuntu, Ubuntu2204, Ubuntu2404 or AzureLinux, default
# Ubuntu (the shipped CRD of Azure/karpenter-provider-azure v1.14.2, aksnodeclasses.karpenter.azure.com).
# Families gpuplan does not model (al2, windows) say nothing: the pool keeps its os or the default.
_AMI_FAMILIES = {"al2023": "al2023", "bottlerocket": "bottlerocket"}
IMAGE_OS = {
    "Ubuntu": "ubuntu",
    "Ubuntu2204": "ubuntu",
    "Ubuntu2404": "ubuntu",
    "AzureLinux": "azurelinux",
}


@dataclass(frozen=True)
class NodeImage:
    """The OS a node class's image runs, and where its file says so."""

    os: str
    source: SourceFile
    loc: Key


def node_image(source: SourceFile) -> tuple[str, NodeImage] | None:
    """Return (name, image) of a node class manifest whose image family gpuplan knows, else None."""
    data = source.data
    meta = data.get("metadata") if isinstance(data, dict) else None
    spec = data.get("spec") if isinstance(data, dict) else None
    if not isinstance(meta, dict) or not isinstance(spec, dict) or not meta.get("name"):
        return None
    found: tuple[str | None, Key] = (None, ())
    if data.get("kind") == "EC2NodeClass":
        terms = spec.get("amiSelectorTerms") or []
        for index, term in enumerate(terms if isinstance(terms, list) else []):
            alias = term.get("alias") if isinstance(term, dict) else None
            if isinstance(alias, str):
                family = alias.partition("@")[0]
                found = (_AMI_FAMILIES.get(family), ("spec", "amiSelectorTerms", index, "alias"))
    elif data.get("kind") == "AKSNodeClass":
        found = (IMAGE_OS.get(str(spec.get("imageFamily", "Ubuntu"))), ("spec", "imageFamily"))
    os_, loc = found
    return (str(meta["name"]), NodeImage(os_, source, loc)) if os_ else None


def node_images(root: Path) -> dict[str, dict[str, NodeImage]]:
    """Read the node classes among the own manifests (extra/<cluster>/): cluster -> name -> image."""
    out: dict[str, dict[str, NodeImage]] = {}
    base = root / "extra"
    if not base.is_dir():
        return out
    for folder in sorted(p for p in base.iterdir() if p.is_dir() and not p.is_symlink()):
        for path in sorted(folder.rglob("*.y*ml")):
            raw = path.read_bytes() if path.is_file() and not path.is_symlink() else b""
            if b"NodeClass" not in raw:
                continue
            source = parse(path.relative_to(root).as_posix(), raw)[
                0
            ]  # problems: read_extras reports them
            found = node_image(source) if source is not None else None
            if found is not None:
                out.setdefault(folder.name, {})[found[0]] = found[1]
    return out
