"""pul.schema, the standard-library validator `scripts/merge-results` checks students' files with,
agrees with `jsonschema` on scripts/results.schema.json."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import jsonschema
import pytest

from pul import schema

REPO = Path(__file__).resolve().parents[2]
SCHEMA_PATH = REPO / "scripts" / "results.schema.json"
COMMITTED = sorted(REPO.glob("labs/*/results/**/*.json"))


def _both(instance, the_schema) -> tuple[bool, bool]:
    ours = not schema.errors(instance, the_schema)
    theirs = jsonschema.validators.validator_for(the_schema)(the_schema).is_valid(instance)
    return ours, theirs


def test_the_results_schema_uses_only_keywords_the_validator_implements():
    schema.load(SCHEMA_PATH)  # raises SchemaError otherwise
    with pytest.raises(schema.SchemaError, match="oneOf"):
        schema.check_schema({"properties": {"x": {"oneOf": [{"type": "string"}]}}})


@pytest.mark.parametrize("path", COMMITTED, ids=lambda p: f"{p.parent.parent.name}/{p.name}")
def test_every_committed_results_file_is_valid(path):
    data = json.loads(path.read_text())
    assert schema.errors(data, schema.load(SCHEMA_PATH)) == []


def _mutations(data: dict):
    yield "valid", data
    for name, change in {
        "no schema_version": lambda d: d.pop("schema_version"),
        "schema_version 2": lambda d: d.update(schema_version=2),
        "schema_version true": lambda d: d.update(schema_version=True),
        "schema_version 1.0": lambda d: d.update(schema_version=1.0),
        "lab with a newline": lambda d: d.update(lab=d["lab"] + "\n"),
        "lab with a slash": lambda d: d.update(lab="01-a/b"),
        "started_at free text": lambda d: d.update(started_at="yesterday"),
        "cores 0": lambda d: d["machine"].update(cores=0),
        "cores 2.0": lambda d: d["machine"].update(cores=2.0),
        "cores true": lambda d: d["machine"].update(cores=True),
        "memory null": lambda d: d["machine"].update(memory_gib=None),
        "memory text": lambda d: d["machine"].update(memory_gib="16"),
        "pinning without load_cpus": lambda d: d["machine"]["pinning"].pop("load_cpus"),
        "no variants": lambda d: d.update(variants=[]),
        "variants not a list": lambda d: d.update(variants={}),
        "empty name": lambda d: d["variants"][0].update(name=""),
        "name a number": lambda d: d["variants"][0].update(name=3),
        "rate negative": lambda d: d["variants"][0].update(requests_per_sec=-1),
        "rate text": lambda d: d["variants"][0].update(requests_per_sec="1"),
        "prediction null": lambda d: d["variants"][0].update(predicted_requests_per_sec=None),
        "errors not strings": lambda d: d["variants"][0].update(errors=[1]),
        "server_properties not strings": lambda d: d["variants"][0].update(server_properties={"a": 1}),
        "settings strings": lambda d: d.update(settings={"a": "b"}),
        "settings not strings": lambda d: d.update(settings={"a": 2}),
        "target https": lambda d: d.update(target="https://x:1"),
        "server_cpu_source other": lambda d: d.update(server_cpu_source="guess"),
        "warmup without rounds": lambda d: d["variants"][0].update(warmup={"settled": True}),
        "params concurrency 0": lambda d: d["params"].update(concurrency=0),
        "params extra key": lambda d: d["params"].update(anything=[1, {"x": None}]),
        "skipped without command": lambda d: d.update(skipped_variants=[{"name": "x"}]),
        "no bound named": lambda d: d["variants"][0].pop("bound_by"),
        "bound by the moon": lambda d: d["variants"][0].update(bound_by="the moon"),
        "a bound in words": lambda d: d["variants"][0].update(bounds={"threads": "many"}),
        "calibration without its spread": lambda d: (d["variants"][0].get("calibration") or {}).pop(
            "server_cpu_ms_spread", None) if d["variants"][0].get("calibration") else d["variants"][0].update(calibration=1),
        "no mode": lambda d: d.pop("mode"),
        "mode quick": lambda d: d.update(mode="quick"),
        "no load average before the step": lambda d: d["variants"][0].pop("load_average_before"),
    }.items():
        changed = copy.deepcopy(data)
        change(changed)
        yield name, changed


@pytest.mark.skipif(not COMMITTED, reason="no committed results yet")
def test_the_validator_agrees_with_jsonschema_on_broken_copies():
    the_schema = schema.load(SCHEMA_PATH)
    data = json.loads(COMMITTED[0].read_text())
    disagreements = [(name, *_both(instance, the_schema)) for name, instance in _mutations(data)
                     if len(set(_both(instance, the_schema))) > 1]
    # One on purpose: jsonschema matches patterns with Python's re, whose `$` also matches before a
    # final newline; ECMA-262's (the dialect JSON Schema names) does not, nor does ours.
    assert disagreements == [("lab with a newline", False, True)], "(mutation, ours, jsonschema's)"
    assert schema.errors(data, the_schema) == []
    broken = copy.deepcopy(data)
    broken["variants"][0]["requests_per_sec"] = "fast"
    assert schema.errors(broken, the_schema) == ['variants[0].requests_per_sec: must be number (got "fast")']
