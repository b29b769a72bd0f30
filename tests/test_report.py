"""`gpuplan report`: one self-contained HTML page; MIG layouts drawn to scale at their placed
slots, capacity bars split by tenant, everything user-written escaped; and it renders in a browser."""

from __future__ import annotations

import html as html_module
import json
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path

import pytest
import yaml

from gpuplan.commands.init import init_repo
from gpuplan.commands.report import write_report
from gpuplan.gpus.catalog import lookup
from gpuplan.gpus.mig import layout_text, place
from gpuplan.plan.headroom import ResourceRow, TenantShare
from gpuplan.views.html import (
    BAR_WIDTH,
    CELL,
    HEADROOM,
    OVERCOMMIT,
    PAD,
    PROFILE_COLOURS,
    TENANT_COLOURS,
    ClusterView,
    PoolView,
    capacity_bar,
    render_html,
)
from tests.conftest import run

VOID = {"meta", "br", "img", "input", "hr", "link"}


@dataclass
class Svg:
    """One <svg> of the page and what is inside it."""

    classes: str
    label: str
    pool: str  # id of the enclosing pool article
    attrs: dict[str, str] = field(default_factory=dict)
    rects: list[dict[str, str]] = field(default_factory=list)


class Page(HTMLParser):
    """Collect the SVGs (with their rects and enclosing pool) and check that tags nest."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.svgs: list[Svg] = []
        self.pool = ""
        self.tags: set[str] = set()
        self.text: list[str] = []
        self.problems: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {k: v or "" for k, v in attrs}
        self.tags.add(tag)
        if tag == "article":
            self.pool = values.get("id", "")
        if tag == "svg":
            self.svgs.append(
                Svg(values.get("class", ""), values.get("aria-label", ""), self.pool, values)
            )
        if tag == "rect" and self.svgs and "svg" in self.stack:
            self.svgs[-1].rects.append(values)
        if tag not in VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.add(tag)

    def handle_endtag(self, tag: str) -> None:
        if tag in VOID:
            return
        if not self.stack or self.stack[-1] != tag:
            self.problems.append(f"</{tag}> closes <{self.stack[-1] if self.stack else None}>")
            return
        self.stack.pop()

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def parse(html: str) -> Page:
    page = Page()
    page.feed(html)
    page.close()
    assert not page.problems, page.problems[:5]
    assert not page.stack, f"unclosed: {page.stack}"
    return page


def layout_svgs(page: Page) -> list[Svg]:
    return [s for s in page.svgs if "mig-layout" in s.classes.split()]


def expected_layouts(root: Path) -> list[tuple[str, str, str, dict[str, int]]]:
    """Return (cluster, pool, gpu model, layout) per distinct MIG layout, read from the YAML itself."""
    found = []
    for path in sorted((root / "clusters").glob("*.yaml")):
        cluster = yaml.safe_load(path.read_text())
        for pool in cluster["nodePools"]:
            sharing = pool.get("sharing")
            if not isinstance(sharing, dict) or "mig" not in sharing:
                continue
            mig = sharing["mig"]
            layouts = [mig["layout"]] if "layout" in mig else [d["layout"] for d in mig["devices"]]
            distinct: list[dict[str, int]] = []
            for layout in layouts:
                if layout not in distinct:
                    distinct.append(layout)
            found += [(cluster["name"], pool["name"], pool["gpu"], layout) for layout in distinct]
    return found


@pytest.fixture
def example_report(example_repo: Path, capsys: pytest.CaptureFixture[str]) -> tuple[Path, str]:
    assert write_report(example_repo, None, None) == 0
    capsys.readouterr()
    return example_repo, (example_repo / "gpuplan-report.html").read_text()


def test_report_is_written_to_the_default_path(example_report: tuple[Path, str]) -> None:
    root, html = example_report
    assert (root / "gpuplan-report.html").is_file()
    assert html.startswith("<!DOCTYPE html>")
    parse(html)


def test_one_svg_per_distinct_mig_layout(example_report: tuple[Path, str]) -> None:
    root, html = example_report
    svgs = layout_svgs(parse(html))
    expected = expected_layouts(root)
    assert len(expected) >= 5  # the example fleet has single-layout and per-device MIG pools
    assert len(svgs) == len(expected)
    for (cluster, pool, _, layout), svg in zip(expected, svgs):
        assert svg.pool == f"pool-{cluster}-{pool}"
        assert svg.label == f"MIG layout {layout_text(layout)}"


def test_layout_rects_are_the_instances_at_their_placed_slots_to_scale(
    example_report: tuple[Path, str],
) -> None:
    root, html = example_report
    for (_, _, gpu, layout), svg in zip(expected_layouts(root), layout_svgs(parse(html))):
        model = lookup(gpu)
        assert model is not None and model.mig is not None
        assert len(svg.rects) == sum(layout.values())
        placed = place(model, layout)
        sizes = {p.name: p.size for p in model.mig.profiles}
        want = sorted(
            (PAD + start * CELL + 2, sizes[name] * CELL - 4) for name, start in placed.slots
        )
        got = sorted((float(r["x"]), float(r["width"])) for r in svg.rects)
        assert got == want


def test_a30_layout_has_four_memory_slices(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "fleet"
    assert init_repo(root) == 0
    cluster = root / "clusters/gpu-cluster.yaml"
    head, mig_pool = cluster.read_text().split("  - name: h100-mig")
    mig_pool = mig_pool.replace("gpu: H100-SXM5-80GB", "gpu: A30").replace(
        "layout: {1g.10gb: 2, 2g.20gb: 1, 3g.40gb: 1}", "layout: {2g.12gb: 1, 1g.6gb: 2}"
    )
    cluster.write_text(head + "  - name: h100-mig" + mig_pool)
    tenant = root / "tenants/team-a.yaml"
    tenant.write_text(
        tenant.read_text().replace("mig: {1g.10gb: 8, 2g.20gb: 4, 3g.40gb: 4}", "mig: {1g.6gb: 8}")
    )
    assert write_report(root, Path("-"), None) == 0, capsys.readouterr().err
    (svg,) = layout_svgs(parse(capsys.readouterr().out))
    assert svg.label == "MIG layout 2x1g.6gb + 1x2g.12gb"
    assert sorted(float(r["x"]) for r in svg.rects) == [
        PAD + 2,
        PAD + 2 * CELL + 2,
        PAD + 3 * CELL + 2,
    ]
    assert (
        int(svg.attrs["width"]) == 2 * PAD + 4 * CELL
    )  # four memory slices, each as wide as on an H100


def test_every_tenant_appears_with_a_bar_segment(example_report: tuple[Path, str]) -> None:
    root, html = example_report
    page = parse(html)
    bars = [s for s in page.svgs if "capacity-bar" in s.classes.split()]
    assert bars
    for path in (root / "tenants").glob("*.yaml"):
        name = yaml.safe_load(path.read_text())["name"]
        assert f">{name}" in html, f"{name} in a legend"
        assert f"<title>{name}: " in html, f"{name} has a bar segment"


def test_report_is_self_contained(example_report: tuple[Path, str]) -> None:
    _, html = example_report
    page = parse(html)
    assert not page.tags & {"script", "link", "img", "iframe", "object", "embed"}
    for needle in ("http://", "https://", "src=", "url(", "@import", "xlink:href"):
        assert needle not in html, needle
    assert "<style>" in html


def test_a_description_cannot_inject_markup(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "fleet"
    assert init_repo(root) == 0
    cluster = root / "clusters/gpu-cluster.yaml"
    evil = '</td><script>alert(1)</script><b onclick="x()">bold</b> & co'
    text = cluster.read_text().replace(
        'description: "Serving and deadline-bound training"', f"description: '{evil}'"
    )
    cluster.write_text(text)
    assert write_report(root, None, None) == 0, capsys.readouterr().err
    html = (root / "gpuplan-report.html").read_text()
    page = parse(html)
    assert "script" not in page.tags and "b" not in page.tags
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert evil in "".join(page.text)  # shown as text, exactly as written


def test_the_template_escapes_every_field() -> None:
    evil = '<img src=x onerror="alert(1)">'
    view = ClusterView(
        evil,
        evil,
        evil,
        [evil],
        [(evil, 1, evil)],
        [(evil, "#4e79a7")],
        [PoolView(evil, evil, evil, evil, evil, [], [])],
    )
    html = render_html([view], errors=[evil])
    page = parse(html)
    assert "img" not in page.tags
    assert "<img" not in html
    assert html.count("&lt;img src=x onerror=&#34;alert(1)&#34;&gt;") >= 10


def test_capacity_bar_stacks_tenants_then_overcommit() -> None:
    row = ResourceRow("c", "p", "H100-SXM5-80GB", "exclusive", "2", 16, "nvidia.com/gpu", 16, 16)
    row.tenants = [TenantShare("a", 8, None, None), TenantShare("b", 12, None, None)]
    bar = capacity_bar(row, {"a": "#111111", "b": "#222222"})
    scale = BAR_WIDTH / 20
    a, b, over = bar.segments
    assert (a.x, a.width, a.colour) == (0, 8 * scale, "#111111")
    assert (b.x, b.width, b.colour) == (8 * scale, 12 * scale, "#222222")
    assert (over.x, over.width, over.colour) == (16 * scale, 4 * scale, OVERCOMMIT)
    assert bar.capacity_x == 16 * scale and bar.always_on_x is None


def test_capacity_bar_headroom_is_grey_and_marks_always_on() -> None:
    row = ResourceRow("c", "p", "L40S", "exclusive", "1-4", 16, "nvidia.com/gpu", 16, 4)
    row.tenants = [TenantShare("a", 6, None, None), TenantShare("b", 0, None, None)]
    a, headroom = capacity_bar(row, {"a": "#111111", "b": "#222222"}).segments
    assert a.width == 6 * BAR_WIDTH / 16
    assert (headroom.x, headroom.width, headroom.colour) == (a.width, 10 * BAR_WIDTH / 16, HEADROOM)
    assert capacity_bar(row, {"a": "#1", "b": "#2"}).always_on_x == 4 * BAR_WIDTH / 16


def _overcommitted(root: Path) -> Path:
    assert init_repo(root) == 0
    tenant = root / "tenants/team-a.yaml"
    tenant.write_text(tenant.read_text().replace("gpus: 8 ", "gpus: 20 "))
    return root


def test_an_overcommitted_fleet_is_drawn_with_its_errors_and_fails(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = _overcommitted(tmp_path / "fleet")
    capsys.readouterr()
    assert write_report(root, None, None) == 1
    err = capsys.readouterr().err
    assert "tenants/team-a.yaml:" in err and "error" in err
    html = (root / "gpuplan-report.html").read_text()
    page = parse(html)
    (bar,) = [
        s
        for s in page.svgs
        if s.pool == "pool-gpu-cluster-h100-train" and "capacity-bar" in s.classes
    ]
    assert [r["fill"] for r in bar.rects][-1] == OVERCOMMIT
    assert "The fleet has 1 error" in "".join(page.text)


def test_cluster_filter_and_stdout(example_repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert write_report(example_repo, Path("-"), "dgx-onprem") == 0
    page = parse(capsys.readouterr().out)
    assert page.svgs and all(s.pool.startswith("pool-dgx-onprem-") for s in page.svgs)
    assert not (example_repo / "gpuplan-report.html").exists()


def test_unknown_cluster_fails_without_writing(
    example_repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert write_report(example_repo, None, "nope") == 1
    assert "--cluster nope: no such cluster" in capsys.readouterr().err
    assert not (example_repo / "gpuplan-report.html").exists()


def test_report_bytes_are_deterministic(example_repo: Path, tmp_path: Path) -> None:
    first, second = tmp_path / "1.html", tmp_path / "2.html"
    assert write_report(example_repo, first, None) == 0
    assert write_report(example_repo, second, None) == 0
    assert first.read_bytes() == second.read_bytes()


def _lab(colour: str) -> tuple[float, float, float]:
    """Return a #rrggbb colour in CIE L*a*b* (D65), to measure how different two colours look."""
    rgb = [int(colour[i : i + 2], 16) / 255 for i in (1, 3, 5)]
    linear = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in rgb]
    x = (0.4124 * linear[0] + 0.3576 * linear[1] + 0.1805 * linear[2]) / 0.95047
    y = 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]
    z = (0.0193 * linear[0] + 0.1192 * linear[1] + 0.9505 * linear[2]) / 1.08883
    f = [t ** (1 / 3) if t > 0.008856 else 7.787 * t + 16 / 116 for t in (x, y, z)]
    return 116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])


