"""The `vbench` command: thin click commands that call the layers and map errors to exit codes."""

from __future__ import annotations

import importlib
import sys

import click

from vbench import __version__
from vbench.errors import EXIT_INTERRUPTED, EXIT_LAB, ConfigValidationError, VbenchError
from vbench.shown import shown_text

# Each command -> the module of vbench/cli that defines it (in its COMMANDS). A command
# imports its own module alone — `vbench validate` does not pay for the other eight (≈ 4
# ms of its start-up); --help and shell completion list them all.
# tests/unit/test_import_cost.py holds this table to the modules' COMMANDS.
COMMAND_MODULES = {
    **dict.fromkeys(("validate", "plan", "run", "schema", "drivers"), "run_cmds"),
    **dict.fromkeys(("ls", "show", "report"), "store_cmds"),
    "lab": "lab_cmds",
    "parse": "parse_cmds",
    "esxtop": "esxtop_cmds",
    "cleanup": "vsphere_cmds",
    **dict.fromkeys(("compare", "history", "baseline", "ack"), "analysis_cmds"),
    "plugins": "plugins_cmds",
    **dict.fromkeys(("publish", "site"), "publish_cmds"),
}


class LazyCommands(click.Group):
    """The top-level group: a command's module is imported when the command is looked up."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMAND_MODULES)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        module = COMMAND_MODULES.get(name)
        if module is None:
            return None
        commands = importlib.import_module(f"vbench.cli.{module}").COMMANDS
        return next(c for c in commands if c.name == name)

    def resolve_command(self, ctx: click.Context, args: list[str]
                        ) -> tuple[str | None, click.Command | None, list[str]]:
        # click suggests the closest command from the commands already made; here, none is.
        name = args[0]
        if name not in COMMAND_MODULES and not name.startswith("-") and not ctx.resilient_parsing:
            raise click.exceptions.NoSuchCommand(name, possibilities=COMMAND_MODULES, ctx=ctx)
        return super().resolve_command(ctx, args)


@click.group(cls=LazyCommands, context_settings={"help_option_names": ["-h", "--help"]})
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
            click.echo(shown_text(str(issue)), err=True)
        sys.exit(exc.exit_code)
    except VbenchError as exc:
        if debug:
            _print_traceback()
        # An error quotes what a lab or a tool wrote (a VM's name, a guest's stderr):
        # its control characters as \xNN, never raw to the terminal (vbench/shown.py).
        click.echo(shown_text(f"error: {exc}"), err=True)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        click.echo("interrupted", err=True)
        sys.exit(EXIT_INTERRUPTED)
    except Exception as exc:
        if debug:
            _print_traceback()
        else:
            click.echo(shown_text(
                f"internal error: {type(exc).__name__}: {exc} (run with --debug for details)"),
                err=True,
            )
        sys.exit(EXIT_LAB)
    sys.exit(rc if isinstance(rc, int) else 0)
