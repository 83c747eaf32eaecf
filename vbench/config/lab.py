"""The lab model: where a scenario runs (vCenters, ESXi hosts, SSH nodes, profiles)."""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

from pydantic import AfterValidator, Field, PrivateAttr, model_validator

from vbench.config import netaddr
from vbench.config.guestname import GuestName
from vbench.config.publish import Publish
from vbench.config.secrets import SecretError, resolve_secret
from vbench.config.types import Duration, OneLine, SecretRef, Strict, Text, located, new_list
from vbench.errors import ConfigValidationError

HostKeyPolicy = Literal["strict", "accept-new"]

# A guest's scratch directory: an absolute path of plain characters (it is written into
# job files and configs: fio reads ':' as a separator, nginx ';' and quotes).
_WORKDIR = re.compile(r"/[A-Za-z0-9_.+@/-]*")
# A node's data disk (/dev/sdb, /dev/disk/by-path/pci-0000:03:00.0-scsi-0:0:1:0): the
# same, with ':' (escaped where fio would read it as a separator).
_DATA_DISK = re.compile(r"/[A-Za-z0-9_.+@/:-]+")


def _workdir(value: str | None) -> str | None:
    if value is None:
        return value
    if not _WORKDIR.fullmatch(value) or "/../" in f"{value}/":
        raise ValueError(f"workdir {value!r} is refused: an absolute path of letters, digits "
                         "and _ . + @ / - without '..' (it is written into the guests' job "
                         "files and configs)")
    return value


def _data_disk(value: str) -> str:
    if not _DATA_DISK.fullmatch(value) or "/../" in f"{value}/":
        raise ValueError(f"data disk {value!r} is refused: an absolute path of letters, "
                         "digits and _ . + @ / - : without '..' (it is written into fio "
                         "job files)")
    return value


Workdir = Annotated[str, AfterValidator(_workdir)]
DataDiskPath = Annotated[str, AfterValidator(_data_disk)]


Address = Annotated[str, AfterValidator(netaddr.check_address)]
PoolItem = Annotated[str, AfterValidator(netaddr.check_pool_item)]
IPv4 = Annotated[str, AfterValidator(netaddr.check_ipv4)]


class LabModel(Strict):
    """A lab model. Like every config model (Strict's defer_build), pydantic builds its
    validator when a lab is first loaded; `validate` or `plan` without --lab does not
    even import this module (tests/unit/test_import_cost.py)."""


class SshEndpoint(LabModel):
    """How to reach a machine over SSH."""

    address: Address = Field(description="host name or IP address")
    port: int | None = Field(None, ge=1, le=65535, description="SSH port (default 22)")
    user: str | None = Field(None, description="login (default: from lab defaults or yours)")
    key_file: str | None = Field(None, description="private key file (~ and ${vbench:...} ok)")
    password: SecretRef | None = Field(None, description="password reference (never literal)")
    host_key_policy: HostKeyPolicy | None = Field(
        None, description="strict: the key must be in known_hosts; accept-new: add unknown keys"
    )
    known_hosts: str | None = Field(None, description="known_hosts file (default ~/.ssh)")
    jump: str | None = Field(None, description="name of a jump host in `jump_hosts`")


class Node(SshEndpoint):
    """A static SSH guest (a VM or machine that already exists)."""

    roles: list[str] = Field(default_factory=new_list, description="roles topology groups pick by")
    workdir: Workdir | None = Field(
        None, description="remote scratch directory (default /tmp/vbench)"
    )
    disks: list[DataDiskPath] = Field(
        default_factory=new_list, description="data disks of the node in order (/dev/sdb, "
        "/dev/disk/by-id/…): what fio's `filename: disk:N` names on it"
    )
    vm: str | None = Field(
        None, description="the VM this node is, as vCenter and esxtop name it (default: the "
        "node's name): its CPU on the run's hosts is the benchmark's, not a disturbance"
    )