def _delta(a: str, b: str) -> float:
    return (
        sum((p - q) ** 2 for p, q in zip(_lab(a), _lab(b))) ** 0.5
    )  # CIE76: about 2.3 is just noticeable


def test_profile_tenant_and_overcommit_colours_are_told_apart() -> None:
    profiles, tenants = list(PROFILE_COLOURS.values()), list(TENANT_COLOURS)
    assert min(_delta(p, t) for p in profiles for t in tenants) > 20
    assert min(_delta(OVERCOMMIT, c) for c in profiles + tenants + [HEADROOM]) > 40
    assert min(_delta(a, b) for i, a in enumerate(tenants) for b in tenants[i + 1 :]) > 15
    chroma = [(_lab(c)[1] ** 2 + _lab(c)[2] ** 2) ** 0.5 for c in profiles]
    assert max(chroma) < 12  # instances are near-neutral: never mistaken for a tenant's share


def test_borrowing_and_lending_are_shown_per_tenant(example_report: tuple[Path, str]) -> None:
    _, html = example_report
    section = html[html.index('id="pool-h100-prod-h100-train"') :]
    section = section[: section.index("</article>")]
    rows = re.findall(
        r"<tr><td>([^<]+)</td><td class=\"num\">(\d+)</td><td class=\"borrow\">([^<]+)</td><td class=\"lend\">([^<]+)</td></tr>",
        section,
    )
    assert rows == [
        ("team-a", "16", "up to 16", "up to 8"),
        ("team-b", "32", "unlimited", "up to 16"),
    ]


