"""The scenario model: what to measure (topology, workload, factors, phases …)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    BeforeValidator,
    Field,
    ValidationInfo,
    WithJsonSchema,
    field_validator,
    model_validator,
)

from vbench.config.aa import AaSpec
from vbench.config.findmax import SearchSpec
from vbench.config.hookspec import HookSpec, value_text
from vbench.config.hygiene import DisturbanceSpec, LabHygiene
from vbench.config.repeat import Budget, Repeat
from vbench.config.steady import SteadyStateSpec
from vbench.config.types import NAME, Duration, OneLine, Strict, Text, located, new_list
from vbench.config.vmspec import (  # noqa: F401 (the VM models, re-exported from here)
    DataDisk,
    MemoryMiB,
    Reservations,
    VmSpec,
)
from vbench.config.warmup import AUTO, DEFAULT_CAP, Warmup
from vbench.templates import has_control

Scalar = str | int | float | bool


def _level_text(value: Any) -> Any:
    """A level written as a YAML number or boolean (``{guests: 1}``) means the level with
    that label, as the factor's own levels (``guests: [1, 2, 4]``) are labelled."""
    if isinstance(value, bool | int | float):
        return _label(value)
    if isinstance(value, list):
        return [_level_text(v) for v in value]
    return value


# A factor level named in baseline/target/at: text, or a number or boolean as in `levels`.
LevelText = Annotated[
    str,
    BeforeValidator(_level_text),
    WithJsonSchema({"type": ["string", "number", "boolean"],
                    "description": "a level's label; a number or boolean as in `levels`"}),
]


class GroupSpec(Strict):
    """A named group of guests the workload runs on."""

    count: int = Field(1, ge=1, le=10000, description="number of guests in the group")
    nodes: list[str] | None = Field(
        None, description="lab node names to use, in order (default: nodes with the role)"
    )
    role: str | None = Field(
        None, description="pick `count` lab nodes carrying this role (default: the group name)"
    )
    vm: VmSpec | None = Field(
        None,
        description="VMs vbench provisions (or existing VMs) through the lab's vCenter; in a "
        "lab without vCenter the group binds to lab nodes as without `vm`",
    )


class WorkloadSpec(Strict):
    """Which driver runs, on which groups, with which parameters."""

    driver: str = Field(description="workload driver name (see `vbench drivers`)")
    roles: dict[str, str] = Field(
        default_factory=dict,
        description="driver role -> topology group (default: a single group fills every role)",
    )
    params: dict[str, Any] = Field(
        default_factory=dict, description="driver parameters, validated by the driver's model"
    )


class Level(Strict):
    """One level of a factor with an explicit label."""

    label: OneLine = Field(description="the name this level has in reports and --set/exclude")
    value: Any = Field(None, description="value written to the factor's path (if any)")
    set: dict[str, Any] = Field(
        default_factory=dict, description="further dotted-path overrides for this level"
    )
    profile: str | None = Field(None, description="lab profile this level switches to")


class Factor(Strict):
    """A thing varied across points."""

    path: str | None = Field(
        None,
        description="dotted path the level value is written to "
        "(default: workload.params.<factor name>)",
    )
    levels: list[Level] = Field(
        min_length=1, description="the levels, in order: plain values or {label, value, set}"
    )
    hook: HookSpec | None = Field(
        None, description="the levels are a lab set-up: a command run on a lab node before "
        "each point and undone after it (the level value goes to the hook, not to a path)",
    )

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, data: Any) -> Any:
        # `bs: [4k, 64k]` is shorthand for `bs: {levels: [4k, 64k]}`, and a plain
        # value is a level labelled by itself.
        if isinstance(data, list):
            data = {"levels": data}
        if isinstance(data, dict) and isinstance(data.get("levels"), list):
            data = {**data, "levels": [_as_level(v) for v in data["levels"]]}
        return data

    def level_labels(self) -> list[str]:
        return [lv.label for lv in self.levels]

    @model_validator(mode="after")
    def _unique_labels(self) -> Factor:
        labels = self.level_labels()
        dup = sorted({x for x in labels if labels.count(x) > 1})
        if dup:
            raise ValueError(f"level labels must be unique, repeated: {', '.join(dup)}")
        return self

    @model_validator(mode="after")
    def _hook_values(self) -> Factor:
        # A hook's value goes into a command's argument: refused here, at its level, so
        # that validate says what plan and run would refuse.
        if self.hook is None:
            return self
        issues: list[tuple[tuple[str | int, ...], str]] = [
            (("levels", i, "value"), "control characters cannot go into a hook command")
            for i, lv in enumerate(self.levels)
            if lv.value is not None and has_control(value_text(lv.value, lv.label))]
        if issues:
            raise located(issues)
        return self


