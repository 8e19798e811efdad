"""A model over two machines, end to end from the API: two real workers
standing in for two hosts (``WORKER_HOST`` alpha and beta, one CPU slot
each), ``torchrun`` on each with its rendezvous on loopback and gloo between
them. It trains as one process does, and abort, a failed node, a dead worker
and a node that never starts end every node with a message."""

from __future__ import annotations

import json
import signal

import pytest
from django.test import Client

from jobs import services
from jobs.models import TERMINAL, Job, JobNode, Status
from tests.clients import signed_in
from tests.jobtools import events_of, pids_running, wait_status
from tests.processes import wait_for
from tests.training.test_training_runs import dataset_job, past_epoch

NODE_ENV = {"NODE_ADDRESS": "127.0.0.1", "NODE_RENDEZVOUS_SECONDS": "120"}
COMMON = {"epochs": 2, "seed": 7, "lr": 0.01, "solver": "momentum", "scale_lr": False}


def create(client: Client, **fields) -> Job:
    response = client.post("/api/models", data=json.dumps(fields), content_type="application/json")
    assert response.status_code == 201, response.content
    return Job.objects.get(pk=response.json()["jobs"][0]["id"])


def two_hosts(worker_factory, **env: str) -> dict:
    return {host: worker_factory(host, WORKER_HOST=host, **NODE_ENV, **env) for host in ("alpha", "beta")}


def other_node(job: Job) -> JobNode:
    return JobNode.objects.get(job=job, rank=1)


def launchers(job: Job) -> list[int]:
    """The job's torchrun processes, one per node, on whichever worker."""
    return pids_running(job.folder, "trainer.torchrun")


def no_trainer_left(job: Job) -> bool:
    return not launchers(job) and not pids_running(job.folder, "trainer.train")


def val_losses(job: Job) -> list[float]:
    return [e["data"]["loss"] for e in events_of(job, "val")]


def test_the_api_takes_nodes_within_range_and_the_preview_counts_every_nodes_processes(alice):
    client = signed_in(alice)
    data = dataset_job(alice)
    for nodes, problem in [(0, "greater than or equal to 1"), (65, "less than or equal to 64"), ("two", "whole number")]:
        response = client.post("/api/models", data=json.dumps({"name": "m", "dataset": data.pk, "nodes": nodes}),
                               content_type="application/json")
        assert response.status_code == 400 and problem in response.json()["errors"]["nodes"][0]["message"]
    assert not Job.objects.filter(kind="train").exists()
    one_node = create(client, name="one node", dataset=data.pk, nodes=1)
    assert one_node.resources == {"device": "cpu", "count": 1}
    body = {"lr": "0.1", "epochs": "2", "batch_size": "8", "dataset": str(data.pk), "device": "gpu", "gpu_count": 2,
            "nodes": 3, "scale_lr": True}
    answer = client.post("/api/lr-preview", json.dumps(body), content_type="application/json").json()
    assert answer["world_size"] == 6 and answer["effective_lr"] == pytest.approx(0.6)


def test_a_model_over_two_nodes_trains_as_one_process_does(alice, worker_factory):
    two_hosts(worker_factory)
    client = signed_in(alice)
    data = dataset_job(alice)
    double = create(client, name="two nodes", dataset=data.pk, batch_size=8, nodes=2, **COMMON)
    single = create(client, name="one process", dataset=data.pk, batch_size=16, **COMMON)
    assert double.resources == {"device": "cpu", "count": 1, "nodes": 2}

    double = wait_status(double, Status.DONE, Status.FAILED, timeout=240)
    assert double.status == Status.DONE, double.error
    # The node's worker records its end a moment after node 0's records the job's.
    node = wait_for(lambda: (found := other_node(double)).status == Status.DONE and found, timeout=30,
                    what="the other node to be done")
    assert {double.held["host"], node.held["host"]} == {"alpha", "beta"}
    assert double.held["nodes"]["address"] == "127.0.0.1" and node.held["nodes"]["rank"] == 1
    logged = "\n".join(line for e in events_of(double, "log") for line in e["data"]["lines"])
    assert "2 process(es)" in logged and "[node 2]" in logged
    assert "terminate called" not in logged

    single = wait_status(single, Status.DONE, Status.FAILED, timeout=240)
    assert single.status == Status.DONE, single.error
    one, two = val_losses(single), val_losses(double)
    assert len(one) == len(two) == COMMON["epochs"]
    assert two == pytest.approx(one, rel=1e-3)


