"""Each lab's Python code lives in its own folder, `labs/NN-name/` (driver.py, report.py).

This package makes that folder importable as `pul.labs.labNN`, so a lab's modules can
import each other (`from .driver import ...`) and tests can import them by name
(`from pul.labs.labNN.driver import ...`). It knows no lab: it finds the
folder by its number.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
from pathlib import Path

LABS_DIR = Path(__file__).resolve().parents[3] / "labs"
PREFIX = __name__ + ".lab"


def package_name(number: str) -> str:
    return f"{PREFIX}{number}"


def folder(number: str) -> Path | None:
    """The folder of lab NN (`labs/NN-*/`), or None."""
    found = sorted(path for path in LABS_DIR.glob(f"{number}-*") if path.is_dir())
    return found[0] if found else None


class _LabFolders(importlib.abc.MetaPathFinder):
    """Finds `pul.labs.labNN` in `labs/NN-*/`, as a package whose modules are that folder's files."""

    def find_spec(self, fullname, path=None, target=None):
        number = fullname[len(PREFIX):] if fullname.startswith(PREFIX) else ""
        if not (len(number) == 2 and number.isdigit()):
            return None
        lab_dir = folder(number)
        if lab_dir is None:
            return None
        # No loader: like a namespace package, the module is its folder and nothing runs.
        spec = importlib.machinery.ModuleSpec(fullname, None, is_package=True)
        spec.submodule_search_locations = [str(lab_dir)]
        return spec


if not any(isinstance(finder, _LabFolders) for finder in sys.meta_path):
    sys.meta_path.append(_LabFolders())
