"""The SR-IOV hardware of an sriov or ib-sriov network: which VFs the SR-IOV network device plugin hands out.

Facts (k8snetworkplumbingwg/sriov-network-device-plugin v3.11.0, README.md "Configurations"): a
resource pool selects net devices by `vendors` and `devices` (PCI IDs in hex, such as 15b3 and 101e),
`drivers`, `pfNames` (the PF's interface name, optionally `<PFName>#<first>-<last>,<single>` to take
some VF indices only, 0-based), `linkTypes` (`ether` or `infiniband`, the net device's encapsulation)
and `isRdma` (mount the VF's RDMA device into the pod). With pfNames the pool holds the VFs of those
PFs only. The plugin hands out VFs that exist: creating them (the PF's `sriov_numvfs`, SR-IOV enabled
in firmware) is host configuration, which gpuplan states (`gpuplan requirements`) and never does.
"""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import Field, model_validator

from gpuplan.model.common import Model, matching

# An interface name as Linux takes it (net/core/dev.c dev_valid_name(): 1-15 bytes, no '/', ':',
# white space), then optionally '#' and VF indices: single ones or first-last ranges, comma separated.
PF_NAME = re.compile(
    r"(?!\.{1,2}(#|$))[\x21-\x22\x24-\x2e\x30-\x39\x3b-\x7e]{1,15}"
    r"(#[0-9]{1,4}(-[0-9]{1,4})?(,[0-9]{1,4}(-[0-9]{1,4})?)*)?"
)
PCI_ID = re.compile(r"[0-9a-f]{4}")  # a PCI vendor or device ID, four lower-case hex digits
DRIVER = re.compile(r"[A-Za-z0-9_][-A-Za-z0-9_.]{0,63}")  # a kernel module name
MAX_VFS = 256  # a bound on VFs per PF; the PF's sriov_totalvfs is lower (127 on ConnectX-7)


PfName = Annotated[
    str, matching(PF_NAME, "a PF interface name, optionally with VF indices (ens1f0#0-7)")
]
PciId = Annotated[str, matching(PCI_ID, "a PCI ID: four lower-case hex digits such as 15b3")]
DriverName = Annotated[str, matching(DRIVER, "a kernel driver name such as mlx5_core")]


def vf_indices(pf_name: str) -> list[tuple[int, int]] | None:
    """Return the VF index ranges a pfNames entry selects (first, last), None when it takes every VF."""
    _, sep, ranges = pf_name.partition("#")
    if not sep:
        return None
    found = []
    for part in ranges.split(","):
        first, _, last = part.partition("-")
        found.append((int(first), int(last or first)))
    return found


class SriovDevices(Model):
    """The VFs that back the network, as the SR-IOV network device plugin selects them: the VFs of
    named PFs (hosts that own the NICs), or VFs by PCI ID (VMs that see VFs only, such as Azure's
    ND-series, where the cloud creates and attaches them)."""

    pf_names: list[PfName] = Field(default=[], max_length=64)
    """Interface names of the PFs (physical functions) whose VFs the network hands out, such as
    [ibp12s0, ibp75s0]; `name#0-3` takes VFs 0 to 3 of that PF only. Default none: VFs by vendor
    and devices."""
    num_vfs: int | None = Field(default=None, ge=1, le=MAX_VFS)
    """VFs (virtual functions) each PF has (required with pfNames), created on the host
    (sriov_numvfs) or by the SR-IOV Network Operator: gpuplan does not create them, `gpuplan
    requirements` lists them."""
    vendor: PciId | None = None
    """PCI vendor ID of the VFs, such as "15b3" (NVIDIA Mellanox) or "8086" (Intel); default any."""
    devices: list[PciId] = Field(default=[], max_length=16)
    """PCI device IDs of the VFs, such as ["101e"] (ConnectX-6 Dx and later VFs); default any."""
    drivers: list[DriverName] = Field(default=[], max_length=16)
    """Kernel drivers the VFs are bound to, such as [mlx5_core]; default any."""
    rdma: bool | None = None
    """Mount each VF's RDMA device into the pod (the plugin's isRdma): GPUDirect RDMA over RoCE or
    InfiniBand. Default: true for ib-sriov (required there), false for sriov."""

    @model_validator(mode="after")
    def _selects_vfs(self) -> SriovDevices:
        if not self.pf_names:
            if self.num_vfs is not None:
                raise ValueError(
                    "numVfs counts the VFs of each PF in pfNames: name the PFs, or drop numVfs"
                )
            if self.vendor is None or not self.devices:
                raise ValueError(
                    "name the VFs: pfNames and numVfs where the nodes own the PFs, or vendor and devices "
                    "(the VFs' PCI IDs) where they see VFs only (VMs)"
                )
            return self
        if self.num_vfs is None:
            raise ValueError("pfNames needs numVfs: the VFs each PF has")
        for name in self.pf_names:
            for first, last in vf_indices(name) or []:
                if first > last:
                    raise ValueError(f"pfNames entry {name!r}: VF range {first}-{last} is empty")
                if last >= self.num_vfs:
                    raise ValueError(
                        f"pfNames entry {name!r} takes VF {last}, but each PF has numVfs {self.num_vfs} (VFs 0-{self.num_vfs - 1})"
                    )
        return self

    def vfs_per_node(self) -> int | None:
        """Return how many VFs a node with every listed PF offers the network (None: VFs by PCI ID, unknown)."""
        if self.num_vfs is None:
            return None
        total = 0
        for name in self.pf_names:
            ranges = vf_indices(name)
            if ranges is None:
                total += self.num_vfs
            else:
                total += len({i for first, last in ranges for i in range(first, last + 1)})
        return total
