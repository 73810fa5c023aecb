#!/usr/bin/env bash
# Checks, changing nothing, that every tracked C/C++ file is formatted as
# .clang-format says: scripts/format.sh --check (see there), which CI runs.
#
#   scripts/check-format.sh [-v] [FILE...]
exec "$(dirname "$0")/format.sh" --check "$@"
