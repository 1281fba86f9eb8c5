"""Which object groups a request can resume from, and where their parts go,
by the reference engine's own block rules (no engine import, no I/O).

hkv's connector stores, for a prefix boundary E, one object group keyed by
the request's chained key of its first E tokens: one part per cache group
whose block ends at E (a full-attention, window or chunk page; a recurrent
state, which the engine's "all" cache mode keeps at every block boundary).

A load to E on top of a local hit of H tokens writes, per group, the blocks
the engine's ``allocate_new_computed_blocks`` allocates for the external
tokens: indices ``max(H, skipped(E)) // block_size`` up to
``E // block_size``, where ``skipped`` is the group's
``get_num_skipped_tokens`` (0 for full attention, the tokens before the
window for sliding windows, before the chunk for chunked local attention,
all but the last for recurrent state). Block j's part is the one stored at
boundary ``(j + 1) * block_size``. E is a whole block of every group, so
every part is a whole page or a state at its block's end.

A tail object, stored when a request finishes at T tokens that are not a
whole block of every group, holds per group the block with token T - 1 (a
partial page, the recurrent state after exactly T tokens). A load may end
inside a block then: at T, or for attention alone at any E < T whose
tokens the tail's share (``load_blocks`` with ``tail_tokens``).
"""

import dataclasses
import math


@dataclasses.dataclass(frozen=True)
class GroupRule:
    """One cache group as the connector sees it."""
    kind: str  # "full", "sliding", "chunked" or "mamba"
    block_size: int
    window: int = 0  # sliding
    chunk: int = 0   # chunked

    def skipped(self, tokens):
        """The engine's get_num_skipped_tokens(tokens) for this group."""
        if self.kind == "sliding":
            return max(0, tokens - self.window + 1)
        if self.kind == "chunked":
            return tokens // self.chunk * self.chunk
        if self.kind == "mamba":
            return max(0, tokens - 1)
        return 0


def rules_from_groups(groups):
    """GroupRules from hkv.vllm.config.groups_from_config's group dicts."""
    return [GroupRule(kind=g["kind"], block_size=g["block_size"],
                      window=g.get("window", 0), chunk=g.get("chunk", 0))
            for g in groups]


def alignment(rules):
    """The least boundary step that is a whole block of every group."""
    step = 1
    for rule in rules:
        step = math.lcm(step, rule.block_size)
    return step


# A block's source in load_blocks: the tail object's part.
TAIL = "tail"


def load_blocks(rules, hit_tokens, end_tokens, tail_tokens=None):
    """Per group, the block indices a load from hit_tokens to end_tokens
    writes, each with its source: the boundary whose whole block was stored
    there, or TAIL, the part of a tail object stored at tail_tokens
    (>= end_tokens; a boundary where some group's block is partial), which
    is the block holding token tail_tokens - 1:
    [[(block index, boundary or TAIL), ...] per group].

    A block cut by end_tokens takes an attention page that holds its first
    slots (the whole page, or the tail's) or a recurrent state of exactly
    end_tokens (the tail's, when it ends there); None when some block has
    no such source."""
    out = []
    for rule in rules:
        b = rule.block_size
        first = max(hit_tokens, rule.skipped(end_tokens)) // b
        last = (end_tokens - 1) // b
        blocks = [(j, (j + 1) * b) for j in range(first, last)]
        if first <= last:
            whole = (last + 1) * b
            in_tail = tail_tokens is not None and \
                last == (tail_tokens - 1) // b and \
                (rule.kind != "mamba" or end_tokens == tail_tokens)
            if in_tail:
                blocks.append((last, TAIL))
            elif whole == end_tokens or (rule.kind != "mamba"
                                         and tail_tokens is not None
                                         and whole <= tail_tokens):
                blocks.append((last, whole))
            else:
                return None
        out.append(blocks)
    return out


def reach(rules, hit_tokens, max_tokens, has_part):
    """The deepest boundary E (hit_tokens < E <= max_tokens, a multiple of
    alignment(rules)) whose load needs only parts ``has_part(boundary,
    group)`` says are there; hit_tokens when there is none."""
    step = alignment(rules)
    start = hit_tokens - hit_tokens % step
    # Full attention needs every block from the hit on: bound E by the
    # first missing page of any full group (one pass), then try the
    # candidates from the deepest down.
    limit = max_tokens - max_tokens % step
    for g, rule in enumerate(rules):
        if rule.kind != "full":
            continue
        b = rule.block_size
        boundary = hit_tokens - hit_tokens % b + b
        while boundary <= limit and has_part(boundary, g):
            boundary += b
        limit = min(limit, boundary - b)
    for end in range(limit - limit % step, start, -step):
        if end <= hit_tokens:
            break
        if all(has_part(boundary, g)
               for g, blocks in enumerate(load_blocks(rules, hit_tokens, end))
               if rules[g].kind != "full"
               for _, boundary in blocks):
            return end
    return hit_tokens


def step_boundaries(rules, after_tokens, upto_tokens):
    """Boundaries E in (after_tokens, upto_tokens] where some group's block
    ends, each with the groups whose block ends there: [(E, [group, ...])]."""
    ends = {}
    for g, rule in enumerate(rules):
        b = rule.block_size
        first = after_tokens // b + 1
        for j in range(first, upto_tokens // b + 1):
            ends.setdefault(j * b, []).append(g)
    return sorted(ends.items())
