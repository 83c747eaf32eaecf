"""lab up / down / status / check: the local loopback lab (an sshd on 127.0.0.x, and
vcsim for simulated vCenters) and the preflight of any lab."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from vbench.cli.options import json_option, open_store, store_options

DEFAULT_ADDRESSES = ("127.0.0.2", "127.0.0.3")
DEFAULT_PORT = 2222


def _local_settings(lab_file: Path | None) -> tuple[tuple[str, ...], int]:
    if lab_file is None:
        return DEFAULT_ADDRESSES, DEFAULT_PORT
    from vbench.config.load import load_lab
    from vbench.errors import ConfigError

    lab = load_lab(lab_file).model
    if lab.local is None:
        raise ConfigError(f"{lab_file}: has no `local:` section (addresses, port) to start")
    return tuple(lab.local.addresses), lab.local.port


def _simulated(lab_file: Path | None) -> Any:
    """The lab when it has simulated vCenters (`simulator:`), else None."""
    if lab_file is None:
        return None
    from vbench.config.load import load_lab

    lab = load_lab(lab_file).model
    return lab if any(vc.simulator for vc in lab.vcenters.values()) else None


def _port_settings(lab_file: Path, port: int) -> str:
    """Which settings of the lab file to change: ``local.port`` and every other one that
    holds the same port (the nodes' port, address_map entries), each with its line."""
    from vbench.config.load import load_lab

    src = load_lab(lab_file).source
    found = []
    for path, (line, _col) in src.values.items():
        value: Any = src.data
        for part in path:
            value = value[part] if isinstance(value, dict | list) else None
        same = value == port if isinstance(value, int) else (
            isinstance(value, str) and value.endswith(f":{port}"))
        if same and not isinstance(value, bool):
            found.append((path != ("local", "port"), ".".join(map(str, path)), line))
    names = [f"{name} (line {line})" for _, name, line in sorted(found)]
    if not names:
        return f"set `local: {{port: N}}` in {lab_file} to a free port"
    rest = f", and with it {', '.join(names[1:])}" if len(names) > 1 else ""
    return f"change {names[0]} in {lab_file} to a free port{rest}"


UP_RECORD = "up-lab-file"  # under <vbench home>/lab/: the lab file `lab up` last started


def _remember(lab_file: Path | None) -> None:
    """What this data directory brought up, for `lab status` without a lab file."""
    from vbench.guest.locallab import lab_dir

    record = lab_dir() / UP_RECORD
    if lab_file is None:
        record.unlink(missing_ok=True)
        return
    record.parent.mkdir(parents=True, exist_ok=True)
    record.write_text(str(lab_file.resolve()) + "\n", encoding="utf-8")


def _remembered() -> Path | None:
    """The lab file `lab up` last started from this data directory (if still there)."""
    from vbench.guest.locallab import lab_dir

    try:
        text = (lab_dir() / UP_RECORD).read_text(encoding="utf-8").strip()
    except OSError:
        return None
    return Path(text) if text and Path(text).is_file() else None


LAB_ARG = click.argument(
    "lab_file", required=False, type=click.Path(exists=True, dir_okay=False, path_type=Path)
)


@click.group()
def lab() -> None:
    """Start, stop and inspect the local loopback lab."""


@lab.command()
@LAB_ARG
def up(lab_file: Path | None) -> None:
    """Start the local lab's sshd (idempotent). LAB_FILE's `local:` section says where."""
    from vbench.guest.locallab import PortInUse, lab_up

    sim_lab = _simulated(lab_file)
    _remember(lab_file)
    if sim_lab is None or sim_lab.local is not None:
        addresses, port = _local_settings(lab_file)
        try:
            status = lab_up(addresses, port)
        except PortInUse as exc:
            if lab_file is None:
                raise
            raise PortInUse(exc.address, exc.port, _port_settings(lab_file, port)) from None
        click.echo(
            f"local lab up: sshd pid {status.pid} on {', '.join(status.addresses)} port "
            f"{status.port} (keys in {status.home})"
        )
    if sim_lab is not None:
        from vbench.vsphere.simulator import lab_simulators_up

        for sim in lab_simulators_up(sim_lab):
            click.echo(f"vcsim {sim.name} up: pid {sim.pid} at {sim.url} (files in {sim.folder})")


@lab.command()
def down() -> None:
    """Stop the local lab's sshd (idempotent)."""
    from vbench.guest.locallab import lab_down
    from vbench.vsphere.simulator import sim_down

    click.echo("local lab stopped" if lab_down() else "local lab was not running")
    for name in sim_down():
        click.echo(f"vcsim {name} stopped")


@lab.command()
@LAB_ARG
@click.pass_context
def status(ctx: click.Context, lab_file: Path | None) -> None:
    """Show whether the local lab runs and which guests answer. Exit 3 when down.
    Without LAB_FILE: the lab `vbench lab up` last started from this data directory."""
    from vbench.guest.locallab import lab_status

    if lab_file is None and (lab_file := _remembered()) is not None:
        click.echo(f"lab {lab_file} (the last `vbench lab up` of this data directory)")
    sim_lab = _simulated(lab_file)
    if sim_lab is not None and sim_lab.local is None:
        st = None  # a simulated vCenter alone: no sshd to ask about
    elif lab_file is None:  # the sshd this data directory configured, else the default
        st = lab_status()
        st = st if st.addresses else lab_status(DEFAULT_ADDRESSES, DEFAULT_PORT)
        _say_local(st)
    else:
        st = lab_status(*_local_settings(lab_file))
        _say_local(st)
    sims = []
    if sim_lab is not None:
        from vbench.vsphere.simulator import lab_simulators_status

        sims = lab_simulators_status(sim_lab)
        for sim in sims:
            state = f"running (pid {sim.pid})" if sim.running else "not running"
            click.echo(f"vcsim {sim.name}: {state} at {sim.url}")
    if (st is not None and not st.running) or not all(sim.running for sim in sims):
        ctx.exit(3)


def _say_local(st: Any) -> None:
    state = f"running (pid {st.pid})" if st.running else "not running"
    click.echo(f"local lab: {state}; port {st.port}; home {st.home}")
    for addr in st.addresses:
        click.echo(f"  {addr}: {'reachable' if st.reachable.get(addr) else 'unreachable'}")


@lab.command()
@click.argument("lab_file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option(
    "--scenario",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Also check what this scenario needs (names, capacity, tools).",
)
@click.option("--set", "sets", multiple=True, metavar="PATH=VALUE", help="Scenario override.")
@click.pass_context
def check(ctx: click.Context, lab_file: Path, scenario: Path | None, sets: tuple[str, ...]) -> None:
    """Preflight: vCenters, ESXi and guest SSH, and what a scenario names (with its lab
    hygiene: docs/lab-hygiene.md). Exit 3 on a failure."""
    from vbench.cli.vsphere_cmds import run_lab_check

    ctx.exit(run_lab_check(lab_file, scenario, sets))


@lab.command()
@LAB_ARG
@store_options
@json_option
def who(lab_file: Path | None, store_url: str | None, results_dir: Path | None,
        as_json: bool) -> None:
    """Show which run holds the lease of LAB_FILE's lab (without LAB_FILE: of every lab)
    in this store: run id, pid, host and since when. Exit 0 whether held or free."""
    from vbench.results.lease import lease_holders

    fingerprint, name = None, None
    if lab_file is not None:
        from vbench.config.load import load_lab
        from vbench.engine.session import lab_fingerprint_of

        model = load_lab(lab_file).model
        fingerprint, name = lab_fingerprint_of(model), model.name
    store, _ = open_store(store_url, results_dir)
    try:
        holders = lease_holders(store, fingerprint)
    finally:
        store.close()
    if as_json:
        import dataclasses
        import json

        click.echo(json.dumps([dataclasses.asdict(h) for h in holders], indent=2))
        return
    for h in holders:
        click.echo(f"lab {h.lab} ({h.fingerprint}): held by {h.text()}"
                   + (f", scenario {h.scenario}" if h.scenario else ""))
    if not holders:
        click.echo(f"lab {name} ({fingerprint}): free" if name else "no lab is leased")


@lab.command()
@click.argument("lab_file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--scenario", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="The scenario whose hosts and VMs to make still (required but with --undo).")
@click.option("--set", "sets", multiple=True, metavar="PATH=VALUE", help="Scenario override.")
@click.option("--apply", "apply_", is_flag=True,
              help="Make the proposed changes (journaled; --undo restores them).")
@click.option("--undo", is_flag=True, help="Restore what an earlier --apply changed.")
@click.pass_context
def tune(ctx: click.Context, lab_file: Path, scenario: Path | None, sets: tuple[str, ...],
         apply_: bool, undo: bool) -> None:
    """Propose (and with --apply make) the changes that keep the lab still for a scenario:
    DRS override to manual for its VMs, the wanted host power policy. Exit 3 when a change
    or its undo failed. See docs/lab-hygiene.md."""
    from vbench.cli.hygiene_cmds import run_tune

    ctx.exit(run_tune(lab_file, scenario, sets, apply_, undo))


COMMANDS = [lab]
