"""The CORE paper's query workloads (§5, appendices D–G) for each dataset.

* ``P<n>``: sequences of n events with per-event filters, n in 3, 6, 9, 12, 24 (the paper's
  S<n> on stocks, H<n> on smart homes, T<n> on taxi trips), window T (10 s on stocks and smart
  homes, 10,000 s on taxis);
* ``P'<n>``: the same plus a final event that never occurs (no output: update cost only);
* ``P'3@kT``: P'3 with the window k·T, k in 1, 2, 4, 8, 16;
* ``Q1``–``Q7``: the stock queries with filters, PARTITION BY, disjunction and iteration.

The paper's methodology (``methodology=True``, the default) adds ``CONSUME BY ANY`` (unless the
query says otherwise) and ``LIMIT 1000``: at most a thousand complex events per pattern
occurrence.
"""

from __future__ import annotations

from dataclasses import dataclass

SIZES = (3, 6, 9, 12, 24)
WINDOW_FACTORS = (1, 2, 4, 8, 16)

STOCK_CYCLE = ["INTC", "RIMM", "QQQ", "IPIX", "AMAT", "CSCO", "YHOO", "DELL", "ORCL", "MSFT",
               "INTC", "RIMM"]
HOUSEHOLDS = [0, 2, 4, 6, 9, 10, 12, 14, 15, 1, 3, 5]
TAXI_CHAIN = ["East Harlem North", "Midwood", "Gravesend", "West Brighton",
              "Lincoln Square West", "Sutton Place/Turtle Bay North",
              "East Concourse/Concourse Village", "East Harlem North", "East Harlem North",
              "Gravesend", "Midwood", "Midwood", "Gravesend"]
WINDOW = {"stocks": (10_000, "stock_time"), "smart_homes": (10, "plug_timestamp"),
          "taxis": (10_000, "dropoff_datetime")}


@dataclass(frozen=True)
class Workload:
    name: str  # e.g. "P3", "P'3@4T", "Q5"
    dataset: str  # stocks | smart_homes | taxis
    family: str  # sequence | no-output | window | stock-operators
    n: int  # sequence length (0 when not a sequence)
    window_factor: int
    body: str  # the query without the methodology clauses

    def text(self, methodology: bool = True) -> str:
        if not methodology:
            return self.body
        consume = "" if "CONSUME BY" in self.body else "\nCONSUME BY ANY"
        return self.body + consume + "\nLIMIT 1000"


def _sequence(dataset: str, n: int, factor: int = 1, no_output: bool = False) -> str:
    window, attr = WINDOW[dataset]
    atoms, filters = [], []
    if dataset == "stocks":
        for i in range(n):
            atoms.append(f"{'SELL' if i % 3 == 0 else 'BUY'} as T{i + 1}")
            filters.append(f"T{i + 1}[name = '{STOCK_CYCLE[i % 12]}']")
        if no_output:
            atoms.append("BUY as NE")
            filters.append("NE[name = 'NotExists']")
        where = f"({'; '.join(atoms)})"
    elif dataset == "smart_homes":
        for i in range(n):
            atoms.append(f"LOAD as L{i + 1}")
            filters.append(f"L{i + 1}[household_id = {HOUSEHOLDS[i % 12]}]")
        if no_output:
            atoms.append("LOAD as NE")
            filters.append("NE[household_id = -1]")
        where = f"({'; '.join(atoms)}) as L"
        filters.insert(0, "L[value > 76]")
    else:
        for i in range(n):
            a, b = TAXI_CHAIN[i % 12], TAXI_CHAIN[i % 12 + 1]
            atoms.append(f"TRIP as loc{i + 1}")
            filters.append(f"loc{i + 1}[pickup_loc = '{a}' AND dropoff_loc = '{b}']")
        if no_output:
            atoms.append("TRIP as NE")
            filters.append("NE[pickup_loc = 'Nowhere']")
        where = f"({'; '.join(atoms)})"
    return (f"SELECT * FROM S\nWHERE {where}\nFILTER {' AND '.join(filters)}\n"
            f"WITHIN {window * factor} [{attr}]")


_Q_BODY = {
    "Q1": ("(SELL as msft; BUY as oracle; BUY as csco; SELL as amat)", "", ""),
    "Q2": ("(SELL as msft; BUY as oracle; BUY as csco; SELL as amat)", "prices", ""),
    "Q3": ("(SELL as msft; BUY as oracle; BUY as csco; SELL as amat)", "",
           "\nPARTITION BY [volume]"),
    "Q4": ("(SELL as msft; (BUY OR SELL) as oracle; (BUY OR SELL) as csco; SELL as amat)",
           "", ""),
    "Q5": ("(SELL as msft; (BUY OR SELL) as oracle; (BUY OR SELL) as csco; SELL as amat)",
           "prices", ""),
    "Q6": ("(SELL as msft; (BUY OR SELL) as oracle; (BUY OR SELL) as csco; SELL as amat)",
           "", "\nPARTITION BY [volume]"),
}


def _stock_query(name: str) -> str:
    if name == "Q7":
        return ("SELECT * FROM S\nWHERE (SELL as msft; (BUY OR SELL)+ as qqq; SELL as amat)\n"
                "FILTER msft[name = 'MSFT'] AND qqq[name = 'QQQ'] AND qqq[volume = 4000] "
                "AND amat[name = 'AMAT']\nWITHIN 30000 [stock_time]")
    where, prices, partition = _Q_BODY[name]
    filters = ["msft[name = 'MSFT']", "oracle[name = 'ORCL']", "csco[name = 'CSCO']",
               "amat[name = 'AMAT']"]
    if prices:
        filters += ["msft[price > 26.0]", "oracle[price > 11.14]", "amat[price >= 18.92]"]
    consume = "\nCONSUME BY ANY" if partition else ""
    return (f"SELECT * FROM S\nWHERE {where}\nFILTER {' AND '.join(filters)}{partition}\n"
            f"WITHIN 30000 [stock_time]{consume}")


def workloads(dataset: str) -> list[Workload]:
    """Every workload of ``dataset`` (``stock_trace`` uses the stock workloads)."""
    base = "stocks" if dataset == "stock_trace" else dataset
    out = [Workload(f"P{n}", dataset, "sequence", n, 1, _sequence(base, n)) for n in SIZES]
    out += [Workload(f"P'{n}", dataset, "no-output", n, 1, _sequence(base, n, no_output=True))
            for n in SIZES]
    out += [Workload(f"P'3@{k}T", dataset, "window", 3, k,
                     _sequence(base, 3, k, no_output=True)) for k in WINDOW_FACTORS]
    if base == "stocks":
        out += [Workload(q, dataset, "stock-operators", 0, 1, _stock_query(q))
                for q in ("Q1", "Q2", "Q3", "Q4", "Q5", "Q6", "Q7")]
    return out


def select(dataset: str, names: list[str] | None = None,
           families: list[str] | None = None) -> list[Workload]:
    """The workloads of ``dataset`` with the given names and/or families (all if None)."""
    chosen = [w for w in workloads(dataset)
              if (not names or w.name in names) and (not families or w.family in families)]
    if names:
        missing = set(names) - {w.name for w in chosen}
        if missing:
            from cercore.errors import CercoreError

            known = ", ".join(w.name for w in workloads(dataset))
            raise CercoreError(f"unknown workload(s) {sorted(missing)} for {dataset}; "
                               f"known: {known}")
    return chosen
