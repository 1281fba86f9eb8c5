"""The capacity planner from Python: ``hkv.plan(...)`` gives the rows of
``hkv plan --json`` as dicts, ``hkv.plan_report(...)`` its whole object.

Example::

    rows = hkv.plan("glm53-flash-like", tp=2, budget="64GiB",
                    context=262144, geometries=["2048/256/256", "auto"])
    rows[0]["shared"]["concurrency"]   # 27
"""

import os

from hkv import _hkv
from hkv.manager import U32_MAX, U64_MAX, optional_whole, whole

# PlanOptions fields plan_report takes as keyword options.
_OPTIONS = ("max_batched_tokens", "checkpoint_blocks", "speculative_tokens",
            "retention_interval", "max_scheduled_tokens")


def _model(model):
    if isinstance(model, _hkv.ModelSpec):
        return model
    if isinstance(model, os.PathLike):
        model = os.fspath(model)
    if not isinstance(model, str):
        raise _hkv.UsageError(
            f"model must be a preset name, a file or a ModelSpec, got {model!r}")
    if "/" in model or model.endswith(".json"):
        if not os.path.exists(model):
            raise _hkv.UsageError(f"no such file: {model}")
        if os.path.isdir(model):
            raise _hkv.UsageError(f"model {model} is a directory")
        limit = _hkv.MAX_CONFIG_FILE_BYTES
        with open(model, "rb") as f:
            data = f.read(limit + 1)  # bounded: /dev/zero stops here
        if len(data) > limit:
            raise _hkv.Error(f"{model} is larger than {limit} bytes (the "
                             "limit for a configuration file)")
        try:
            return _hkv.parse_model_json(data.decode("utf-8"))
        except UnicodeDecodeError as e:
            raise _hkv.Error(f"{model}: not UTF-8 ({e.reason} at byte "
                             f"{e.start})") from None
        except _hkv.Error as e:
            raise _hkv.Error(f"{model}: {e}") from None
    return _hkv.load_preset(model)


def _geometry(spec):
    """(label, Geometry or None for auto) from "T/R/U", "auto", a triple or
    a Geometry."""
    if isinstance(spec, _hkv.Geometry):
        g = spec
    elif isinstance(spec, str) and spec == "auto":
        return spec, None
    else:
        try:
            parts = spec.split("/") if isinstance(spec, str) else list(spec)
            numbers = [int(p) for p in parts]
        except (TypeError, ValueError):
            numbers = []
        if (len(numbers) != 3 or min(numbers) <= 0
                or max(numbers) > U32_MAX):
            raise _hkv.UsageError(
                f"bad geometry {spec!r}: want T/R/U (target block/recurrent "
                "block/hash unit, positive tokens) or auto")
        g = _hkv.Geometry(*numbers)
    return f"{g.target_block}/{g.recurrent_block}/{g.hash_unit}", g


def _options(budget, context, tp, dcp, **kwargs):
    o = _hkv.PlanOptions()
    o.budget_bytes = (_hkv.parse_byte_size(budget) if isinstance(budget, str)
                      else whole("budget", budget, U64_MAX, 1))
    o.context_tokens = whole("context", context, U32_MAX, 1)
    o.tp = whole("tp", tp, U32_MAX, 1)
    o.dcp = whole("dcp", dcp, U32_MAX, 1)
    for key, value in kwargs.items():
        if key not in _OPTIONS:
            raise _hkv.UsageError(
                f"unknown plan option {key!r} (one of {', '.join(_OPTIONS)})")
        if value is not None:
            setattr(o, key, optional_whole(key, value))
    return o


def _capacity(c):
    return {"blocks": c.blocks, "blocks_per_request": c.blocks_per_request,
            "concurrency": c.concurrency, "tokens": c.tokens,
            "waste": c.waste}


def _group(g):
    return {"kind": _hkv.layer_kind_name(g.kind), "draft": g.draft,
            "layers": g.num_layers, "block_tokens": g.block_tokens,
            "slot_bytes": g.slot_bytes, "data_bytes": g.data_bytes,
            "waste_bytes": g.waste_bytes,
            "blocks_per_request": g.blocks_per_request,
            "pool_page_bytes": g.pool_page_bytes,
            "pool_blocks": g.pool_blocks}