def _as_level(value: Any) -> Any:
    if isinstance(value, str | int | float | bool):
        return {"label": _label(value), "value": value}
    return value


def _label(value: Scalar) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


class Phases(Strict):
    """Durations of the phases of every trial."""

    warmup: Warmup = Field(0.0, description="warm-up before the measured window; `auto`: "
                           "ended by the warm-up detector (MSER-5 on the workload's own "
                           "throughput, read while it runs; fio) at the latest after "
                           "`warmup_cap` (docs/scenarios.md)")
    warmup_cap: Duration | None = Field(None, gt=0, description="the longest `warmup: auto` "
                                        "may last (default 5m); only with `warmup: auto`")
    steady: Duration = Field(gt=0, description="the measured steady-state window")
    cooldown: Duration = Field(0.0, description="idle time after the window (collectors run on)")

    @model_validator(mode="after")
    def _cap_needs_auto(self) -> Phases:
        if self.warmup_cap is not None and self.warmup != AUTO:
            raise located([(("warmup_cap",), "is read only with warmup: auto (the warm-up "
                            f"is a fixed {self.warmup:g} s)")])
        return self

    @property
    def auto_warmup(self) -> bool:
        return self.warmup == AUTO

    @property
    def planned_warmup(self) -> float:
        """The warm-up to plan for: the fixed one, or the cap of an automatic one."""
        if isinstance(self.warmup, float | int):
            return float(self.warmup)
        return self.warmup_cap if self.warmup_cap is not None else DEFAULT_CAP


class CollectorSpec(Strict):
    """A metric collector (esxtop, vcenter_perf, guest_sysstat) running beside every trial."""

    kind: str = Field(description="collector: esxtop, guest_sysstat or vcenter_perf")
    name: str | None = Field(
        None, pattern=NAME, description="label of its series and figures (default: the kind)"
    )
    interval: Duration = Field(5.0, gt=0, description="sampling interval")
    targets: list[str] = Field(
        default_factory=new_list,
        description="esxtop: lab hosts; guest_sysstat: topology groups or guests; "
        "vcenter_perf: host:/vm:/datastore: entities (default: all of the run)",
    )
    required: bool = Field(
        False,
        description="a failure of this collector fails the trial (default: it is recorded "
        "and shown, and the workload's figures are kept)",
    )
    options: dict[str, Any] = Field(
        default_factory=dict, description="collector options (see docs/metrics.md)"
    )


class QosCriterion(Strict):
    """A pass/fail criterion on one metric (or derived figure), checked at every point."""

    name: OneLine | None = Field(None, description="label in reports (default: derived)")
    metric: str = Field(
        description="metric or derived figure name, e.g. read_clat_p99 or response_time_avg"
    )
    where: dict[str, str | list[str]] = Field(
        default_factory=dict,
        description="sample labels to match, e.g. {operation: HomePage}; a list of values "
        "makes one check per value (default: the aggregate figure, no labels)",
    )
    at: dict[str, LevelText | list[LevelText]] = Field(
        default_factory=dict,
        description="factor -> level(s) of the points the criterion applies to, e.g. "
        "{vms: [2, 4]} (default: all)",
    )
    stat: str = Field(
        "mean",
        pattern=r"^(mean|median|min|max|p(100|[1-9]?[0-9])(\.[0-9]+)?)$",
        description="how the trials of a point are combined before the comparison: "
        "mean, median, min, max, or a percentile over trials such as p90",
    )
    op: Literal["<=", ">=", "<", ">"] = Field(description="comparison")
    threshold: float = Field(description="the limit, in the metric's unit (or `unit`)")
    unit: str | None = Field(
        None, description="unit of the threshold; time and rate units are converted"
    )


