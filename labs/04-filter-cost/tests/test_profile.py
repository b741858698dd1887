"""Lab 04 under `scripts/lab run --profile`: the server's flight recorder sees where a chain of
plain Filters spends its Java code's time, and the driver draws each variant's flame graph.

The chapter's claim, checked on a short run: a plain `Filter` materializes a stream per request
(Play's FlattenedAccumulator, run by Akka Streams' materializer), an EssentialFilter does not. So
the plain chain's samples sit in the materializer far more often than the essential chain's.
"""

from __future__ import annotations

import re

import pytest

from pul import profile, report
from pul.testing import by_name, run_lab, within

pytestmark = pytest.mark.slow

CHAIN = 8
MATERIALIZER = "akka/stream/impl/PhasedFusingActorMaterializer"


@pytest.fixture(scope="module")
def profiled(tmp_path_factory):
    folder = tmp_path_factory.mktemp("lab04-profile")
    results = run_lab("04", "--chain-lengths", f"1,{CHAIN}", "--java-chain-lengths", "1", "--repeat", "2",
                      "--variant", "none", "--variant", f"plain-x{CHAIN}", "--variant", f"essential-x{CHAIN}",
                      "--profile", "2", "--quiet", results_dir=folder)
    return folder, results


def stacks(folder, v):
    return profile.read(profile.folded_file(folder, v["profile"]))


def test_every_variant_has_its_profile_and_its_flame_graph(profiled):
    folder, results = profiled
    for v in results["variants"]:
        record = v["profile"]
        assert record["period_ms"] == 2
        # Two runs of a second at 2 ms: a few hundred samples at most; far fewer means no recording.
        assert record["samples"] >= 30, f"{v['name']}: {record['samples']} samples"
        assert record["truncated"] == 0, f"{v['name']}: {record['truncated']} stacks truncated"
        assert stacks(folder, v).samples == record["samples"]
        # Play's requests run on its default dispatcher: most samples are there.
        assert record["pools"][0]["pool"] == "[application-akka.actor.default-dispatcher-N]"
        svg = (folder / record["file"]).with_name(f"{v['name']}.flame.svg").read_text()
        assert re.search(r"<svg\b[^>]*><title>Lab 04-filter-cost, " + re.escape(v["name"]), svg)


def test_a_plain_filter_chain_runs_in_the_stream_materializer_an_essential_one_does_not(profiled):
    folder, results = profiled
    variants = by_name(results)
    plain = profile.share_under(stacks(folder, variants[f"plain-x{CHAIN}"]), lambda f: f.startswith(MATERIALIZER))
    essential = profile.share_under(stacks(folder, variants[f"essential-x{CHAIN}"]),
                                    lambda f: f.startswith(MATERIALIZER))
    print(f"samples in {MATERIALIZER}: plain-x{CHAIN} {plain:.0%}, essential-x{CHAIN} {essential:.0%}")
    # Measured in full runs: about 30% against 0%. A short run takes a few dozen samples of the
    # essential chain, so one sample in the materializer (a response's own stream, say) is 3% of
    # them (a fresh machine's run: 28% against 3%): the essential chain's share is compared with the
    # plain one's, a third of it at most ("far more often"), not with a fixed line.
    within(f"plain-x{CHAIN} share of samples in the materializer", plain, 0.10)
    within(f"essential-x{CHAIN} share of samples in the materializer over plain-x{CHAIN}'s", essential / plain,
           None, 1 / 3, context=(plain, essential))


def test_the_report_reads_a_profiled_run(profiled):
    """The chapter's table, drawn from this run as the report draws it from the committed one."""
    folder, results = profiled

    class Lab:
        dir = folder.parent
        name = "04-filter-cost"

    (folder.parent / "results").mkdir(exist_ok=True)
    link = folder.parent / "results" / report.PROFILE_DIR
    if not link.exists():
        link.symlink_to(folder)
    table = report.profile_markdown(Lab, results, ["none", f"plain-x{CHAIN}"],
                                    [("materializer", lambda f: f.startswith(MATERIALIZER))])
    assert f"| plain-x{CHAIN} |" in table and results["command"] in table
