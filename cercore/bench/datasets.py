"""The CORE paper's three datasets (§5, appendices D–F): the bundled prefix of the real stock
trace, and seeded generators for streams of any length shaped like each dataset
(notes/ecosystem.md §5 describes what they are calibrated to).

Every generator is deterministic in ``seed`` and returns a ``pyarrow.Table`` with an
``event_type`` column and one column per attribute, in stream order; ``DECLARATIONS[name]`` is
its CEQL stream declaration. ``write_parquet`` stores any of them.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

import cercore
from cercore.io import read_events

DATA = Path(cercore.__file__).resolve().parent / "data"

DECLARATIONS = {
    "stocks": (DATA / "stocks.decl").read_text(),
    "smart_homes": "CREATE STREAM S { EVENT LOAD { id:int, plug_timestamp:primary_time, "
                   "value:double, plug_id:int, household_id:int } }",
    "taxis": "CREATE STREAM S { EVENT TRIP { medallion:string, pickup_datetime:int, "
             "dropoff_datetime:primary_time, trip_time_in_secs:int, trip_distance:double, "
             "pickup_loc:string, dropoff_loc:string, payment_type:string, "
             "fare_amount:double, tip_amount:double } }",
}
TIME_UNITS = {"stocks": "ms", "smart_homes": "s", "taxis": "s"}

# --- stocks (WPI/NASDAQ trace, one trading day) -------------------------------------------------
TICKERS = ["QQQ", "RIMM", "IPIX", "INTC", "AMAT", "CSCO", "DELL", "MSFT", "ORCL", "YHOO"]
TICKER_SHARE = np.array([0.22, 0.18, 0.16, 0.14, 0.07, 0.07, 0.06, 0.04, 0.03, 0.03])
OPEN_PRICE = {"INTC": 27.8, "RIMM": 115.0, "QQQ": 36.1, "IPIX": 7.6, "AMAT": 18.8,
              "CSCO": 22.4, "YHOO": 31.4, "DELL": 35.4, "ORCL": 11.1, "MSFT": 26.0}
DAY_START_MS, DAY_END_MS = 25_263_126, 72_000_000


def schema(name: str) -> cercore.Schema:
    """The schema of dataset ``name`` (``stocks`` or ``stock_trace``, ``smart_homes``,
    ``taxis``)."""
    name = "stocks" if name == "stock_trace" else name
    return cercore.Schema.parse(DECLARATIONS[name], time_unit=TIME_UNITS[name])


def stock_trace(limit: int | None = None) -> pa.Table:
    """The bundled prefix of the real stock trace (24,887 trades)."""
    table = read_events(DATA / "stock_trace_prefix.csv", schema("stocks"))
    return table if limit is None else table.slice(0, limit)


def stocks(n: int, seed: int = 0) -> pa.Table:
    """Trades shaped like the stock trace: a U-shaped intraday rate, bursts of trades sharing
    one millisecond (geometric, mean 3), a skewed ticker mix, per-ticker price random walks at
    tick granularity (IPIX drifting up), round lots with odd lots and a heavy tail."""
    rng = np.random.default_rng(seed)
    bursts = rng.geometric(1 / 3, size=n)
    starts = np.cumsum(bursts)
    n_bursts = int(np.searchsorted(starts, n)) + 1
    bursts = bursts[:n_bursts]
    # U-shaped intensity: more bursts near the open and the close
    u = np.sort(rng.beta(0.6, 0.8, size=n_bursts))
    burst_ms = (DAY_START_MS + u * (DAY_END_MS - DAY_START_MS)).astype(np.int64)
    stock_time = np.repeat(burst_ms, bursts)[:n]
    names = rng.choice(len(TICKERS), size=n, p=TICKER_SHARE / TICKER_SHARE.sum())
    price = np.empty(n)
    for k, t in enumerate(TICKERS):
        idx = np.flatnonzero(names == k)
        tick = 0.001 if t == "QQQ" else 0.01
        steps = rng.choice([-1, 0, 1], size=idx.size, p=[0.3, 0.4, 0.3]) * tick
        drift = (5.0 / max(idx.size, 1)) if t == "IPIX" else 0.0
        price[idx] = np.round(OPEN_PRICE[t] + np.cumsum(steps) + drift * np.arange(idx.size), 3)
    lots = rng.choice([100, 200, 500, 1000], size=n, p=[0.5, 0.2, 0.2, 0.1])
    odd = rng.random(n) < 0.15
    lots[odd] = rng.integers(1, 100, size=int(odd.sum()))
    tail = rng.random(n) < 0.01
    lots[tail] = (rng.pareto(1.5, size=int(tail.sum())) * 2000 + 1000).astype(np.int64)
    return pa.table({
        "event_type": np.where(rng.random(n) < 0.5, "BUY", "SELL"),
        "id": np.arange(n, dtype=np.int64) * 3 + rng.integers(0, 3, size=n),
        "name": np.array(TICKERS)[names],
        "volume": lots.astype(np.int64),
        "price": price,
        "stock_time": stock_time,
    })


# --- smart homes (DEBS 2014: LOAD readings of one house) ----------------------------------------
def smart_homes(n: int, seed: int = 0, households: int = 17, plugs_per_household: int = 5
                ) -> pa.Table:
    """LOAD readings: every plug reports about once a second (bursts of one reading per active
    plug per second), loads from a standby / appliance / spike mixture with on/off regime
    switching, calibrated so that roughly a fifth of readings exceed the paper's 76 W."""
    rng = np.random.default_rng(seed)
    plugs = households * plugs_per_household
    household = np.repeat(np.arange(households), plugs_per_household)
    on = rng.random(plugs) < 0.3
    appliance = rng.lognormal(np.log(60), 0.7, size=plugs)
    values, plug_ids, times, homes = [], [], [], []
    second, produced = 1_377_986_401, 0
    while produced < n:
        flip = rng.random(plugs) < 0.02
        on = np.where(flip, ~on, on)
        active = np.flatnonzero(rng.random(plugs) > 0.001)  # ~0.1% missing seconds
        load = np.where(on[active], appliance[active] * rng.lognormal(0, 0.1, active.size),
                        rng.uniform(0, 5, active.size))
        spikes = rng.random(active.size) < 0.002
        load[spikes] = rng.uniform(1000, 3000, int(spikes.sum()))
        rng.shuffle(active)
        values.append(np.round(load, 3))
        plug_ids.append(active)
        homes.append(household[active])
        times.append(np.full(active.size, second))
        produced += active.size
        second += 1
    value = np.concatenate(values)[:n]
    return pa.table({
        "event_type": np.full(n, "LOAD"),
        "id": np.arange(n, dtype=np.int64),
        "plug_timestamp": np.concatenate(times)[:n].astype(np.int64),
        "value": value,
        "plug_id": np.concatenate(plug_ids)[:n].astype(np.int64),
        "household_id": np.concatenate(homes)[:n].astype(np.int64),
    })


