#!/usr/bin/env python3
"""Where a CI stage's time went: the build (compile and link, from Ninja's log) and the
tests (per label and per test program, from ctest's record of the last run).

    scripts/ci-times.py BUILD_DIR [BUILD_DIR ...]

Build times are the sum of each step's own duration (CPU-bound steps on 2 cores: about
twice the wall time they take); test times are each test's wall time as ctest measured it,
summed, so a test counted under three labels counts three times. docs/testing.md "CI".
"""
import json
import os
import subprocess
import sys
from collections import defaultdict


def ninja_steps(build_dir):
    """(seconds, [outputs]) for each step of the last build, from .ninja_log (format v5).

    One step may write several outputs (a link and the test list gtest_discover_tests
    writes after it): the log has a line for each, with the same start, end and command
    hash."""
    path = os.path.join(build_dir, ".ninja_log")
    if not os.path.exists(path):
        return []
    latest = {}  # output -> (start, end, hash): a rebuilt output keeps its last step
    with open(path) as log:
        for line in log:
            if line.startswith("#"):
                continue
            parts = line.rstrip("\n").split("\t")
            if len(parts) < 5:
                continue
            latest[parts[3]] = (int(parts[0]), int(parts[1]), parts[4])
    steps = defaultdict(list)
    for output, step in latest.items():
        steps[step].append(output)
    return [((end - start) / 1000.0, outputs) for (start, end, _), outputs in steps.items()]


def step_kind(outputs):
    if any(o.endswith(".o") for o in outputs):
        return "compile"
    if any(o.endswith((".a", ".so")) or o.startswith("bin/") or "/bin/" in o for o in outputs):
        return "link"
    return "other"


def report_build(build_dir):
    steps = ninja_steps(build_dir)
    if not steps:
        print(f"  build: no .ninja_log in {build_dir}")
        return
    totals = defaultdict(lambda: [0.0, 0])
    for seconds, outputs in steps:
        totals[step_kind(outputs)][0] += seconds
        totals[step_kind(outputs)][1] += 1
    parts = ", ".join(f"{kind} {t[0]:.0f} s in {t[1]} steps" for kind, t in sorted(totals.items()))
    print(f"  build (sum of step times): {parts}")
    by_folder = defaultdict(float)
    for seconds, outputs in steps:
        if step_kind(outputs) == "compile":
            path = min(outputs, key=len).split("/CMakeFiles/")[0].split("/")
            by_folder["/".join(path[:2] if path[0] == "tests" else path[:1])] += seconds
    print("    compile by folder: " + ", ".join(
        f"{folder} {t:.0f} s" for folder, t in sorted(by_folder.items(), key=lambda i: -i[1])))
    for seconds, outputs in sorted(steps, reverse=True)[:6]:
        print(f"    {seconds:6.1f} s  {min(outputs, key=len)}")


def test_costs(build_dir):
    """{test name: seconds} from ctest's CTestCostData.txt (the last run's times)."""
    path = os.path.join(build_dir, "Testing", "Temporary", "CTestCostData.txt")
    costs = {}
    if not os.path.exists(path):
        return costs
    with open(path) as data:
        for line in data:
            if line.startswith("---"):
                break
            parts = line.split()
            if len(parts) == 3:
                costs[parts[0]] = float(parts[2])
    return costs


def test_metadata(build_dir):
    """{test name: (labels, program)} from `ctest --show-only=json-v1`."""
    shown = subprocess.run(["ctest", "--show-only=json-v1"], cwd=build_dir, capture_output=True,
                           text=True, check=False)
    if shown.returncode != 0:
        return {}
    tests = {}
    for test in json.loads(shown.stdout).get("tests", []):
        labels, program = [], "?"
        for prop in test.get("properties", []):
            if prop.get("name") == "LABELS":
                labels = prop.get("value", [])
        command = test.get("command") or []
        if command:
            program = os.path.basename(command[0])
            if program == "cmake" and len(command) > 1:  # `cmake -E env ... program`
                program = os.path.basename(next((c for c in command[1:] if "/" in c), command[-1]))
        tests[test["name"]] = (labels, program)
    return tests


def report_tests(build_dir):
    costs = test_costs(build_dir)
    if not costs:
        print(f"  tests: no run recorded in {build_dir}")
        return
    meta = test_metadata(build_dir)
    by_label = defaultdict(lambda: [0.0, 0])
    by_program = defaultdict(lambda: [0.0, 0])
    for name, seconds in costs.items():
        labels, program = meta.get(name, ([], "?"))
        for label in labels or ["(none)"]:
            by_label[label][0] += seconds
            by_label[label][1] += 1
        by_program[program][0] += seconds
        by_program[program][1] += 1
    print(f"  tests: {len(costs)} run, {sum(costs.values()):.0f} s summed")
    print("    by label: " + ", ".join(
        f"{label} {t[0]:.0f} s/{t[1]}" for label, t in sorted(by_label.items(), key=lambda i: -i[1][0])))
    print("    slowest programs: " + ", ".join(
        f"{program} {t[0]:.0f} s/{t[1]}"
        for program, t in sorted(by_program.items(), key=lambda i: -i[1][0])[:8]))


def main(argv):
    for build_dir in argv[1:]:
        if not os.path.isdir(build_dir):
            continue
        print(f"== {build_dir}")
        report_build(build_dir)
        report_tests(build_dir)


if __name__ == "__main__":
    main(sys.argv)
