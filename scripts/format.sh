#!/usr/bin/env bash
# Formats tracked C/C++ files as .clang-format says, with clang-format 14:
# every *.c *.h *.cpp *.hpp file git ls-files lists, or only the files named
# (which must be C or C++ files: any other is refused, formatting nothing).
# Regions laid out by hand stay as written between `// clang-format off` and
# `// clang-format on`.
#
#   scripts/format.sh [FILE...]             format in place (clang-format -i)
#   scripts/format.sh --check [-v] [FILE...]
#       change nothing; exit 0 when every file is formatted, 1 naming those
#       that are not (-v: and where they differ), 2 when clang-format fails.
#       scripts/check-format.sh is this mode (CI runs it).
#
# CLANG_FORMAT names the binary (default: clang-format-14, else clang-format).
# Other major versions format some constructs differently: both modes warn.
set -euo pipefail
cd "$(dirname "$0")/.."

check=0
verbose=0
[[ ${1:-} == --check ]] && { check=1; shift; }
[[ $check == 1 && ${1:-} == -v ]] && { verbose=1; shift; }
name=$([[ $check == 1 ]] && echo check-format || echo format)

cf=${CLANG_FORMAT:-}
if [[ -z $cf ]]; then
	if command -v clang-format-14 >/dev/null; then cf=clang-format-14; else cf=clang-format; fi
fi
if ! command -v "$cf" >/dev/null; then
	echo "$name: $cf not found (apt-get install clang-format-14, or set CLANG_FORMAT)" >&2
	exit 2
fi
version=$("$cf" --version)
if [[ ! $version =~ version\ 14\. ]]; then
	echo "$name: warning: .clang-format is written for clang-format 14, this is: $version" >&2
fi

files=()
if (($#)); then
	for f in "$@"; do
		case $f in
		*.c | *.h | *.cpp | *.hpp) files+=("$f") ;;
		*)
			echo "$name: $f is not a C or C++ file (*.c *.h *.cpp *.hpp): .clang-format is for those only" >&2
			exit 2
			;;
		esac
	done
else
	while IFS= read -r -d '' f; do
		[[ -f $f ]] && files+=("$f") # skip files deleted in the work tree
	done < <(git ls-files -z -- '*.c' '*.h' '*.cpp' '*.hpp')
fi
((${#files[@]})) || exit 0

if ((!check)); then
	printf '%s\0' "${files[@]}" | xargs -0 -n 50 "$cf" --style=file -i
	echo "format: ${#files[@]} files formatted"
	exit 0
fi

bad=()
for f in "${files[@]}"; do
	status=0
	out=$("$cf" --style=file --dry-run -Werror "$f" 2>&1) || status=$?
	((status == 0)) && continue
	if [[ $out != *"code should be clang-formatted"* ]]; then
		echo "check-format: clang-format failed on $f:" >&2
		echo "$out" >&2
		exit 2
	fi
	bad+=("$f")
	((verbose)) && echo "$out"
done
if ((${#bad[@]})); then
	echo "check-format: ${#bad[@]} of ${#files[@]} files need formatting:"
	printf '  %s\n' "${bad[@]}"
	echo "Fix them with: scripts/format.sh (or scripts/format.sh FILE...)"
	exit 1
fi
echo "check-format: ${#files[@]} file(s) formatted as .clang-format says"
