"""kjit.warm(..., shard=(i, n)) and kjit.merge_bundles: the Python spellings of a shard (a pair, "i/n",
"auto" from the job system's variables, a kjit.Shard) name the same split as `kjit warm --shard`;
the shards' items are disjoint and make up the whole; their bundles merge into the entries of a
one-host warm, byte for byte; a bad shard raises UsageError (TypeError for a wrong type). CPU only."""
import json
import pathlib
import subprocess

import pytest

import kjit

ARCH = ["sm_90"]


def manifest(root, variants=6):
    root.mkdir(parents=True, exist_ok=True)
    (root / "axpb.cu").write_text("template <class T>\n__global__ void axpb(T* x, T a, int n) {\n"
                                  "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                                  "  if (i < n) x[i] = a * x[i] + T(B);\n}\n")
    (root / "kjit.json").write_text(json.dumps({"kjit_manifest": 1, "kernels": [
        {"file": "axpb.cu", "instantiate": ["axpb<float>"],
         "variants": [{"name": f"b{i}", "defines": [f"B={i + 1}"]} for i in range(variants)]}]}))
    return root


def keys(report):
    return {i["key"] for i in report["items"]}


def entries(cache):
    return {str(p.relative_to(cache)): p.read_bytes() for p in pathlib.Path(cache).rglob("*.kjit")}


def test_shards_split_the_items_as_the_cli_does_and_merge_into_the_one_host_warm(tmp_path):
    kernels = manifest(tmp_path / "k")
    whole = kjit.warm(kernels, arch=ARCH, cache_dir=str(tmp_path / "one"))
    assert whole["ok"] and whole["compiled"] == 6 and whole["shard"]["count"] == 1

    seen, bundles = set(), []
    for i in range(3):
        bundle = tmp_path / f"s{i}.kjb"
        r = kjit.warm(kernels, arch=ARCH, cache_dir=str(tmp_path / f"s{i}"), shard=(i, 3), bundle=bundle)
        assert r["ok"]
        assert r["shard"]["index"] == i and r["shard"]["count"] == 3 and r["shard"]["from"] == f"shard=({i}, 3)"
        assert r["shard"]["elsewhere"] == 6 - len(r["items"])
        assert r["compiled"] == len(r["items"])
        assert r["bundle"]["entries"] == len(r["items"]) and r["bundle"]["missing"] == []
        assert not (keys(r) & seen)
        seen |= keys(r)
        bundles.append(bundle)
        # The other spellings name the same shard; the CLI splits the same way.
        for spelling in (f"{i}/3", kjit.Shard(i, 3), [i, 3]):
            again = kjit.warm(kernels, arch=ARCH, cache_dir=str(tmp_path / f"s{i}"), shard=spelling)
            assert keys(again) == keys(r) and again["compiled"] == 0
        cli = pathlib.Path(kjit.__file__).parent / "bin" / "kjit"
        if cli.exists():
            out = subprocess.run([str(cli), "--cache-dir", str(tmp_path / f"s{i}"), "--json", "warm", str(kernels),
                                  "--arch", "sm_90", "--shard", f"{i}/3"], capture_output=True, text=True)
            assert out.returncode == 0, out.stderr
            assert {j["key"] for j in json.loads(out.stdout)["items"]} == keys(r)
    assert seen == keys(whole)

    merged = kjit.merge_bundles(bundles, tmp_path / "all.kjb")
    assert merged["bundle"]["entries"] == 6 and merged["duplicates"] == 0 and merged["conflicts"] == []
    assert sum(b["entries"] for b in merged["inputs"]) == 6
    node = kjit.warm(kernels, arch=ARCH, cache_dir=str(tmp_path / "node"))  # compiles: the bundle is not imported yet
    assert node["compiled"] == 6
    cli = pathlib.Path(kjit.__file__).parent / "bin" / "kjit"
    if cli.exists():
        subprocess.run([str(cli), "--cache-dir", str(tmp_path / "imported"), "cache", "import", str(tmp_path / "all.kjb")],
                       check=True, capture_output=True)
        assert entries(tmp_path / "imported") == entries(tmp_path / "one")
    # Compiled on another "host" (its own cache): the same bytes.
    assert entries(tmp_path / "node") == entries(tmp_path / "one")


def test_shard_auto_reads_the_job_system_and_a_bad_shard_raises(tmp_path, monkeypatch):
    for name in ("SLURM_ARRAY_TASK_ID", "SLURM_ARRAY_TASK_COUNT", "JOB_COMPLETION_INDEX", "RANK", "WORLD_SIZE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("RANK", "1")
    monkeypatch.setenv("WORLD_SIZE", "2")
    s = kjit.Shard.from_environment()
    assert (s.index, s.count, s.source) == (1, 2, "RANK=1, WORLD_SIZE=2")
    assert s == kjit.Shard.parse("auto") and str(s) == "1/2"
    monkeypatch.setenv("SLURM_ARRAY_TASK_ID", "3")
    monkeypatch.setenv("SLURM_ARRAY_TASK_COUNT", "4")
    assert str(kjit.Shard.parse("auto")) == "3/4"  # Slurm first
    kernels = manifest(tmp_path / "k", 2)
    r = kjit.warm(kernels, arch=ARCH, cache_dir=str(tmp_path / "c"), shard="auto")
    assert r["shard"]["from"] == "SLURM_ARRAY_TASK_ID=3, SLURM_ARRAY_TASK_COUNT=4"

    for bad in [(2, 2), (-1, 2), (0, 0), "x", "2/2", "auto/9", (1, 10001)]:
        with pytest.raises(kjit.UsageError, match="shard"):
            kjit.warm(kernels, arch=ARCH, cache_dir=str(tmp_path / "c"), shard=bad)
    for wrong in [1.5, (0, 1, 2), ("0", "1"), (True, 2)]:
        with pytest.raises(TypeError, match="shard="):
            kjit.warm(kernels, arch=ARCH, cache_dir=str(tmp_path / "c"), shard=wrong)
    key = next(iter(keys(r))) if r["items"] else "0" * 32
    assert kjit.Shard(0, 5).shard_of(key) in range(5)
    with pytest.raises(kjit.UsageError, match="32 hex digits"):
        kjit.Shard(0, 5).shard_of("nope")
