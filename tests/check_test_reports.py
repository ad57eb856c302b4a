#!/usr/bin/env python3
"""Tests that say what they did (ctest build/a_case_that_cannot_run_reports_skipped, build/test_labels).

skips:  every CPU and GPU case (unit/, cache/, gpu/) is skipped by ctest when it prints "[kjit-skip]"
        (SKIP_REGULAR_EXPRESSION); and CASE, a root-only case, run by a real ctest as an unprivileged
        user (setpriv, when root) is reported skipped, with its reason, never passed.
sources: every test file is named after the room it tests (tests/unit/test_<room>_<class>.cpp, the
        rooms of layers.json, and the facade's runtime, measure's bench and the shipped kernels), and no
        test case returns early without saying why (a bare `if (...) return;` in a case's body counts
        as passed: KJIT_SKIP, support/skip.hpp, reports it skipped).
labels: each name of the SLOW file (set_tests_properties([==[name]==] PROPERTIES LABELS slow)) is a
        test labelled slow, every gpu/ test keeps the label gpu, and the GPU binary's doctest suites
        name concepts (none is called "gpu").

Usage: check_test_reports.py --ctest CTEST --build DIR skips --case NAME
       check_test_reports.py --ctest CTEST --build DIR sources --root ROOT
       check_test_reports.py --ctest CTEST --build DIR labels --slow FILE --gpu-tests BIN
(exit 0: all holds; 1: what does not is printed)
"""
import argparse
import json
import os
import pathlib
import re
import subprocess
import sys
import tempfile

SKIP_MARK = "[kjit-skip]"


def ctest_tests(ctest, build):
    done = subprocess.run([ctest, "--test-dir", build, "--show-only=json-v1"], capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"check_test_reports: {ctest} --show-only=json-v1 in {build} failed: {done.stderr.strip()}")
    tests = {}
    for t in json.loads(done.stdout)["tests"]:
        props = {p["name"]: p["value"] for p in t.get("properties", [])}
        tests[t["name"]] = {"command": t.get("command", []), "properties": props}
    return tests


def as_list(value):
    return value if isinstance(value, list) else [value]


def skips(args, tests):
    problems = []
    cases = [n for n in tests if n.startswith(("unit/", "cache/", "gpu/"))]
    if not cases:
        problems.append(f"no unit/, cache/ or gpu/ test in {args.build}")
    unmarked = [n for n in cases if not any(re.search(r, f"{SKIP_MARK} why") for r in
                                            as_list(tests[n]["properties"].get("SKIP_REGULAR_EXPRESSION", [])))]
    if unmarked:
        problems.append(f"{len(unmarked)} of {len(cases)} cases would be counted passed, not skipped, when "
                        f"they print \"{SKIP_MARK} <why>\" (no SKIP_REGULAR_EXPRESSION matches it), e.g.:")
        problems += [f"  {n}" for n in unmarked[:5]]
    if problems:
        return problems

    case = tests.get(args.case)
    if case is None:
        return [f"{args.case}: no such test in {args.build}"]
    command = list(case["command"])
    if os.geteuid() == 0:  # the case needs root: run it as nobody
        command = ["setpriv", "--reuid=54321", "--regid=54321", "--clear-groups", "--", *command]
    props = case["properties"]
    with tempfile.TemporaryDirectory() as work:
        lines = [f"add_test([==[case]==] {' '.join(f'[==[{c}]==]' for c in command)})",
                 "set_tests_properties([==[case]==] PROPERTIES WORKING_DIRECTORY / "
                 + " ".join(f"{key} [==[{';'.join(as_list(props[key]))}]==]"
                            for key in ("SKIP_REGULAR_EXPRESSION", "PASS_REGULAR_EXPRESSION") if key in props)
                 + ")"]
        (pathlib.Path(work) / "CTestTestfile.cmake").write_text("\n".join(lines) + "\n")
        done = subprocess.run([args.ctest, "--test-dir", work, "-V"], capture_output=True, text=True)
    out = done.stdout + done.stderr
    if done.returncode != 0 or not re.search(r"\*\*\*Skipped", out) or f"{SKIP_MARK} not root" not in out:
        problems.append(f"{args.case}, run as an unprivileged user by ctest (exit {done.returncode}), "
                        f"is not reported skipped with its reason:\n{out}")
    else:
        print(f"{args.case}: skipped as an unprivileged user, and says why:")
        print("\n".join(l for l in out.splitlines() if SKIP_MARK in l or "Skipped" in l))
    return problems


