"""vbench: a benchmark orchestrator for VMware vSphere performance labs."""

__version__ = "0.1.0"
