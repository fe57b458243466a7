#!/usr/bin/env python3
"""Fails when a Catch TEST_CASE name holds a ';'.

catch_discover_tests hands each name to ctest as a list element, and CMake
cuts lists at ';': the test registered is the name's first part, which
matches no Catch test, and a Catch run that matches nothing passes. Such a
test never runs and can never fail (ten did, before this check).

Usage: test_case_names.py SOURCE_DIR
"""
import pathlib
import re
import sys

# TEST_CASE( followed by one or more adjacent string literals (a name split
# over lines).
TEST_CASE = re.compile(r'TEST_CASE\s*\(\s*((?:"(?:[^"\\]|\\.)*"\s*)+)')
LITERAL = re.compile(r'"((?:[^"\\]|\\.)*)"')


def names_with_semicolons(root):
    for path in sorted(pathlib.Path(root, "tests").rglob("*.cpp")):
        source = path.read_text(errors="replace")
        for match in TEST_CASE.finditer(source):
            name = "".join(LITERAL.findall(match.group(1)))
            if ";" in name:
                line = source.count("\n", 0, match.start()) + 1
                yield f"{path.relative_to(root)}:{line}: {name}"


def main():
    bad = list(names_with_semicolons(sys.argv[1]))
    for entry in bad:
        print(f"TEST_CASE name with ';' (ctest cuts it there, the test never runs): {entry}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
