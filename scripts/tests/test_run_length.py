"""A workshop's run fits in its slot: every lab's committed default run took at most
MAX_DEFAULT_RUN_SECONDS (issue #32), measured by the run itself (duration_s: from the moment the
machine was the run's to its last result, the build included, the wait for another run not)."""

from __future__ import annotations

import pytest

from pul.lab import all_labs
from pul.testing import committed_results

# The instructor guide's slot for one lab's run, with its table read together.
MAX_DEFAULT_RUN_SECONDS = 180

# Known to take longer (issue #32, open): strict, so that the mark goes once the run is fast enough.
OVER = {"06-virtual-threads": "207 s committed; 207-235 s in five default runs on a 2-core Intel Xeon: two "
                              "servers, each JVM's JIT compiler busy through ~17 s of its first warm-up, "
                              "then twelve variants each warmed up, calibrated and measured (12-20 s each)"}

LABS = [pytest.param(folder.name, marks=pytest.mark.xfail(reason=OVER[folder.name], strict=True))
        if folder.name in OVER else folder.name
        for _, folder, lab in all_labs() if lab is not None]


@pytest.mark.parametrize("folder", LABS)
def test_the_committed_default_run_took_at_most_three_minutes(folder):
    results = committed_results(folder)
    assert results["mode"] == "default", f"{folder}: the committed run is a {results['mode']} run"
    spent = results.get("phase_seconds") or {}
    slowest = sorted(spent.items(), key=lambda kv: -kv[1])[:5]
    assert results["duration_s"] <= MAX_DEFAULT_RUN_SECONDS, (
        f"{folder}: {results['duration_s']} s; its slowest phases: {slowest or 'not recorded (an older run)'}")
