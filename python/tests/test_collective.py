"""shardscope.collective(): the command's table as a DataFrame, its errors as InputError."""

import pytest

import shardscope as ss


def test_all_reduce_sweep_has_nccl_tests_columns():
    df = ss.collective("h100-sxm", nodes=2, op="all_reduce", sizes="1M:1G:x4")
    assert list(df.columns[:6]) == ["size_bytes", "count", "type", "time_us", "algbw_gb_s",
                                    "busbw_gb_s"]
    assert list(df["size_bytes"]) == [1 << 20, 1 << 22, 1 << 24, 1 << 26, 1 << 28, 1 << 30]
    # nccl-tests' definitions: algbw = size / time, busbw = algbw × 2(n−1)/n over 16 ranks.
    algbw = df["size_bytes"] / (df["time_us"] * 1e-6) / 1e9
    assert (abs(df["algbw_gb_s"] - algbw) <= 1e-9 * algbw).all()
    assert (abs(df["busbw_gb_s"] - df["algbw_gb_s"] * 2 * 15 / 16) <= 1e-9 * algbw).all()
    assert set(df["algorithm"]) <= {"ring", "tree", "nvls", "nvls_tree", "hierarchical"}
    assert "16 ranks" in df.attrs["title"]


def test_dispatch_in_deepeps_terms():
    df = ss.collective("h800", nodes=2, op="dispatch", kernel="low_latency", tokens=128)
    assert len(df) == 1
    row = df.iloc[0]
    # Low-latency: the fixed per-call cost plus the bytes; DeepEP counts every selection.
    assert row["time_us"] > 33
    assert row["bound"] == "nic"
    selections_bytes = 128 * 8 * (7168 + 7168 // 128 * 4)
    assert row["rdma_gb_s"] == pytest.approx(selections_bytes / (row["time_us"] * 1e-6) / 1e9)


def test_bad_input_raises_input_error_with_the_commands_message():
    with pytest.raises(ss.InputError, match="--op is 'all_sum'"):
        ss.collective("h100-sxm", op="all_sum")
    with pytest.raises(ss.InputError, match="unknown option 'size'"):
        ss.collective("h100-sxm", size="8:8G")
    with pytest.raises(ss.InputError, match="unknown cluster 'h900'"):
        ss.collective("h900")
    with pytest.raises(ss.InputError, match="ranks: expected"):
        ss.collective("h100-sxm", ranks=[8])
