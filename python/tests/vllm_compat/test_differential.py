"""The engine's Scheduler on the engine's manager and on hkv's, side by
side, on 1,000 seeded random workloads (differential.py): every step the
same SchedulerOutput, block tables, free blocks and stats."""
import os

from . import differential

NUM_WORKLOADS = int(os.environ.get("HKV_VLLM_DIFFERENTIAL", "1000"))


def test_schedulers_agree_step_by_step_on_random_workloads():
    coverage = differential.Coverage()
    compared, engine_failed, seed = 0, [], 0
    while compared < NUM_WORKLOADS:
        try:
            coverage.add(differential.run(seed))
            compared += 1
        except differential.EngineFailed as failure:
            engine_failed.append(str(failure))
        seed += 1
    print(f"\n{compared} workloads compared ({coverage}); {len(engine_failed)}"
          " more the engine's own manager fails (its assertions)")
    # Less than this and the workloads no longer test what they claim to.
    assert len(engine_failed) < NUM_WORKLOADS // 10, engine_failed[:3]
    assert coverage.preemptions > NUM_WORKLOADS // 5
    assert coverage.resets > NUM_WORKLOADS // 5
    assert coverage.hits > NUM_WORKLOADS
    assert coverage.drafts > NUM_WORKLOADS * 5
