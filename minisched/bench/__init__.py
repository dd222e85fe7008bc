"""Measurements (not tests): ``python -m minisched.bench`` (``nox -s bench``) and its parts.

Upstream counterpart: ``test/integration/scheduler_perf`` (``BenchmarkPerfScheduling``, the
SchedulingBasic workload with ``node-default.yaml`` and ``pod-default.yaml``; metric
SchedulingThroughput in pods/s).

- ``__main__``: the command line that ``nox -s bench`` runs.
- ``scheduler``: the scheduler workloads (nodes and pods pre-created, then the step's scheduler
  started as users start it, ``python -m steps.stepN --kubeconfig PATH``, or the cluster's
  default-scheduler; a watch in the bench times them all alike, from the first binding to the
  last).
- ``kube_scheduler``: the real kube-scheduler binary as the default-scheduler (``--kube-scheduler
  PATH``: a generated KubeSchedulerConfiguration, with its default plugins and with exactly the
  plugins of the highest step run), and a step's scenario scheduled by it (``python -m
  minisched.runner N --kube-scheduler PATH``).
- ``binder``: the baseline, one thread binding round robin (``python -m minisched.bench.binder``).
- ``apiserver``: the embedded API server alone (start-to-ready, creates/s, binds/s, watch-event
  latency with 1 and 50 watchers); also ``python -m minisched.bench.apiserver``.
- ``results``: the JSON file under ``bench-results/``, the rich tables, targets, ``--compare``.
- ``proc``: CPU seconds and peak RSS from ``/proc``; ``profile``: a ``pprof -top`` for py-spy.

Timings are never asserted: ``tests/test_bench.py`` runs all of it at tiny sizes so it cannot
rot.
"""
