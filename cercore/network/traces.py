"""Reading and writing per-node event traces: JSON lines or CSV with the columns ``node``,
``event_type`` (or ``type``), the time attribute (``t``), optionally ``uid`` (else the row
number), and one column per attribute."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Hashable
from pathlib import Path

from cercore.network.errors import NetworkError
from cercore.network.network import Network
from cercore.network.query import NetEvent

_RESERVED = ("node", "event_type", "type", "uid")


def read_traces(path: str | Path, network: Network, time_attribute: str = "t"
                ) -> dict[Hashable, list[NetEvent]]:
    """node → events; node names are matched to the network's nodes by their text."""
    path = Path(path)
    names = {str(n): n for n in network.nodes}
    rows = _rows(path)
    traces: dict[Hashable, list[NetEvent]] = {n: [] for n in network.nodes}
    for i, row in enumerate(rows):
        where = f"{path.name} row {i + 1}"
        try:
            node = names[str(row["node"])]
        except KeyError:
            raise NetworkError(f"{where}: node {row.get('node')!r} is not in the network") \
                from None
        etype = row.get("event_type", row.get("type"))
        if etype is None or time_attribute not in row:
            raise NetworkError(f"{where}: needs 'event_type' and '{time_attribute}'")
        try:
            t = int(float(row[time_attribute]))
            uid = int(row.get("uid", i))
        except (TypeError, ValueError):
            raise NetworkError(f"{where}: '{time_attribute}' and 'uid' must be integers") \
                from None
        attrs = {k: _value(v) for k, v in row.items()
                 if k not in _RESERVED and k != time_attribute}
        traces[node].append(NetEvent(uid, str(etype), t, node, attrs))
    return traces


def _rows(path: Path) -> list[dict]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise NetworkError(f"cannot read {path}: {exc}") from None
    if path.suffix.lower() == ".csv":
        return list(csv.DictReader(io.StringIO(text, newline="")))  # (not splitlines: U+2028)
    try:
        return [json.loads(line) for line in text.split("\n") if line.strip()]  # JSON Lines
    except json.JSONDecodeError as exc:
        raise NetworkError(f"{path}: not JSON lines ({exc})") from None


def _value(v):
    if not isinstance(v, str):
        return v
    for conv in (int, float):
        try:
            return conv(v)
        except ValueError:
            pass
    return v


def write_traces(path: str | Path, traces: dict[Hashable, list[NetEvent]],
                 time_attribute: str = "t") -> None:
    """JSON lines in global order."""
    events = sorted((e for tr in traces.values() for e in tr), key=lambda e: e.key)
    with open(path, "w", encoding="utf-8") as f:
        for e in events:
            f.write(json.dumps({"node": e.node, "event_type": e.type, time_attribute: e.t,
                                "uid": e.uid, **e.attrs}) + "\n")
