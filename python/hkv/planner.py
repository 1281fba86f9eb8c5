"""The capacity planner from Python: ``hkv.plan(...)`` gives the rows of
``hkv plan --json`` as dicts, ``hkv.plan_report(...)`` its whole object.

Example::

    rows = hkv.plan("glm53-flash-like", tp=2, budget="64GiB",
                    context=262144, geometries=["2048/256/256", "auto"])
    rows[0]["shared"]["concurrency"]   # 27
"""

import json
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
    return _hkv.load_model(model)


def _geometry(spec):
    """The label "T/R/U" or "auto" of a geometry given as text, a (T, R, U)
    triple or a Geometry; the text is parsed by the library."""
    if isinstance(spec, _hkv.Geometry):
        g = spec
    elif isinstance(spec, str):
        if spec == "auto":
            return spec
        try:
            g = _hkv.parse_geometry(spec)
        except _hkv.Error as e:
            raise _hkv.UsageError(f"bad geometry {spec!r}: {e}") from None
    else:
        try:
            g = _hkv.Geometry(*(whole("geometry", x) for x in spec))
        except TypeError:
            raise _hkv.UsageError(
                f"bad geometry {spec!r}: want \"T/R/U\", a (T, R, U) triple, "
                "a Geometry or \"auto\"") from None
    return f"{g.target_block}/{g.recurrent_block}/{g.hash_unit}"


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
    labels = [] if search else [_geometry(g) for g in geometries]
    return json.loads(_hkv.plan_report_json(spec, o, labels, search, max_unit,
                                            top))


def plan(model, **kwargs):
    """The rows of plan_report(model, **kwargs): one dict per geometry."""
    return plan_report(model, **kwargs)["plans"]
