"""The `vbench` command: thin click commands that call the layers and map errors to exit codes."""

from __future__ import annotations

import sys

import click

from vbench import __version__
from vbench.errors import EXIT_INTERRUPTED, EXIT_LAB, ConfigValidationError, VbenchError


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="vbench")
@click.option("--debug", is_flag=True, help="Show tracebacks for errors.")
@click.pass_context
def cli(ctx: click.Context, debug: bool) -> None:
    """Benchmark orchestrator for vSphere performance labs.

    Exit codes: 0 ok, 1 QoS or regression failure, 2 usage or configuration error,
    3 lab or infrastructure error, 130 interrupted.
    """
    ctx.ensure_object(dict)
    ctx.obj["debug"] = debug


def _register() -> None:
    from vbench.cli import esxtop_cmds, lab_cmds, parse_cmds, run_cmds, store_cmds

    for module in (run_cmds, store_cmds, lab_cmds, parse_cmds):
        for command in module.COMMANDS:
            cli.add_command(command)
    for command in esxtop_cmds.COMMANDS:
        cli.add_command(command)
    from vbench.cli import vsphere_cmds

    for command in vsphere_cmds.COMMANDS:
        cli.add_command(command)
    from vbench.cli import analysis_cmds

    for command in analysis_cmds.COMMANDS:
        cli.add_command(command)
    from vbench.cli import plugins_cmds

    for command in plugins_cmds.COMMANDS:
        cli.add_command(command)
    from vbench.cli import publish_cmds

    for command in publish_cmds.COMMANDS:
        cli.add_command(command)


_register()


def _print_traceback() -> None:
    import traceback  # only with --debug: its import (linecache, tokenize) costs every command

    traceback.print_exc()


def main(argv: list[str] | None = None) -> None:
    """Entry point: run the CLI, print errors as one clear answer, exit with the code."""
    try:
        _main(argv)
    finally:
        if argv is None:  # the `vbench` process itself (tests call main with their argv)
            # It ends now: a last collection of every object pandas, pyVmomi and paramiko
            # made would only delay the exit (a second and more on a busy machine, after a
            # Ctrl-C too); the operating system frees the memory. Files are closed already.
            import gc

            gc.freeze()


def _main(argv: list[str] | None) -> None:
    debug = "--debug" in (argv if argv is not None else sys.argv[1:])
    try:
        # Without standalone mode click returns a command's ctx.exit() code.
        rc = cli.main(args=argv, prog_name="vbench", standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("interrupted", err=True)
        sys.exit(EXIT_INTERRUPTED)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except ConfigValidationError as exc:
        if debug:
            _print_traceback()
        for issue in exc.issues:
            click.echo(str(issue), err=True)
        sys.exit(exc.exit_code)
    except VbenchError as exc:
        if debug:
            _print_traceback()
        click.echo(f"error: {exc}", err=True)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        click.echo("interrupted", err=True)
        sys.exit(EXIT_INTERRUPTED)
    except Exception as exc:
        if debug:
            _print_traceback()
        else:
            click.echo(
                f"internal error: {type(exc).__name__}: {exc} (run with --debug for details)",
                err=True,
            )
        sys.exit(EXIT_LAB)
    sys.exit(rc if isinstance(rc, int) else 0)