def test_small_segments_keep_their_label_in_a_key_and_a_tooltip() -> None:
    row = ResourceRow(
        "c", "p", "H100-SXM5-80GB", "exclusive", "16", 128, "nvidia.com/gpu", 128, 128
    )
    row.tenants = [
        TenantShare("big-tenant", 120, None, "shared"),
        TenantShare("tiny-tenant", 1, 2, "shared"),
    ]
    bar = capacity_bar(row, {"big-tenant": "#4e79a7", "tiny-tenant": "#f28e2b"})
    big, tiny, headroom = bar.segments
    assert big.show_label and not tiny.show_label and not headroom.show_label
    view = ClusterView(
        "c",
        "onprem",
        "1.33",
        [],
        [],
        [("big-tenant", "#4e79a7"), ("tiny-tenant", "#f28e2b")],
        [PoolView("p", "H100", "exclusive", "", "", [], [bar])],
    )
    html = render_html([view])
    parse(html)
    key = html[html.index('<p class="key">') :]
    key = key[: key.index("</p>")]
    assert 'title="tiny-tenant: 1 nvidia.com/gpu"' in key and ">tiny-tenant 1</span>" in key
    assert ">headroom 7</span>" in key and "big-tenant" not in key
    assert "<title>tiny-tenant: 1 nvidia.com/gpu</title>" in html


