"""The README's Python examples ("Call it from Python"), run as written, so they cannot rot: each
must run in a fresh interpreter and print sensible numbers."""
import pathlib
import re
import subprocess
import sys

import pytest

README = pathlib.Path(__file__).resolve().parents[2] / "README.md"


def snippets():
    text = README.read_text()
    section = text[text.index("## Call it from Python"):]
    section = section[: section.index("\n## ", 1)]
    return re.findall(r"```python\n(.*?)```", section, re.S)


def run(code):
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}"
    return done.stdout


def test_readme_has_both_examples():
    code = snippets()
    assert len(code) == 2 and "forcekit.Context" in code[0] and "forcekit.openmm" in code[1]


def test_readme_python_example():
    out = run(snippets()[0])
    found = re.findall(r"largest \|\w\| ([0-9.e+-]+), error ([0-9.e+-]+) of it", out)
    assert len(found) == 2, out
    for largest, error in found:
        # No overlapping pairs (uniform random positions gave 9.2e13), and the device agrees
        # with the double reference to float pair terms' accuracy.
        assert 1 < float(largest) < 1e4 and float(error) < 1e-4, out


def test_readme_openmm_example():
    pytest.importorskip("openmm")
    out = run(snippets()[1])
    m = re.search(r"864 particles, 1000 steps: total energy (\S+) -> (\S+) kJ/mol", out)
    assert m, out
    e0, e1 = float(m.group(1)), float(m.group(2))
    assert e0 < 0 and abs(e1 - e0) < 1e-3 * abs(e0), out  # NVE: the energy holds
