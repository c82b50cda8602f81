#!/usr/bin/env bash
# `make up` builds what it runs and nothing else (issue 20): its recipe
# builds the shoal target, and that target's closure in this build tree
# compiles no test, benchmark or fuzz source.
#
#   make_up_builds_only_shoal.sh SOURCE_DIR BUILD_DIR
set -euo pipefail

src="$1"
build="$2"

# What `make up` would run (-n: print, run nothing).
recipe=$(env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -n -C "$src" up BUILD="$build" 2>/dev/null)
builds=$(grep -E '^cmake --build' <<<"$recipe" || true)
if [ -z "$builds" ]; then
  echo "FAIL: make up runs no cmake --build:"; echo "$recipe"; exit 1
fi
if grep -qv -- '--target shoal$' <<<"$builds"; then
  echo "FAIL: make up builds more than the shoal target:"; echo "$builds"; exit 1
fi

# What building the shoal target compiles.
compiled=$(ninja -C "$build" -t commands shoal | grep -oE ' -c [^ ]+' | awk '{print $2}')
if [ -z "$compiled" ]; then
  echo "FAIL: ninja lists nothing to compile for shoal"; exit 1
fi
extra=$(grep -E "^$src/(tests|bench|fuzz)/" <<<"$compiled" || true)
if [ -n "$extra" ]; then
  echo "FAIL: the shoal target compiles test, benchmark or fuzz sources:"; echo "$extra"; exit 1
fi
echo "make up builds the shoal target: $(wc -l <<<"$compiled") sources, none from tests/, bench/ or fuzz/"
