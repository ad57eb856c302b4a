# pytest setup for kjit's Python tests: the `gpu` marker (skipped without a CUDA device), a fresh
# cache folder per test, the repository's paths and the lecture's square kernel (SQUARE).
import os
import pathlib

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]

# The lecture's square kernel (GPU MODE lecture 1) as users write it: the tests' common source.
SQUARE = r"""
__global__ void square_matrix_kernel(const float* matrix, float* result, int width, int height) {
  int col = blockIdx.x * blockDim.x + threadIdx.x;
  int row = blockIdx.y * blockDim.y + threadIdx.y;
  if (row < height && col < width) {
    int idx = row * width + col;
    result[idx] = matrix[idx] * matrix[idx];
  }
}
"""


def pytest_configure(config):
    config.addinivalue_line("markers", "gpu: needs a CUDA device (skipped without one)")


def _have_gpu():
    import kjit
    return kjit.driver_available() and kjit.device_count() > 0


def pytest_collection_modifyitems(config, items):
    if _have_gpu():
        return
    import kjit
    skip = pytest.mark.skip(reason=f"no CUDA device: {kjit.driver_unavailable_reason() or 'no device'}")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def cache_dir(tmp_path):
    d = tmp_path / "cache"
    d.mkdir(mode=0o700)
    return d


@pytest.fixture
def runtime(cache_dir):
    import kjit
    return kjit.Runtime(cache_dir=str(cache_dir))


@pytest.fixture
def repo():
    return REPO


@pytest.fixture(autouse=True)
def _isolated_environment(tmp_path, monkeypatch):
    # The global Runtime (kjit.compile, kjit.load_inline) reads KJIT_CACHE_DIR when it is made: one
    # folder for the whole session's process, never the user's own cache.
    monkeypatch.setenv("KJIT_CACHE_DIR", os.environ.get("KJIT_TEST_CACHE", str(tmp_path.parent / "global-cache")))
