"""CompileOptions' fields in kjit/_kjit.pyi, written from C++'s table (kjit._kjit.compile_option_fields()):
one line a row between the markers, its type from the row's kind, its doc as the comment.
test_package.py checks that the stub's block is what this writes; after a row is added or changed:
    PYTHONPATH=<build>/python python3 python/tests/stub_options.py --write python/src/kjit/_kjit.pyi
"""
from __future__ import annotations

import argparse
import pathlib
import sys
from typing import Any, Iterable

# A row's kind as Python sees its value (the binding's getter and setter: CompileOptionValue).
KIND_TYPES = {"arch": "str", "text": "str", "text_list": "list[str]", "path_list": "list[str]", "flag": "bool",
              "count": "int", "raw_flags": "list[str]"}
BEGIN = "    # BEGIN compile_option_fields(): written by python/tests/stub_options.py --write, one line a row"
END = "    # END compile_option_fields()"


def block(fields: Iterable[dict[str, Any]]) -> str:
    """The lines between the markers, for these rows."""
    lines = []
    for f in fields:
        if f["kind"] not in KIND_TYPES:
            raise KeyError(f"compile_option_fields(): the row {f['name']} has the kind {f['kind']!r}, which "
                           f"stub_options.py's KIND_TYPES gives no Python type: add it")
        lines.append(f"    {f['name']}: {KIND_TYPES[f['kind']]}  # {f['doc']}")
    return "\n".join(lines) + "\n"


def current(stub: str) -> str:
    """The stub's lines between the markers."""
    if stub.count(BEGIN) != 1 or stub.count(END) != 1:
        raise ValueError(f"_kjit.pyi: the CompileOptions block needs one {BEGIN.strip()!r} and one {END.strip()!r}")
    return stub.split(BEGIN + "\n", 1)[1].split(END, 1)[0]


def rewrite(stub: str, fields: Iterable[dict[str, Any]]) -> str:
    head, rest = stub.split(BEGIN + "\n", 1)
    return head + BEGIN + "\n" + block(fields) + END + rest.split(END, 1)[1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", required=True, type=pathlib.Path, help="the stub to rewrite (kjit/_kjit.pyi)")
    args = parser.parse_args()
    import kjit._kjit
    text = args.write.read_text()
    new = rewrite(text, kjit._kjit.compile_option_fields())
    if new != text:
        args.write.write_text(new)
        print(f"{args.write}: CompileOptions' fields written")
    return 0


if __name__ == "__main__":
    sys.exit(main())
