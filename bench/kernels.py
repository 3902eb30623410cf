"""How far the models' numbers move when the CPU's kernels change: the tests that compare a
model's output with a reference, run under other instruction-set paths of numpy and OpenBLAS,
each comparison's largest deviation printed.

    PYTHONPATH=$PWD .venv/bin/python -m bench.kernels [--tests FILE ...]

Each path is a fresh pytest process with the settings numpy and OpenBLAS read at start:
``NPY_DISABLE_CPU_FEATURES`` (numpy's dispatched loops fall back to the older targets) and
``OPENBLAS_CORETYPE`` (another kernel family for the matrix products). onnxruntime and llama.cpp
have no such switch: their int8 paths (AVX2, AVX-VNNI, AVX-512 VNNI) differ only between machines,
and the tests treat them so (docs/benchmarks/kernels.md). A path this CPU cannot run is skipped
by OpenBLAS itself (it falls back to the detected core) and said so in its line.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

# the tests whose comparisons run on numpy's and OpenBLAS's kernels
TESTS = [
    "tests/test_campplus.py::test_numpy_network_matches_3d_speakers_on_torch",
    "tests/test_campplus.py::test_filter_banks_are_kaldis",
    "tests/test_voice_encoder.py::test_numpy_encoder_matches_resemblyzer_on_torch",
    "tests/test_segmentation.py::test_numpy_network_matches_pyannet_on_torch",
    "tests/test_silero.py::test_numpy_network_matches_silero_on_onnxruntime",
]
PATHS: dict[str, dict[str, str]] = {
    "detected": {},
    "no AVX2 loops, Sandy Bridge BLAS": {"NPY_DISABLE_CPU_FEATURES": "X86_V3",
                                         "OPENBLAS_CORETYPE": "Sandybridge"},
    "SSE only": {"NPY_DISABLE_CPU_FEATURES": "X86_V3 AVX F16C FMA3",
                 "OPENBLAS_CORETYPE": "Nehalem"},
}

# Loaded into the pytest process: every numpy comparison records how far apart its two sides
# were, by the test that made it, before comparing as the test asks.
SPY = """
import json, os, numpy as np, pytest
_seen = {}
_compare = np.testing.assert_allclose
_current = [""]

def assert_allclose(actual, desired, *args, **kwargs):
    gap = float(np.max(np.abs(np.asarray(actual, np.float64) - np.asarray(desired, np.float64))))
    _seen[_current[0]] = max(_seen.get(_current[0], 0.0), gap)
    return _compare(actual, desired, *args, **kwargs)

np.testing.assert_allclose = assert_allclose

def pytest_runtest_setup(item):
    _current[0] = item.nodeid

def pytest_sessionfinish(session, exitstatus):
    with open(os.environ["KERNELS_OUT"], "w") as out:
        json.dump({"seen": _seen, "failed": session.testsfailed}, out)
"""


def run_path(env_changes: dict[str, str], tests: Sequence[str]) -> dict[str, object]:
    with tempfile.TemporaryDirectory() as folder:
        plugin = Path(folder) / "kernels_spy.py"
        plugin.write_text(SPY)
        out = Path(folder) / "out.json"
        env = {**os.environ, **env_changes, "KERNELS_OUT": str(out),
               "PYTHONPATH": os.pathsep.join([folder, os.environ.get("PYTHONPATH", "")])}
        for name in ("OPENBLAS_CORETYPE", "NPY_DISABLE_CPU_FEATURES"):
            if name not in env_changes:
                env.pop(name, None)
        subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "kernels_spy", "-p",
                        "no:cacheprovider", *tests], env=env, check=False,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        loaded: dict[str, object] = json.loads(out.read_text()) if out.exists() else {}
        return loaded


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tests", nargs="+", default=TESTS)
    args = parser.parse_args(argv)
    results = {name: run_path(env, args.tests) for name, env in PATHS.items()}
    for name, result in results.items():
        seen = result.get("seen", {})
        assert isinstance(seen, dict)
        print(f"{name}: {result.get('failed', '?')} failed")
        for test, gap in sorted(seen.items()):
            print(f"  {gap:.2e}  {test}")


if __name__ == "__main__":
    main()