# --- NYC taxi trips (DEBS 2015, zones as in CORE's variant) -------------------------------------
PAPER_ZONES = ["East Harlem North", "Midwood", "Gravesend", "West Brighton",
               "Lincoln Square West", "Sutton Place/Turtle Bay North",
               "East Concourse/Concourse Village"]
N_ZONES = 260


def taxi_zones() -> list[str]:
    """The zone names: the ones the paper's queries chain first, then numbered zones."""
    return PAPER_ZONES + [f"Zone {k:03d}" for k in range(N_ZONES - len(PAPER_ZONES))]


def taxis(n: int, seed: int = 0) -> pa.Table:
    """Trips reported in dropoff order: Zipf-like pickup popularity over 260 zones, dropoffs
    from a gravity model (the same or a nearby zone is likely), lognormal trip times (median
    ~11 min), fares growing with distance, tips only for card payments, ~6-8 trips per
    second."""
    rng = np.random.default_rng(seed)
    zones = np.array(taxi_zones())
    weights = 1.0 / np.arange(1, N_ZONES + 1) ** 1.1
    weights /= weights.sum()
    pickup = rng.choice(N_ZONES, size=n, p=weights)
    hop = rng.geometric(0.35, size=n) - 1
    dropoff = np.where(rng.random(n) < 0.6, (pickup + hop) % N_ZONES,
                       rng.choice(N_ZONES, size=n, p=weights))
    trip_time = np.maximum(rng.lognormal(np.log(660), 0.6, size=n), 30).astype(np.int64)
    dropoff_time = 1_356_998_400 + np.cumsum(rng.exponential(1 / 7, size=n)).astype(np.int64)
    distance = np.round(trip_time / 240 * rng.lognormal(0, 0.3, size=n), 2)
    card = rng.random(n) < 0.55
    fare = np.round(2.5 + 2.5 * distance + rng.normal(0, 0.5, size=n).clip(-1, 3), 2)
    return pa.table({
        "event_type": np.full(n, "TRIP"),
        "medallion": np.char.add("M", (rng.integers(0, 10_000, size=n)).astype(str)),
        "pickup_datetime": dropoff_time - trip_time,
        "dropoff_datetime": dropoff_time,
        "trip_time_in_secs": trip_time,
        "trip_distance": distance,
        "pickup_loc": zones[pickup],
        "dropoff_loc": zones[dropoff],
        "payment_type": np.where(card, "CRD", "CSH"),
        "fare_amount": fare,
        "tip_amount": np.where(card, np.round(0.2 * fare, 2), 0.0),
    })


GENERATORS: dict[str, Callable[..., pa.Table]] = {
    "stocks": stocks, "smart_homes": smart_homes, "taxis": taxis}


def load(name: str, n: int | None = None, seed: int = 0) -> pa.Table:
    """Dataset ``name`` with ``n`` events: ``stock_trace`` is the real prefix (n at most its
    length), the others are generated."""
    if name == "stock_trace":
        return stock_trace(n)
    return GENERATORS[name](n if n is not None else 100_000, seed)


def write_parquet(table: pa.Table, path: str | Path) -> Path:
    path = Path(path)
    pq.write_table(table, path)
    return path
