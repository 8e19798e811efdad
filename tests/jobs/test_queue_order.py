"""The order in which pending jobs get devices (``jobs.queueorder``) and why
each waits, read from the database as the workers and pages read it; and
what users and staff may change of it, over the API and the pages."""

from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.utils import timezone

from jobs import queueorder, services, sharing
from jobs.models import DeviceLimit, Job, Priority, Status, Worker
from tests.clients import signed_in

T0 = timezone.now() - timedelta(hours=1)


def pending(owner: User, name: str, minute: int, device: str = "gpu", count: int = 1, **fields) -> Job:
    return Job.objects.create(kind="sleep", name=name, owner=owner, resources={"device": device, "count": count},
                              queued_at=T0 + timedelta(minutes=minute), status=fields.pop("status", Status.QUEUED),
                              **fields)


def running(owner: User, devices: list[str], device: str = "gpu") -> Job:
    return Job.objects.create(kind="sleep", name="running", owner=owner, status=Status.RUNNING,
                              resources={"device": device, "count": len(devices)},
                              held={"host": "box", "devices": devices})


def names(device: str = "gpu") -> list[str]:
    return [place.job.name for place in queueorder.explained(device).places]


def reasons(device: str = "gpu") -> dict[str, str]:
    return {place.job.name: place.reason for place in queueorder.explained(device).places}


@pytest.fixture
def machine(db):
    """A live worker on "box" with four GPUs and a CPU slot, as a worker reports itself."""
    devices = [{"id": f"gpu{i}", "kind": "gpu", "index": i} for i in range(4)] + [{"id": "cpu0", "kind": "cpu", "index": 0}]
    return Worker.objects.create(id="w1", hostname="box", pid=1, devices=devices)


def test_two_users_queues_interleave_by_the_devices_each_holds(alice, bob):
    for i in range(3):
        pending(alice, f"a{i}", minute=i)
    for i in range(2):
        pending(bob, f"b{i}", minute=10 + i)
    assert names() == ["a0", "b0", "a1", "b1", "a2"]


def test_the_user_holding_fewer_devices_goes_first_whoever_queued_first(alice, bob):
    running(bob, ["gpu0", "gpu1"])
    for i in range(2):
        pending(bob, f"b{i}", minute=i)
    for i in range(3):
        pending(alice, f"a{i}", minute=10 + i)
    # alice holds none: her first two come before bob's, then they alternate.
    assert names() == ["a0", "a1", "b0", "a2", "b1"]


def test_a_job_asking_for_two_devices_counts_two(alice, bob):
    pending(alice, "a-two", minute=0, count=2)
    pending(alice, "a-one", minute=1)
    pending(bob, "b0", minute=2)
    pending(bob, "b1", minute=3)
    assert names() == ["a-two", "b0", "b1", "a-one"]


def test_priority_comes_before_fair_share_and_age(alice, bob, staff):
    running(bob, ["gpu0", "gpu1", "gpu2"])
    pending(alice, "a-low", minute=0, priority=Priority.LOW)
    pending(alice, "a-normal", minute=1)
    pending(bob, "b-high", minute=2, priority=Priority.HIGH)
    assert names() == ["b-high", "a-normal", "a-low"]


def test_staff_moving_a_job_to_the_front_puts_it_first_the_latest_move_first(alice, bob, staff):
    pending(alice, "a0", minute=0, priority=Priority.HIGH)
    b0 = pending(bob, "b0", minute=1, priority=Priority.LOW)
    b1 = pending(bob, "b1", minute=2)
    sharing.move_to_front(b0, staff)
    sharing.move_to_front(b1, staff)
    assert names() == ["b1", "b0", "a0"]


def test_each_device_class_has_its_own_order(alice, bob):
    pending(alice, "a-gpu", minute=0)
    pending(bob, "b-cpu", minute=1, device="cpu")
    assert names("gpu") == ["a-gpu"] and names("cpu") == ["b-cpu"]


def test_a_job_over_its_owners_limit_goes_last_and_says_why(alice, bob, machine):
    DeviceLimit.objects.create(user=alice, limit=2)
    running(alice, ["gpu0"])
    pending(alice, "a-fits", minute=0)
    pending(alice, "a-over", minute=1)
    pending(bob, "b0", minute=2)
    pending(bob, "b1", minute=3)
    assert names() == ["b0", "a-fits", "b1", "a-over"]
    said = reasons()
    assert said["a-over"] == ("Held back: alice may hold 2 GPUs at once and holds 1, and alice's jobs before it will "
                              "take 1 more; it starts when one of alice's jobs ends.")
    assert said["b1"] == "Behind 2 jobs: 1 of bob's and 1 of alice's."


def test_a_limit_of_0_is_none_and_the_default_applies_without_a_users_own(alice, settings):
    settings.DEVICE_LIMIT_PER_USER = 1
    running(alice, ["gpu0"])
    pending(alice, "a0", minute=0)
    assert queueorder.explained("gpu").places[0].over_limit
    DeviceLimit.objects.create(user=alice, limit=0)
    assert not queueorder.explained("gpu").places[0].over_limit


