"""Helpers for the Content Library tests: REST sessions to a vcsim, the ids of its
default inventory, a minimal OVF descriptor written by the test, and a real HTTP server
on loopback (python's http.server in a thread) standing for a web server in the lab."""

from __future__ import annotations

import functools
import http.server
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tests.vcsim import VcsimServer
from vbench.vsphere.connection import VCenterTarget, server_thumbprint, session_for
from vbench.vsphere.content_library import RestSession
from vbench.vsphere.content_library import session_for as rest_session_for
from vbench.vsphere.content_library_deploy import Placement
from vbench.vsphere.inventory import Inventory


def target(server: VcsimServer, *, password: str | None = None, name: str = "vc1") -> VCenterTarget:
    return VCenterTarget(
        name=name,
        host=server.host,
        port=server.port,
        user=server.user,
        password=server.password if password is None else password,
        thumbprint=server_thumbprint(server.host, server.port),
    )


def rest(server: VcsimServer, **kw: object) -> RestSession:
    return rest_session_for(target(server, **kw))  # type: ignore[arg-type]


@dataclass(frozen=True)
class SimIds:
    datastore: str
    pool: str
    folder: str
    host: str
    vm: str


def sim_ids(server: VcsimServer) -> SimIds:
    """Managed object ids of vcsim's default inventory (first cluster, its pool...)."""
    with session_for(target(server)) as vs:
        inv = Inventory.load(vs)
        ds = inv.find("datastore", "LocalDS_0")
        pool = inv.find("resource_pool", "DC0/host/DC0_C0/Resources")
        folder = inv.find("folder", "DC0/vm")
        host = inv.find("host", "DC0_C0_H0")
        vm = inv.find("vm", "DC0_C0_RP0_VM0")
        return SimIds(ds.moid, pool.moid, folder.moid, host.moid, vm.moid)


def placement(ids: SimIds) -> Placement:
    return Placement(folder=ids.folder, resource_pool=ids.pool, datastore=ids.datastore)


OVF = """<?xml version="1.0" encoding="UTF-8"?>
<Envelope xmlns="http://schemas.dmtf.org/ovf/envelope/1"
  xmlns:ovf="http://schemas.dmtf.org/ovf/envelope/1"
  xmlns:rasd="http://schemas.dmtf.org/wbem/wscim/1/cim-schema/2/CIM_ResourceAllocationSettingData"
  xmlns:vssd="http://schemas.dmtf.org/wbem/wscim/1/cim-schema/2/CIM_VirtualSystemSettingData">
  <References/>
  <VirtualSystem ovf:id="{name}">
    <Info>vbench test appliance</Info>
    <Name>{name}</Name>
    <VirtualHardwareSection>
      <Info>1 vCPU, 64 MB</Info>
      <System>
        <vssd:ElementName>Virtual Hardware Family</vssd:ElementName>
        <vssd:InstanceID>0</vssd:InstanceID>
        <vssd:VirtualSystemType>vmx-13</vssd:VirtualSystemType>
      </System>
      <Item>
        <rasd:AllocationUnits>hertz * 10^6</rasd:AllocationUnits>
        <rasd:ElementName>1 virtual CPU</rasd:ElementName>
        <rasd:InstanceID>1</rasd:InstanceID>
        <rasd:ResourceType>3</rasd:ResourceType>
        <rasd:VirtualQuantity>1</rasd:VirtualQuantity>
      </Item>
      <Item>
        <rasd:AllocationUnits>byte * 2^20</rasd:AllocationUnits>
        <rasd:ElementName>64MB of memory</rasd:ElementName>
        <rasd:InstanceID>2</rasd:InstanceID>
        <rasd:ResourceType>4</rasd:ResourceType>
        <rasd:VirtualQuantity>64</rasd:VirtualQuantity>
      </Item>
    </VirtualHardwareSection>
  </VirtualSystem>
</Envelope>
"""


def write_ovf(path: Path, name: str = "appliance") -> Path:
    path.write_text(OVF.replace("{name}", name))
    return path


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *_args: object) -> None:
        pass


@contextmanager
def web_server(root: Path) -> Iterator[str]:
    """Serve ``root`` over HTTP on a free loopback port; yields the base URL."""
    handler = functools.partial(_Quiet, directory=str(root))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join()


NIC_ITEM = """      <Item>
        <rasd:AutomaticAllocation>true</rasd:AutomaticAllocation>
        <rasd:Connection>VM Network</rasd:Connection>
        <rasd:ElementName>ethernet0</rasd:ElementName>
        <rasd:InstanceID>3</rasd:InstanceID>
        <rasd:ResourceSubType>VmxNet3</rasd:ResourceSubType>
        <rasd:ResourceType>10</rasd:ResourceType>
      </Item>
    </VirtualHardwareSection>"""


@dataclass(frozen=True)
class DeployLibrary:
    """A local library holding an OVF item (one vNIC) and a VM-template item."""

    library: str
    ovf_item: str
    template_item: str


def deploy_library(server: VcsimServer, tmp: Path, name: str = "golden") -> DeployLibrary:
    """Made in the simulator through the REST API: ``appliance`` (OVF, uploaded) and
    ``linux-tmpl`` (a VM-template item captured from DC0_C0_RP0_VM0)."""
    from vbench.vsphere import content_library as cl
    from vbench.vsphere import content_library_deploy as dp
    from vbench.vsphere import content_library_transfer as tr

    ids = sim_ids(server)
    ovf = tmp / "appliance.ovf"
    ovf.write_text(OVF.replace("{name}", "appliance").replace(
        "    </VirtualHardwareSection>", NIC_ITEM))
    with rest(server) as s:
        lib = cl.create_local_library(s, name, cl.Backing(ids.datastore))
        item = cl.create_item(s, lib, "appliance", "ovf")
        tr.import_files(s, item, lambda sid: [tr.push(s, sid, tr.Source(ovf.name, ovf))])
        dp.capture_template(s, ids.vm, lib, "linux-tmpl", placement(ids))
    return DeployLibrary(name, "appliance", "linux-tmpl")
