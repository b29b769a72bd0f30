"""`gpuplan validate` checks object metadata as the API server does in Go, for any kind (issue 35)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import run

OBJECT = """\
apiVersion: {api}
kind: {kind}
metadata:
  name: {name}
  namespace: team-a{meta}
{body}
"""


def _validate(tmp_path: Path, text: str) -> tuple[int, str]:
    path = tmp_path / "objects.yaml"
    path.write_text(text)
    result = run("validate", str(path))
    assert "Traceback" not in result.stderr
    return result.code, result.stderr


def _config_map(name: str = "ok", meta: str = "") -> str:
    return OBJECT.format(api="v1", kind="ConfigMap", name=name, meta=meta, body="data: {a: b}")


@pytest.mark.parametrize(
    ("text", "where"),
    [
        (
            _config_map("Bad_Name"),
            "metadata.name: 'Bad_Name' must be a lowercase RFC 1123 subdomain",
        ),
        (_config_map(meta="\n  labels: {tier: " + "x" * 64 + "}"), "metadata.labels.tier: "),
        (_config_map(meta="\n  labels: {tier: -front}"), "must be empty or alphanumeric"),
        (_config_map(meta="\n  labels: {a/b/c: x}"), "metadata.labels: key 'a/b/c'"),
        (
            _config_map(meta="\n  annotations: {Example.COM_/x: y}"),
            "metadata.annotations: key 'Example.COM_/x': prefix part",
        ),
        (
            OBJECT.format(
                api="rbac.authorization.k8s.io/v1",
                kind="Role",
                name="a%2fb",
                meta="",
                body="rules: []",
            ),
            "metadata.name: 'a%2fb' may not contain '%'",
        ),
        (
            OBJECT.format(
                api="v1", kind="Service", name="1st", meta="", body="spec: {ports: [{port: 80}]}"
            ),
            "metadata.name: '1st' must be a lowercase RFC 1035 label",
        ),
    ],
)
def test_metadata_the_api_server_refuses_is_an_error(tmp_path: Path, text: str, where: str) -> None:
    code, err = _validate(tmp_path, text)
    assert code == 1 and where in err, err


def test_metadata_at_the_limits_passes(tmp_path: Path) -> None:
    meta = (
        "\n  labels: {example.com/tier: "
        + "x" * 63
        + ", empty: ''}\n  annotations: {Example.com/Note: free text}"
    )
    role = OBJECT.format(
        api="rbac.authorization.k8s.io/v1",
        kind="Role",
        name="Admin:Team",
        meta="",
        body="rules: []",
    )
    code, err = _validate(tmp_path, _config_map("a." + "b" * 63, meta) + "---\n" + role)
    assert code == 0, err


def test_typed_lists_are_unpacked_as_kubectl_does(tmp_path: Path) -> None:
    text = "apiVersion: v1\nkind: ConfigMapList\nitems:\n" + "".join(
        f"- {{apiVersion: v1, kind: ConfigMap, metadata: {{name: {n}, namespace: team-a}}}}\n"
        for n in ("one", "Two")
    )
    code, err = _validate(tmp_path, text)
    assert code == 1, err  # the bad item is found inside the list, the list itself is no object
    assert "'Two' must be a lowercase RFC 1123 subdomain" in err
    assert "ConfigMapList" not in err
