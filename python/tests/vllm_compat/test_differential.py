"""The engine's Scheduler on the engine's manager and on hkv's, side by
side, on 1,000 seeded random workloads (differential.py), and on 150 more
hashed at half their block size: every step the same SchedulerOutput,
block tables, free blocks and stats."""
import dataclasses
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


NUM_HALVED = int(os.environ.get("HKV_VLLM_DIFFERENTIAL_HALVED", "150"))


def test_schedulers_agree_with_the_hash_unit_under_the_block():
    # The engine's default for hybrid models: groups whose blocks are a
    # multiple of the hash unit (partial entries at a prompt's last unit,
    # recurrent checkpoints between blocks). Shapes either manager refuses
    # when built (the engine's single-group coordinator, hkv's chunked
    # local attention, and its recurrent groups caching every state with
    # prefix caching on) are skipped; every other workload must agree step
    # by step.
    # Recurrent workloads run again with prefix caching off, where hkv
    # builds a group caching every state at any hash unit (no hits).
    def uncached(w):
        return dataclasses.replace(differential.halved_hash_unit(w),
                                   caching=False)
    compared = refused = uncached_compared = 0
    for seed in range(NUM_HALVED):
        w = differential.workload(seed)
        if differential.halved_hash_unit(w) is None:
            continue
        shapes = [differential.halved_hash_unit]
        if any(kind.startswith("mamba") for kind in w.kinds):
            shapes.append(uncached)
        for shape in shapes:
            try:
                differential.run(seed, shape=shape)
                compared += 1
                uncached_compared += shape is uncached
            except (differential.NotBuilt, differential.EngineFailed):
                refused += 1
    print(f"\n{compared} workloads hashed at half the block compared "
          f"({uncached_compared} with caching off); {refused} refused by a "
          "manager")
    assert compared > NUM_HALVED // 4, (compared, refused)
    assert uncached_compared > NUM_HALVED // 10, uncached_compared
