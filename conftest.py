"""Loaded by pytest for every test under the repository (pytest.ini is here)."""

pytest_plugins = ["pul.pytest_signals", "pul.pytest_census"]
