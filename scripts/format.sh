#!/usr/bin/env bash
# Formats tracked C/C++ files in place (clang-format -i) as .clang-format says:
# every *.c *.h *.cpp *.hpp file git ls-files lists, the same set
# scripts/check-format.sh checks, or only the files named.
#
#   scripts/format.sh [FILE...]
#
# CLANG_FORMAT names the binary (default: clang-format-14, else clang-format).
# Regions laid out by hand stay as written between `// clang-format off` and
# `// clang-format on`.
set -euo pipefail
cd "$(dirname "$0")/.."

cf=${CLANG_FORMAT:-}
if [[ -z $cf ]]; then
	if command -v clang-format-14 >/dev/null; then cf=clang-format-14; else cf=clang-format; fi
fi
if ! command -v "$cf" >/dev/null; then
	echo "format: $cf not found (apt-get install clang-format-14, or set CLANG_FORMAT)" >&2
	exit 2
fi
version=$("$cf" --version)
if [[ ! $version =~ version\ 14\. ]]; then
	echo "format: warning: .clang-format is written for clang-format 14, this is: $version" >&2
fi

files=()
if (($#)); then
	files=("$@")
else
	while IFS= read -r -d '' f; do
		[[ -f $f ]] && files+=("$f") # skip files deleted in the work tree
	done < <(git ls-files -z -- '*.c' '*.h' '*.cpp' '*.hpp')
fi
((${#files[@]})) || exit 0

printf '%s\0' "${files[@]}" | xargs -0 -n 50 "$cf" --style=file -i
echo "format: ${#files[@]} files formatted"
