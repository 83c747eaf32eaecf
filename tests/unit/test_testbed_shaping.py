"""Testbed shaping: vSphere data objects -> the plain dicts runs store and reports show."""

from __future__ import annotations

from pyVmomi import vim

from vbench.report.testbed_text import testbed_lines as render_lines
from vbench.vsphere.testbed import (
    lun_support,
    merge_testbeds,
    shape_cluster,
    shape_datastore,
    shape_host,
    shape_vcenter,
    shape_vm,
)

GIB = 1024**3


def _host_props() -> dict:
    pnic = vim.host.PhysicalNic(
        device="vmnic0",
        driver="ixgben",
        linkSpeed=vim.host.PhysicalNic.LinkSpeedDuplex(speedMb=25000, duplex=True),
    )
    hba = vim.host.BlockHba(device="vmhba2", model="NVMe SSD", driver="nvme_pcie")
    return {
        "name": "esx01",
        "summary.hardware": vim.host.Summary.HardwareSummary(
            vendor="Dell Inc.",
            model="PowerEdge R750",
            cpuModel="Intel Xeon Gold 6338",
            cpuMhz=2000,
            memorySize=512 * GIB,
            numCpuPkgs=2,
            numCpuCores=64,
            numCpuThreads=128,
        ),
        "config.hyperThread": vim.host.CpuSchedulerSystem.HyperThreadScheduleInfo(
            available=True, active=True, config=True
        ),
        "config.powerSystemInfo": vim.host.PowerSystem.Info(
            currentPolicy=vim.host.PowerSystem.PowerPolicy(key=1, name="High", shortName="static")
        ),
        "config.product": vim.AboutInfo(version="8.0.2", build="22380479"),
        "config.network.pnic": [pnic],
        "config.storageDevice.hostBusAdapter": [hba],
        "runtime.connectionState": "connected",
        "runtime.inMaintenanceMode": False,
    }


def test_host_has_every_figure_of_the_study_tables() -> None:
    h = shape_host(_host_props(), cluster="Perf")
    assert h["vendor"] == "Dell Inc." and h["model"] == "PowerEdge R750"
    assert (h["sockets"], h["cores"], h["threads"], h["cpu_mhz"]) == (2, 64, 128, 2000)
    assert h["hyperthreading"] == "active" and h["power_policy"] == "static"
    assert h["memory_gib"] == 512.0 and h["cluster"] == "Perf"
    assert (h["esxi_version"], h["esxi_build"]) == ("8.0.2", "22380479")
    assert h["nics"] == [{"device": "vmnic0", "driver": "ixgben", "speed_mbps": 25000}]
    assert h["storage_adapters"][0]["driver"] == "nvme_pcie"


def test_missing_figures_stay_none() -> None:
    h = shape_host({"name": "esx02"})
    assert h["cpu_model"] is None and h["memory_gib"] is None and h["hyperthreading"] is None
    assert h["nics"] == [] and h["esxi_version"] is None


def test_datastore_capacity_and_acceleration_from_its_luns() -> None:
    extent = vim.host.ScsiDisk.Partition(diskName="naa.600a0b80", partition=1)
    info = vim.host.VmfsDatastoreInfo(
        vmfs=vim.host.VmfsVolume(name="nvme-ds", extent=[extent], ssd=True)
    )
    lun = vim.host.ScsiDisk(canonicalName="naa.600a0b80", vStorageSupport="vStorageSupported")
    d = shape_datastore(
        {
            "name": "nvme-ds",
            "summary": vim.Datastore.Summary(type="VMFS", capacity=2048 * GIB, freeSpace=512 * GIB),
            "info": info,
        },
        lun_support([lun]),
    )
    assert d == {
        "name": "nvme-ds",
        "type": "VMFS",
        "capacity_gib": 2048.0,
        "free_gib": 512.0,
        "ssd": True,
        "hardware_acceleration": "supported",
    }
    nfs = shape_datastore({"name": "nfs", "summary": vim.Datastore.Summary(type="NFS")})
    assert nfs["hardware_acceleration"] is None and nfs["ssd"] is None


def test_cluster_drs_and_ha() -> None:
    cfg = vim.cluster.ConfigInfoEx(
        drsConfig=vim.cluster.DrsConfigInfo(enabled=True, defaultVmBehavior="fullyAutomated"),
        dasConfig=vim.cluster.DasConfigInfo(enabled=False, admissionControlEnabled=False),
    )
    c = shape_cluster({"name": "Perf", "configurationEx": cfg, "host": [1, 2, 3]})
    assert c["drs"] is True and c["drs_behavior"] == "fullyAutomated" and c["ha"] is False
    assert c["hosts"] == 3


