"""The docs site (docs/, mkdocs.yml): every snippet of every page works, and the reference pages
generated from the code are complete.

Snippet conventions (docs/ follows them; this file is their definition):
- a ```yaml block whose first line is `# file: <path>` is a whole file of the fleet the page
  builds: it is written into the page's working folder when the page reaches it;
  A page that writes a file under clusters/, tenants/, extra/, patches/ or values/ must leave a
  fleet that `gpuplan check` passes (errors fail; warnings may stand) after its last block;
- a ```yaml block whose first line is `# fragment: <Model>` must validate as that model of
  gpuplan.model;
- any other ```yaml block must parse, and a document with apiVersion and kind must pass
  `gpuplan validate`;
- a ```console block: each `$ ` line is a command run with bash in the page's working folder, in
  document order; the lines after it (until the next `$ `) must appear in what it printed, in
  that order (`...` elides lines). A command must exit 0, unless the block shows what it
  printed (an error the page explains). A command ending `  # needs a cluster` is checked
  offline as OFFLINE below defines;
- a ```sh or ```bash block is refused (write ```console, so it runs), and so is a block that
  names no language (```text is an illustration, which nothing checks);
- the working folder of getting-started.md starts empty; every other page's starts as the example
  fleet (clusters/, tenants/, extra/, patches/, values/ and the rendered output/) committed in a
  fresh git repository.
"""

from __future__ import annotations

import importlib
import json
import os
import pkgutil
import re
import shutil
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import click
import pytest
import yaml
from pydantic import BaseModel

from gpuplan.check import RETIRED_CODES, known_codes
from gpuplan.cli import cli
from gpuplan.components import REGISTRY
from gpuplan.model.common import Model
from gpuplan.views.reference import (
    Undocumented,
    code_examples,
    codes_page,
    commands_page,
    fields_page,
    input_files,
    reference_pages,
)
from tests.conftest import PROJECT, run

DOCS = PROJECT / "docs"
CASES = PROJECT / "tests" / "cases"
FLEET = ("clusters", "tenants", "extra", "patches", "values", "output")
EMPTY_START = {"getting-started.md"}
GIT = {
    "GIT_AUTHOR_NAME": "docs",
    "GIT_AUTHOR_EMAIL": "docs@example.com",
    "GIT_COMMITTER_NAME": "docs",
    "GIT_COMMITTER_EMAIL": "docs@example.com",
    "GIT_CONFIG_NOSYSTEM": "1",
}
NEEDS_A_CLUSTER = "  # needs a cluster"


@dataclass
class Block:
    lang: str
    text: str
    line: int  # where the block starts in its page (1-based)


FENCE = re.compile(r"^(?P<indent>\s*)(?P<fence>```+|~~~+)(?P<lang>[\w-]*)")


def blocks(page: Path) -> list[Block]:
    """Return the fenced code blocks of a markdown page, in order, dedented."""
    found: list[Block] = []
    lines = page.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        match = FENCE.match(lines[i])
        if not match:
            i += 1
            continue
        fence, start = match["fence"], i
        body: list[str] = []
        i += 1
        while i < len(lines) and lines[i].strip() != fence:
            body.append(lines[i])
            i += 1
        found.append(Block(match["lang"], textwrap.dedent("\n".join(body)) + "\n", start + 1))
        i += 1
    return found


def pages() -> list[Path]:
    return sorted(DOCS.rglob("*.md"))


# --- the working folder of a page ---------------------------------------------------------------


