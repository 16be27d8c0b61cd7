"""The CORE paper's query workloads (§5, appendices D–G) for each dataset, as CEQL text.

* ``P<n>``: sequences of n events with per-event filters, n in 3, 6, 9, 12, 24 — the paper's
  S<n> on stocks, H<n> on smart homes and T<n> on taxi trips, verbatim (appendices D–F), window
  T (10 s on stocks and smart homes, 10,000 s on taxis);
* ``P'<n>``: the same plus a final event that never occurs (no output: update cost only);
* ``P'3@kT``: P'3 with the window k·T — k in 1..4 as in the paper's Figure 8, plus 8 and 16
  for the constant-cost-per-event check;
* ``Q1``–``Q7``: on stocks the paper's queries with other operators (appendix G: filters,
  PARTITION BY, disjunction, iteration); on smart homes and taxis cercore's analogues with the
  same operator mix (the paper runs Q1–Q7 on stocks only; ``Workload.paper`` tells them apart).

The paper's methodology (``Workload.text(methodology=True)``, the default) adds
``CONSUME BY ANY`` (unless the query names a policy) and ``LIMIT 1000``: at most a thousand
complex events per pattern occurrence. ``text(methodology=False)`` is the bare query, and
``text(limit=0)`` evaluates with the same consumption but enumerates nothing — the runner's
difference between the two is the enumeration time.
"""

from __future__ import annotations

from dataclasses import dataclass

from cercore.errors import CercoreError

SIZES = (3, 6, 9, 12, 24)
WINDOW_FACTORS = (1, 2, 3, 4, 8, 16)
FAMILIES = ("sequence", "no-output", "window", "operators")
PAPER_LIMIT = 1000

# appendix D: S24's tickers (S3..S12 are its prefixes); SELL, BUY, BUY repeating
STOCK_TICKERS = ["INTC", "RIMM", "QQQ", "IPIX", "AMAT", "CSCO", "YHOO", "DELL", "ORCL", "MSFT",
                 "INTC", "RIMM"] * 2
# appendix E: H24's households (L10..L12 repeat 4, 9, 10)
HOUSEHOLDS = [0, 2, 4, 6, 9, 10, 12, 14, 15, 4, 9, 10] * 2
# appendix F: T24's zone chain; loc_i goes from TAXI_CHAIN[i-1] to TAXI_CHAIN[i]
TAXI_CHAIN = ["East Harlem North", "Midwood", "Gravesend", "West Brighton", "Lincoln Square West",
              "Sutton Place/Turtle Bay North", "East Concourse/Concourse Village",
              "East Harlem North", "East Harlem North", "Gravesend", "Midwood", "Midwood",
              "Gravesend", "Midwood", "Gravesend", "West Brighton", "Lincoln Square West",
              "Sutton Place/Turtle Bay North", "East Concourse/Concourse Village",
              "East Harlem North", "East Harlem North", "Gravesend", "Midwood", "Midwood",
              "Gravesend"]
# T (in the time attribute's unit) and the attribute each dataset's windows bound
WINDOW = {"stocks": (10_000, "stock_time"), "smart_homes": (10, "plug_timestamp"),
          "taxis": (10_000, "dropoff_datetime")}


@dataclass(frozen=True)
class Workload:
    """One benchmark query: ``text()`` gives its CEQL."""

    name: str  # e.g. "P3", "P'3@4T", "Q5"
    dataset: str  # stocks | stock_trace | smart_homes | taxis
    family: str  # sequence | no-output | window | operators
    n: int  # sequence length (0 when not a sequence)
    window_factor: int
    body: str  # the query without the methodology clauses
    paper: bool = True  # verbatim from the paper (False: cercore's analogue)

    def text(self, methodology: bool = True, limit: int | None = None) -> str:
        """The CEQL text; with the paper's ``CONSUME BY ANY`` / ``LIMIT 1000`` when
        ``methodology``; ``limit`` overrides the LIMIT (0: evaluate, enumerate nothing)."""
        text = self.body
        if methodology and "CONSUME BY" not in text:
            text += "\nCONSUME BY ANY"
        if limit is not None or methodology:
            text += f"\nLIMIT {PAPER_LIMIT if limit is None else limit}"
        return text


