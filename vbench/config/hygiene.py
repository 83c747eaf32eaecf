"""``lab_hygiene:`` and ``disturbance:`` — how still the lab must be while it is measured.

The rules themselves are vbench/vsphere/hygiene_rules.py (pure); this is the scenario's
model. Every check has a *severity*: what its finding is when the lab breaks its rule
(``fail`` stops the run in preflight, ``warn`` is said and recorded, ``ignore`` waives
the check). ``drs`` and ``power_policy`` may name the state the run needs instead
(``drs: manual``, ``power_policy: high-performance``): then a lab in another state fails.
See docs/lab-hygiene.md.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable
from typing import Any, Literal

from pydantic import Field, model_validator

from vbench.config.types import Duration, Strict, new_list

Severity = Literal["fail", "warn", "ignore"]
POWER_POLICIES = ("high-performance", "balanced", "low-power", "custom")
# vSphere's short names of the host power policies (HostPowerPolicy.shortName) -> the
# names a scenario, the hygiene findings and the testbed lines use.
POLICY_NAMES = {"static": "high-performance", "dynamic": "balanced", "low": "low-power",
                "custom": "custom"}
PowerPolicy = Literal["high-performance", "balanced", "low-power", "custom"]


class LabHygiene(Strict):
    """The checks made before the run on the hosts, clusters and VMs it uses."""

    drs: Literal["manual", "fail", "warn", "ignore"] = Field(
        "warn", description="DRS may not move the run's VMs (DRS off, manual or partially "
        "automated for them by the cluster's default or a VM override); `manual` = this is "
        "required (fail otherwise), or a severity",
    )
    power_policy: PowerPolicy | Severity = Field(
        "warn", description="host power policy of the run's hosts: a policy name "
        "(high-performance, balanced, low-power, custom) required of every host (fail "
        "otherwise), or the severity of a host not in high-performance",
    )
    ha: Severity = Field(
        "warn", description="severity of HA or its admission control enabled on a cluster "
        "of the run (HA may restart or fence VMs during a trial)",
    )
    host_state: Severity = Field(
        "fail", description="severity of a run's host in maintenance mode, disconnected or "
        "not responding",
    )
    alarms: Severity = Field(
        "warn", description="severity of a red or yellow alarm raised on a run's host, "
        "cluster or VM",
    )
    other_vms: Severity = Field(
        "warn", description="severity of powered-on VMs that are not the run's on the run's "
        "hosts (listed with their recent CPU and memory use)",
    )
    storage_tasks: Severity = Field(
        "warn", description="severity of storage tasks in progress on the run's hosts, "
        "datastores or VMs (vSAN resync, snapshot removal or consolidation, Storage vMotion)",
    )
    clock: Severity = Field(
        "warn", description="severity of clocks that disagree (host vs vCenter, vCenter vs "
        "the controller) by more than clock_skew, or a host clock vCenter does not report",
    )
    clock_skew: Duration = Field(
        1.0, gt=0, description="the most two clocks may disagree (default 1 s: event "
        "times are placed in the steady window by them)",
    )
    tune: bool = Field(
        False, description="the run makes the changes `vbench lab tune` proposes (DRS "
        "override to manual for its VMs, host power policy) and undoes them at its end",
    )

    def severity(self, check: str) -> Severity:
        """The severity of ``check`` (a wanted state counts as ``fail``)."""
        value = getattr(self, check)
        return value if value in ("fail", "warn", "ignore") else "fail"

    @property
    def wanted_policy(self) -> str:
        """The host power policy the run wants (high-performance unless named)."""
        return self.power_policy if self.power_policy in POWER_POLICIES else "high-performance"


def matches(name: str, patterns: Iterable[str]) -> bool:
    """``name`` matches one of the glob ``patterns``, case-insensitive (VM names are typed
    by hand in a scenario, as esxtop counter patterns are)."""
    low = name.lower()
    return any(fnmatch.fnmatchcase(low, p.lower()) for p in patterns)


Action = Literal["flag", "fail", "retry"]
# A fifth of a core, mean over the steady window: well above an idle guest (the idle
# VMs of a recorded ESXi host used 0.2-6 %), low enough to catch a VM doing real work.
OTHER_VM_CPU = 20.0


class DisturbanceSpec(Strict):
    """What disturbs a trial (vCenter's events, busy VMs not the run's) and what it does."""

    action: Action = Field(
        "flag", description="flag: the trial is kept and the verdict says what disturbed "
        "it; fail: the trial fails; retry: the trial runs again, up to `retries` times",
    )
    retries: int = Field(2, ge=1, le=20, description="with action: retry, the most times one "
                         "trial runs again (then it is kept, flagged)")
    watch: bool = Field(True, description="read vCenter's events and tasks and, where esxtop "
                        "is collected, the CPU of VMs that are not the run's after every "
                        "trial (false: no disturbance is looked for)")
    other_vm_cpu: float = Field(
        OTHER_VM_CPU, gt=0, description="where esxtop is collected: a VM that is not the "
        "run's, on a run's host, using more than this (% of one core, mean over the steady "
        "window) disturbs the trial",
    )
    ignore: list[str] = Field(
        default_factory=new_list, description="VMs that are never a disturbance, by name or "
        "glob pattern, case-insensitive (vCLS-*): their CPU and the events about them",
    )

    def ignores(self, vm: str) -> bool:
        """``vm`` is one of the VMs ``ignore`` names."""
        return matches(vm, self.ignore)

    @model_validator(mode="before")
    @classmethod
    def _bare(cls, value: Any) -> Any:
        # `disturbance: retry` is the short form of `disturbance: {action: retry}`.
        return {"action": value} if isinstance(value, str) else value
