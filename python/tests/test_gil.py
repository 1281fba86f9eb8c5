"""Long calls release the GIL: another Python thread runs meanwhile."""
import threading
import time

import hkv
from conftest import ROOT

TRACE = ROOT / "data" / "traces" / "mooncake_conversation_trace.jsonl"


def test_replay_lets_other_threads_run():
    trace = hkv.read_mooncake_trace(str(TRACE))[:1500]
    window = []

    def call():
        window.append(time.perf_counter())
        hkv.replay(trace)
        window.append(time.perf_counter())

    worker = threading.Thread(target=call)
    samples = []
    worker.start()
    while worker.is_alive():
        samples.append(time.perf_counter())
        time.sleep(0.001)
    worker.join()
    start, end = window
    assert end - start > 0.05, "too quick to tell"
    inside = [t for t in samples
              if start + 0.25 * (end - start) < t < end - 0.25 * (end - start)]
    assert len(inside) >= 3
