"""The steps: one complete, runnable scheduler per package, each adding one feature.

Steps never import each other; ``diff -ruN -x __pycache__ steps/stepN-1 steps/stepN`` shows
one feature.
"""