def test_vm_disks_nics_and_controllers() -> None:
    ctrl = vim.vm.device.ParaVirtualSCSIController(key=1000, busNumber=0)
    disk = vim.vm.device.VirtualDisk(
        key=2000,
        controllerKey=1000,
        capacityInBytes=40 * GIB,
        backing=vim.vm.device.VirtualDisk.FlatVer2BackingInfo(
            thinProvisioned=False, eagerlyScrub=True, uuid="6000C29a-0b1c-2d3e-4f50-6a7b8c9d0e1f"
        ),
        deviceInfo=vim.Description(label="Hard disk 1", summary=""),
    )
    nic = vim.vm.device.VirtualVmxnet3(
        key=4000, deviceInfo=vim.Description(label="NIC 1", summary="")
    )
    v = shape_vm(
        {
            "name": "web-1",
            "config.hardware.numCPU": 4,
            "config.hardware.memoryMB": 8192,
            "config.version": "vmx-21",
            "config.latencySensitivity": vim.LatencySensitivity(level="high"),
            "config.cpuAllocation": vim.ResourceAllocationInfo(reservation=2000),
            "config.memoryAllocation": vim.ResourceAllocationInfo(reservation=8192),
            "config.hardware.device": [ctrl, disk, nic],
        },
        host="esx01",
        datastores=["nvme-ds"],
    )
    assert (v["vcpus"], v["memory_mib"], v["hardware_version"]) == (4, 8192, "vmx-21")
    assert v["latency_sensitivity"] == "high" and v["cpu_reservation_mhz"] == 2000
    assert v["disks"] == [
        {
            "label": "Hard disk 1",
            "size_gib": 40.0,
            "controller": "pvscsi",
            "provisioning": "eager zeroed thick",
            "uuid": "6000C29a-0b1c-2d3e-4f50-6a7b8c9d0e1f",
        }
    ]
    assert v["disk_enable_uuid"] is None  # no extraConfig: not known
    assert v["nics"] == [{"label": "NIC 1", "type": "vmxnet3"}]
    assert v["scsi_controllers"] == ["pvscsi"] and v["host"] == "esx01"


def test_vcenter_statistics_level_is_the_shortest_enabled_interval() -> None:
    intervals = [
        vim.HistoricalInterval(
            key=1, samplingPeriod=300, name="Past day", length=86400, level=2, enabled=True
        ),
        vim.HistoricalInterval(
            key=2, samplingPeriod=1800, name="Past week", length=604800, level=1, enabled=True
        ),
    ]
    about = vim.AboutInfo(fullName="VMware vCenter Server 8.0.2", version="8.0.2", build="1")
    vc = shape_vcenter("vc1", about, intervals)
    assert vc["stats_level"] == 2 and len(vc["stats_intervals"]) == 2
    assert shape_vcenter("vc1", about, None)["stats_level"] is None


def test_merge_and_terminal_lines() -> None:
    a = {
        "vcenter": {"name": "a", "version": "8"},
        "hosts": [shape_host(_host_props())],
        "datastores": [],
        "clusters": [],
        "vms": [],
    }
    b = {
        "vcenter": {"name": "b"},
        "hosts": [],
        "datastores": [],
        "clusters": [],
        "vms": [{"name": "v"}],
    }
    merged = merge_testbeds([a, b])
    assert merged is not None
    assert merged["vcenter"]["name"] == "a" and [v["name"] for v in merged["vcenters"]] == [
        "a",
        "b",
    ]
    assert len(merged["hosts"]) == 1 and merged["vms"] == [{"name": "v"}]
    assert merge_testbeds([]) is None
    lines = render_lines(merged)
    assert lines[0].startswith("testbed: vCenter a 8") and any("host esx01" in x for x in lines)
    assert any(x.strip().startswith("VM v on —") for x in lines)


def test_a_lab_without_vcenter_reads_as_such_in_the_testbed_lines() -> None:
    """A local lab that watched esxtop records only its disturbances: no vCenter line
    ("vCenter None — build —") is made up for it."""
    tb = {"disturbances": [{"point": 0, "trial": 1, "action": "flag",
                            "text": "VM poseidon used 96 % of a core on esx1"}]}
    lines = render_lines(tb)
    assert lines[0] == "testbed: a lab without vCenter (no vSphere inventory recorded)"
    assert not any("vCenter None" in x or "build —" in x for x in lines), lines
    assert lines[1] == ("  point 1 trial 1 disturbed: VM poseidon used 96 % of a core on "
                        "esx1 (kept in the statistics)")


def test_a_hosts_power_policy_reads_as_the_hygiene_lines_name_it() -> None:
    """The testbed line said vSphere's short name ('power policy dynamic') where the
    hygiene findings and scenarios say 'balanced': both names now, the scenario's first;
    a name vbench does not know is shown as it is."""
    from vbench.report.testbed_text import testbed_lines

    tb = {"vcenters": [{"name": "vc1"}],
          "hosts": [{"name": "esx1", "power_policy": "dynamic"},
                    {"name": "esx2", "power_policy": "custom"},
                    {"name": "esx3", "power_policy": "vendor-x"}]}
    text = "\n".join(testbed_lines(tb))
    assert "power policy balanced (dynamic);" in text
    assert "power policy custom;" in text and "power policy vendor-x;" in text
