#!/usr/bin/env bash
# Regenerate docs/diffs/stepM-stepN.diff (M: the built step before N) from steps/ (commit the result; a test checks it).
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m minisched.stepdiff --write
