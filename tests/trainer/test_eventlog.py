"""The job event log (``events.jsonl``) and the log reader."""

import multiprocessing

import pytest

from jobs.logfile import TAIL_BYTES, LogTail, tail_lines
from trainer import eventlog, jobfiles


def _append_many(job_dir, writer, count):
    for i in range(count):
        eventlog.append(job_dir, "tick", {"writer": writer, "i": i})


def test_concurrent_writers_get_gapless_sequence_numbers(tmp_path):
    context = multiprocessing.get_context("spawn")
    writers = [context.Process(target=_append_many, args=(tmp_path, w, 200)) for w in range(4)]
    for process in writers:
        process.start()
    for process in writers:
        process.join(60)
    found = eventlog.read_all(tmp_path)
    assert [e["seq"] for e in found] == list(range(1, 801))
    for w in range(4):
        assert [e["data"]["i"] for e in found if e["data"]["writer"] == w] == list(range(200))


def test_the_reader_returns_only_new_complete_lines(tmp_path):
    reader = eventlog.Reader(tmp_path)
    assert reader.read() == []  # no file yet
    eventlog.append(tmp_path, "a", {})
    assert [e["kind"] for e in reader.read()] == ["a"]
    with open(tmp_path / jobfiles.EVENTS, "ab") as handle:
        handle.write(b'{"seq":2,"t":0,"kind":"b","da')  # a writer half-way through a line
    assert reader.read() == []
    with open(tmp_path / jobfiles.EVENTS, "ab") as handle:
        handle.write(b'ta":{}}\n')
    assert [e["kind"] for e in reader.read()] == ["b"]


def test_reading_after_a_sequence_number(tmp_path):
    for kind in "abcd":
        eventlog.append(tmp_path, kind, {})
    assert [e["kind"] for e in eventlog.read_all(tmp_path, after_seq=2)] == ["c", "d"]


def test_sequence_numbers_continue_past_long_events(tmp_path):
    eventlog.append(tmp_path, "big", {"blob": "x" * 20_000})
    assert eventlog.append(tmp_path, "next", {})["seq"] == 2


def test_log_tail_follows_complete_lines_and_survives_bad_bytes(tmp_path):
    path = tmp_path / "log.txt"
    tail = LogTail(path)
    assert tail.read_lines() == []
    path.write_bytes(b"one\ntw")
    assert tail.read_lines() == ["one"]
    with open(path, "ab") as handle:
        handle.write(b"o \xff\n")
    assert tail.read_lines() == ["two \ufffd"]


def test_tail_lines_reads_only_the_end_of_a_big_log(tmp_path):
    path = tmp_path / "log.txt"
    path.write_text("".join(f"line {i:06d}\n" for i in range(3 * TAIL_BYTES // 12)))
    last = tail_lines(path, 3)
    assert last == [f"line {i:06d}" for i in range(3 * TAIL_BYTES // 12 - 3, 3 * TAIL_BYTES // 12)]
    assert all(line.startswith("line ") and len(line) == 11 for line in tail_lines(path, 100_000))
    assert tail_lines(tmp_path / "missing.txt", 5) == []


@pytest.mark.parametrize("lines", [4096, 4097], ids=["64-KiB", "64-KiB-and-a-line"])
def test_tail_lines_keeps_every_whole_line_of_the_last_64_kib(tmp_path, lines):
    """``tail_lines`` reads the last ``TAIL_BYTES`` (64 KiB) of a log. 4096
    lines of 16 bytes fill it exactly: all are given. With one line more,
    the read starts at a line's start: the 4096 lines read are all whole."""
    assert TAIL_BYTES == 4096 * 16
    path = tmp_path / "log.txt"
    path.write_text("".join(f"line {i:010d}\n" for i in range(lines)))
    assert tail_lines(path, 10_000) == [f"line {i:010d}" for i in range(lines - 4096, lines)]