class MemberSpec(WorkloadSpec):
    """One workload of a consolidation bundle (``workloads:``; docs/consolidation.md)."""

    qos: list[QosCriterion] = Field(
        default_factory=new_list, description="criteria on this workload's own metrics, checked "
        "per tile (a tile passes when every workload of it passes)")
    score: str | None = Field(None, description="metric the tile score normalises (default: "
                              "the driver's headline metric)")
    reference: float | None = Field(
        None, gt=0, description="reference value of `score` (e.g. from a baseline run; "
        "default: its mean at this run's one-tile point)")


class TilesSpec(Strict):
    """Replicate the bundle of `workloads` (docs/consolidation.md)."""

    count: int = Field(ge=1, le=1000, description="tiles: each has its own copy of the "
                       "workloads' groups (web-1 … web-N); a factor or search may set it")


class Derived(Strict):
    """A figure computed from stored metrics (normalised, speedup, ratio …)."""

    name: str = Field(pattern=NAME, description="name of the derived figure")
    kind: Literal["normalize", "speedup", "ratio", "expr", "geomean"] = Field(
        description="normalize to a baseline point, speedup of one point over another, "
        "ratio/expr over metrics, or geometric mean across metrics or factor levels"
    )
    metric: str | None = Field(None, description="metric it is computed from")
    metrics: list[str] = Field(default_factory=new_list, description="metrics (geomean)")
    baseline: dict[str, LevelText] | None = Field(
        None,
        description="factor -> level selecting the baseline point (= 1.0), e.g. {guests: 1}; "
        "the other factors keep the level of the point being computed",
    )
    target: dict[str, LevelText] | None = Field(
        None,
        description="factor -> level selecting the compared point (speedup; "
        "default: every point that is not a baseline)",
    )
    ideal: float | str | None = Field(
        None,
        description="ideal speedup: a number, or a factor whose numeric level holds N "
        "(ideal = N / N at the baseline)",
    )
    expr: str | None = Field(
        None, description="expression over metric and derived names: + - * / ( ) and numbers"
    )
    across: str | None = Field(
        None, description="geomean of `metric` across the levels of this factor"
    )
    better: Literal["higher", "lower", "none"] | None = Field(
        None, description="direction of improvement (default: from the metric it is built "
        "on; an expression's has none: never ranked until set)"
    )
    unit: OneLine = Field("", description="unit of the result")

    @model_validator(mode="after")
    def _needs(self) -> Derived:
        need = {
            "normalize": ("metric", "baseline"),
            "speedup": ("metric", "baseline"),
            "ratio": ("expr",),
            "expr": ("expr",),
            "geomean": ("metric", "across") if self.across else ("metrics",),
        }[self.kind]
        missing = [n for n in need if not getattr(self, n)]
        if missing:
            raise ValueError(f"kind {self.kind!r} needs {', '.join(missing)}")
        return self


class Chart(Strict):
    metric: str = Field(description="metric (or derived figure) to plot")
    kind: Literal["bar", "line"] | None = Field(
        None, description="bar per point, or line over x (default: line when x is given)")
    x: str | None = Field(
        None, description="factor on the x axis; a metric's name draws it against that "
        "metric instead, as x_metric does")
    x_metric: str | None = Field(
        None, description="a metric on the x axis instead of a factor: one dot per point, "
        "joined in order of x (IOPS vs latency: the storage 'hockey stick')"
    )
    ideal: Literal["linear", "none"] | None = Field(
        None, description="reference line: linear scaling from the smallest level of x, or "
        "none (also hides a derived speedup's ideal); default: linear only when x is a "
        "factor setting a topology group's count (workers, VMs, clients)")
    title: OneLine | None = Field(None, description="chart title (default: the metric)")

    @model_validator(mode="after")
    def _one_x(self) -> Chart:
        if self.x and self.x_metric:
            raise ValueError("give x (a factor or metric) or x_metric, not both")
        return self