def test_why_the_first_job_waits_names_what_it_needs(alice, bob, machine):
    running(bob, ["gpu0", "gpu1", "gpu2"])
    pending(alice, "a-two", minute=0, count=2)
    pending(alice, "a-one", minute=1)
    said = reasons()
    assert said["a-two"] == "Next in line: it needs 2 GPUs on one machine, and the most free on one is 1."
    assert said["a-one"] == "Behind one of alice's jobs."
    running(bob, ["gpu3"])
    assert reasons()["a-two"] == "Next in line: it needs 2 GPUs on one machine, and the most free on one is 0."
    Job.objects.filter(name="a-two").update(resources={"device": "gpu", "count": 8})
    assert reasons()["a-two"] == "It needs 8 GPUs on one machine; the largest has 4."


def test_the_first_job_with_a_device_free_is_being_taken(alice, machine):
    pending(alice, "a0", minute=0)
    assert reasons()["a0"] == "Next in line; a worker is taking it."
    Job.objects.filter(name="a0").update(status=Status.WAITING)
    assert reasons()["a0"] == "Next in line; starting."
    running(alice, ["cpu0"], device="cpu")
    pending(alice, "a-cpu", minute=1, device="cpu")
    assert reasons("cpu")["a-cpu"] == "Next in line, for the first CPU slot to come free (all 1 are in use)."


def test_without_a_worker_the_first_job_says_so(alice):
    pending(alice, "a0", minute=0)
    assert reasons()["a0"] == "Next in line; no worker is running: it starts when one does."


def test_the_api_and_the_lists_give_each_pending_jobs_place_and_reason(alice, bob, machine):
    a0 = pending(alice, "a0", minute=0)
    b0 = pending(bob, "b0", minute=1)
    client = signed_in(alice)
    detail = client.get(f"/api/jobs/{b0.pk}").json()
    assert detail["queue_position"] == 2 and detail["waiting_reason"] == "Behind one of alice's jobs."
    assert detail["priority"] == "normal"
    listed = {job["name"]: job for job in client.get("/api/jobs").json()["jobs"]}
    assert listed["a0"]["queue_position"] == 1 and listed["b0"]["queue_position"] == 2
    snapshot = client.get("/api/resources").json()
    assert [(row["name"], row["position"], row["reason"]) for row in snapshot["queue"]] == [
        ("a0", 1, "Next in line; a worker is taking it."), ("b0", 2, "Behind one of alice's jobs.")]
    assert {row["user"]: row["waiting"] for row in snapshot["users"]} == {"alice": 1, "bob": 1}
    a0.transition(Status.ABORTED, frm=[Status.QUEUED])
    assert client.get(f"/api/jobs/{a0.pk}").json()["queue_position"] is None


# What users and staff may change.

def test_a_user_may_give_low_or_normal_and_only_staff_high(alice, staff):
    with pytest.raises(services.ActionError, match="High priority is given by staff"):
        services.submit(alice, "sleep", "s", {"steps": 1}, {"device": "cpu", "count": 1}, priority=Priority.HIGH)
    low = services.submit(alice, "sleep", "s", {"steps": 1}, {"device": "cpu", "count": 1}, priority=Priority.LOW)
    assert low.priority == Priority.LOW
    high = services.submit(staff, "sleep", "s", {"steps": 1}, {"device": "cpu", "count": 1}, priority=Priority.HIGH)
    assert high.priority == Priority.HIGH
    # A clone by a user who may not give high priority is normal.
    clone = services.clone(high, staff)
    assert clone.priority == Priority.HIGH
    high.owner = alice
    high.save()
    assert services.clone(high, alice).priority == Priority.NORMAL


def test_a_job_asking_for_more_than_its_owners_limit_is_refused_at_submit(alice):
    DeviceLimit.objects.create(user=alice, limit=2)
    with pytest.raises(services.ActionError, match="asks for 3 GPUs; alice may hold 2 GPUs at once") as refused:
        services.submit(alice, "sleep", "s", {"steps": 1}, {"device": "gpu", "count": 3})
    assert refused.value.status == 403
    assert not Job.objects.exists()