def _sequence(dataset: str, n: int, factor: int = 1, no_output: bool = False) -> str:
    """The paper's S<n>/H<n>/T<n> (or S'/H'/T' with ``no_output``), window factor·T."""
    window, attr = WINDOW[dataset]
    if dataset == "stocks":
        atoms = [f"{'SELL' if i % 3 == 0 else 'BUY'} as T{i + 1}" for i in range(n)]
        filters = [f"T{i + 1}[name = '{STOCK_TICKERS[i]}']" for i in range(n)]
        ne = ("BUY as NE", "NE[name = 'NotExists']")
        suffix = ""
    elif dataset == "smart_homes":
        atoms = [f"LOAD as L{i + 1}" for i in range(n)]
        filters = ["L[value > 76]"] + [f"L{i + 1}[household_id = {HOUSEHOLDS[i]}]"
                                       for i in range(n)]
        ne = ("LOAD as NE", "NE[household_id = 1000]")
        suffix = " as L"  # L binds every event of the sequence: all above 76 W
    elif dataset == "taxis":
        atoms = [f"TRIP as loc{i + 1}" for i in range(n)]
        filters = [f"loc{i + 1}[pickup_loc = '{TAXI_CHAIN[i]}' AND "
                   f"dropoff_loc = '{TAXI_CHAIN[i + 1]}']" for i in range(n)]
        ne = ("TRIP as NE", "NE[pickup_loc = 'NotExists']")
        suffix = ""
    else:
        raise CercoreError(f"no workloads for dataset {dataset!r}")
    if no_output:
        atoms.append(ne[0])
        filters.append(ne[1])
    return (f"SELECT * FROM S\nWHERE ({'; '.join(atoms)}){suffix}\n"
            f"FILTER {' AND '.join(filters)}\nWITHIN {window * factor} [{attr}]")


# appendix G, verbatim: (pattern, filters, PARTITION BY) per query; 30 s windows
_SEQ4 = "(SELL as msft; BUY as oracle; BUY as csco; SELL as amat)"
_DISJ4 = "(SELL as msft; (BUY OR SELL) as oracle; (BUY OR SELL) as csco; SELL as amat)"
_NAMES = "msft[name = 'MSFT'] AND oracle[name = 'ORCL'] AND csco[name = 'CSCO'] AND " \
         "amat[name = 'AMAT']"
_PRICES = "msft[name = 'MSFT'] AND msft[price > 26.0] AND oracle[name = 'ORCL'] AND " \
          "oracle[price > 11.14] AND csco[name = 'CSCO'] AND amat[name = 'AMAT'] AND " \
          "amat[price >= 18.92]"
_ITER = "(SELL as msft; (BUY OR SELL)+ as qqq; SELL as amat)"
_ITER_FILTER = "msft[name = 'MSFT'] AND qqq[name = 'QQQ'] AND qqq[volume = 4000] AND " \
               "amat[name = 'AMAT']"
# cercore's analogues on the one-event-type datasets: disjunction of two filtered atoms,
# iteration of a filtered atom, PARTITION BY an attribute the filtered events share (as the
# paper partitions stocks by volume): the reading's second, the trip's payment type
_ANALOGUES = {
    "smart_homes": dict(
        seq="(LOAD as a; LOAD as b; LOAD as c; LOAD as d)",
        disj="(LOAD as a; (LOAD as b1 OR LOAD as b2); (LOAD as c1 OR LOAD as c2); LOAD as d)",
        iter="(LOAD as a; LOAD+ as m; LOAD as d)",
        names="a[household_id = 0] AND b[household_id = 2] AND c[household_id = 4] AND "
              "d[household_id = 6]",
        disj_names="a[household_id = 0] AND b1[household_id = 2] AND b2[household_id = 3] "
                   "AND c1[household_id = 4] AND c2[household_id = 5] AND d[household_id = 6]",
        values=" AND a[value > 76] AND d[value > 76]",
        iter_filter="a[household_id = 0] AND m[household_id = 2 AND value > 76] AND "
                    "d[household_id = 6]",
        key="[plug_timestamp]", window="WITHIN 10 [plug_timestamp]"),
    "taxis": dict(
        seq="(TRIP as a; TRIP as b; TRIP as c; TRIP as d)",
        disj="(TRIP as a; (TRIP as b1 OR TRIP as b2); (TRIP as c1 OR TRIP as c2); TRIP as d)",
        iter="(TRIP as a; TRIP+ as m; TRIP as d)",
        names="a[pickup_loc = 'East Harlem North'] AND b[pickup_loc = 'Midwood'] AND "
              "c[pickup_loc = 'Gravesend'] AND d[pickup_loc = 'West Brighton']",
        disj_names="a[pickup_loc = 'East Harlem North'] AND b1[pickup_loc = 'Midwood'] AND "
                   "b2[pickup_loc = 'Lincoln Square West'] AND c1[pickup_loc = 'Gravesend'] "
                   "AND c2[pickup_loc = 'Sutton Place/Turtle Bay North'] AND "
                   "d[pickup_loc = 'West Brighton']",
        values=" AND a[trip_distance > 2.0] AND d[fare_amount > 10.0]",
        iter_filter="a[pickup_loc = 'East Harlem North'] AND m[pickup_loc = 'Midwood' AND "
                    "payment_type = 'CRD'] AND d[pickup_loc = 'Gravesend']",
        key="[payment_type]", window="WITHIN 10000 [dropoff_datetime]"),
}


