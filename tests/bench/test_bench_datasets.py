"""cercore.bench.datasets: the generators are deterministic, valid input for their schemas,
and match the statistics they are calibrated to (the stock one: the real trace's own)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import cercore
from cercore.bench import datasets


def _col(table: pa.Table, name: str) -> np.ndarray:
    return table.column(name).to_numpy(zero_copy_only=False)


@pytest.fixture(scope="module")
def real_after_open() -> pa.Table:
    trace = datasets.stock_trace()
    return trace.filter(pc.greater_equal(trace["stock_time"], datasets.MARKET_OPEN_MS))


def test_stock_trace_is_the_bundled_prefix():
    trace = datasets.stock_trace()
    assert trace.num_rows == 24_887  # shared/data/README.md
    assert trace.slice(0, 1).to_pylist()[0] == {
        "event_type": "BUY", "id": 8, "name": "INTC", "volume": 100, "price": 27.85,
        "stock_time": 25_263_126}
    assert datasets.stock_trace(100).num_rows == 100


def test_stock_statistics_by_hand():
    t = pa.table({"event_type": ["BUY", "BUY", "SELL", "SELL"], "id": [1, 2, 3, 4],
                  "name": ["A", "A", "B", "A"], "volume": [100, 7, 200, 300],
                  "price": [1.0, 1.5, 2.0, 3.0], "stock_time": [0, 0, 0, 20_000]})
    s = datasets.stock_statistics(t)
    assert s["ticker_share"] == {"A": 0.75, "B": 0.25}
    assert s["buy_share"] == 0.5
    assert s["same_ms_share"] == 0.5  # events 1 and 2 share the ms of the one before
    assert s["burst_same_ticker_side"] == 0.5  # (0,1) same, (1,2) differ
    assert s["events_per_10s"] == 1.5  # windows [0,10s) 3 events, [10s,20s) 0; last left out
    assert s["round_lot_share"] == 0.5
    assert s["volume_median"] == {"A": 100.0, "B": 200.0}
    assert s["price_range"] == {"A": (1.0, 3.0), "B": (2.0, 2.0)}


@pytest.mark.parametrize("name", ["stocks", "smart_homes", "taxis"])
def test_generators_are_deterministic_and_valid(name):
    a, b = datasets.load(name, 2_000, seed=7), datasets.load(name, 2_000, seed=7)
    assert a.equals(b) and a.num_rows == 2_000
    assert not a.equals(datasets.load(name, 2_000, seed=8))
    assert datasets.load(name, 0).num_rows == 0
    # every generated event is valid input for its schema, in time order
    sch = datasets.schema(name)
    q = cercore.compile("SELECT * FROM S WHERE " + " OR ".join(sch.event_types), sch)
    assert len(q.engine(on_error="raise").process_arrays(a)) == 2_000


def test_stock_generator_matches_the_real_trace(real_after_open):
    real = datasets.stock_statistics(real_after_open)
    gen = datasets.stock_statistics(datasets.stocks(40_000, seed=3))
    assert gen["time_backwards"] == 0
    assert set(gen["ticker_share"]) == set(real["ticker_share"])
    for ticker, share in real["ticker_share"].items():
        assert gen["ticker_share"][ticker] == pytest.approx(share, abs=0.02), ticker
    assert gen["buy_share"] == pytest.approx(real["buy_share"], abs=0.02)
    # about half the trades share a millisecond with the one before, almost always the same
    # ticker and side (block trades split into lots)
    assert gen["same_ms_share"] == pytest.approx(real["same_ms_share"], abs=0.03)
    assert gen["burst_same_ticker_side"] > 0.97
    assert gen["events_per_10s"] == pytest.approx(real["events_per_10s"], rel=0.1)
    assert gen["round_lot_share"] == pytest.approx(real["round_lot_share"], abs=0.03)
    for ticker in ("INTC", "RIMM", "QQQ", "MSFT", "ORCL"):
        assert gen["volume_median"][ticker] == real["volume_median"][ticker]
        lo, hi = real["price_range"][ticker]
        g_lo, g_hi = gen["price_range"][ticker]
        spread = hi - lo
        # near-constant intraday prices: the generated spread is the trace's, give or take
        assert lo - spread < g_lo and g_hi < hi + spread, ticker
        assert 0.3 * spread < g_hi - g_lo < 3 * spread, ticker


def test_stock_prices_stay_put_on_long_streams():
    gen = datasets.stock_statistics(datasets.stocks(200_000, seed=5))
    lo, hi = gen["price_range"]["RIMM"]
    assert 110 < lo and hi < 121  # a whole day of RIMM stays in the trace's band


def test_stock_ids_count_down_inside_a_burst():
    t = datasets.stocks(5_000, seed=2)
    st, ids = _col(t, "stock_time"), _col(t, "id")
    same = np.diff(st) == 0
    assert np.all(np.diff(ids)[same] < 0) and np.all(np.diff(ids)[~same] > 0)
    assert len(np.unique(ids)) == len(ids)


def test_smart_homes_calibration():
    t = datasets.smart_homes(60_000, seed=3)
    value = _col(t, "value")
    assert 55 < value.mean() < 100  # the paper's "dataset average load of 76 Watts"
    assert 0.15 < np.mean(value > 76) < 0.35
    ts = _col(t, "plug_timestamp")
    assert np.all(np.diff(ts) >= 0)
    # one reading per plug per second, but for the rare duplicates
    readings_per_plug_and_ts = np.unique(ts * 1000 + _col(t, "plug_id"), return_counts=True)[1]
    assert np.mean(readings_per_plug_and_ts > 1) < 0.01
    assert 80 <= np.median(np.unique(ts, return_counts=True)[1]) <= 85
    assert set(np.unique(_col(t, "household_id"))) == set(range(17))
    assert np.all(_col(t, "household_id") == _col(t, "plug_id") // 5)


def test_taxi_calibration():
    t = datasets.taxis(20_000, seed=3)
    drop = _col(t, "dropoff_datetime")
    assert np.all(np.diff(drop) >= 0)  # reported in dropoff order
    assert 5 < len(drop) / (drop[-1] - drop[0]) < 9  # trips per second
    trip = _col(t, "trip_time_in_secs")
    assert 500 < np.median(trip) < 800
    assert np.all(_col(t, "pickup_datetime") == drop - trip)
    zones, counts = np.unique(_col(t, "pickup_loc"), return_counts=True)
    assert zones[np.argmax(counts)] == "East Harlem North"  # the paper's chain starts there
    assert np.all(_col(t, "tip_amount")[_col(t, "payment_type") == "CSH"] == 0)


def test_parquet_round_trip(tmp_path):
    t = datasets.taxis(500, seed=1)
    path = datasets.write_parquet(t, tmp_path / "taxis.parquet")
    back = cercore.io.read_events(path, datasets.schema("taxis"))
    assert back.num_rows == 500
    assert back.column("pickup_loc").to_pylist() == t.column("pickup_loc").to_pylist()


def test_unknown_dataset_and_bad_size():
    with pytest.raises(cercore.CercoreError, match="unknown dataset"):
        datasets.load("weather", 10)
    with pytest.raises(cercore.CercoreError, match=">= 0"):
        datasets.stocks(-1)
