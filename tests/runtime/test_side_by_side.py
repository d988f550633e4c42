"""Parts of a build side by side (runtime/side_by_side.py): really at once, in the caller's
context, results in the order given, a failure raised once every part has ended."""
import contextvars
import logging
import threading
import time

import pytest

from xmdata.runtime.side_by_side import side_by_side

WHO = contextvars.ContextVar("who", default=None)


def one_row_shards(folder, name: str, n: int) -> list[str]:
    """N input shards of one row each (ids NAME0, NAME1, …) under FOLDER/input."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    paths = []
    for i in range(n):
        path = folder / "input" / f"shard-{i:05d}.parquet"
        path.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.table({"id": [f"{name}{i}"], "text": ["x"]}), path)
        paths.append(str(path))
    return paths


def interrupt(thread_id: int) -> None:
    """Ctrl-C in the thread that called side_by_side (the main thread of a command; under xdist a
    test may run in another, which `_thread.interrupt_main` would miss)."""
    import ctypes

    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread_id), ctypes.py_object(KeyboardInterrupt))


def test_parts_run_at_once_in_the_callers_context_and_come_back_in_order():
    barrier = threading.Barrier(3, timeout=10)  # passes only if all three wait at the same time
    WHO.set("the flow run")

    def part(i):
        def run():
            barrier.wait()
            time.sleep(0.05 * (3 - i))  # the last given ends first
            return i, WHO.get(), threading.current_thread().name
        return run

    results = side_by_side([part(0), part(1), part(2)])
    assert [r[0] for r in results] == [0, 1, 2]
    assert {r[1] for r in results} == {"the flow run"}
    assert len({r[2] for r in results}) == 3 and threading.current_thread().name not in {r[2] for r in results}


def test_a_failure_waits_for_the_others_and_the_first_in_order_is_raised_the_rest_logged(caplog):
    finished = []

    def fails(message, after=0.0):
        def run():
            time.sleep(after)
            raise RuntimeError(message)
        return run

    def slow():
        time.sleep(0.3)
        finished.append("slow")
        return "done"

    with caplog.at_level(logging.ERROR), pytest.raises(RuntimeError, match="first in order"):
        side_by_side([slow, fails("first in order", after=0.1), fails("second in order")])
    assert finished == ["slow"]  # the part that was fine ran to its end
    assert "second in order" in caplog.text and "first in order" not in caplog.text


def test_one_part_runs_in_the_callers_thread():
    assert side_by_side([lambda: threading.current_thread().name]) == [threading.current_thread().name]
    assert side_by_side([]) == []


def test_stages_in_this_process_call_their_functions_one_at_a_time_across_parts(tmp_path):
    """Two parts' in-process stages (the same model, say) never run a shard function at once."""
    from xmdata.runtime.execution import run_stage
    from xmdata.runtime.session import execution_session
    from xmdata.runtime.stage import Stage
    from xmdata.tasks.build.rejects import no_rejects

    inside, most = [0], [0]
    lock = threading.Lock()

    def shard_fn(table, params):
        with lock:
            inside[0] += 1
            most[0] = max(most[0], inside[0])
        time.sleep(0.05)
        with lock:
            inside[0] -= 1
        return table, no_rejects()

    def part(name):
        paths = one_row_shards(tmp_path / name, name, 4)
        return lambda: run_stage(Stage(name, "1", shard_fn), paths, str(tmp_path / name / "out")).shards_run

    with execution_session("inprocess"):
        assert side_by_side([part("a"), part("b")]) == [4, 4]
    assert most[0] == 1


def test_ctrl_c_waits_for_a_running_shard_function():
    """A command interrupted while a part runs a model in this process does not end with that part's
    thread inside native code (torch's abort at exit): the caller raises once the shard function
    has returned and its part has ended, and leaves nothing held."""
    from xmdata.runtime.side_by_side import SHARD_FUNCTIONS

    events, caller = [], threading.get_ident()

    def part():
        with SHARD_FUNCTIONS:
            events.append("started")
            interrupt(caller)  # Ctrl-C, while this shard function runs
            time.sleep(0.5)
            events.append("ended")

    with pytest.raises(KeyboardInterrupt, match="^$"):  # Ctrl-C carries no message
        side_by_side([part, lambda: time.sleep(0.2)])
    assert events == ["started", "ended"] and not SHARD_FUNCTIONS.locked()


def test_ctrl_c_stops_the_parts_stages_between_shards(tmp_path):
    """The parts' in-process stages stop at their next shard, as a stage in the caller's thread does."""
    from xmdata.runtime.execution import run_stage
    from xmdata.runtime.session import execution_session
    from xmdata.runtime.side_by_side import SHARD_FUNCTIONS
    from xmdata.runtime.stage import Stage
    from xmdata.tasks.build.rejects import no_rejects

    ran, caller = [], threading.get_ident()

    def shard_fn(table, params):
        ran.append(table.column("id")[0].as_py())
        if len(ran) == 2:
            interrupt(caller)
        time.sleep(0.1)
        return table, no_rejects()

    def part(name):
        paths = one_row_shards(tmp_path / name, name, 20)
        return lambda: run_stage(Stage(name, "1", shard_fn), paths, str(tmp_path / name / "out"))

    with execution_session("inprocess"), pytest.raises(KeyboardInterrupt, match="^$"):
        side_by_side([part("a"), part("b")])
    stopped_at = len(ran)
    time.sleep(0.5)
    assert len(ran) == stopped_at < 40  # none started after the command raised, nor ran to the end
    assert not SHARD_FUNCTIONS.locked()
