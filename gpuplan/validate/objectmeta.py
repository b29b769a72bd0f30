"""Object metadata as the API server validates it in Go, for any kind: name, namespace, labels, annotations.

The schemas say only `type: string` here; the rules come from kubernetes/apimachinery, read at
kubernetes-1.34.10, kubernetes-1.36.3 and kubernetes-1.37.0-beta.0 (gpuplan's newest Kubernetes is
1.37; the snapshot readable here has no kubernetes-1.37.0 tag), the same rules at all three:
pkg/api/validation/objectmeta.go (ValidateObjectMetaAccessor, ValidateAnnotations,
TotalAnnotationSizeLimitB 256 KiB), pkg/apis/meta/v1/validation/validation.go (ValidateLabels);
IsDNS1123Label, IsDNS1123Subdomain and IsDNS1035Label in pkg/util/validation/validation.go; label
keys and values and path-segment names in pkg/util/validation/validation.go (IsQualifiedName,
IsValidLabelValue) and pkg/api/validation/path/name.go (IsValidPathSegmentName) up to 1.35, moved
from 1.36 to pkg/api/validate/content (kube.go IsLabelKey and IsLabelValue, path.go
IsPathSegmentName; the old names stay as aliases). Which name rule a kind gets is its registry's
choice in kubernetes/kubernetes, read in the one stored snapshot of its main branch (the repository
is too large to fetch here, so no tag was checked): pkg/apis/rbac/validation/validation.go (roles
and bindings: ValidateRBACName, a path segment), pkg/apis/core/validation/validation.go (Namespace:
DNS-1123 label, Service: DNS-1035 label, the other core kinds a DNS-1123 subdomain); custom
resources a DNS-1123 subdomain (kubernetes/apiextensions-apiserver
pkg/registry/customresource/validator.go, NameIsDNSSubdomain, at kubernetes-1.34.10 and 1.36.3; at
kubernetes-1.37.0-beta.0 through ValidateObjectMetaDeclaratively, with the same name rule).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from gpuplan.validate.messages import Problem

_QUALIFIED = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_DNS1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
ANNOTATIONS_MOST = 256 * (1 << 10)  # bytes of keys and values together


def _shaped(value: str, most: int, pattern: re.Pattern[str], what: str) -> list[str]:
    """Return why a value is longer than `most` or does not match `pattern` (described by `what`)."""
    if len(value) > most:
        return [f"must be no more than {most} characters"]
    return [] if pattern.match(value) else [f"must be {what}"]


def dns_label(value: str) -> list[str]:
    """Return why a value is no RFC 1123 label (at most 63 of a-z, 0-9, '-', alphanumeric at both ends)."""
    return _shaped(
        value, 63, _LABEL, "a lowercase RFC 1123 label (a-z, 0-9, '-'; alphanumeric at both ends)"
    )


def dns_subdomain(value: str) -> list[str]:
    """Return why a value is no RFC 1123 subdomain (at most 253: labels joined by '.')."""
    what = "a lowercase RFC 1123 subdomain (a-z, 0-9, '-' and '.'; alphanumeric at both ends)"
    return _shaped(value, 253, _SUBDOMAIN, what)


def dns1035_label(value: str) -> list[str]:
    """Return why a value is no RFC 1035 label (as RFC 1123, and starting with a letter)."""
    what = "a lowercase RFC 1035 label (a-z, 0-9, '-'; start with a letter, end alphanumeric)"
    return _shaped(value, 63, _DNS1035, what)


def path_segment(value: str) -> list[str]:
    """Return why a value cannot be a segment of the object's URL path."""
    if value in (".", ".."):
        return [f"may not be {value!r}"]
    return [f"may not contain {c!r}" for c in ("/", "%") if c in value]


def qualified_name(value: str) -> list[str]:
    """Return why a value is no label or annotation key: [DNS subdomain prefix '/'] name of at most 63."""
    prefix, slash, name = value.rpartition("/")
    if slash and "/" in prefix:
        return ["must be a name with at most one '/' (an optional DNS subdomain prefix)"]
    why = [f"prefix part {m}" for m in dns_subdomain(prefix)] if slash else []
    if not name:
        return [*why, "name part must not be empty"]
    if len(name) > 63:
        why.append("name part must be no more than 63 characters")
    if not _QUALIFIED.match(name):
        why.append("name part must be alphanumeric, '-', '_' or '.', alphanumeric at both ends")
    return why


def label_value(value: str) -> list[str]:
    """Return why a value is no label value: empty, or at most 63 as a qualified name's name part."""
    what = "empty or alphanumeric, '-', '_' or '.', alphanumeric at both ends"
    return _shaped(value, 63, _QUALIFIED, what) if value else []


_NAME_RULE: dict[tuple[str, str], Callable[[str], list[str]]] = {
    ("rbac.authorization.k8s.io", "Role"): path_segment,
    ("rbac.authorization.k8s.io", "ClusterRole"): path_segment,
    ("rbac.authorization.k8s.io", "RoleBinding"): path_segment,
    ("rbac.authorization.k8s.io", "ClusterRoleBinding"): path_segment,
    ("", "Namespace"): dns_label,
    ("", "Service"): dns1035_label,
}


def meta_problems(obj: dict) -> list[Problem]:
    """Return the problems the API server finds in an object's name, namespace, labels and annotations."""
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        return []
    group = str(obj.get("apiVersion") or "").rpartition("/")[0]
    rule = _NAME_RULE.get((group, str(obj.get("kind"))), dns_subdomain)
    found = []
    for field, check in (("name", rule), ("namespace", dns_label)):
        value = meta.get(field)
        if isinstance(value, str) and value:
            found += [Problem(f"metadata.{field}", f"{value!r} {m}") for m in check(value)]
    labels = meta.get("labels")
    for key, value in labels.items() if isinstance(labels, dict) else ():
        found += [Problem("metadata.labels", f"key {key!r}: {m}") for m in qualified_name(str(key))]
        if isinstance(value, str):
            found += [
                Problem(f"metadata.labels.{key}", f"{value!r} {m}") for m in label_value(value)
            ]
    annotations = meta.get("annotations")
    if isinstance(annotations, dict):
        for key in annotations:
            found += [
                Problem("metadata.annotations", f"key {key!r}: {m}")
                for m in qualified_name(str(key).lower())
            ]
        size = sum(len(str(k).encode()) + len(str(v).encode()) for k, v in annotations.items())
        if size > ANNOTATIONS_MOST:
            found.append(
                Problem(
                    "metadata.annotations",
                    f"{size} bytes in all, more than the {ANNOTATIONS_MOST} allowed",
                )
            )
    return found
