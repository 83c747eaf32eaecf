"""Locate package data (drivers/, reports/) in a wheel or in a source checkout."""

from __future__ import annotations

from pathlib import Path

_PKG = Path(__file__).resolve().parent


def data_dir(name: str) -> Path:
    """``drivers`` or ``reports``: the installed copy, else the checkout's top-level folder."""
    installed = _PKG / "_data" / name
    if installed.is_dir():
        return installed
    checkout = _PKG.parent / name
    if checkout.is_dir():
        return checkout
    raise FileNotFoundError(f"vbench data folder {name!r} not found beside {_PKG}")


def driver_file(driver: str, filename: str) -> Path:
    return data_dir("drivers") / driver / filename