class NodeDefaults(LabModel):
    """Values every node inherits unless it sets its own."""

    port: int = Field(22, ge=1, le=65535)
    user: str | None = None
    key_file: str | None = None
    password: SecretRef | None = None
    host_key_policy: HostKeyPolicy = "strict"
    known_hosts: str | None = None
    jump: str | None = None
    workdir: Workdir = "/tmp/vbench"
    connect_timeout: Duration = Field(10.0, gt=0)


class IpPool(LabModel):
    """Fixed addresses handed to cloned VMs by guest customization (networks without DHCP)."""

    addresses: Annotated[list[PoolItem], AfterValidator(netaddr.check_pool)] = Field(
        min_length=1, description="IPv4 addresses, or ranges such as 10.0.0.11-10.0.0.40 "
        f"(at most {netaddr.MAX_POOL:,} addresses in all)"
    )
    netmask: Annotated[str, AfterValidator(netaddr.check_netmask)] = Field(
        "255.255.255.0", description="subnet mask"
    )
    gateway: IPv4 | None = Field(None, description="default gateway")
    dns: list[IPv4] = Field(default_factory=new_list, description="DNS servers")
    domain: str = Field("local", description="DNS domain of the guests")


class Simulator(LabModel):
    """A vcsim simulator `vbench lab up` starts for this vCenter (the url must be loopback)."""

    datacenters: int = Field(1, ge=1, le=100, description="datacenters")
    clusters: int = Field(1, ge=0, le=1000, description="clusters per datacenter")
    hosts: int = Field(3, ge=0, le=10000, description="hosts per cluster")
    standalone_hosts: int = Field(1, ge=0, le=10000, description="standalone hosts")
    vms: int = Field(2, ge=0, le=10000, description="VMs per resource pool and standalone host")
    datastores: int = Field(1, ge=1, le=100, description="local datastores")
    templates: list[str] = Field(
        default_factory=new_list, description="templates to create (clones of the first VM)"
    )
    method_delay: dict[str, Duration] = Field(
        default_factory=dict, description="API method -> added latency, e.g. CloneVM_Task: 500ms"
    )


class VCenter(LabModel):
    """A vCenter Server (used by the vSphere layer)."""

    url: Annotated[str, AfterValidator(netaddr.check_vcenter_url)] = Field(
        description="https://vcenter.example.com"
    )
    user: str = Field(description="login, e.g. administrator@vsphere.local")
    password: SecretRef = Field(description="password reference (never literal)")
    thumbprint: str | None = Field(
        None,
        pattern=r"^([0-9A-Fa-f]{2}:){31}[0-9A-Fa-f]{2}$|^[0-9A-Fa-f]{64}$",
        description="SHA-256 thumbprint of its certificate to pin (AB:CD:... or 64 hex digits)",
    )
    insecure: bool = Field(False, description="skip TLS verification (prints a warning)")
    ca_file: str | None = Field(
        None, description="PEM file of CA certificates to trust, e.g. the VMCA root"
    )
    datacenter: str | None = Field(
        None, description="datacenter to work in (default: the only one)"
    )
    keepalive: Duration = Field(600.0, ge=0, description="touch the session this often (0: never)")
    timeout: Duration = Field(30.0, gt=0, description="connect and call timeout")
    ip_pool: IpPool | None = Field(
        None, description="fixed addresses for cloned VMs (default: DHCP, reported by Tools)"
    )
    simulator: Simulator | None = Field(
        None, description="a local vcsim `vbench lab up` starts (simulated labs)"
    )


class EsxiHost(SshEndpoint):
    """An ESXi host (SSH for esxtop)."""

    vcenter: str | None = Field(None, description="vCenter managing it (name in `vcenters`)")


