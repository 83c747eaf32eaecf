"""lab up / down / status: the local loopback lab (an sshd on 127.0.0.x)."""

from __future__ import annotations

from pathlib import Path

import click

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
    from vbench.guest.locallab import lab_up

    addresses, port = _local_settings(lab_file)
    status = lab_up(addresses, port)
    click.echo(
        f"local lab up: sshd pid {status.pid} on {', '.join(status.addresses)} port "
        f"{status.port} (keys in {status.home})"
    )


@lab.command()
def down() -> None:
    """Stop the local lab's sshd (idempotent)."""
    from vbench.guest.locallab import lab_down

    click.echo("local lab stopped" if lab_down() else "local lab was not running")


@lab.command()
@LAB_ARG
@click.pass_context
def status(ctx: click.Context, lab_file: Path | None) -> None:
    """Show whether the local lab runs and which guests answer. Exit 3 when down."""
    from vbench.guest.locallab import lab_status

    addresses, port = _local_settings(lab_file)
    st = lab_status(addresses, port)
    state = f"running (pid {st.pid})" if st.running else "not running"
    click.echo(f"local lab: {state}; port {st.port}; home {st.home}")
    for addr in st.addresses:
        click.echo(f"  {addr}: {'reachable' if st.reachable.get(addr) else 'unreachable'}")
    if not st.running:
        ctx.exit(3)


COMMANDS = [lab]