@pytest.fixture(scope="session")
def example_fleet(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example fleet with its rendered output/ (kept current by `render --check`), committed once."""
    root = tmp_path_factory.mktemp("docs-fleet") / "fleet"
    root.mkdir()
    for folder in FLEET:
        if (PROJECT / folder).is_dir():
            shutil.copytree(PROJECT / folder, root / folder)
    _git(root, "init", "-q", "-b", "main")
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "the example fleet")
    return root


def _git(root: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=root, check=True, capture_output=True, env=_env())


def _env() -> dict[str, str]:
    env = dict(os.environ) | GIT
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    return env


def working_folder(page: Path, tmp_path: Path, example_fleet: Path) -> Path:
    folder = tmp_path / "work"
    if page.name in EMPTY_START and page.parent == DOCS:
        folder.mkdir()
    else:
        shutil.copytree(example_fleet, folder, symlinks=True)
    return folder


# --- each kind of snippet -----------------------------------------------------------------------


def model_named(name: str) -> type[BaseModel]:
    """Return the pydantic model class of gpuplan.model called `name`."""
    import gpuplan.model

    for module in pkgutil.iter_modules(gpuplan.model.__path__):
        found = getattr(importlib.import_module(f"gpuplan.model.{module.name}"), name, None)
        if isinstance(found, type) and issubclass(found, BaseModel):
            return found
    raise AssertionError(f"# fragment: {name} names no model of gpuplan.model")


def yaml_block(block: Block, where: str, folder: Path) -> None:
    first = block.text.splitlines()[0] if block.text.strip() else ""
    try:
        documents = [d for d in yaml.safe_load_all(block.text) if d is not None]
    except yaml.YAMLError as exc:
        raise AssertionError(f"{where}: the YAML does not parse: {exc}") from None
    if first.startswith("# file: "):
        target = folder / first.removeprefix("# file: ").strip()
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(block.text, encoding="utf-8")
    elif first.startswith("# fragment: "):
        model = model_named(first.removeprefix("# fragment: ").strip())
        assert len(documents) == 1, f"{where}: a fragment is one YAML document"
        try:
            model.model_validate(documents[0])
        except ValueError as exc:
            raise AssertionError(f"{where}: not a valid {model.__name__}: {exc}") from None
    elif any(isinstance(d, dict) and "apiVersion" in d and "kind" in d for d in documents):
        manifest = folder.parent / "snippet.yaml"
        manifest.write_text(block.text, encoding="utf-8")
        result = _bash(f"gpuplan validate {manifest}", folder)
        assert result.returncode == 0, f"{where}: gpuplan validate refuses it:\n{result.stdout}"


def _bash(command: str, folder: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "-c", command],
        cwd=folder,
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,  # as a terminal shows them: diagnostics in their place
        text=True,
        timeout=600,
        stdin=subprocess.DEVNULL,
    )


# A command that needs a live cluster, and what proves it offline.
OFFLINE = (
    # kubectl apply -k DIR: the kustomization builds
    (re.compile(r"^kubectl apply (?:-n \S+ )?-k (\S+)$"), "kubectl kustomize {0} > /dev/null"),
    # kubectl apply -f FILE: the objects are valid
    (re.compile(r"^kubectl apply (?:-n \S+ )?-f (\S+)$"), "gpuplan validate {0}"),
    # kubectl patch ... --patch-file FILE: the patch is a YAML mapping
    (
        re.compile(r"^kubectl patch .* --patch-file (\S+)$"),
        "python3 -c 'import sys, yaml; assert isinstance(yaml.safe_load(open(sys.argv[1])), dict)' {0}",
    ),
)


def offline(command: str, where: str) -> str:
    for pattern, check in OFFLINE:
        match = pattern.match(command)
        if match:
            return check.format(*match.groups())
    raise AssertionError(f"{where}: no offline check for `{command}` (tests/test_docs.py OFFLINE)")


def console_block(block: Block, where: str, folder: Path) -> None:
    steps: list[tuple[str, list[str]]] = []
    for line in block.text.splitlines():
        if line.startswith("$ "):
            steps.append((line[2:], []))
        elif steps and line.strip():
            steps[-1][1].append(line.strip())
        elif line.strip():
            raise AssertionError(f"{where}: output before any `$ ` command: {line!r}")
    for command, expected in steps:
        if command.endswith(NEEDS_A_CLUSTER):
            command, expected = offline(command.removesuffix(NEEDS_A_CLUSTER).strip(), where), []
        result = _bash(command, folder)
        printed = result.stdout
        assert result.returncode == 0 or expected, (
            f"{where}: `{command}` exited {result.returncode}:\n{printed}"
        )
        at = 0
        for line in expected:
            if line == "...":
                continue
            found = printed.find(line, at)
            assert found >= 0, (
                f"{where}: `{command}` did not print {line!r} (in order); it printed:\n{printed}"
            )
            at = found + len(line)


@pytest.mark.parametrize("page", pages(), ids=lambda p: p.relative_to(DOCS).as_posix())
def test_every_snippet_of_the_page_works(page: Path, tmp_path: Path, example_fleet: Path) -> None:
    folder = working_folder(page, tmp_path, example_fleet)
    wrote_fleet = False
    for block in blocks(page):
        where = f"{page.relative_to(PROJECT)}:{block.line}"
        assert block.lang, f"{where}: say what the block is (```text for an illustration)"
        assert block.lang not in ("sh", "bash", "shell"), (
            f"{where}: write commands as a ```console block (`$ ` lines), so the test runs them"
        )
        if block.lang in ("yaml", "yml"):
            yaml_block(block, where, folder)
            wrote_fleet |= block.text.startswith(tuple(f"# file: {f}/" for f in FLEET[:-1]))
        elif block.lang == "console":
            console_block(block, where, folder)
        elif block.lang == "json":
            json.loads(block.text)
    if wrote_fleet:
        result = _bash("gpuplan check", folder)
        assert result.returncode == 0, (
            f"{page.relative_to(PROJECT)}: the fleet the page leaves fails `gpuplan check`:\n{result.stdout}"
        )


def test_the_snippet_rules_can_fail(tmp_path: Path) -> None:
    """A wrong expected line, a bad fragment and a failing command are each reported at their page line."""
    page = tmp_path / "page.md"
    page.write_text(
        "# t\n\n```console\n$ echo hello\nhullo\n```\n\n```yaml\n# fragment: Taint\nkey: a\n```\n"
        "\n```console\n$ false\n```\n"
    )
    found = blocks(page)
    with pytest.raises(AssertionError, match=r"page:3: `echo hello` did not print 'hullo'"):
        console_block(found[0], "page:3", tmp_path)
    with pytest.raises(AssertionError, match=r"page:8: not a valid Taint"):
        yaml_block(found[1], "page:8", tmp_path)
    with pytest.raises(AssertionError, match=r"page:13: `false` exited 1"):
        console_block(found[2], "page:13", tmp_path)
    with pytest.raises(AssertionError, match=r"no offline check for `kubectl delete ns a`"):
        offline("kubectl delete ns a", "page:1")


# --- the reference pages --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def reference() -> dict[str, str]:
    return reference_pages(cli, CASES)


def _field_names(node: dict[str, object], defs: dict[str, dict[str, object]]) -> set[str]:
    names: set[str] = set()
    for definition in [node, *defs.values()]:
        properties = definition.get("properties", {})
        assert isinstance(properties, dict)
        names |= set(properties)
    return names


def test_the_fields_page_names_every_field_of_every_model(reference: dict[str, str]) -> None:
    page = reference["reference/fields.md"]
    for _, model in input_files().values():
        document = model.model_json_schema(by_alias=True)
        models = {model.__name__, *document.get("$defs", {})}
        assert {m for m in models if f"### {m}\n" not in page} == set()
        for name in _field_names(document, document.get("$defs", {})):
            assert f"**`{name}`**" in page, name


def test_the_codes_page_names_every_code(reference: dict[str, str]) -> None:
    page = reference["reference/codes.md"]
    assert {c for c in known_codes() if f"## `{c}`\n" not in page} == set()


def test_the_commands_page_names_every_command_and_option(reference: dict[str, str]) -> None:
    page = reference["reference/commands.md"]
    ctx = click.Context(cli, info_name="gpuplan")
    for name in cli.list_commands(ctx):
        command = cli.get_command(ctx, name)
        assert command is not None
        assert f"## `gpuplan {name}`" in page
        section = page.split(f"## `gpuplan {name}`", 1)[1].split("\n## ", 1)[0]
        for param in command.params:
            for opt in getattr(param, "opts", []) if isinstance(param, click.Option) else []:
                assert f"`{opt}" in section or f", {opt}" in section, (name, opt)


def test_the_versions_page_names_every_supported_version(reference: dict[str, str]) -> None:
    page = reference["reference/versions.md"]
    for component in REGISTRY.values():
        for release in component.releases:
            line = f" ({release.line})" if release.line else ""
            assert f"### {component.name} {release.version}{line}\n" in page


def test_every_code_shows_an_example_that_fires_it() -> None:
    """Each code's example is a golden case reporting it; tests/test_golden.py runs every case and
    asserts its errors.txt is exactly what gpuplan prints, so each example is proven to fire."""
    have = set(code_examples(CASES))
    wanted = known_codes() - set(RETIRED_CODES)
    assert sorted(wanted - have) == []


# --- a missing description fails ----------------------------------------------------------------


class _Tiny(Model):
    """A model whose second field has no description."""

    size: int = 1
    """How many."""
    bright_colour: str = "red"


def test_a_field_without_a_description_fails_naming_it() -> None:
    with pytest.raises(
        Undocumented, match=r"1 input fields without a description: _Tiny\.brightColour$"
    ):
        fields_page({"tiny": ("tiny.yaml", _Tiny)})


def test_a_code_without_a_description_fails_naming_it() -> None:
    with pytest.raises(Undocumented, match=r"1 diagnostic codes without a description: bare-code$"):
        codes_page(CASES, {"pool-capacity": "Error when quotas exceed a pool.", "bare-code": " "})


def test_a_command_or_option_without_help_fails_naming_it() -> None:
    @click.group()
    def tool() -> None:
        """A tool."""

    @tool.command()
    @click.option("--fast", is_flag=True)
    def go(fast: bool) -> None:
        """Go."""

    with pytest.raises(Undocumented, match=r"without a description: gpuplan go --fast$"):
        commands_page(tool)


def test_the_real_code_has_every_description(reference: dict[str, str]) -> None:
    """The reference pages build (building raises Undocumented otherwise) and are not empty."""
    assert all(len(text) > 2000 for text in reference.values())


def test_the_readme_example_says_what_gpuplan_check_prints(tmp_path: Path) -> None:
    """The README's 30-second example: its two files, and the diagnostics `gpuplan check` prints."""
    readme = (PROJECT / "README.md").read_text(encoding="utf-8")
    for text in re.findall(r"```yaml\n(.*?)```", readme, re.S):
        target = tmp_path / text.splitlines()[0].removeprefix("# ")
        target.parent.mkdir(exist_ok=True)
        target.write_text(text)
    shown = re.search(r"`gpuplan check` refuses it.*?```text\n(.*?)```", readme, re.S)
    assert shown is not None
    result = run("check", "--root", str(tmp_path))
    assert result.code == 1 and result.stderr == shown[1]


# --- the built site in a browser ----------------------------------------------------------------

CHROMIUM = shutil.which("chromium")
BROWSER = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run",
]  # fmt: skip


@pytest.mark.skipif(
    CHROMIUM is None,
    reason="chromium is not installed (apt-get install chromium): the site is not opened",
)
def test_the_built_getting_started_page_shows_its_headings_in_chromium(tmp_path: Path) -> None:
    site = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "--site-dir", str(site)],
        cwd=PROJECT, check=True, capture_output=True, timeout=300,
    )  # fmt: skip
    page = site / "getting-started" / "index.html"
    command = [
        str(CHROMIUM), *BROWSER, f"--user-data-dir={tmp_path / 'profile'}", "--window-size=1280,2000",
        "--dump-dom", page.as_uri(),
    ]  # fmt: skip
    dom = subprocess.run(command, check=True, capture_output=True, text=True, timeout=120).stdout
    shown = [
        re.sub(r"<[^>]+>", "", heading).replace("\u00b6", "").strip()
        for heading in re.findall(r"<h2[^>]*>(.*?)</h2>", dom, re.S)
    ]
    written = re.findall(r"^## (.+)$", (DOCS / "getting-started.md").read_text(), re.M)
    assert shown == written
    assert "Reference" in dom and "Input fields" in dom  # the navigation lists the generated pages
