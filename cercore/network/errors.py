"""Errors of the distributed (PrePP) layer; all are :class:`cercore.CercoreError`."""

from __future__ import annotations

from cercore.errors import CercoreError


class NetworkError(CercoreError, ValueError):
    """A network, trace, selectivity catalog or planner input that cannot be used."""


class PlanError(NetworkError):
    """A PrePP plan that is not correct for its query and network (Definition 3)."""
