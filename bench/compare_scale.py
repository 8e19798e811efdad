"""Does the Compare page hold a thousand runs?

A throwaway stack (its own Redis and SQLite, no worker) with ``--models``
finished training jobs in one group, each with an ``events.jsonl`` as the
trainer writes it: ``--epochs`` epochs of ``--train-points`` train events
and one validation each (top-1, top-5, loss), their settings spread over a
sweep (learning rate log-uniform, batch size, solver, weight decay). Each run's
comparison summary is kept in its folder as its worker keeps it when the
job ends (``runsummary.keep_summary``, timed). Then, against the web server as
``make run`` starts it:

- the API (``GET /api/compare?group=…``), first after the server started
  (every run's kept summary read from its folder: cold) and then
  ``--repeats`` times (warm); the page's HTML and the home list (every
  model's sparkline), each the first request of a server just started;
- the page (``GET /compare/?group=…``) in Chromium, ``--repeats`` times, by
  the page's own clock from the navigation's start: the HTML received, the
  table built, the first screen (table, curves and scatter) drawn, and the
  parallel coordinates drawn last (every chart).

Baseline, in the same run: a plain loop in this process that reads every
run's file and decodes every line (``json.loads``), what any tool reading
the runs from their logs does before it can show anything. The aims (issue:
"answers in under one second and draws in under two on the 2-core
machine") are printed met or not.

    .venv/bin/python bench/compare_scale.py [--models 1000] [--epochs 30] [--train-points 20] [--repeats 5]
"""

from __future__ import annotations

import argparse
import json
import math
import random
import shutil
import time
from urllib.parse import quote

from stack import Stack, machine, percentile

GROUP = "search"
ANSWER_AIM, DRAW_AIM = 1.0, 2.0


def events(rng: random.Random, lr: float, epochs: int, train_points: int) -> bytes:
    """A run's events, numbered and timed as ``eventlog.append`` writes them."""
    lines, seq, t = [], 0, time.time() - 3600
    quality = math.exp(-abs(math.log10(lr) + 2))  # the best near lr 0.01
    for epoch in range(1, epochs + 1):
        for point in range(1, train_points + 1):
            seq += 1
            step = (epoch - 1) * train_points + point
            loss = 2.0 / (1 + step * quality) + rng.random() * 0.05
            lines.append({"seq": seq, "t": t + seq, "kind": "train", "data": {
                "step": step, "epoch": step / train_points, "loss": loss, "lr": lr, "batch_size": 128,
                "images_per_s": 1000.0, "data_wait": 0.1}})
        top1 = min(0.99, 0.1 + 0.85 * quality * (1 - math.exp(-epoch / 5)) + rng.random() * 0.02)
        seq += 1
        lines.append({"seq": seq, "t": t + seq, "kind": "val", "data": {
            "step": epoch * train_points, "epoch": float(epoch), "loss": 1.0 - top1, "top1": top1, "top5": 0.99}})
    return b"".join(json.dumps(line, separators=(",", ":")).encode() + b"\n" for line in lines)


def make_models(owner, count: int, epochs: int, train_points: int) -> tuple[int, float]:
    """The models and their events; returns the events' bytes and the
    seconds spent keeping the summaries (as the workers do when the jobs end)."""
    from jobs.models import Job, Status
    from trainer import eventlog
    from training import runsummary

    rng = random.Random(0)
    written, keeping = 0, 0.0
    for i in range(count):
        lr = 10 ** rng.uniform(-4, -1)
        params = {"dataset": 1, "network": {"source": "standard", "name": "lenet"}, "epochs": epochs,
                  "lr": round(lr, 6), "batch_size": rng.choice([64, 128, 256]), "solver": rng.choice(["sgd", "adam"]),
                  "weight_decay": rng.choice([0.0, 1e-4, 5e-4]), "lr_policy": {"name": "cosine"}}
        job = Job.objects.create(kind="train", name=f"trial {i}", group=GROUP, owner=owner, params=params,
                                 resources={"device": "cpu", "count": 1}, status=Status.DONE, progress=1.0)
        job.folder.mkdir(parents=True)
        data = events(rng, lr, epochs, train_points)
        (job.folder / eventlog.FILENAME).write_bytes(data)
        written += len(data)
        began = time.perf_counter()
        runsummary.keep_summary(job)
        keeping += time.perf_counter() - began
    return written, keeping


def plain_read(folders) -> float:
    """Read and decode every run's every event: the baseline."""
    from trainer import eventlog

    began = time.perf_counter()
    for folder in folders:
        with open(folder / eventlog.FILENAME, "rb") as handle:
            for line in handle:
                json.loads(line)
    return time.perf_counter() - began


def timed(http, url: str) -> float:
    began = time.perf_counter()
    answer = http.get(url)
    assert answer.status_code == 200, answer.text[:300]
    return time.perf_counter() - began


