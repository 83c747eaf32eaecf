"""How vbench knows a vCenter is vcsim (govmomi's simulator): one check for all layers.

The run's verdict (``verdict_build.simulated_text``) reads the product name kept in the
testbed; the lab tuning (``vsphere/hygiene_tune.py``) reads the live ``about.fullName``.
Both ask :func:`is_simulator`, so they cannot drift apart. This module imports nothing:
the vSphere layer reads it without loading the analysis stack.
"""

from __future__ import annotations

SIMULATOR_PRODUCT = "govmomi simulator"  # in vcsim's about.fullName, kept in the testbed


def is_simulator(product: object) -> bool:
    """Whether a vCenter product name (``about.fullName``) is vcsim's."""
    return SIMULATOR_PRODUCT in str(product or "")
