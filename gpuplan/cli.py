"""The `gpuplan` command: flags -> Options -> commands; no logic lives here."""

from __future__ import annotations

import gc
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from gpuplan.exitcode import ExitCode
from gpuplan.runtime.process import GC_THRESHOLDS, code_of, find_root, guarded, leave

# Each command imports its module when it runs, so `gpuplan --help` stays quick.

F = TypeVar("F", bound=Callable[..., Any])


def _find_root(ctx: click.Context, param: click.Parameter, value: Path | None) -> Path:
    """Return --root, or the nearest folder up from here that holds clusters/ (process.find_root)."""
    return find_root(value)


_root = click.option(
    "--root",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    callback=_find_root,
    help="Repository holding clusters/ and tenants/ (default: the nearest folder up from here that has clusters/, as git finds its repository).",
)
_strict = click.option("--strict", is_flag=True, help="Fail on warnings too.")
_format = click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "github", "json"]),
    default="text",
    show_default=True,
    help="How diagnostics are printed.",
)
_crds = click.option(
    "--crds",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    default=None,
    help="Folder of CRDs (YAML or JSON) added to the shipped ones; a kind it defines replaces the shipped CRD (default: $GPUPLAN_CRDS).",
)


def _print_version(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    """Print the version (looked up only when asked: `gpuplan validate` starts without it)."""
    if value and not ctx.resilient_parsing:
        from gpuplan import __version__

        click.echo(f"gpuplan, version {__version__}")
        ctx.exit()


def _watch(what: str) -> Callable[[F], F]:
    """The --watch, --interval and --max-cycles options of a command that can keep running."""

    def decorate(function: F) -> F:
        for option in reversed(
            (
                click.option("--watch", is_flag=True, help=f"Keep running: {what}."),
                click.option(
                    "--interval",
                    type=click.FloatRange(min=0.05),
                    default=1.0,
                    show_default=True,
                    help="With --watch: seconds between looks for changed files (on Linux a save wakes it at once).",
                ),
                click.option(
                    "--max-cycles",
                    type=click.IntRange(min=1),
                    default=None,
                    help="With --watch: stop after this many looks; exit with the last run's code.",
                ),
            )
        ):
            function = option(function)
        return function

    return decorate


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--version",
    is_flag=True,
    expose_value=False,
    is_eager=True,
    callback=_print_version,
    help="Show the version and exit.",
)
def cli() -> None:
    """Plan, prove and compile a shared GPU Kubernetes fleet into GitOps manifests."""


@cli.command()
@_root
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Output folder (default: <root>/output).",
)
@click.option("--cluster", "clusters", multiple=True, help="Render only this cluster (repeatable).")
@click.option(
    "--check",
    "check_only",
    is_flag=True,
    help="Write nothing; exit 1 if the output on disk is stale.",
)
@_strict
@_format
@_crds
@click.option(
    "--no-cache",
    "no_cache",
    is_flag=True,
    help="Neither read nor write the render cache ($GPUPLAN_CACHE_DIR/render, default ~/.cache/gpuplan/render).",
)
@_watch(
    "render again whenever an input file changes (clusters/, tenants/, extra/, patches/, values/, the CRD folder), keeping the unchanged inputs read and the validators compiled (an editor on save)"
)
def render(
    root: Path,
    out: Path | None,
    clusters: tuple[str, ...],
    check_only: bool,
    strict: bool,
    fmt: str,
    crds: Path | None,
    no_cache: bool,
    watch: bool,
    interval: float,
    max_cycles: int | None,
) -> None:
    """Load, check, compile, validate and write the fleet.

    `--check` writes nothing and exits 1
    listing the files that would change; `--no-cache` neither reads nor writes the render cache
    (see the docs' caching page); `--watch` keeps running and renders again whenever an input
    file changes, each run a whole render with the same output and findings, faster for what the
    process keeps; it exits with the last run's code.
    """
    from gpuplan.commands import render as command
    from gpuplan.commands.options import Options

    options = Options(root, out, clusters, strict, fmt, crds)
    if watch and check_only:
        raise click.UsageError("--watch writes the output: use it without --check")
    if watch:
        from gpuplan.commands.options import Watch

        sys.exit(command.render_watch(options, Watch(interval, max_cycles), not no_cache))
    sys.exit(command.render_fleet(options, check_only, use_cache=not no_cache))


