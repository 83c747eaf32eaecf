"""The vSphere layer: pyVmomi sessions, PropertyCollector inventory and testbed capture,
provisioning with a journal and guaranteed cleanup, and the vcsim simulator for local labs.

Every call that reads many objects goes through one PropertyCollector path
(:mod:`vbench.vsphere.inventory`); every task is awaited through one filter
(:mod:`vbench.vsphere.tasks`). Errors are raised as :class:`vbench.errors.LabError`.
"""