CHROMIUM = shutil.which("chromium")
BROWSER = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync", "--hide-scrollbars",
]  # fmt: skip
PROBE = """<script>
const sizes = [...document.querySelectorAll("svg text")].map(t => t.getBoundingClientRect().height).filter(h => h > 0);
document.title = JSON.stringify({scroll: document.documentElement.scrollWidth, text: Math.min(...sizes), count: sizes.length});
</script></body>"""


@pytest.mark.skipif(
    CHROMIUM is None,
    reason="chromium is not installed (apt-get install chromium): the 760 px layout is not checked in a browser",
)
def test_report_is_readable_at_760_px_in_headless_chromium(
    example_report: tuple[Path, str], tmp_path: Path
) -> None:
    _, html = example_report
    probe = tmp_path / "probe.html"
    probe.write_text(
        html.replace("</body>", PROBE)
    )  # the shipped page has no script; only this copy
    command = [
        str(CHROMIUM),
        *BROWSER,
        f"--user-data-dir={tmp_path / 'profile'}",
        "--window-size=760,1000",
        "--dump-dom",
        probe.as_uri(),
    ]
    dom = subprocess.run(command, check=True, capture_output=True, text=True, timeout=120).stdout
    found = json.loads(html_module.unescape(re.search(r"<title>(\{.*?\})</title>", dom).group(1)))
    assert found["scroll"] <= 760  # no horizontal scrolling at 760 px
    assert (
        found["count"] > 50 and found["text"] >= 10
    )  # every label in the drawings at least 10 px tall


CHROMIUM = shutil.which("chromium")


@pytest.mark.skipif(
    CHROMIUM is None,
    reason="chromium is not installed (apt-get install chromium): browser rendering not tested",
)
def test_report_renders_in_headless_chromium(
    example_report: tuple[Path, str], tmp_path: Path
) -> None:
    root, _ = example_report
    shot = tmp_path / "shot.png"
    profile = tmp_path / "profile"
    command = [
        str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        f"--user-data-dir={profile}", f"--screenshot={shot}", "--window-size=760,2000",
        (root / "gpuplan-report.html").resolve().as_uri(),
    ]  # fmt: skip
    subprocess.run(command, check=True, capture_output=True, timeout=120)
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    assert (width, height) == (760, 2000)
    assert len(data) > 50_000  # a blank 760x2000 page compresses to a few kB


def test_kai_clusters_show_their_queue_tree(example_report: tuple[Path, str]) -> None:
    root, html = example_report
    section = html.split('id="cluster-gb200-train"', 1)[1].split("<section", 1)[0]
    table = section.split('<table class="kai-queues">', 1)[1].split("</table>", 1)[0]
    rows = re.findall(
        r'<tr><td class="depth-(\d)">([^<]+)</td><td>([^<]*)</td><td class="num">([^<]+)</td>',
        table,
    )
    queues = json.loads(run("capacity", "--root", str(root), "--format", "json").stdout)[
        "kai_queues"
    ]
    assert rows == [
        (
            str(2 if q["parent"] else 1),
            q["queue"],
            q["parent"] or "",
            f"{q['quota']['gpu']} / {'unlimited' if q['limit']['gpu'] == -1 else q['limit']['gpu']}",
        )
        for q in queues
    ]
    assert [r[1] for r in rows if r[0] == "1"] == ["llm", "research"]
    assert (
        "KAI Scheduler v0.17.0" in section
        and 'class="kai-queues"' not in html.split('id="cluster-gb200-train"', 1)[0]
    )