@cli.command()
@_root
@_strict
@_format
@_crds
@click.option(
    "--base",
    default=None,
    metavar="REF",
    help="Report a capacity overrun at the quotas changed since this git revision.",
)
def check(root: Path, strict: bool, fmt: str, crds: Path | None, base: str | None) -> None:
    """Everything render does except writing.

    With `--format json`, as for `render`, the findings are the result, printed to stdout
    (`check --format json > findings.json`); with `--base REF`
    a capacity overrun stands at the quota that changed since that git revision (read from git's
    objects, like `diff --base`), and a version bump since then that skips a release upstream
    requires (or a Kubernetes minor) is an error (`upgrade-skip`) at the version's line.
    """
    from gpuplan.commands.check import check as run
    from gpuplan.commands.options import Options

    sys.exit(run(Options(root, strict=strict, fmt=fmt, crds=crds, base=base)))


@cli.command()
@click.argument("kind", type=click.Choice(["cluster", "tenant"]))
def schema(kind: str) -> None:
    """Print the JSON Schema of an input file kind (for yaml-language-server).

    The JSON Schema of an input file kind (for yaml-language-server).
    """
    from gpuplan.commands.schema import schema as run

    sys.exit(run(kind))


@cli.command()
@_root
@click.option("--cluster", default=None, help="Only this cluster.")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "markdown", "json"]),
    default="text",
    show_default=True,
    help="text: tables for a terminal; markdown: the same tables for a page; json: the numbers, with KAI's millicores and MB.",
)
def capacity(root: Path, cluster: str | None, fmt: str) -> None:
    """Per cluster and pool: GPUs, schedulable units, quota per tenant, headroom, overcommit.

    Then each KAI cluster's Queue tree (parent and leaf Queues, quota / limit in cores, GB or TB and
    GPUs, `unlimited` for KAI's -1; json keeps KAI's millicores and MB; over-quota weight):
    after the pools in text, a second table in markdown, `{"pools": [...], "kai_queues": [...]}`
    in json.
    """
    from gpuplan.commands.capacity import capacity as run
    from gpuplan.commands.options import Options

    sys.exit(run(Options(root), cluster, fmt))


@cli.command()
@_root
@click.option("--cluster", default=None, help="Only this cluster.")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "terraform"]),
    default="text",
    show_default=True,
    help="text: tags and cloud CLI commands; terraform: the attributes of each node group's resource.",
)
def requirements(root: Path, cluster: str | None, fmt: str) -> None:
    """What node groups and hosts must carry: Cluster Autoscaler tags and sizes, GKE flags, SR-IOV VFs and CNI binaries.

    What the cloud's node groups must carry, which gpuplan cannot write (IaC), from the checked
    fleet: for every fixed-size node group (`nodeGroup`) the Kubernetes labels and taints its
    nodes must carry (among them `nvidia.com/mig.config`, whose value changes with the MIG
    layout: the MIG manager re-partitions a node only when that label changes); for Cluster
    Autoscaler pools on EKS the ASG sizes, the auto-discovery tags, the
    `k8s.amazonaws.com/accelerator` node label and the scale-from-zero `node-template` tags
    (labels, taints, GPU resources); on AKS the `az aks update --cluster-autoscaler-profile`
    (priority expander, scale-down settings) and `az aks nodepool update` limits; for GKE node
    pools the machine type their GPU and count need (such as `a3-highgpu-8g` for 8 H100 80GB; a
    GPU or count no machine type has is said so) and the `gcloud container node-pools create`
    flags (machine type, accelerator, driver, partition size, time-sharing, node labels, spot,
    `--total-min-nodes`/`--total-max-nodes`); for a cluster with an existing Prometheus, the
    labels and namespaces its selectors must match and the kube-state-metrics allowlist; for a
    self-hosted Karpenter on AKS the bootstrap-token Secret to create, the identity's federated
    credential and role assignments. `--format terraform` prints the same as attribute blocks of
    `aws_eks_node_group` (`labels`, `taint`) and `aws_autoscaling_group_tag`,
    `azurerm_kubernetes_cluster` (`auto_scaler_profile`) and
    `azurerm_kubernetes_cluster_node_pool` (`node_labels`, `node_taints`), or
    `google_container_node_pool` (`node_config` `machine_type`, `labels`, `taint`), for every
    node group, fixed-size or autoscaled, to merge into the resources that create the node
    groups, and for a self-hosted AKS Karpenter an `azurerm_federated_identity_credential` and
    the `azurerm_role_assignment`s (node resource group, and the subnet's group when it is
    another), which refer to the identity as
    `azurerm_user_assigned_identity.<cluster>_karpenter` (the bootstrap token stays out of
    Terraform state: create the Secret yourself). Printed to stdout, never written: every YAML
    file under `output/<cluster>/` is something Argo CD applies. Exits 0 (also when nothing is
    needed), 1 when the fleet has errors (diagnostics on stderr, nothing on stdout), 2 on a
    usage error such as an unknown format.
    """
    from gpuplan.commands.options import Options
    from gpuplan.commands.requirements import requirements as run

    sys.exit(run(Options(root), cluster, fmt))


