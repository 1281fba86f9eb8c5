"""hkv.vllm's decode fast path, hkv._hkv.QuietCells: the token counts across
which no group's allocation, release or caching changes, against a brute
force over each group's boundaries; the record an allocation leaves."""
import random

import pytest

from hkv import _hkv

K = _hkv.GroupKind
FAR = 1 << 62


def group(kind, block_size=16, **fields):
    spec = _hkv.GroupSpec()
    spec.kind = kind
    spec.block_size = block_size
    for name, value in fields.items():
        setattr(spec, name, value)
    return spec


Q = _hkv.QuietCount


def boundaries(groups):
    """By count, (period, offset) pairs where some group's allocation can
    change: the main count's block ceilings, the cached count's full
    blocks, and on the computed count a window's start, a chunk's, a state
    released behind speculative blocks."""
    found = {Q.COMPUTED: set(), Q.MAIN: set(), Q.CACHED: set()}
    for g in groups:
        b = g.block_size
        found[Q.MAIN].add((b, 1 % b))
        found[Q.CACHED].add((b, 0))
        if g.kind == K.SLIDING_WINDOW:
            found[Q.COMPUTED].add((b, (g.sliding_window - 1) % b))
        elif g.kind == K.CHUNKED_LOCAL:
            found[Q.COMPUTED].add((g.chunk_size, 0))
        elif g.kind == K.RECURRENT:
            found[Q.COMPUTED].add((b, (g.speculative_blocks + 1) % b))
    return found


def brute_cell(found, x, far=1000):
    """The counts around x crossing no boundary: from the last boundary at
    or under x to the first over it, less one (+-FAR past ``far`` counts)."""
    def is_boundary(t):
        return any(t % p == o for p, o in found)
    lo = x
    while not is_boundary(lo):
        lo -= 1
        if lo < x - far:
            lo = -FAR
            break
    hi = x + 1
    while not is_boundary(hi):
        hi += 1
        if hi > x + far:
            hi = FAR + 1
            break
    return lo, hi - 1


def test_a_hybrid_models_cells():
    # Full attention, a window of 4096 and Mamba (no speculative blocks) at
    # block 16: the window's start passes a block at offset 15 and a state
    # is released at offset 1 of the computed count; blocks are placed at
    # offset 1 of the main count and fill at offset 0 of the cached count.
    groups = [group(K.FULL_ATTENTION), group(K.SLIDING_WINDOW,
                                             sliding_window=4096),
              group(K.RECURRENT)]
    cells = _hkv.QuietCells(groups, [16, 16, 16], 1 << 20)
    assert cells.cell(Q.COMPUTED, 20) == (17, 30)
    assert cells.cell(Q.COMPUTED, 31) == (31, 32)
    assert cells.cell(Q.COMPUTED, 32) == (31, 32)
    assert cells.cell(Q.MAIN, 31) == cells.cell(Q.MAIN, 32) == (17, 32)
    assert cells.cell(Q.CACHED, 31) == (16, 31)
    assert cells.cell(Q.CACHED, 32) == (32, 47)


def test_full_attention_releases_nothing():
    # Its computed count binds nothing: a decode step crossing a block
    # changes only where the main count places a block and where the
    # cached count fills one.
    cells = _hkv.QuietCells([group(K.FULL_ATTENTION)], [16], 1 << 20)
    assert cells.cell(Q.COMPUTED, 40) == (-FAR, FAR)
    assert cells.cell(Q.MAIN, 40) == (33, 48)
    assert cells.cell(Q.CACHED, 40) == (32, 47)


@pytest.mark.parametrize("seed", range(40))
def test_cells_match_a_brute_force(seed):
    rng = random.Random(seed)
    groups, sizes = [], []
    for _ in range(rng.randint(1, 4)):
        b = rng.choice([1, 2, 3, 16, 32, 48])
        kind = rng.choice([K.FULL_ATTENTION, K.SLIDING_WINDOW,
                           K.CHUNKED_LOCAL, K.RECURRENT])
        fields = {}
        if kind == K.SLIDING_WINDOW:
            fields["sliding_window"] = rng.randint(1, 300)
        elif kind == K.CHUNKED_LOCAL:
            fields["chunk_size"] = b * rng.randint(1, 8)
        elif kind == K.RECURRENT:
            fields["speculative_blocks"] = rng.randint(0, 4)
        groups.append(group(kind, b, **fields))
        sizes.append(b)
    cells = _hkv.QuietCells(groups, sizes, 1 << 20)
    for count, found in boundaries(groups).items():
        for x in range(0, 400):
            assert cells.cell(count, x) == brute_cell(found, x), (count, x)


def test_the_record_an_allocation_leaves():
    cells = _hkv.QuietCells([group(K.FULL_ATTENTION)], [16], 100)
    # 40 computed, 1 new, a prompt of 20: blocks are placed past main 48 and
    # the next fills at cached 48; full attention's computed count binds
    # nothing above the prompt.
    assert cells.record(7, 40, 1, 0, 41, 20) == (7, 0, False, 20, FAR, 33,
                                                 48, 32, 47)
    # No commit: its range binds nothing.
    assert cells.record(7, 40, 1, 0, None, 20)[2:] == (True, 20, FAR, 33, 48,
                                                       -FAR, FAR)
    # A lookahead of 3 folds the slot count's cell into the main count's:
    # main 45 + 3 reaches 48, the cell's end.
    assert cells.record(0, 40, 4, 3, 44, 20)[5:7] == (33, 45)
    # Main 95, slots 105 capped at 100 (cell [97, 112]): a main from 87 on
    # keeps its slots in that cell (or capped), and nothing past the cap
    # binds the main count from above.
    assert cells.record(0, 90, 5, 10, 95, 20)[5:7] == (87, 96)


def test_no_record_reaches_below_the_prompt():
    # A request's own boundaries (a partial entry at its prompt's last hash
    # unit, a recurrent checkpoint) lie at or below its prompt: no record
    # while the computed count is below it, and none reaching under it.
    cells = _hkv.QuietCells([group(K.FULL_ATTENTION)], [32], 4096)
    assert cells.record(0, 40, 10, 0, 50, 50) is None
    assert cells.record(0, 0, 40, 0, 40, 50) is None
    assert cells.record(0, 50, 1, 0, 51, 50)[3:] == (50, FAR, 50, 64, 50, 63)


def test_sizes_that_do_not_fit_are_refused():
    with pytest.raises(_hkv.UsageError, match="1 groups but 2 block sizes"):
        _hkv.QuietCells([group(K.FULL_ATTENTION)], [16, 16], 100)
    with pytest.raises(_hkv.UsageError, match="period of 0 tokens"):
        _hkv.QuietCells([group(K.FULL_ATTENTION)], [0], 100)