class ReportSpec(Strict):
    title: OneLine | None = Field(None, description="report title (default: scenario name)")
    headline: list[str] = Field(
        default_factory=new_list, description="metrics to lead with (default: the driver's)"
    )
    charts: list[Chart] = Field(default_factory=new_list, description="extra charts")
    error_bars: Literal["range", "ci"] = Field(
        "range", description="whiskers of bar charts: min–max over trials, or the 95 % CI"
    )
    better: dict[str, Literal["higher", "lower", "none"]] = Field(
        default_factory=dict,
        description="metric -> direction of improvement, over what its driver's or "
        "collector's catalogue declares (none: never ranked, never better or worse)",
    )
    min_effect: dict[str, Annotated[float, Field(ge=0, lt=10)]] = Field(
        default_factory=dict,
        description="metric -> smallest relative change (0.03 = 3 %) that compare calls "
        "better or worse and a regression check counts (default: 0.03 in compare, "
        "regression.min_effect in checks); a smaller change is the same",
    )


class RegressionSpec(Strict):
    """How `vbench run --check-regression` judges a run against its baseline."""

    metrics: list[str] = Field(
        default_factory=new_list,
        description="metrics and derived figures checked (default: the headline metrics)",
    )
    min_effect: float = Field(
        0.05, ge=0, lt=10, description="smallest relative change counted as a regression "
        "(report.min_effect sets it per metric)"
    )
    alpha: float = Field(0.05, gt=0, lt=0.5, description="significance level of the test")
    baseline: str = Field(
        "auto",
        description="auto (the baseline set with `vbench baseline set`, else last), last, "
        "last:K (the last K compatible runs pooled), tag:NAME, or a run id",
    )


class Settings(Strict):
    max_parallel: int = Field(16, ge=1, le=1024, description="guests acted on at once")
    provision_parallel: int = Field(
        8,
        ge=1,
        le=256,
        description="clones run at once; the short steps after them (reconfigure, customize, "
        "power on) and cleanup's destroys each have a budget of the same size",
    )
    trial_timeout: Duration | None = Field(
        None, description="a trial still running this long after its phases is failed"
    )
    cv_threshold: float = Field(
        0.05, gt=0, lt=10, description="coefficient of variation above which a point is noisy"
    )
    order: Literal["sequential", "random"] = Field(
        "sequential",
        description="order of the trials: point after point, or every (point, trial) "
        "shuffled (recorded in the run's plan.json with its seed)",
    )
    seed: int | None = Field(
        None, ge=0, description="seed of the random order (default: drawn and recorded)"
    )
    max_points: int = Field(
        10_000, ge=1, le=1_000_000,
        description="most points the factors may make (checked before expanding them)",
    )


STEADY_WITH_SEARCH = (
    "cannot be combined with search: each find-max level would need rounds of its own "
    "until steady, and a level's rounds change the device for the next one, so its "
    "verdict would depend on the order the search visits the levels; give the levels "
    "as a factor under steady_state, or search without it (precondition, fixed warm-up)")
STEADY_WITH_ADAPTIVE = (
    "cannot be combined with an adaptive repeat: rounds are one time series of a device "
    "whose state carries from round to round, not independent trials, so a confidence "
    "interval over them would not be one, and the PTS reports the mean of its fixed "
    "window; use steady_state alone (it decides the rounds) or the adaptive repeat alone")


