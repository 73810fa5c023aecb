#!/usr/bin/env bash
# Checks that every tracked C/C++ file (*.c *.h *.cpp *.hpp, as git ls-files
# lists them) is formatted as .clang-format says, with clang-format 14
# (`clang-format --dry-run -Werror`). Changes nothing. Exits 0 when all are,
# 1 naming the files that are not (fix them with scripts/format.sh), 2 when
# clang-format itself fails.
#
#   scripts/check-format.sh [-v] [FILE...]
#     -v     also print clang-format's diagnostics (where each file differs)
#     FILE   check only these files (default: every tracked C/C++ file)
#
# CLANG_FORMAT names the binary (default: clang-format-14, else clang-format).
# Other major versions format some constructs differently: the check warns.
set -euo pipefail
cd "$(dirname "$0")/.."

verbose=0
if [[ ${1:-} == -v ]]; then
	verbose=1
	shift
fi

cf=${CLANG_FORMAT:-}
if [[ -z $cf ]]; then
	if command -v clang-format-14 >/dev/null; then cf=clang-format-14; else cf=clang-format; fi
fi
if ! command -v "$cf" >/dev/null; then
	echo "check-format: $cf not found (apt-get install clang-format-14, or set CLANG_FORMAT)" >&2
	exit 2
fi
version=$("$cf" --version)
if [[ ! $version =~ version\ 14\. ]]; then
	echo "check-format: warning: .clang-format is written for clang-format 14, this is: $version" >&2
fi

files=()
if (($#)); then
	files=("$@")
else
	while IFS= read -r -d '' f; do
		[[ -f $f ]] && files+=("$f") # skip files deleted in the work tree
	done < <(git ls-files -z -- '*.c' '*.h' '*.cpp' '*.hpp')
fi

bad=()
for f in "${files[@]}"; do
	status=0
	out=$("$cf" --style=file --dry-run -Werror "$f" 2>&1) || status=$?
	if ((status == 0)); then
		continue
	fi
	if [[ $out != *"code should be clang-formatted"* ]]; then
		echo "check-format: clang-format failed on $f:" >&2
		echo "$out" >&2
		exit 2
	fi
	bad+=("$f")
	if ((verbose)); then
		echo "$out"
	fi
done

if ((${#bad[@]})); then
	echo "check-format: ${#bad[@]} of ${#files[@]} files need formatting:"
	printf '  %s\n' "${bad[@]}"
	echo "Fix them with: scripts/format.sh (or scripts/format.sh FILE...)"
	exit 1
fi
echo "check-format: ${#files[@]} file(s) formatted as .clang-format says"
