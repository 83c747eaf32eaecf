"""Workload drivers: one module per workload behind :mod:`vbench.workloads.base`."""