class Scenario(Strict):
    """A scenario file: what to measure."""

    version: Literal[1] = Field(description="scenario format version")
    name: str = Field(pattern=NAME, description="scenario name (used to find history)")
    description: Text = Field("", description="free text shown in reports")
    topology: dict[str, GroupSpec] = Field(
        default_factory=dict, description="guest groups (none when the driver needs no guests)"
    )
    workload: WorkloadSpec | None = Field(
        None, description="the workload driver and its parameters (or `workloads`)")
    workloads: dict[str, MemberSpec] | None = Field(
        None, description="several workloads in one trial, name -> driver, roles, params, "
        "qos (docs/consolidation.md); instead of `workload`")
    tiles: TilesSpec | None = Field(None, description="replicate the `workloads` bundle")
    factors: dict[str, Factor] = Field(default_factory=dict, description="the matrix")
    profile: str | None = Field(
        None, description="lab profile of every point, after the ones its factor levels "
        "name (e.g. the vCenter a study works in when the lab has several)",
    )
    label: OneLine | None = Field(
        None, max_length=200,
        description="point name template over factor levels, e.g. \"{mode}-{vms}VMs-{instances}S\" "
        "(used in plans, tables, charts and exports; default: factor=level pairs)",
    )
    zip: list[list[str]] = Field(
        default_factory=new_list, description="groups of factors whose levels vary together"
    )
    exclude: list[dict[str, Scalar]] = Field(
        default_factory=new_list, description="factor -> level combinations to leave out"
    )
    repeat: Repeat = Field(
        3, description="trials per point, or {min, max, target: {ci_half_width}}: trials "
        "added to a point until its confidence target is met (docs/scenarios.md)",
    )
    budget: Budget | None = Field(
        None, description="most trials or time an adaptive repeat may spend in the run",
    )
    phases: Phases = Field(description="warm-up, steady state and cool-down of every trial")
    collectors: list[CollectorSpec] = Field(
        default_factory=new_list, description="metric collectors running beside the workload"
    )
    qos: list[QosCriterion] = Field(default_factory=new_list, description="pass/fail criteria")
    derived: list[Derived] = Field(
        default_factory=new_list, description="figures computed from stored metrics"
    )
    regression: RegressionSpec = Field(
        default_factory=RegressionSpec, description="regression check against a baseline"
    )
    aa: AaSpec | None = Field(
        None, description="an A/A test: `vbench run` makes `runs` runs back to back and "
        "stores their run-to-run noise per metric with the lab fingerprint, the floor of "
        "the minimum effect of regression checks and change points (docs/nightly.md)",
    )
    report: ReportSpec = Field(default_factory=ReportSpec, description="report layout")
    settings: Settings = Field(default_factory=Settings, description="engine settings")
    search: SearchSpec | None = Field(
        None, description="find-max: search one numeric factor for the largest passing level "
        "(the other factors still form a matrix: one search per combination)",
    )
    steady_state: SteadyStateSpec | None = Field(
        None, description="SNIA PTS steady state: rounds (trials) of every point until its "
        "last `window` rounds are steady, or `max_rounds` (docs/storage.md)",
    )
    lab_hygiene: LabHygiene | None = Field(
        None, description="how still the vSphere lab must be before the run: each check's "
        "severity or wanted state (default: the rules of docs/lab-hygiene.md)",
    )
    disturbance: DisturbanceSpec | None = Field(
        None, description="what a disturbance of a trial's steady window (vCenter's events, a "
        "busy VM that is not the run's in esxtop) does: flag | fail | retry, or {action, "
        "retries, watch, other_vm_cpu, ignore} (default: flag; docs/lab-hygiene.md)",
    )

    @field_validator("budget")
    @classmethod
    def _budget_needs_adaptive(cls, v: Budget | None, info: ValidationInfo) -> Budget | None:
        # Only an adaptive repeat adds trials a budget could cut: with a fixed count it
        # would be read by nothing.
        if v is not None and isinstance(info.data.get("repeat"), int):
            raise ValueError("a budget needs an adaptive repeat (repeat: {min, max, target}); "
                             f"repeat: {info.data['repeat']} runs a fixed count")
        return v

    @field_validator("topology")
    @classmethod
    def _group_names(cls, v: dict[str, GroupSpec]) -> dict[str, GroupSpec]:
        import re

        for name in v:
            if not re.fullmatch(NAME, name):  # match() would let a trailing newline by
                raise ValueError(f"group name {name!r} must match {NAME}")
        return v

    @model_validator(mode="after")
    def _one_workload_form(self) -> Scenario:
        from vbench.config.tiles import bundle_problems

        problems = bundle_problems(self)
        if problems:
            raise located(problems)
        return self

    @model_validator(mode="after")
    def _steady_state_alone(self) -> Scenario:
        # Rounds until steady decide a point's trials; a search or an adaptive repeat would
        # decide them too.
        # Both refusals are reasoned in docs/storage.md ("Steady state with a search or
        # an adaptive repeat"): neither combination has a sound reading.
        if self.steady_state is not None and self.search is not None:
            raise located([(("steady_state",), STEADY_WITH_SEARCH)])
        if self.steady_state is not None and not isinstance(self.repeat, int):
            raise located([(("steady_state",), STEADY_WITH_ADAPTIVE)])
        return self
