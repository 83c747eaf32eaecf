"""A location names the file's own keys even when they look like the type tags pydantic
puts in its error locations (a capitalised lab node name)."""

from __future__ import annotations

from pathlib import Path

import pytest

from vbench.config.load import load_lab
from vbench.errors import ConfigValidationError


def test_a_capitalised_node_name_stays_in_the_location(tmp_path: Path) -> None:
    lab = tmp_path / "lab.yaml"
    lab.write_text("version: 1\nname: l\nnodes:\n"
                   "  Guest1: {address: 127.0.0.2, workdir: /tmp/a/../b}\n")  # fmt: skip
    with pytest.raises(ConfigValidationError) as exc:
        load_lab(lab)
    [issue] = exc.value.issues
    assert str(issue).startswith(f"{lab}:4:41: nodes.Guest1.workdir:"), str(issue)
