"""Helpers for writing sources, mirroring ``dlt.sources``: ``incremental``, ``intervals``,
``credentials``, ``helpers`` and the typing names dlt's scripts import from here
(``TDataItem``, ``TDataItems``, ``DltResource``, ``DltSource``)."""

from typing import Any

from sparkload.extract.incremental import Incremental
from sparkload.extract.intervals import Intervals
from sparkload.extract.resource import Resource
from sparkload.extract.source import Source
from sparkload.sources import credentials

incremental = Incremental
intervals = Intervals

# dlt's names for what a resource yields: one item, or a page of them
TDataItem = Any
TDataItems = TDataItem | list[TDataItem]

# dlt's class names for sparkload's resource and source
DltResource = Resource
DltSource = Source

__all__ = [
    "DltResource",
    "DltSource",
    "TDataItem",
    "TDataItems",
    "credentials",
    "incremental",
    "intervals",
]