@cli.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True, path_type=Path))
@click.option(
    "--kubernetes-version",
    default=None,
    help="Kubernetes minor version of the core schemas (default: the newest bundled).",
)
@click.option(
    "--component",
    "components",
    multiple=True,
    metavar="NAME=VERSION",
    help="Validate against the CRDs of this component version, e.g. kueue=v0.14.4 (repeatable; default: a rendered folder's `# Components:` header, else the newest shipped).",
)
@_strict
@_format
@_crds
@_watch(
    "validate again whenever a file changes, with the validators kept compiled (an editor on save, a pre-commit daemon)"
)
def validate(
    paths: tuple[Path, ...],
    kubernetes_version: str | None,
    components: tuple[str, ...],
    strict: bool,
    fmt: str,
    crds: Path | None,
    watch: bool,
    interval: float,
    max_cycles: int | None,
) -> None:
    """Validate any manifest files or folders: strict schemas, CEL, webhook rules, references.

    Any manifests: strict core and CRD schemas, the CRDs' CEL rules, Kueue's webhook rules
    (those of the Kueue release in effect: the onFlavors rule from v0.16), what the API server
    checks in Go (object names, labels and annotations; DRA claims' device requests: counts,
    allocation modes, request names, `exactly` or `firstAvailable`, CEL selectors compiled;
    DeviceClass selectors), duplicates and references between the objects of each cluster
    folder. CRDs are those of the component versions in a rendered folder's `# Components:`
    header, or of `--component`, else the newest shipped; a reference to an object not in the
    folder is a warning (an error with `--strict`); `--format json` prints to stdout; `--watch
    [--interval S] [--max-cycles N]` keeps running and validates again whenever a file changes,
    with the compiled schemas kept (an editor on save, a long-lived pre-commit helper).
    """
    from gpuplan.commands.options import Watch
    from gpuplan.commands.validate import validate as run

    sys.exit(
        run(
            list(paths),
            kubernetes_version,
            crds,
            fmt,
            strict,
            components,
            Watch(interval, max_cycles) if watch else None,
        )
    )


