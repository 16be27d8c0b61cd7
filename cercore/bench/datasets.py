"""The CORE paper's three datasets (§5, appendices D–F): the bundled prefix of the real stock
trace, and seeded generators for streams of any length shaped like each dataset
(notes/ecosystem.md §5 describes what they are calibrated to).

Every generator is deterministic in ``seed`` and returns a ``pyarrow.Table`` with an
``event_type`` column and one column per attribute, in stream order; ``DECLARATIONS[name]`` is
its CEQL stream declaration. ``write_parquet`` stores any of them.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

import cercore
from cercore.errors import CercoreError
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


def schema(name: str) -> cercore.Schema:
    """The schema of dataset ``name`` (``stocks`` or ``stock_trace``, ``smart_homes``,
    ``taxis``)."""
    name = "stocks" if name == "stock_trace" else name
    if name not in DECLARATIONS:
        raise CercoreError(f"unknown dataset {name!r}; known: stock_trace, "
                           + ", ".join(DECLARATIONS))
    return cercore.Schema.parse(DECLARATIONS[name], time_unit=TIME_UNITS[name])


def stock_trace(limit: int | None = None, replay: int = 1) -> pa.Table:
    """The bundled prefix of the real stock trace (24,887 trades), ``replay`` times over with
    each copy's times shifted past the previous one (so the stream stays in time order);
    the first ``limit`` events."""
    import pyarrow.compute as pc

    table = read_events(DATA / "stock_trace_prefix.csv", schema("stocks"))
    if replay > 1:
        col = table.column_names.index("stock_time")
        span = pc.max(table["stock_time"]).as_py() + 1
        table = pa.concat_tables(
            [table.set_column(col, "stock_time", pc.add(table["stock_time"], i * span))
             for i in range(replay)]).combine_chunks()
    return table if limit is None else table.slice(0, limit)


# --- stocks (WPI/NASDAQ trace, one trading day) -------------------------------------------------
MARKET_OPEN_MS = 34_200_000  # 09:30:00.000; the prefix is sparse before it
TICK = {"QQQ": 0.001}  # price tick per ticker (0.01 otherwise)
# ~100 ids per 20 events in the trace: ids also count trades of tickers not in the stream
ID_STRIDE = 5


@dataclass(frozen=True)
class StockCalibration:
    """What the stock generator draws from, measured on the real prefix after the market open
    (the trace's steady regime; its sparse pre-open trades are left out)."""

    gaps_ms: np.ndarray  # milliseconds between consecutive bursts
    tickers: list[str]
    burst_share: np.ndarray  # probability that a burst is of each ticker
    burst_sizes: dict[str, np.ndarray]  # per ticker: sizes of its bursts (trades on one ms)
    buy_share: np.ndarray  # per ticker: P(BUY)
    mean_price: dict[str, float]
    price_steps: dict[str, np.ndarray]  # per ticker: price changes between its trades, in ticks
    reversion: dict[str, float]  # per ticker: pull towards the mean price per trade
    volumes: dict[str, np.ndarray]  # per ticker: the traded volumes
    mixed_burst: float  # P(a trade in a burst differs in ticker or side from the one before)


def stock_statistics(table: pa.Table) -> dict:
    """The statistics the stock generator is calibrated to, for any stock table: share of each
    ticker, of BUY, of trades sharing the previous trade's millisecond (and among those, of the
    same ticker and side), mean trades per 10 s, volume medians and round-lot share, price
    range per ticker."""
    st = table.column("stock_time").to_numpy()
    names = table.column("name").to_numpy(zero_copy_only=False)
    side = table.column("event_type").to_numpy(zero_copy_only=False)
    volume = table.column("volume").to_numpy()
    price = table.column("price").to_numpy()
    same_ms = np.r_[False, np.diff(st) == 0]
    pairs = np.flatnonzero(same_ms)
    tickers, counts = np.unique(names, return_counts=True)
    windows = np.bincount((st - st.min()) // 10_000)
    return {
        "events": len(st),
        "ticker_share": dict(zip(tickers.tolist(), (counts / counts.sum()).tolist())),
        "buy_share": float(np.mean(side == "BUY")),
        "same_ms_share": float(same_ms.mean()),
        "burst_same_ticker_side": float(np.mean((names[pairs] == names[pairs - 1])
                                                & (side[pairs] == side[pairs - 1])))
        if len(pairs) else 1.0,
        "events_per_10s": float(windows[:-1].mean()) if len(windows) > 1 else float(len(st)),
        "round_lot_share": float(np.mean(np.isin(volume, [100, 200, 500, 1000]))),
        "volume_median": {t: float(np.median(volume[names == t])) for t in tickers},
        "price_range": {t: (float(price[names == t].min()), float(price[names == t].max()))
                        for t in tickers},
        "time_backwards": int(np.sum(np.diff(st) < 0)),
    }


@functools.lru_cache(maxsize=1)
def stock_calibration() -> StockCalibration:
    """The generator's parameters, fitted to the bundled prefix of the real trace."""
    t = stock_trace()
    st = t.column("stock_time").to_numpy()
    keep = st >= MARKET_OPEN_MS
    st = st[keep]
    names = t.column("name").to_numpy(zero_copy_only=False)[keep]
    side = t.column("event_type").to_numpy(zero_copy_only=False)[keep]
    volume = t.column("volume").to_numpy()[keep]
    price = t.column("price").to_numpy()[keep]
    first = np.r_[True, np.diff(st) != 0]  # first trade of each burst
    burst_sizes = np.diff(np.r_[np.flatnonzero(first), len(st)])
    tickers = sorted(set(names.tolist()))
    burst_names = names[first]
    in_burst = np.flatnonzero(~first)
    levels = {k: price[names == k] / TICK.get(k, 0.01) for k in tickers}
    steps = {k: np.rint(np.diff(levels[k])).astype(np.int64) for k in tickers}
    return StockCalibration(
        gaps_ms=np.diff(st[first]),
        tickers=tickers,
        burst_share=np.array([np.mean(burst_names == k) for k in tickers]),
        burst_sizes={k: burst_sizes[burst_names == k] for k in tickers},
        buy_share=np.array([np.mean(side[names == k] == "BUY") for k in tickers]),
        mean_price={k: float(price[names == k].mean()) for k in tickers},
        price_steps=steps,
        # an AR(1) walk's variance is var(step) / (2 r): match the trace's price variance
        reversion={k: float(np.clip(np.var(steps[k]) / (2 * max(np.var(levels[k]), 1e-9)),
                                    1e-4, 0.5)) for k in tickers},
        volumes={k: volume[names == k] for k in tickers},
        mixed_burst=float(np.mean((names[in_burst] != names[in_burst - 1])
                                  | (side[in_burst] != side[in_burst - 1]))),
    )


def stocks(n: int, seed: int = 0) -> pa.Table:
    """Trades shaped like the real trace after the open, for any ``n``: bursts of trades on one
    millisecond (the gaps between bursts resampled from the trace), one ticker and side per
    burst with the trace's shares (and its rare mixed bursts), burst sizes and volumes
    resampled from that ticker's own, and prices moving by the ticker's own tick steps, pulled
    back towards its mean price so that its spread matches the trace's and long streams
    keep the near-constant intraday prices. ids count up per burst and down inside one, as in
    the trace. Times start at the 09:30 open and go on at the trace's rate."""
    if n < 0:
        raise CercoreError(f"the number of events must be >= 0, not {n}")
    cal = stock_calibration()
    rng = np.random.default_rng(seed)
    k = len(cal.tickers)
    burst_ticker = rng.choice(k, size=n + 1, p=cal.burst_share)
    sizes = np.empty(n + 1, dtype=np.int64)
    for i, name in enumerate(cal.tickers):
        idx = np.flatnonzero(burst_ticker == i)
        sizes[idx] = rng.choice(cal.burst_sizes[name], size=idx.size)
    n_bursts = int(np.searchsorted(np.cumsum(sizes), n)) + 1
    sizes, burst_ticker = sizes[:n_bursts], burst_ticker[:n_bursts]
    burst_of = np.repeat(np.arange(n_bursts), sizes)[:n]
    gaps = rng.choice(cal.gaps_ms, size=n_bursts)
    gaps[0] = 0
    stock_time = MARKET_OPEN_MS + np.cumsum(gaps)[burst_of]
    ticker = burst_ticker[burst_of]
    buy = (rng.random(n_bursts) < cal.buy_share[burst_ticker])[burst_of]
    # a few trades in a burst are of another ticker or side
    mixed = (rng.random(n) < cal.mixed_burst) & np.r_[False, burst_of[1:] == burst_of[:-1]]
    ticker[mixed] = rng.choice(k, size=int(mixed.sum()), p=cal.burst_share)
    buy[mixed] = rng.random(int(mixed.sum())) < 0.5
    price = np.empty(n)
    volume = np.empty(n, dtype=np.int64)
    for i, name in enumerate(cal.tickers):
        idx = np.flatnonzero(ticker == i)
        volume[idx] = rng.choice(cal.volumes[name], size=idx.size)
        steps = rng.choice(cal.price_steps[name], size=idx.size)
        tick = TICK.get(name, 0.01)
        price[idx] = cal.mean_price[name] + np.rint(
            _mean_reverting_walk(steps, cal.reversion[name])) * tick
    ids = np.empty(n, dtype=np.int64)
    # ids: each burst a block of ids counted down, blocks counting up with gaps
    block_end = np.cumsum(sizes * ID_STRIDE)
    rank = np.arange(n) - np.r_[0, np.cumsum(sizes)[:-1]][burst_of]
    ids[:] = block_end[burst_of] - rank * ID_STRIDE - rng.integers(0, ID_STRIDE, size=n)
    return pa.table({
        "event_type": np.where(buy, "BUY", "SELL"),
        "id": ids,
        "name": np.array(cal.tickers)[ticker],
        "volume": volume,
        "price": np.round(price, 3),
        "stock_time": stock_time.astype(np.int64),
    })


def _mean_reverting_walk(steps: np.ndarray, reversion: float) -> np.ndarray:
    """x_0 = 0, x_i = x_{i-1} (1 - reversion) + steps[i]: an AR(1) walk that stays near 0
    (the loop is over one ticker's trades only)."""
    out = np.empty(steps.size)
    x = 0.0
    keep = 1.0 - reversion
    for i, s in enumerate(steps.tolist()):
        out[i] = x
        x = x * keep + s
    return out


# --- smart homes (DEBS 2014: LOAD readings of one house) ----------------------------------------
LOAD_THRESHOLD_W = 76.0  # the paper: "the dataset average load of 76 Watts"
SWITCH_ON, SWITCH_OFF = 0.006, 0.014  # per second: an appliance is on ~30% of the time
MISSING, DUPLICATED = 0.001, 0.001  # shares of readings lost / sent twice


def smart_homes(n: int, seed: int = 0, households: int = 17, plugs_per_household: int = 5
                ) -> pa.Table:
    """LOAD readings of one house (the paper's house 28: 85 plugs in 17 households): every
    plug reports once a second (a burst of one reading per plug per second, in shuffled
    order; ~0.1% of readings missing, ~0.1% sent twice); each plug's appliance switches on and
    off (a Markov chain, on ~30% of the time) and draws a lognormal load around its own
    rating when on, 0-5 W standby when off, with rare 1-3 kW spikes — calibrated so that the
    mean load is the paper's 76 W and about a quarter of readings exceed it."""
    if n < 0:
        raise CercoreError(f"the number of events must be >= 0, not {n}")
    rng = np.random.default_rng(seed)
    plugs = households * plugs_per_household
    household = np.repeat(np.arange(households), plugs_per_household)
    on = rng.random(plugs) < SWITCH_ON / (SWITCH_ON + SWITCH_OFF)
    rating = rng.lognormal(np.log(165), 0.85, size=plugs)
    values, plug_ids, times = [np.empty(0)], [np.empty(0, np.int64)], [np.empty(0, np.int64)]
    second, produced = 1_377_986_401, 0
    while produced < n:
        switch = rng.random(plugs) < np.where(on, SWITCH_OFF, SWITCH_ON)
        on = on ^ switch
        active = np.flatnonzero(rng.random(plugs) >= MISSING)
        active = np.concatenate([active, active[rng.random(active.size) < DUPLICATED]])
        rng.shuffle(active)
        load = np.where(on[active], rating[active] * rng.lognormal(0, 0.1, active.size),
                        rng.uniform(0, 5, active.size))
        spikes = rng.random(active.size) < 0.004
        load[spikes] = rng.uniform(1000, 3000, int(spikes.sum()))
        values.append(np.round(load, 3))
        plug_ids.append(active)
        times.append(np.full(active.size, second))
        produced += active.size
        second += 1
    plug = np.concatenate(plug_ids)[:n].astype(np.int64)
    return pa.table({
        "event_type": np.full(n, "LOAD"),
        "id": np.arange(n, dtype=np.int64),
        "plug_timestamp": np.concatenate(times)[:n].astype(np.int64),
        "value": np.concatenate(values)[:n],
        "plug_id": plug,
        "household_id": household[plug],
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
    if n < 0:
        raise CercoreError(f"the number of events must be >= 0, not {n}")
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


def load(name: str, n: int | None = None, seed: int = 0, replay: int = 1) -> pa.Table:
    """Dataset ``name`` with ``n`` events: ``stock_trace`` is the real prefix (``replay``
    times over; n at most its length), the others are generated."""
    if name == "stock_trace":
        return stock_trace(n, replay)
    if name not in GENERATORS:
        raise CercoreError(f"unknown dataset {name!r}; known: stock_trace, "
                           + ", ".join(GENERATORS))
    return GENERATORS[name](n if n is not None else 100_000, seed)


def write_parquet(table: pa.Table, path: str | Path) -> Path:
    """Store a dataset as Parquet (``cercore.io.read_events`` reads it back typed)."""
    path = Path(path)
    pq.write_table(table, path)
    return path
