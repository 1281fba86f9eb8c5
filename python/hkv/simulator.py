"""The engine simulator from Python: ``hkv.simulate(...)`` and
``hkv.compare(...)`` run what ``hkv simulate`` and ``hkv compare`` run and
return their JSON reports as dicts; ``hkv.plot_runs(...)`` (hkv.reports, pure
Python) turns reports into the charts' "runs" (docs/python.md).

Options are the commands' flags in snake_case: ``workload``, ``limit``,
``groups``, ``num_blocks``, ``hash_unit``, ``model``, ``tp``, ``budget_gib``,
``geometry``, ``concurrency``, ``open_loop``, ``spec_drafts``, ... (see
``hkv simulate --help``), and ``data_dir``, the folder whose
``traces/mooncake_conversation_trace.jsonl`` is the default workload (the
package's ``data/``). Times in the reports are modelled.

Example::

    r = hkv.simulate(workload="fanout:requests=8,prefix=4096",
                     groups="full:2048,recurrent:256", hash_unit=256,
                     num_blocks=500)
    r["table"]["reused_tokens"]          # 24576
    ab = hkv.compare(limit=200)          # the geometry comparison, cut
    runs = hkv.plot_runs(ab)             # its configurations as charts' runs
"""

import json
import pathlib

from hkv import _hkv
from hkv.reports import plot_run, plot_runs  # noqa: F401 (re-exported)

# The bundled data sits beside the compiled module: copied into an installed
# package, a link to the source tree's data/ in a build tree.
DATA_DIR = str(pathlib.Path(_hkv.__file__).parent / "data")


def _with_data(options):
    return {"data_dir": DATA_DIR, **options}


def simulate(progress=None, **options):
    """One configuration: the report of ``hkv simulate --json``.
    ``progress(label, done, total)``, when given, is called as requests
    finish (an exception it raises stops the calls and is raised at the
    end)."""
    return json.loads(_hkv.simulate_json(_with_data(options), progress))[0]


def compare(configs=None, vary="", geometries=None, objective="ttft-p50",
            progress=None, **options):
    """``hkv compare --json``. With ``configs`` (``--config`` specs) or one
    flag varied (``vary="concurrency=1,4"``): one report per configuration
    (``geometries`` adds columns), a list. Without them: the geometry
    comparison with its recommendation, as ``compare_geometries``, a dict
    (schema "hkv.compare/1"). ``progress`` as simulate's, per run."""
    if configs or vary:
        return json.loads(_hkv.compare_json(
            _with_data(options), list(configs or []),
            list(geometries or []), vary, progress))
    return compare_geometries(geometries, objective, progress, **options)


def compare_geometries(geometries=None, objective="ttft-p50", progress=None,
                       **options):
    """The geometry comparison of ``hkv compare`` (no ``--config``): the
    eight default configurations (the reviewers' four geometries, then
    hkv's four; those the model cannot run are left out, under "skipped")
    and ``geometries`` (``"T/R/U"``, optionally with
    ``",pools=LAYOUT"`` and ``",retention=RETENTION"``), on the scenarios
    and the trace, with the recommendation and ``beyond_reference``; ``hkv compare --json`` as a dict
    (schema "hkv.compare/1", docs/simulator.md)."""
    return json.loads(_hkv.compare_geometries_json(
        _with_data(options), list(geometries or []), objective, progress))
