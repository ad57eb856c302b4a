#!/usr/bin/env python3
"""Tests that say what they did (ctest build/a_case_that_cannot_run_reports_skipped, build/test_labels).

skips:  every CPU and GPU case (unit/, cache/, gpu/) is skipped by ctest when it prints "[kjit-skip]"
        (SKIP_REGULAR_EXPRESSION); and CASE, a root-only case, run by a real ctest as an unprivileged
        user (setpriv, when root) is reported skipped, with its reason, never passed.
sources: every test file is named after the room it tests (tests/unit/test_<room>_<class>.cpp, the
        rooms of layers.json, and the facade's runtime, measure's bench and the shipped kernels); no
        test case returns early without saying why (a `return` in a case's own code, one line or
        braced over several, in a loop or a subcase, counts as passed: KJIT_SKIP, support/skip.hpp,
        reports it skipped; a lambda's or a local class's return is theirs); and no test source but
        support/skip.hpp prints "[kjit-skip]" (every skip goes through KJIT_SKIP).
fixture: the sources checks against a fixture whose lines to refuse end in "// refused" (those
        are refused, and no other).
labels: each name of the SLOW file (set_tests_properties([==[name]==] PROPERTIES LABELS slow COST n)) is a
        test labelled slow, every gpu/ test keeps the label gpu, and the GPU binary's doctest suites
        name concepts (none is called "gpu").

Usage: check_test_reports.py --ctest CTEST --build DIR skips --case NAME
       check_test_reports.py --ctest CTEST --build DIR sources --root ROOT
       check_test_reports.py --ctest CTEST --build DIR labels --slow FILE --gpu-tests BIN
       check_test_reports.py --ctest CTEST --build DIR fixture --file FILE
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
    slow = re.findall(r"set_tests_properties\(\[==\[(.*?)\]==\] PROPERTIES LABELS slow(?: COST [0-9.]+)?\)",
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
# C++ as far as the early-return check needs it: comments, directives (with their continuations),
# string, character and raw string literals skipped whole; identifiers and punctuation kept.
CPP_TOKEN = re.compile(r"""
  (?P<space>[ \t\r\f\v]+|\\\n)
 |(?P<newline>\n)
 |(?P<comment>//(?:[^\n\\]|\\.)*|/\*.*?(?:\*/|\Z))
 |(?P<raw>(?:u8|[uUL])?R"(?P<delim>[^()\\\s]{0,16})\()
 |(?P<string>(?:u8|[uUL])?"(?:[^"\\\n]|\\.)*"?)
 |(?P<char>(?:u8|[uUL])?'(?:[^'\\\n]|\\.)*'?)
 |(?P<number>\.?\d(?:[eEpP][+-]|[\w.']|)*)
 |(?P<name>[A-Za-z_]\w*)
 |(?P<punct>->|::|.)
""", re.S | re.X)


def cpp_tokens(text):
    """(kind, text, line) of each token: kind is name, punct, number, string, char (a raw string is
    a string) or directive (one whole, its continuations included); comments are dropped."""
    out, pos, line, line_start = [], 0, 1, True
    while pos < len(text):
        m = CPP_TOKEN.match(text, pos)
        kind = m.lastgroup if m.lastgroup != "delim" else "raw"
        end = m.end()
        if kind == "raw":
            close = text.find(")" + m.group("delim") + '"', end)
            end = len(text) if close < 0 else close + len(m.group("delim")) + 2
            kind = "string"
        elif kind == "punct" and m.group() == "#" and line_start:  # a directive, to its unspliced end
            directive = re.compile(r"(?:[^\n\\]|\\.|\\\n)*", re.S).match(text, pos)
            end = directive.end()
            kind = "directive"
        if kind not in ("space", "newline", "comment"):
            out.append((kind, text[pos:end], line))
        if kind == "newline":
            line_start = True
        elif kind not in ("space", "comment"):
            line_start = False
        line += text.count("\n", pos, end)
        pos = end
    return out


def matching(tokens, at, step):
    """The index of the bracket matching tokens[at] (step 1: forward from an opener, -1: back from a closer)."""
    pairs = {"(": ")", "[": "]", "{": "}", ")": "(", "]": "[", "}": "{"}
    opener, closer, depth = tokens[at][1], pairs[tokens[at][1]], 0
    i = at
    while 0 <= i < len(tokens):
        t = tokens[i][1] if tokens[i][0] == "punct" else None
        depth += (t == opener) - (t == closer)
        if depth == 0:
            return i
        i += step
    return None


LAMBDA_SPECIFIERS = {"mutable", "constexpr", "consteval", "noexcept", "static"}


def brace_kind(tokens, at):
    """What the { at tokens[at] opens: "lambda" (a lambda's body), "class" (a local class's body,
    whose member functions return as they like) or "block" (the case's own code)."""
    i = at - 1
    # Back over a trailing return type (-> T), the specifiers and the parameter list, to the capture's ].
    j = i
    while j >= 0 and tokens[j][1] not in (";", "{", "}", "(", ")", "[", "]", "->"):
        j -= 1
    if j >= 0 and tokens[j][1] == "->":
        i = j - 1
    while i >= 0 and tokens[i][1] in LAMBDA_SPECIFIERS:
        i -= 1
    if i >= 0 and tokens[i][1] == ")":
        opened = matching(tokens, i, -1)
        i = opened - 1 if opened is not None else i
    if i >= 0 and tokens[i][1] == "]":
        return "lambda"
    j = at - 1
    while j >= 0 and tokens[j][1] not in (";", "{", "}"):
        if tokens[j][1] in ("struct", "class", "union"):
            return "class"
        j -= 1
    return "block"


CASE_MACROS = ("TEST_CASE", "TEST_CASE_FIXTURE", "TEST_CASE_TEMPLATE", "SCENARIO", "SCENARIO_TEMPLATE")


def early_returns(text):
    """(line, statement) of each return in a test case's own code (not in a lambda's body nor a local
    class's): a case that returns early counts as passed unless it says why (KJIT_SKIP)."""
    tokens = cpp_tokens(text)
    found = []
    i = 0
    while i < len(tokens):
        kind, word, _ = tokens[i]
        if kind != "name" or word not in CASE_MACROS or i + 1 >= len(tokens) or tokens[i + 1][1] != "(":
            i += 1
            continue
        close = matching(tokens, i + 1, 1)
        if close is None or close + 1 >= len(tokens) or tokens[close + 1][1] != "{":
            i += 1
            continue
        body_end = matching(tokens, close + 1, 1) or len(tokens)
        stack = ["block"]
        for k in range(close + 2, body_end):
            t = tokens[k]
            if t[0] != "punct" and not (t[0] == "name" and t[1] == "return"):
                continue
            if t[1] == "{":
                stack.append("block" if stack[-1] == "block" and brace_kind(tokens, k) == "block" else "inside")
            elif t[1] == "}":
                stack.pop()
            elif t[1] == "return" and all(s == "block" for s in stack):
                end = k
                while end < body_end and tokens[end][1] != ";":
                    end += 1
                found.append((t[2], " ".join(x[1] for x in tokens[k:end + 1])))
        i = body_end
    return found


def skip_prints(text):
    """(line, literal) of each string literal that holds the skip mark: only KJIT_SKIP prints it."""
    return [(line, word.strip()) for kind, word, line in cpp_tokens(text)
            if (kind == "string" or kind == "directive" and '"' in word) and SKIP_MARK in word]


SKIP_MACRO_FILE = "tests/support/skip.hpp"


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
        for line, statement in early_returns(path.read_text()):
            problems.append(f"{path.relative_to(root)}:{line}: a test case returns early and would count as "
                            f"passed; say why with KJIT_SKIP (support/skip.hpp): {statement}")
    printers = [p for p in sorted(root.glob("tests/**/*")) if p.suffix in (".cpp", ".hpp", ".h", ".cu")
                and p.is_file() and not p.relative_to(root).as_posix().startswith("tests/data/")]
    for path in printers:
        if path.relative_to(root).as_posix() == SKIP_MACRO_FILE:
            continue
        for line, literal in skip_prints(path.read_text()):
            problems.append(f"{path.relative_to(root)}:{line}: prints the skip mark by hand ({literal}); "
                            f"skip through KJIT_SKIP ({SKIP_MACRO_FILE}), the one place that prints it")
    if not problems:
        print(f"{len(files)} test files: named after their rooms, no case returns early unsaid; "
              f"{len(printers)} test sources: every skip through KJIT_SKIP")
    return problems


def fixture(args):
    """The checks above against a fixture whose lines that must be refused end in "// refused"."""
    text = pathlib.Path(args.file).read_text()
    marked = {n for n, l in enumerate(text.splitlines(), 1) if l.rstrip().endswith("// refused")}
    found = {line for line, _ in early_returns(text)} | {line for line, _ in skip_prints(text)}
    problems = [f"{args.file}:{n}: refused, but not marked \"// refused\"" for n in sorted(found - marked)]
    problems += [f"{args.file}:{n}: marked \"// refused\", but the check lets it pass" for n in sorted(marked - found)]
    if not marked:
        problems.append(f"{args.file}: marks no line \"// refused\"")
    if not problems:
        print(f"{args.file}: the {len(marked)} lines marked are refused, and no other")
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
    f = sub.add_parser("fixture")
    f.add_argument("--file", required=True)
    args = parser.parse_args()
    if args.what == "sources":
        problems = sources(args)
    elif args.what == "fixture":
        problems = fixture(args)
    else:
        tests = ctest_tests(args.ctest, args.build)
        problems = skips(args, tests) if args.what == "skips" else labels(args, tests)
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