def test_over_the_api_the_owner_changes_priority_and_staff_move_to_the_front(alice, bob, staff):
    job = pending(alice, "a0", minute=0)
    owner, other, admin = signed_in(alice), signed_in(bob), signed_in(staff)
    url = f"/api/jobs/{job.pk}/queue"
    answer = owner.post(url, {"priority": "low"}, content_type="application/json")
    assert answer.status_code == 200 and answer.json()["priority"] == "low"
    assert owner.post(url, {"priority": "high"}, content_type="application/json").status_code == 403
    assert other.post(url, {"priority": "low"}, content_type="application/json").status_code == 403
    refused = owner.post(url, {"front": True}, content_type="application/json")
    assert refused.status_code == 403 and "Only staff" in refused.json()["error"]
    assert admin.post(url, {"front": True, "priority": "high"}, content_type="application/json").status_code == 200
    job.refresh_from_db()
    assert job.priority == Priority.HIGH and job.front_at is not None
    for body, field in (({}, "__all__"), ({"priority": "urgent"}, "priority"), ({"priority": ["low"]}, "priority")):
        answer = owner.post(url, body, content_type="application/json")
        assert answer.status_code == 400 and field in answer.json()["errors"], body
    job.transition(Status.ABORTED, frm=[Status.QUEUED])
    finished = owner.post(url, {"priority": "normal"}, content_type="application/json")
    assert finished.status_code == 409 and "only a queued or waiting job" in finished.json()["error"]
    assert owner.post("/api/jobs/999999/queue", {"priority": "low"}, content_type="application/json").status_code == 404


def test_staff_set_a_users_limit_over_the_api(alice, staff):
    admin, user = signed_in(staff), signed_in(alice)
    url = "/api/users/alice/device_limit"
    answer = admin.post(url, {"limit": 2}, content_type="application/json")
    assert answer.status_code == 200 and answer.json() == {"user": "alice", "limit": 2}
    assert DeviceLimit.of(alice.pk) == 2
    assert admin.post(url, {"limit": None}, content_type="application/json").json()["limit"] == 0
    assert not DeviceLimit.objects.exists()
    assert user.post(url, {"limit": 5}, content_type="application/json").status_code == 403
    for bad in (-1, 5000, "many", [1]):
        assert admin.post(url, {"limit": bad}, content_type="application/json").status_code == 400, bad
    assert admin.post("/api/users/nobody/device_limit", {"limit": 1}, content_type="application/json").status_code == 404


def test_the_job_page_shows_the_place_and_sets_the_priority(alice, staff, machine):
    job = pending(alice, "a0", minute=0)
    page = signed_in(alice).get(f"/jobs/{job.pk}/").content.decode()
    assert "#1 in the queue" in page and "Next in line; a worker is taking it." in page
    assert 'value="high"' not in page and 'id="move-to-front"' not in page
    answer = signed_in(alice).post(f"/jobs/{job.pk}/queue", {"priority": "low"}, follow=True)
    assert "“a0”: priority low." in answer.content.decode()
    job.refresh_from_db()
    assert job.priority == Priority.LOW
    refused = signed_in(alice).post(f"/jobs/{job.pk}/queue", {"priority": "high"})
    assert refused.status_code == 403 and "High priority is given by staff" in refused.content.decode()
    staff_page = signed_in(staff).get(f"/jobs/{job.pk}/").content.decode()
    assert 'value="high"' in staff_page and 'id="move-to-front"' in staff_page


def test_the_resources_page_lets_staff_reorder_and_set_limits(alice, bob, staff, machine):
    a0 = pending(alice, "a0", minute=0)
    pending(bob, "b0", minute=1)
    admin = signed_in(staff)
    page = admin.get("/resources/").content.decode()
    assert 'id="limit-form"' in page and '"reason": "Behind one of alice' in page
    moved = admin.post(f"/jobs/{Job.objects.get(name='b0').pk}/queue", {"front": "on", "back": "resources"}, follow=True)
    assert moved.redirect_chain[-1][0] == "/resources/" and "“b0”: moved to the front." in moved.content.decode()
    assert names() == ["b0", "a0"]
    saved = admin.post("/resources/limits", {"username": "alice", "limit": "1"}, follow=True)
    assert "alice may now hold 1 devices of a kind at once." in saved.content.decode()
    assert DeviceLimit.of(alice.pk) == 1
    for form, status, message in (({"username": "nobody", "limit": "1"}, 404, "There is no user “nobody”."),
                                  ({"username": "alice", "limit": "-3"}, 400, "Not saved: limit:")):
        refused = admin.post("/resources/limits", form)
        assert refused.status_code == status and message in refused.content.decode()
    user_refused = signed_in(alice).post("/resources/limits", {"username": "alice", "limit": "9"})
    assert user_refused.status_code == 403 and DeviceLimit.of(alice.pk) == 1
    assert 'id="limit-form"' not in signed_in(alice).get("/resources/").content.decode()
    a0.refresh_from_db()
    assert a0.status == Status.QUEUED


def test_a_page_form_left_unfilled_is_refused_with_a_message(alice):
    job = pending(alice, "a0", minute=0)
    refused = signed_in(alice).post(f"/jobs/{job.pk}/queue", {})
    assert refused.status_code == 400 and "Give a priority" in refused.content.decode()
    signed_out = Client().post(f"/jobs/{job.pk}/queue", {"priority": "low"})
    assert signed_out.status_code == 302 and "/login/" in signed_out["Location"]