def page_times(url: str, cookie: str, repeats: int) -> list[dict[str, float]]:
    """The page's own clock (seconds from the navigation's start, as the
    browser counts it): the HTML received, the table built, the table and
    the curves and scatter drawn (the first screen), every chart drawn."""
    from playwright.sync_api import sync_playwright

    from tests.browser import CHROMIUM

    read = """() => {
      const at = (name) => performance.getEntriesByName(name)[0].startTime / 1000;
      return {html: performance.getEntriesByType("navigation")[0].responseEnd / 1000, table: at("compare-table"),
              first_screen: at("compare-scatter"), all: at("compare-ready")};
    }"""
    times = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        context = browser.new_context()
        context.add_cookies([{"name": "sessionid", "value": cookie, "url": url}])
        page = context.new_page()
        for _ in range(repeats):
            page.goto("about:blank")  # the last page's charts torn down before the clock starts
            page.goto(f"{url}/compare/?group={quote(f'bench/{GROUP}')}")
            page.locator("body[data-compare-ready=true]").wait_for(state="attached", timeout=120_000)
            times.append(page.evaluate(read))
        browser.close()
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=int, default=1000)
    parser.add_argument("--epochs", type=int, default=30)
    parser.add_argument("--train-points", type=int, default=20, help="train events an epoch")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--no-browser", action="store_true", help="time the API alone")
    args = parser.parse_args()
    stack = Stack()
    try:
        import httpx
        from django.test import Client

        from jobs.models import Job

        owner = stack.user()
        began = time.perf_counter()
        size, keeping = make_models(owner, args.models, args.epochs, args.train_points)
        print(f"machine: {machine()}")
        print(f"{args.models} models, {args.epochs} epochs of {args.train_points} train events and a validation each; "
              f"{size / 2**20:.1f} MiB of events, made in {time.perf_counter() - began:.1f} s; each run's summary "
              f"kept as its job ended in {keeping / args.models * 1000:.1f} ms")
        folders = [job.folder for job in Job.objects.filter(group=GROUP)]
        web = stack.start_launched_web()
        client = Client()
        client.force_login(owner)
        cookie = client.cookies["sessionid"].value
        api = f"{web.url}/api/compare?group={quote(f'bench/{GROUP}')}"
        with httpx.Client(cookies={"sessionid": cookie}, timeout=300) as http:
            began = time.perf_counter()
            first = http.get(api)
            cold = time.perf_counter() - began
            assert first.status_code == 200 and first.json()["count"] == args.models, first.text[:300]
            warm, plain = [], []
            for _ in range(args.repeats):  # alternated: the API answer, then the plain read
                began = time.perf_counter()
                answer = http.get(api)
                warm.append(time.perf_counter() - began)
                assert answer.status_code == 200
                plain.append(plain_read(folders))
            fresh = {name: stack.start_launched_web() for name in ("page", "home")}  # each answers its first request
            page_cold = timed(http, f"{fresh['page'].url}/compare/?group={quote(f'bench/{GROUP}')}")
            home_cold = timed(http, f"{fresh['home'].url}/api/jobs")
            home_warm = [timed(http, f"{fresh['home'].url}/api/jobs") for _ in range(args.repeats)]
        body = first.content
        print(f"the page's HTML (GET /compare/, the first metric's curves), cold: {page_cold * 1000:.0f} ms")
        print(f"the home list (GET /api/jobs, each model with its sparkline): cold {home_cold * 1000:.0f} ms, "
              f"warm p50 {percentile(home_warm, 50) * 1000:.0f} ms")
        print(f"API answer: {len(body) / 2**20:.2f} MiB, {first.json()['points']} points a curve")
        print(f"API, cold (the server just started, every run's kept summary read): {cold * 1000:.0f} ms")
        print(f"API, warm: p50 {percentile(warm, 50) * 1000:.0f} ms, max {max(warm) * 1000:.0f} ms "
              f"({', '.join(f'{t * 1000:.0f}' for t in warm)})")
        print(f"plain read of every event: p50 {percentile(plain, 50) * 1000:.0f} ms "
              f"({', '.join(f'{t * 1000:.0f}' for t in plain)})")
        base = percentile(plain, 50)
        print(f"ratio API/plain: cold {cold / base:.2f}x, warm {percentile(warm, 50) / base:.3f}x")
        drawn, first = [], []
        if not args.no_browser and shutil.which("chromium"):
            pages = page_times(web.url, cookie, args.repeats)
            print("page, seconds from the navigation's start (software WebGL: no GPU in this browser):")
            for step in ("html", "table", "first_screen", "all"):
                values = [times[step] for times in pages]
                print(f"  {step:13s} p50 {percentile(values, 50):.2f} s, max {max(values):.2f} s "
                      f"({', '.join(f'{t:.2f}' for t in values)})")
            drawn = [times["all"] for times in pages]
            first = [times["first_screen"] for times in pages]
    finally:
        stack.close()
    def verdict(values: list[float], aim: float) -> str:
        return "not measured" if not values else "met" if percentile(values, 50) < aim else "NOT met"

    print(f"aims: answers in under {ANSWER_AIM:g} s (warm p50): {verdict(warm, ANSWER_AIM)}; "
          f"cold {verdict([cold], ANSWER_AIM)}; draws in under {DRAW_AIM:g} s (p50): first screen "
          f"{verdict(first, DRAW_AIM)}, every chart {verdict(drawn, DRAW_AIM)}")


if __name__ == "__main__":
    main()
