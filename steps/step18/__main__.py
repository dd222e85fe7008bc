"""``python -m steps.stepN --kubeconfig PATH``: this scheduler alone, like kube-scheduler."""

import sys

from minisched.runner import scheduler_main

sys.exit(scheduler_main(__package__ or __name__))
