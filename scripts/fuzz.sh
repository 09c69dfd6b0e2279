#!/usr/bin/env bash
# The periodic fuzzing job. Not part of scripts/test.sh or of every CI run
# (those replay the committed seeds under testdata/fuzz as unit tests):
# run it on a schedule, for example nightly with FUZZTIME=5m.
#
# Runs every Fuzz target of every module (each go.mod, as published:
# GOWORK=off) for FUZZTIME each (default 5m), one after the other, then
# reports:
#   - the targets that failed; go test wrote the failing input to
#     <package>/testdata/fuzz/<Target>/ (listed at the end as new corpus
#     files): fix the bug and commit the file as a seed with the fix;
#   - per target, how many new interesting inputs the fuzzer kept in its
#     cache ($(go env GOCACHE)/fuzz/<import path>/<Target>), which later
#     runs start from.
#
# Usage: [FUZZTIME=5m] [FUZZPARALLEL=N] scripts/fuzz.sh [REGEXP]
# REGEXP (grep -E) selects targets by "<import path>.<Target>".
# Exit status: 0 when every target ran clean, 1 when any failed.
set -euo pipefail
cd "$(dirname "$0")/.."
export GOWORK=off

fuzztime=${FUZZTIME:-5m}
filter=${1:-.}
parallel=()
if [[ -n ${FUZZPARALLEL:-} ]]; then
	parallel=(-parallel "$FUZZPARALLEL")
fi
cache=$(go env GOCACHE)/fuzz

corpus_files() {
	git status --porcelain --untracked-files=all | sed -n 's/^...//p' | grep '/\?testdata/fuzz/' | sort || true
}
count() {
	if [[ -d $1 ]]; then
		find "$1" -type f | wc -l
	else
		echo 0
	fi
}

before=$(corpus_files)
failed=()
ran=0
summary=()
while IFS= read -r mod; do
	moddir=$(dirname "$mod")
	while IFS=' ' read -r importpath dir; do
		{ grep -hoE '^func Fuzz[A-Za-z0-9_]*\(' "$dir"/*_test.go 2>/dev/null || true; } |
			sed 's/^func //; s/($//' | sort -u | while IFS= read -r target; do
			echo "$importpath $dir $target"
		done
	done < <(cd "$moddir" && go list -f '{{.ImportPath}} {{.Dir}}' ./...)
done < <(find . -name go.mod -not -path '*/node_modules/*' -not -path '*/testdata/*' | sort) >"${TMPDIR:-/tmp}/pmcp-fuzz-targets.$$"

while IFS=' ' read -r importpath dir target; do
	if ! grep -qE -- "$filter" <<<"$importpath.$target"; then
		continue
	fi
	ran=$((ran + 1))
	kept=$(count "$cache/$importpath/$target")
	printf '\n== %s %s (%s)\n' "$importpath" "$target" "$fuzztime"
	if (cd "$dir" && go test -run '^$' -fuzz "^$target\$" -fuzztime "$fuzztime" "${parallel[@]}" .); then
		status=ok
	else
		status=FAILED
		failed+=("$importpath.$target")
	fi
	now=$(count "$cache/$importpath/$target")
	summary+=("$(printf '%-7s %-55s %5d new cached inputs' "$status" "$importpath.$target" $((now - kept)))")
done <"${TMPDIR:-/tmp}/pmcp-fuzz-targets.$$"
rm -f "${TMPDIR:-/tmp}/pmcp-fuzz-targets.$$"

printf '\n== summary: %d targets, %s each\n' "$ran" "$fuzztime"
printf '%s\n' "${summary[@]}"
new=$(comm -13 <(echo "$before") <(corpus_files) | sed '/^$/d')
if [[ -n $new ]]; then
	printf '\n== new corpus files (failing inputs: fix, then commit them as seeds)\n%s\n' "$new"
fi
if ((${#failed[@]} > 0)); then
	printf '\n== failed: %s\n' "${failed[*]}"
	exit 1
fi
