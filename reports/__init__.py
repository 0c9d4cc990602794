"""zoo.reports: the report generator only (the results store, the paper and the cost model in; tables,
plots and HTML out).

This folder is installed as the package `zoo.reports` (pyproject.toml's package-dir maps reports/ there;
the design keeps reports/ at the top level): import it as `zoo.reports`, never as `reports`. In a plain
checkout without `pip install -e .` it is not importable, and `zoo` says so in one line. The committed
reference reports live in the top-level results/ folder, not here among the generator's modules.
"""