@cli.command()
@_root
@click.option(
    "--base",
    default=None,
    metavar="REF",
    help="Compare with the inputs as they are at this git revision.",
)
@click.argument("old_dir", required=False, type=click.Path(file_okay=False, path_type=Path))
@click.argument("new_dir", required=False, type=click.Path(file_okay=False, path_type=Path))
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "markdown", "json"]),
    default="text",
    show_default=True,
    help="text: for a terminal; markdown: the sticky pull-request comment; json: every finding, for a program.",
)
@click.option("--exit-code", is_flag=True, help="Exit 1 when there are differences.")
@click.option(
    "--fail-on",
    "fail_on",
    multiple=True,
    metavar="CODE|SEVERITY",
    help="Exit 1 when a finding has this code or severity (disruptive, risk); repeatable or comma-separated.",
)
@_crds
def diff(
    root: Path,
    base: str | None,
    old_dir: Path | None,
    new_dir: Path | None,
    fmt: str,
    exit_code: bool,
    fail_on: tuple[str, ...],
    crds: Path | None,
) -> None:
    """What a change does to the rendered fleet (a pull-request comment with --format markdown).

    What a change does to the rendered fleet: counts per cluster and kind, then every disruption
    and risk with a code, a severity and its blast radius (nodes, GPUs, tenants), MIG layouts
    before/after drawn per memory slice, renames paired, an ordered upgrade plan per version bump;
    the markdown is a sticky pull-request comment (a hidden marker per repository path);
    `--fail-on` exits 1 on the codes or severities (`error`, `disruptive`, `risk`) named.
    """
    from gpuplan.commands.diff import diff as run

    sys.exit(
        run(
            root=root,
            base=base,
            old_dir=old_dir,
            new_dir=new_dir,
            fmt=fmt,
            exit_code=exit_code,
            crds=crds,
            fail_on=fail_on,
        )
    )


@cli.command()
@click.argument("directory", type=click.Path(file_okay=False, path_type=Path), default=".")
@click.option(
    "--install-from",
    "source",
    default="index",
    show_default=True,
    metavar="index|git|WHEEL",
    help="where the workflow and pre-commit hook install this gpuplan version from: the package "
    "index (the version must be published there), this repository's tag v<version>, or the "
    "path of a gpuplan wheel of this version (copied into wheels/)",
)
def init(directory: Path, source: str) -> None:
    """A new repository: example cluster and tenant, CI workflow, pre-commit hook, README.

    A new repository: example cluster and tenant, GitHub workflow (render --check, diff
    comment), pre-commit config, README. The workflow and the pre-commit hook install the
    gpuplan version you ran, from `--install-from`: `index` (the default) pins
    `gpuplan==<version>` on the package index pip uses (PyPI, or `PIP_INDEX_URL`), so that
    version must be published there (a source build, `+` or `dev` in its version, never is: init
    says so); `git` installs this repository at its tag `v<version>` (pre-commit fetches the
    hooks of `.pre-commit-hooks.yaml` there), which must have been pushed; the path of a gpuplan
    wheel of the same version is copied into `wheels/`, the workflow installs it from the
    checkout and the hook runs the gpuplan installed on the machine (`pip install
    ./wheels/<file>`). The hooks run when anything under `clusters/`, `tenants/`, `extra/`,
    `patches/` or `values/` changes.
    """
    from gpuplan.commands.init import init_repo

    sys.exit(init_repo(directory, source))


@cli.command()
@_root
@click.option(
    "--out",
    type=click.Path(dir_okay=False, allow_dash=True, path_type=Path),
    default=None,
    help="HTML file (default: <root>/gpuplan-report.html; '-': stdout).",
)
@click.option("--cluster", default=None, help="Only this cluster.")
def report(root: Path, out: Path | None, cluster: str | None) -> None:
    """Write an HTML page with each MIG pool's GPU layout and capacity per tenant.

    A self-contained HTML page: each MIG pool's GPU layout drawn to scale, capacity bars per
    tenant, the KAI Queue tree of each cluster that runs KAI Scheduler.
    """
    from gpuplan.commands.report import write_report

    sys.exit(write_report(root, out, cluster))


def main() -> None:
    """Run the CLI (run_cli), then leave without tearing the interpreter down (process.leave)."""
    gc.set_threshold(*GC_THRESHOLDS)
    try:
        run_cli()
        code = 0
    except SystemExit as exc:
        code = code_of(exc)
    leave(code)


def run_cli() -> None:
    """Run the CLI; turn bugs into exit 3 with the traceback in a file, ^C into 130, SIGTERM into 143."""

    def parse_and_run() -> None:
        try:
            cli.main(standalone_mode=False)
        except click.exceptions.Exit as exc:
            sys.exit(exc.exit_code)
        except click.ClickException as exc:
            exc.show()
            sys.exit(ExitCode.USAGE)
        except click.exceptions.Abort:
            raise KeyboardInterrupt from None

    guarded(parse_and_run)


if __name__ == "__main__":
    main()
