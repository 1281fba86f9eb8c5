"""The worker side's tier I/O: one thread that owns the tier chain and runs
its stores and staging reads in order, so neither a step's forward nor its
scheduler waits for host copies, files or Redis.

The chain is thread-compatible, so only this thread calls it. The step's
thread hands it bytes already copied out of the KV tensors (stores) or keys
(staging), and takes back, at ``collect``, what the tiers now hold and
which object groups each staging request holds, checked, in host memory.
With ``threaded=False`` every job runs at once on the caller's thread.
"""

import collections
import concurrent.futures
import threading


class TierWorker:
    """See the module docstring. ``part_bytes[g]``: the bytes a part of
    group g must have (this engine's page or state)."""

    def __init__(self, chain, part_bytes, threaded=True):
        self._chain = chain
        self._part_bytes = part_bytes
        self._lock = threading.Lock()  # guards the results below
        self._stored = {}              # key -> frozenset of groups
        self._forgotten = set()
        self._staged = {}              # req id -> {key: ObjectGroup}
        self._reported = set()         # req ids whose staging was reported
        self._released = set()         # released before their job ended
        self.wrong_shape_groups = 0
        self._pool = (concurrent.futures.ThreadPoolExecutor(
            max_workers=1, thread_name_prefix="hkv-tiers")
            if threaded else None)
        self._jobs = collections.deque()

    def _run(self, job, *args):
        if self._pool is None:
            job(*args)
        else:
            self._jobs.append(self._pool.submit(job, *args))
            while self._jobs and self._jobs[0].done():
                self._jobs.popleft().result()  # re-raises a job's error

    def learn_all(self):
        """Relearns the directory from the tiers (a restart's objects) and
        reports everything it holds; waits for it."""
        def job():
            try:
                self._chain.refresh()
            except ValueError:
                pass  # no tier could list: start from what this chain knows
            for key in self._chain.known_keys():
                self._learn(key)
        self._run(job)
        self.drain()

    def store(self, groups):
        """Writes object groups (bytes already copied) through the tiers."""
        def job():
            self._chain.store(groups)
            for group in groups:
                self._learn(group.key)
        self._run(job)

    def stage(self, request_id, keys):
        """Reads the object groups under `keys` into host memory for
        `request_id`, keeping those whose parts all have this engine's
        sizes; the others are dropped from every tier."""
        def job():
            staged = {}
            for key, group in zip(keys, self._chain.load(keys)):
                if group is None:
                    self._learn(key)
                    continue
                if any(g >= len(self._part_bytes)
                       or len(data) != self._part_bytes[g]
                       for g, data in group.parts):
                    with self._lock:
                        self.wrong_shape_groups += 1
                    self._chain.drop(key)
                    self._learn(key)
                    continue
                staged[key] = group
            with self._lock:
                if request_id in self._released:
                    self._released.discard(request_id)
                else:
                    self._staged[request_id] = staged
                    self._reported.discard(request_id)
        self._run(job)

    def release(self, request_id):
        """Forgets what was staged for `request_id` (or will be)."""
        with self._lock:
            self._reported.discard(request_id)
            if self._staged.pop(request_id, None) is None:
                self._released.add(request_id)

    def take_staged(self, request_id):
        """What was staged for `request_id` ({} when nothing was)."""
        with self._lock:
            self._reported.discard(request_id)
            return self._staged.pop(request_id, {})

    def collect(self, report):
        """Moves what the tiers now hold into `report` (HkvWorkerMetadata),
        and the groups each finished staging holds."""
        with self._lock:
            report.stored.update(self._stored)
            report.forgotten |= self._forgotten
            for key in self._forgotten:
                report.stored.pop(key, None)
            self._stored, self._forgotten = {}, set()
            for rid, staged in self._staged.items():
                if rid not in self._reported:
                    report.staged[rid] = {k: frozenset(g for g, _ in v.parts)
                                          for k, v in staged.items()}
                    self._reported.add(rid)

    def drain(self):
        """Waits for every job sent so far."""
        while self._jobs:
            self._jobs.popleft().result()

    def counters(self):
        self.drain()
        return self._chain.counters()

    def shutdown(self):
        if self._pool is not None:
            self.drain()
            self._pool.shutdown(wait=True)

    def _learn(self, key):
        known = self._chain.find(key)
        with self._lock:
            if known is None:
                self._forgotten.add(key)
                self._stored.pop(key, None)
            else:
                self._stored[key] = frozenset(known[1])
                self._forgotten.discard(key)

