"""subagent-ray: run subagent children on a Ray cluster, with the same containment as ssh.

`RayPlacement` is a `subagent_core.Placement`: pass it as `remote=` of any provider config.
Importing this package does not import Ray; the first start connects.
"""

from ._placement import RayPlacement as RayPlacement

__all__ = ["RayPlacement"]
