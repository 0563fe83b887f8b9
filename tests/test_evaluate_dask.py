"""``evaluate`` on a dask.distributed cluster (issue #22, item 3): the grid's rows are those of
local processes, byte for byte, whether the cluster's workers are threads of this process or
processes of their own (the recordings' features then travel to each worker once, pickled); and
the executor's arguments are refused before any work, for ``evaluate`` and ``replay`` alike."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("sklearn")
distributed = pytest.importorskip("distributed")

from streamdp.config import SessionConfig  # noqa: E402
from streamdp.offline.evaluate import GridPoint, evaluate, feature_signals, synthetic_study  # noqa: E402
from streamdp.offline.replay import replay  # noqa: E402

GRID = [GridPoint("none", 0.0, 16), GridPoint("dcfpa", 25.0, 16)]


@pytest.fixture(scope="module")
def study():
    return feature_signals(synthetic_study(people=3, seconds=150.0))


@pytest.fixture(scope="module")
def local(study):
    # one local process: test_evaluate shows that two give the same rows
    return json.dumps(evaluate(study, GRID, seeds=2, progress=False, workers=1, postprocess=True))


@pytest.mark.parametrize("processes", [False, True], ids=["threads", "worker-processes"])
def test_the_grid_on_a_dask_cluster_gives_the_local_rows_byte_for_byte(study, local, processes):
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=processes, dashboard_address=None
    ) as cluster:
        rows = evaluate(
            study, GRID, seeds=2, progress=False, postprocess=True, executor="dask", scheduler=cluster
        )
    assert json.dumps(rows) == local
    assert {(r["mechanism"], r["postprocess"]) for r in rows} == {("none", "no"), ("dcfpa", "no"), ("dcfpa", "yes")}
    assert {r["seed"] for r in rows} == {0, 1}


def test_a_client_given_is_used_and_left_open(study, local):
    with distributed.LocalCluster(n_workers=1, processes=False, dashboard_address=None) as cluster:
        with distributed.Client(cluster) as client:
            rows = evaluate(study, GRID, seeds=2, progress=False, postprocess=True, executor="dask", scheduler=client)
            assert client.status == "running"
    assert json.dumps(rows) == local


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"executor": "threads"}, ValueError, "executor must be 'processes' or 'dask', got 'threads'"),
        ({"executor": 1}, TypeError, "executor must be a str"),
        ({"scheduler": "tcp://127.0.0.1:8786"}, ValueError, "it needs executor='dask', got executor='processes'"),
        ({"executor": "dask", "scheduler": ""}, ValueError, "scheduler must not be empty"),
        ({"executor": "dask", "scheduler": 8786}, TypeError, "scheduler must be an address"),
    ],
)
def test_bad_executor_arguments_are_refused_before_any_work(study, kwargs, error, message):
    with pytest.raises(error, match=message):
        evaluate(study, GRID, progress=False, **kwargs)
    with pytest.raises(error, match=message):
        replay(["no/such/recording"], "never-written", SessionConfig(), progress=False, **kwargs)


def test_the_command_line_runs_the_grid_on_a_scheduler_and_writes_the_local_table(tmp_path):
    """``streamdp evaluate --executor dask --scheduler ADDRESS`` against a running cluster: the
    results table is the local processes' byte for byte."""
    from streamdp.cli import main

    argv = ["evaluate", "--people", "2", "--seconds", "120", "--mechanisms", "dcfpa", "--epsilons", "25",
            "--chunk-lengths", "16", "--seed", "3", "-q"]  # fmt: skip
    assert main([*argv, "--workers", "1", "--out", str(tmp_path / "local")]) == 0
    with distributed.LocalCluster(n_workers=1, processes=False, dashboard_address=None) as cluster:
        address = cluster.scheduler_address
        assert main([*argv, "--executor", "dask", "--scheduler", address, "--out", str(tmp_path / "dask")]) == 0
    local, on_dask = ((tmp_path / d / "results.csv").read_bytes() for d in ("local", "dask"))
    assert on_dask == local


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--scheduler", "tcp://127.0.0.1:8786"], "--scheduler"),
        (["--executor", "dask", "--workers", "2"], "--workers"),
        (["--executor", "dask", "--channel", "gaze"], "--channel"),
    ],
    ids=["scheduler-without-dask", "workers-with-dask", "gaze-channel-with-dask"],
)
def test_the_command_line_refuses_what_the_executor_does_not_use(tmp_path, capsys, extra, message):
    from streamdp.cli import main

    assert main(["evaluate", "--out", str(tmp_path / "x"), *extra]) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "x").exists()