def test_aborting_a_model_over_two_nodes_ends_both(alice, worker_factory):
    two_hosts(worker_factory)
    job = create(signed_in(alice), name="aborted", dataset=dataset_job(alice).pk, batch_size=8, nodes=2,
                 **{**COMMON, "epochs": 200})
    wait_for(lambda: past_epoch(job, 0.2), timeout=120, what="both nodes to train")
    assert len(launchers(job)) == 2
    client = signed_in(alice)
    holders = {(w["hostname"], d["id"]): d["job"]["id"]
               for w in client.get("/api/resources").json()["workers"] for d in w["devices"] if d["job"]}
    assert holders == {("alpha", "cpu0"): job.pk, ("beta", "cpu0"): job.pk}
    (node,) = client.get(f"/api/jobs/{job.pk}").json()["nodes"]
    assert (node["rank"], node["status"], node["devices"]) == (1, "running", ["cpu0"])
    page = client.get(f"/jobs/{job.pk}/").content.decode()
    assert "1 CPU on each of 2 nodes" in page and f"<dt>Node 2</dt><dd>running: cpu0 on {node['host']}</dd>" in page
    services.abort(job, alice)
    job = wait_status(job, Status.ABORTED)
    wait_for(lambda: other_node(job).status == Status.ABORTED, what="the other node to stop")
    wait_for(lambda: no_trainer_left(job), what="every process of both nodes to end")


def test_a_node_whose_processes_end_before_its_worker_sees_the_abort_is_aborted(alice, worker_factory):
    # The processes agree on stopping among themselves: after an abort the
    # other node's may have ended, cleanly, before its worker looked at the
    # job. Its worker is held still here until they have, then let go.
    workers = two_hosts(worker_factory, WORKER_DEAD_AFTER_SECONDS="120")
    job = create(signed_in(alice), name="stopped together", dataset=dataset_job(alice).pk, batch_size=8, nodes=2,
                 **{**COMMON, "epochs": 200})
    wait_for(lambda: past_epoch(job, 0.2), timeout=120, what="both nodes to train")
    held_still = workers[other_node(job).held["host"]].process
    held_still.send_signal(signal.SIGSTOP)
    try:
        services.abort(job, alice)
        job = wait_status(job, Status.ABORTED, timeout=60)
        wait_for(lambda: not launchers(job), timeout=60, what="both nodes' processes to stop together")
    finally:
        held_still.send_signal(signal.SIGCONT)
    node = wait_for(lambda: (found := other_node(job)).status in TERMINAL and found, what="the other node to end")
    assert (node.status, node.message) == (Status.ABORTED, "Stopped with its job.")


@pytest.mark.slow
def test_a_node_whose_worker_dies_fails_the_job_and_ends_the_other_node(alice, worker_factory):
    # The reconciler notices the dead worker late; node 0, which fails as
    # soon as its peer is gone, names the node by its silent heartbeat.
    workers = two_hosts(worker_factory, WORKER_DEAD_AFTER_SECONDS="10")
    job = create(signed_in(alice), name="orphaned", dataset=dataset_job(alice).pk, batch_size=8, nodes=2,
                 **{**COMMON, "epochs": 200})
    wait_for(lambda: past_epoch(job, 0.2), timeout=120, what="both nodes to train")
    assert len(launchers(job)) == 2
    host = other_node(job).held["host"]
    workers[host].process.send_signal(signal.SIGKILL)

    job = wait_status(job, Status.FAILED, timeout=60)
    assert job.error == f"Node 2 of 2 (on {host}) failed: worker {host} stopped responding."
    wait_for(lambda: no_trainer_left(job), what="every process of both nodes to end")


@pytest.mark.slow
def test_a_node_no_worker_takes_fails_the_job_after_the_rendezvous_timeout(alice, worker_factory):
    worker_factory("alpha", WORKER_HOST="alpha", NODE_ADDRESS="127.0.0.1", NODE_RENDEZVOUS_SECONDS="5")
    job = create(signed_in(alice), name="alone", dataset=dataset_job(alice).pk, batch_size=8, nodes=2, **COMMON)

    job = wait_status(job, Status.FAILED, timeout=60)
    assert job.error == ("Node(s) 2 of 2 did not start within 5 s: each node needs a worker of its own, "
                         "on another machine, with the devices free.")
    wait_for(lambda: other_node(job).status == Status.ABORTED, what="the node no worker took to be closed")
    assert not events_of(job, "train")
    wait_for(lambda: no_trainer_left(job), what="node 0's processes to end")
