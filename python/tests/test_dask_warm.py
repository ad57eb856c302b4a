"""examples/dask_warm on a real Dask cluster (a LocalCluster of worker processes) with a real
redis-server started here as the fleet's remote cache: the shards, run as Dask tasks in caches of
their own, compile each item once and share it through Redis; a fresh node then finds every item
there (require_hit: nothing compiles); the tasks' bundles, merged, hold exactly the entries of a
one-host warm, byte for byte; and the same run again compiles nothing. CPU only (named archs).
Needs Debian's python3-distributed (scripts/install-deps.sh) and redis-server."""
import json
import os
import pathlib
import shutil
import socket
import subprocess
import sys
import time

import pytest

import kjit

REPO = pathlib.Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "dask_warm" / "dask_warm.py"
ARCHS = ["sm_80", "sm_90"]


def _ping(path):
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(1)
            s.connect(str(path))
            s.sendall(b"PING\r\n")
            return s.recv(16).startswith(b"+PONG")
    except OSError:
        return False


def _redis_keys(path, pattern):
    """KEYS pattern over RESP: the names."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(5)
        s.connect(str(path))
        words = ["KEYS", pattern]
        s.sendall(b"".join([f"*{len(words)}\r\n".encode()] + [f"${len(w)}\r\n{w}\r\n".encode() for w in words]))
        reply = s.makefile("rb")
        head = reply.readline()
        assert head.startswith(b"*"), head
        names = []
        for _ in range(int(head[1:])):
            size = int(reply.readline()[1:])
            names.append(reply.read(size + 2)[:size])
        return names


@pytest.fixture
def redis(tmp_path):
    exe = os.environ.get("KJIT_REDIS_SERVER") or shutil.which("redis-server") or "/usr/bin/redis-server"
    if not os.path.exists(exe):
        pytest.fail("redis-server is not installed: bash scripts/install-deps.sh")
    d = tmp_path / "redis"
    d.mkdir()
    sock = d / "redis.sock"
    p = subprocess.Popen([exe, "--port", "0", "--unixsocket", str(sock), "--unixsocketperm", "700", "--save", "",
                          "--appendonly", "no", "--dir", str(d), "--logfile", str(d / "redis.log")])
    try:
        for _ in range(500):
            if _ping(sock):
                break
            assert p.poll() is None, f"redis-server exited at start; see {d / 'redis.log'}"
            time.sleep(0.01)
        else:
            pytest.fail("redis-server did not answer within 5 s")
        yield sock
    finally:
        p.kill()
        p.wait()


def _values(sock):
    """How many kjit values (not locks) Redis holds."""
    return sum(1 for k in _redis_keys(sock, "kjit:*") if not k.startswith(b"kjit:lock:"))


def _manifest(root, variants):
    """A folder of two kernels: `variants` variants of a templated one, and the lecture's square."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "axpb.cu").write_text("template <class T>\n__global__ void axpb(T* x, T a, int n) {\n"
                                  "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                                  "  if (i < n) x[i] = a * x[i] + T(B);\n}\n")
    (root / "square.cu").write_text((REPO / "kernels_src" / "square.cu").read_text())
    (root / "lecture_common.cuh").write_text((REPO / "kernels_src" / "lecture_common.cuh").read_text())
    (root / "elementwise.cuh").write_text((REPO / "kernels_src" / "elementwise.cuh").read_text())
    kernels = [{"file": "axpb.cu", "instantiate": ["axpb<float>", "axpb<double>"],
                "variants": [{"name": f"b{i}", "defines": [f"B={i + 1}"]} for i in range(variants)]},
               {"file": "square.cu", "instantiate": ["kjit::square<float, 256, 1>"]}]
    (root / "kjit.json").write_text(json.dumps({"kjit_manifest": 1, "kernels": kernels}))
    return root


def _entries(cache):
    return {str(p.relative_to(cache)): p.read_bytes() for p in pathlib.Path(cache).rglob("*.kjit")}


def _example(*args, env=None):
    r = subprocess.run([sys.executable, str(EXAMPLE), *args], capture_output=True, text=True, timeout=600,
                       env=env or os.environ.copy())
    assert r.returncode == 0, f"exit {r.returncode}\nstdout:\n{r.stdout}\nstderr:\n{r.stderr}"
    return json.loads(r.stdout)


def test_dask_shards_share_the_fleet_cache_and_merge_into_a_one_host_warm(tmp_path, redis):
    try:
        import distributed  # noqa: F401
    except ImportError:
        # CI installs it (scripts/install-deps.sh): missing there is a failure, as a missing server is for
        # the C++ suites (tests/support/skip.hpp); elsewhere (a GPU machine without Debian's packages) a skip.
        why = "Dask's distributed is not installed: bash scripts/install-deps.sh (python3-distributed)"
        if os.environ.get("CI"):
            pytest.fail(why)
        pytest.skip(why)
    kernels = _manifest(tmp_path / "kernels", 7)
    items = (7 + 1) * len(ARCHS)

    # One host, no remote: what every shard together must equal.
    one = kjit.warm([kernels], arch=ARCHS, jobs=2, cache_dir=str(tmp_path / "one"), remote_cache="")
    assert one["ok"] and one["compiled"] == items

    # Five shards as Dask tasks on two worker processes, each task in a cache of its own, sharing Redis.
    remote = f"unix://{redis}"
    env = dict(os.environ, KJIT_REMOTE_TIMEOUT="2s")
    args = [str(kernels), "--arch", ",".join(ARCHS), "--shards", "5", "--local-workers", "2", "--remote", remote,
            "--cache-root", str(tmp_path / "tasks"), "--bundle-dir", str(tmp_path / "bundles"),
            "--merged", str(tmp_path / "all.kjb"), "--json"]
    run = _example(*args, env=env)
    assert run["ok"]
    assert run["totals"] == {"items": items, "compiled": items, "cached": 0, "failed": 0}  # each item compiled once
    keys = [k for shard in run["shards"] for k in shard["keys"]]
    assert sorted(keys) == sorted(i["key"] for i in one["items"])  # the same items, each in one shard
    assert len({s["worker"] for s in run["shards"]}) >= 1
    assert _values(redis) == items  # the fleet tier holds every item

    # A fresh node with the fleet tier: every item a remote hit, nothing compiled (a miss would raise).
    node = kjit.warm([kernels], arch=ARCHS, jobs=2, cache_dir=str(tmp_path / "node"), remote_cache=remote,
                     remote_timeout="2s", require_hit=True)
    assert node["ok"] and node["cached"] == items and node["compiled"] == 0
    # What the node took from Redis is the one-host warm's entries, byte for byte.
    assert _entries(tmp_path / "node") == _entries(tmp_path / "one")

    # The merged bundle of the tasks' shards imports into the one-host warm's entries, byte for byte.
    assert run["merged"]["bundle"]["entries"] == items
    assert run["merged"]["duplicates"] == 0 and run["merged"]["conflicts"] == []
    subprocess.run([str(pathlib.Path(kjit.__file__).parent / "bin" / "kjit"), "--cache-dir", str(tmp_path / "imported"),
                    "cache", "import", str(tmp_path / "all.kjb")], check=True, capture_output=True)
    assert _entries(tmp_path / "imported") == _entries(tmp_path / "one")

    # The same run again: every task finds its items in its cache; nothing compiles.
    again = _example(*args, env=env)
    assert again["totals"] == {"items": items, "compiled": 0, "cached": items, "failed": 0}
