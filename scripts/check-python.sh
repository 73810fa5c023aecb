#!/usr/bin/env bash
# Checks the project's Python (tests/*.py and the Python programs of bench/
# and scripts/) with pyflakes: unused imports and variables, undefined names,
# f-strings without placeholders. CI runs it beside the C/C++ format check.
#
#   scripts/check-python.sh
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v pyflakes3 >/dev/null; then
	echo "check-python: pyflakes3 not found (apt-get install pyflakes3)" >&2
	exit 2
fi
files=()
while IFS= read -r f; do
	if [[ $f == *.py ]] || head -n1 "$f" | grep -q '^#!.*python'; then
		files+=("$f")
	fi
done < <(git ls-files tests bench scripts)
pyflakes3 "${files[@]}"
echo "check-python: ${#files[@]} files clean"