def labels(args, tests):
    problems = []
    slow = re.findall(r"set_tests_properties\(\[==\[(.*?)\]==\] PROPERTIES LABELS slow\)",
                      pathlib.Path(args.slow).read_text())
    if not slow:
        problems.append(f"{args.slow}: names no slow test")
    for name in slow:
        if name not in tests:
            problems.append(f"{name}: labelled slow in tests/CMakeLists.txt, but no test has that name")
        elif "slow" not in as_list(tests[name]["properties"].get("LABELS", [])):
            problems.append(f"{name}: has no label slow (labels: {tests[name]['properties'].get('LABELS')})")
    for name, t in tests.items():
        if name.startswith("gpu/") and "gpu" not in as_list(t["properties"].get("LABELS", [])):
            problems.append(f"{name}: has lost the label gpu (labels: {t['properties'].get('LABELS')})")
    done = subprocess.run([args.gpu_tests, "--list-test-suites"], capture_output=True, text=True)
    suites = [l.strip() for l in done.stdout.splitlines()
              if l.strip() and not l.startswith("[doctest]") and not l.startswith("=====")]
    if done.returncode != 0 or len(suites) < 2 or "gpu" in suites:
        problems.append(f"{args.gpu_tests}: its doctest suites should name concepts, one per class or "
                        f"feature, none \"gpu\"; they are {suites} (exit {done.returncode})")
    else:
        print(f"{len(slow)} slow tests labelled; GPU suites: {', '.join(suites)}")
    return problems


# Test file prefixes that name no room folder: core/measure's public kjit::bench, the shipped kernels
# (kernels_src/ and kernels::Kernels<T>); and the facade's own tests (core/runtime.cpp's Runtime),
# by name: a test of another room through the Runtime is named after that room.
NOT_FOLDER_PREFIXES = {"bench", "kernels"}
FACADE_TESTS = {"test_runtime.cpp", "test_runtime_fork.cpp", "test_runtime_prepare.cpp"}
CASE_BODY_RETURN = re.compile(r"^    if \((.*)\) return;")


def sources(args):
    root = pathlib.Path(args.root)
    problems = []
    rooms = json.loads((root / "layers.json").read_text())["rooms"]
    names = {r["folder"].rstrip("/").rsplit("/", 1)[-1] for r in rooms} | NOT_FOLDER_PREFIXES
    for path in sorted((root / "tests/unit").glob("test_*.cpp")):
        prefix = path.stem[len("test_"):].split("_", 1)[0]
        if prefix not in names and path.name not in FACADE_TESTS:
            problems.append(f"tests/unit/{path.name}: named after no room (test_<room>_<class>.cpp; rooms: "
                            f"{', '.join(sorted(names))})")
    files = sorted(root.glob("tests/unit/*.cpp")) + sorted(root.glob("tests/gpu/*.cpp")) + \
        sorted(root.glob("tests/library/*.cpp"))
    for path in files:
        text = path.read_text()
        lines = text.splitlines()
        for n, line in enumerate(lines, 1):
            m = CASE_BODY_RETURN.match(line)
            if not m:
                continue
            opener = next((l for l in reversed(lines[:n - 1]) if l.strip() and len(l) - len(l.lstrip()) < 4), "")
            if "TEST_CASE" not in opener:
                continue  # a helper's or a class's function, not a case's body
            # Allowed when the condition's function says why first ("[kjit-skip] ..." in its body).
            called = re.match(r"!?\s*([A-Za-z_][A-Za-z0-9_:]*)\(", m.group(1).strip())
            body = ""
            if called:
                at = re.search(rf"^[A-Za-z][^\n;]*\b{re.escape(called.group(1).split('::')[-1])}\([^\n;]*\{{\n",
                               text, re.M)
                body = text[at.end():at.end() + 600].split("\n}", 1)[0] if at else ""
            if SKIP_MARK not in body:
                problems.append(f"{path.relative_to(root)}:{n}: a test case returns early and would count as "
                                f"passed; say why with KJIT_SKIP (support/skip.hpp): {line.strip()}")
    if not problems:
        print(f"{len(files)} test files: named after their rooms, no case returns early unsaid")
    return problems


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ctest", required=True)
    parser.add_argument("--build", required=True)
    sub = parser.add_subparsers(dest="what", required=True)
    s = sub.add_parser("skips")
    s.add_argument("--case", required=True)
    so = sub.add_parser("sources")
    so.add_argument("--root", required=True)
    l = sub.add_parser("labels")
    l.add_argument("--slow", required=True)
    l.add_argument("--gpu-tests", required=True)
    args = parser.parse_args()
    if args.what == "sources":
        problems = sources(args)
    else:
        tests = ctest_tests(args.ctest, args.build)
        problems = skips(args, tests) if args.what == "skips" else labels(args, tests)
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