class Profile(LabModel):
    """A lab variant a factor level switches to (docs/labs.md, Profiles).

    For the points at that level, `vm:` groups are placed (and a driver acting on
    vCenter works) in this vCenter, datacenter, cluster, resource pool, folder,
    datastore and network; `nodes` swaps lab nodes; `labels` are recorded."""

    description: Text = ""
    vcenter: str | None = Field(None, description="vCenter (name in `vcenters`)")
    datacenter: str | None = Field(None, description="datacenter (default: the vCenter's)")
    cluster: str | None = Field(None, description="cluster for `vm:` groups")
    resource_pool: str | None = Field(None, description="resource pool for `vm:` groups")
    folder: str | None = Field(None, description="VM folder for `vm:` groups")
    datastore: str | None = Field(None, description="datastore for `vm:` groups")
    network: str | None = Field(None, description="port group of the first vNIC")
    storage_policy: str | None = Field(
        None, description="SPBM storage policy of the `vm:` groups' data disks"
    )
    nodes: dict[str, str] = Field(
        default_factory=dict, description="node name -> replacement node name"
    )
    labels: dict[str, str] = Field(default_factory=dict, description="recorded with the run")


class LocalLab(LabModel):
    """The loopback lab `vbench lab up` starts (an sshd on 127.0.0.x addresses)."""

    addresses: list[str] = Field(min_length=1, description="loopback addresses, one per guest")
    port: int = Field(2222, ge=1024, le=65535, description="unprivileged SSH port")

    @model_validator(mode="after")
    def _loopback(self) -> LocalLab:
        for i, a in enumerate(self.addresses):
            if not _LOOPBACK.fullmatch(a):
                raise located([(("addresses", i), f"{a!r} is not a loopback address "
                                "(127.0.0.0/8)")])
        return self


