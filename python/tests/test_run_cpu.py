"""Real runs on the CPU backend from Python: given prompts, generated tokens returned, and
every plan generating the single rank's tokens."""

import json

import pytest

import shardscope as ss
from conftest import PROMPTS, cli, cli_json

PLANS = ["tp2", "pp2", "sp2", "dp3"]


@pytest.fixture(scope="module")
def single(request):
    mp = pytest.MonkeyPatch()
    for k in ("OMPI_ALLOW_RUN_AS_ROOT", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM",
              "OMPI_MCA_rmaps_base_oversubscribe"):
        mp.setenv(k, "1")
    request.addfinalizer(mp.undo)
    try:
        return ss.run("single", config=PROMPTS, trace=False)
    except ss.InputError as e:
        if e.code == "unimplemented":
            pytest.skip(str(e))
        raise


def test_single_rank_returns_tokens_for_every_request(single):
    assert single["backend"] == "cpu"
    tokens = single["tokens"]
    assert len(tokens) == 3 and all(len(t) == 5 for t in tokens)
    assert all(0 <= x < 512 for t in tokens for x in t)


@pytest.mark.parametrize("plan", PLANS)
def test_every_plan_generates_the_single_rank_tokens(single, plan, mpi_env):
    r = ss.run(plan, config=PROMPTS, trace=False)
    assert r["ranks"] > 1
    assert r["tokens"] == single["tokens"]


def test_prompts_from_a_file_are_the_same_prompts(single, mpi_env):
    assert ss.run("from_file", config=PROMPTS, trace=False)["tokens"] == single["tokens"]


def test_other_prompts_give_other_tokens(single, mpi_env, tmp_path):
    cfg = tmp_path / "other.yaml"
    cfg.write_text(open(PROMPTS).read().replace("[5, 17, 99", "[6, 17, 99"))
    other = ss.run("single", config=str(cfg), trace=False)["tokens"]
    assert other[1:] == single["tokens"][1:]  # requests are independent
    assert other[0] != single["tokens"][0]


def test_cli_prints_the_tokens_and_keeps_them_in_json_and_metadata(single, mpi_env, tmp_path):
    text = cli("run", "--config", PROMPTS, "--experiment", "tp2", "--no-trace").stdout
    for i, t in enumerate(single["tokens"]):
        assert f"request {i} generated: {' '.join(map(str, t))}" in text
    out = cli_json("run", "--config", PROMPTS, "--experiment", "tp2", "--out",
                   str(tmp_path), "--json")[0]
    assert out["tokens"] == single["tokens"]
    with open(out["metadata"]) as f:
        meta = json.load(f)
    assert meta["cpu"]["generated_tokens"] == single["tokens"]
    assert meta["experiment"]["workload"]["prompts"][0][:3] == [5, 17, 99]


def test_prompt_errors_name_the_field(tmp_path):
    cases = {
        "prompts: [[1, 2], [3]]": "same length",
        "prompts: [[1, 2], [3, 512]]": "vocabulary",
        "prompts: [[1, 2]]\n    batch_size: 2": "batch_size",
        "prompts: missing.txt": "missing.txt",
        "prompts: [[1, x]]": "prompts[0][1]",
    }
    for body, needle in cases.items():
        cfg = tmp_path / "p.yaml"
        cfg.write_text("experiments:\n  - name: p\n    model: tiny-dense\n"
                       f"    hardware: local-cpu\n    parallelism: {{tp_size: 1}}\n    {body}\n")
        with pytest.raises(ss.InputError) as e:
            ss.load_experiments(str(cfg))
        assert needle in str(e.value) and "experiment 'p'" in str(e.value), (body, str(e.value))
