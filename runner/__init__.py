"""zoo.runner: Ray Tune orchestration only (spec variants to trials, resources, resume, failures, the store).

This folder is installed as the package `zoo.runner` (pyproject.toml's package-dir maps runner/ there;
the design keeps runner/ at the top level): import it as `zoo.runner`, never as `runner`. In a plain
checkout without `pip install -e .` it is not importable, and `zoo` says so in one line.
"""