class Lab(LabModel):
    """A lab file: where scenarios run."""

    version: Literal[1]
    name: OneLine  # shown by reports, `ls`, comparisons: no control character
    description: Text = ""
    defaults: NodeDefaults = Field(default_factory=NodeDefaults)
    # Names reach guests (headers, directories) and the controller's paths: checked here.
    nodes: dict[GuestName, Node] = Field(default_factory=dict, description="static SSH guests")
    jump_hosts: dict[GuestName, SshEndpoint] = Field(default_factory=dict)
    vcenters: dict[GuestName, VCenter] = Field(default_factory=dict)
    default_vcenter: str | None = Field(
        None, description="the vCenter of a `vm:` group or a vCenter driver's point that "
        "names none, when the lab has several (a profile's `vcenter:` still wins)",
    )
    hosts: dict[GuestName, EsxiHost] = Field(default_factory=dict, description="ESXi hosts")
    profiles: dict[GuestName, Profile] = Field(default_factory=dict)
    local: LocalLab | None = Field(None, description="local loopback lab settings")
    address_map: dict[str, str] = Field(
        default_factory=dict,
        description="address or VM name -> host[:port] SSH really connects to (NAT, "
        "simulated labs)",
    )
    publish: Publish | None = Field(
        None, description="where each run's figures, verdict and alerts are sent when it "
        "ends (docs/publishing.md); not part of the lab fingerprint")

    @model_validator(mode="after")
    def _references(self) -> Lab:
        # Each mistake at the field that makes it (file:line:column), not at the lab's 1:1.
        issues = [*self._jump_issues(), *self._name_issues()]
        if issues:
            raise located(issues)
        return self

    def _jump_issues(self) -> list[tuple[tuple[str | int, ...], str]]:
        issues: list[tuple[tuple[str | int, ...], str]] = []
        known = ", ".join(self.jump_hosts) or "none"
        # The default reaches the run's cloned VMs too, so it is checked even in a lab
        # without nodes or hosts (else the run clones, then fails on the unknown name).
        refs: list[tuple[str | None, tuple[str | int, ...]]] = [
            (self.defaults.jump, ("defaults", "jump"))]
        for kind, items in (("nodes", self.nodes), ("hosts", self.hosts)):
            refs += [(ep.jump, (kind, name, "jump")) for name, ep in items.items()]
        for jump, path in refs:
            if jump and jump not in self.jump_hosts:
                issues.append((path, f"jump host {jump!r} is not in jump_hosts ({known})"))
        # vbench connects through one jump host: a jump host's own `jump` would be ignored.
        for name, ep in self.jump_hosts.items():
            if ep.jump is None:
                continue
            chain = [name, ep.jump]
            while chain[-1] in self.jump_hosts and chain[-1] not in chain[:-1]:
                nxt = self.jump_hosts[chain[-1]].jump
                if nxt is None:
                    break
                chain.append(nxt)
            cycle = "a cycle; " if chain[-1] in chain[:-1] else ""
            issues.append((("jump_hosts", name, "jump"), f"{' -> '.join(chain)}: {cycle}vbench "
                           "goes through one jump host only, so a jump host cannot have a "
                           "jump of its own (give the guests the last hop as their jump, or "
                           "use an SSH ProxyJump outside vbench)"))
        return issues

    def _name_issues(self) -> list[tuple[tuple[str | int, ...], str]]:
        issues: list[tuple[tuple[str | int, ...], str]] = []
        for name, host in self.hosts.items():
            if host.vcenter and host.vcenter not in self.vcenters:
                issues.append((("hosts", name, "vcenter"),
                               f"vcenter {host.vcenter!r} is not in vcenters"))
        if self.default_vcenter and self.default_vcenter not in self.vcenters:
            issues.append((("default_vcenter",), f"vcenter {self.default_vcenter!r} is not "
                           f"in vcenters ({', '.join(self.vcenters) or 'none'})"))
        for name, vc in self.vcenters.items():
            if vc.simulator is not None and not _loopback_url(vc.url):
                issues.append((("vcenters", name, "url"),
                               "a simulator needs a loopback url (127.x)"))
        for name, prof in self.profiles.items():
            if prof.vcenter and prof.vcenter not in self.vcenters:
                issues.append((("profiles", name, "vcenter"),
                               f"vcenter {prof.vcenter!r} is not in vcenters"))
            for old, new in prof.nodes.items():
                if new not in self.nodes:
                    issues.append((("profiles", name, "nodes", old),
                                   f"node {new!r} (for {old}) is not in nodes"))
        for key, target in self.address_map.items():
            problem = _map_target_problem(target)
            if problem:
                issues.append((("address_map", key), problem))
        return issues

    # Where the lab was loaded from (vbench.config.load): a secret that cannot be resolved
    # when a connection needs it is reported at its line.
    _source: Any = PrivateAttr(default=None)

    def up_command(self) -> str:
        """The command that starts this lab's local parts (`local:` sshd, `simulator:`
        vCenters): said when one of them does not answer."""
        file = getattr(self._source, "file", None) or "LAB_FILE"
        return f"vbench lab up {file}"

    def secret(self, path: tuple[str | int, ...], ref: str) -> str:
        """The value of the secret reference ``ref`` found at ``path`` in the lab."""
        try:
            return resolve_secret(ref, ".".join(map(str, path)))
        except SecretError as exc:
            if self._source is None:
                raise
            raise ConfigValidationError([self._source.issue(path, exc.reason)]) from None

    def redacted(self) -> dict[str, Any]:
        # Secrets are references only, so the dump itself holds none; still mark them.
        return self.model_dump(mode="json", exclude_none=True)


def _map_target_problem(target: str) -> str | None:
    host, sep, port = target.rpartition(":") if ":" in target else (target, "", "")
    try:
        netaddr.check_address(host)
    except ValueError:
        return f"{target!r} is not host or host:port"
    if sep and not (port.isascii() and port.isdigit() and 1 <= int(port) <= 65535):
        return f"{target!r}: the port must be a number from 1 to 65535"
    return None


_LOOPBACK = re.compile(r"127(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}")


def _loopback_url(url: str) -> bool:
    host = urlsplit(url if "://" in url else f"https://{url}").hostname or ""
    return host.startswith("127.") or host == "localhost"

