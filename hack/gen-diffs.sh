#!/usr/bin/env bash
# Regenerate docs/diffs/stepN-1-stepN.diff from steps/ (commit the result; a test checks it).
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m minisched.stepdiff --write