def _operator_query(dataset: str, name: str) -> str:
    if dataset == "stocks":
        pattern, filters, key = {
            "Q1": (_SEQ4, _NAMES, ""), "Q2": (_SEQ4, _PRICES, ""),
            "Q3": (_SEQ4, _NAMES, "[volume]"),
            "Q4": (_DISJ4, _NAMES, ""), "Q5": (_DISJ4, _PRICES, ""),
            "Q6": (_DISJ4, _NAMES, "[volume]"), "Q7": (_ITER, _ITER_FILTER, "")}[name]
        window = "WITHIN 30000 [stock_time]"
    else:
        a = _ANALOGUES[dataset]
        pattern, filters, key = {
            "Q1": (a["seq"], a["names"], ""), "Q2": (a["seq"], a["names"] + a["values"], ""),
            "Q3": (a["seq"], a["names"], a["key"]), "Q4": (a["disj"], a["disj_names"], ""),
            "Q5": (a["disj"], a["disj_names"] + a["values"], ""),
            "Q6": (a["disj"], a["disj_names"], a["key"]),
            "Q7": (a["iter"], a["iter_filter"], "")}[name]
        window = a["window"]
    partition = f"\nPARTITION BY {key}" if key else ""
    consume = "\nCONSUME BY ANY" if key else ""  # as the paper writes Q3 and Q6
    return f"SELECT * FROM S\nWHERE {pattern}\nFILTER {filters}{partition}\n{window}{consume}"


def base_dataset(dataset: str) -> str:
    """The dataset whose schema and queries ``dataset`` uses (the real trace is stocks)."""
    return "stocks" if dataset == "stock_trace" else dataset


def workloads(dataset: str) -> list[Workload]:
    """Every workload of ``dataset`` (``stock_trace`` uses the stock workloads)."""
    base = base_dataset(dataset)
    if base not in WINDOW:
        raise CercoreError(f"no workloads for dataset {dataset!r}; known: stock_trace, "
                           + ", ".join(WINDOW))
    out = [Workload(f"P{n}", dataset, "sequence", n, 1, _sequence(base, n)) for n in SIZES]
    out += [Workload(f"P'{n}", dataset, "no-output", n, 1, _sequence(base, n, no_output=True))
            for n in SIZES]
    out += [Workload(f"P'3@{k}T", dataset, "window", 3, k,
                     _sequence(base, 3, k, no_output=True), paper=k <= 4)
            for k in WINDOW_FACTORS]
    out += [Workload(q, dataset, "operators", 0, 1, _operator_query(base, q),
                     paper=base == "stocks") for q in ("Q1", "Q2", "Q3", "Q4", "Q5", "Q6", "Q7")]
    return out


def select(dataset: str, names: list[str] | None = None,
           families: list[str] | None = None) -> list[Workload]:
    """The workloads of ``dataset`` with the given names and/or families (all if None)."""
    every = workloads(dataset)
    if families:
        unknown = set(families) - set(FAMILIES)
        if unknown:
            raise CercoreError(f"unknown workload famil{'ies' if len(unknown) > 1 else 'y'} "
                               f"{sorted(unknown)}; known: {', '.join(FAMILIES)}")
    chosen = [w for w in every
              if (not names or w.name in names) and (not families or w.family in families)]
    if names:
        missing = set(names) - {w.name for w in every}
        if missing:
            known = ", ".join(w.name for w in every)
            raise CercoreError(f"unknown workload(s) {sorted(missing)} for {dataset}; "
                               f"known: {known}")
    return chosen
