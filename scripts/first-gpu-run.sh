#!/usr/bin/env bash
# Renamed: scripts/gpu-check.sh (issue 44). Kept so old references still run it.
exec "$(dirname "$0")/gpu-check.sh" "$@"
