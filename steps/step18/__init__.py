"""A scheduler built on the kube-scheduler framework; see docs/ for this step's chapter."""
