"""The benchmark suite behind ``cercore-bench``: the CORE paper's datasets (``datasets``), its
query workloads (``workloads``), peers (``peers``), timing (``runner``) and figures
(``plots``). Installed with the package, so the CLI runs from a wheel."""