def plan_row(label, p):
    """One plan as a row of ``hkv plan --json`` (the same keys)."""
    g = p.geometry
    shared = _capacity(p.shared)
    shared["reference_tokens"] = p.reference_tokens
    per_group = _capacity(p.per_group)
    per_group["null_bytes"] = p.null_bytes
    return {"geometry": label, "target_block": g.target_block,
            "recurrent_block": g.recurrent_block, "hash_unit": g.hash_unit,
            "scheduler_block": p.scheduler_block, "hit_unit": p.hit_unit,
            "partial_hits": p.partial_hits, "stride_bytes": p.stride_bytes,
            "cost_bytes": p.cost_bytes,
            "baseline_layer_counts": list(p.baseline_layer_counts),
            "baseline_stride_bytes": p.baseline_stride_bytes,
            "baseline_cost_bytes": p.baseline_cost_bytes,
            "shared": shared, "per_group": per_group,
            "groups": [_group(x) for x in p.groups]}


def _same_but_recurrent_block(a, b):
    return (a.geometry.target_block == b.geometry.target_block
            and a.geometry.hash_unit == b.geometry.hash_unit
            and a.hit_unit == b.hit_unit and a.stride_bytes == b.stride_bytes
            and a.shared.tokens == b.shared.tokens
            and a.per_group.tokens == b.per_group.tokens)


def _search_rows(model, options, max_unit, top):
    """The best `top` plans as `hkv plan --search` prints them: runs that
    differ in the recurrent block only become one row "T/R1..R2/U"."""
    rows = []  # [label, plan]
    first_r = 0
    for p in _hkv.search_geometries(model, options, max_unit):
        g = p.geometry
        if rows and rows[-1][1].geometry == g:
            continue
        if rows and _same_but_recurrent_block(rows[-1][1], p):
            rows[-1][0] = (f"{g.target_block}/{first_r}.."
                           f"{g.recurrent_block}/{g.hash_unit}")
            continue
        if len(rows) == top:
            break
        first_r = g.recurrent_block
        rows.append([f"{g.target_block}/{g.recurrent_block}/{g.hash_unit}",
                     p])
    return rows


def _plans(model, options, geometries):
    rows = []
    for spec in geometries:
        label, g = _geometry(spec)
        try:
            if g is None:
                g = _hkv.auto_geometry(model, options)
            rows.append([label, _hkv.plan_capacity(model, g, options)])
        except _hkv.Error as e:
            raise _hkv.Error(f"geometry {label}: {e}") from None
    return rows


def plan_report(model, *, budget, context, geometries=("auto",), tp=1,
                dcp=1, search=False, max_unit=8192, top=10, **options):
    """What ``hkv plan --json`` prints: ``{"model", "tp", "dcp",
    "budget_bytes", "context_tokens", "plans": [row, ...]}``.

    ``model``: a preset name, a model JSON file or a ModelSpec. ``budget``:
    bytes, or text such as "33GiB". ``geometries``: "T/R/U" strings, (T, R,
    U) triples, Geometry objects or "auto"; ``search=True`` ranks
    power-of-two geometries instead (``max_unit``, ``top``). More options:
    max_batched_tokens, checkpoint_blocks, speculative_tokens,
    retention_interval, max_scheduled_tokens. Raises hkv.Error for an
    infeasible plan, hkv.UsageError for a malformed geometry. Runs without
    the GIL.
    """
    spec = _model(model)
    o = _options(budget, context, tp, dcp, **options)
    max_unit = whole("max_unit", max_unit, U32_MAX, 1)
    top = whole("top", top, U32_MAX, 1)
    rows = (_search_rows(spec, o, max_unit, top) if search
            else _plans(spec, o, geometries))
    return {"model": spec.name, "tp": o.tp, "dcp": o.dcp,
            "budget_bytes": o.budget_bytes, "context_tokens": o.context_tokens,
            "plans": [plan_row(label, p) for label, p in rows]}


def plan(model, **kwargs):
    """The rows of plan_report(model, **kwargs): one dict per geometry."""
    return plan_report(model, **kwargs)["plans"]
