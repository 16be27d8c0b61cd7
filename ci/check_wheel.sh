#!/usr/bin/env bash
# The wheel users install: build the sdist and the wheels the way a release does, check them,
# install each in a fresh venv (outside the checkout) and run the README's demo plus
# ci/smoke_wheel.py there. See ci/README.md. Plain bash; runs the same on a laptop:
#
#   ci/check_wheel.sh                          # PYTHON=python, plus a Python 3.13 if found
#   PYTHON=python3.12 WHEEL_PYTHONS="python3.12" ci/check_wheel.sh
#
# PYTHON runs the tools (build, twine) and is the first interpreter a wheel is checked on;
# WHEEL_PYTHONS (space-separated) overrides the list of interpreters to check.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PYTHON="${PYTHON:-python}"

# What the checks see must come from the wheels only: no source tree on the path, no switches
# inherited from the caller (.ci/run exports CERCORE_REQUIRE_EXTENSION; it is set per build here).
unset PYTHONPATH CERCORE_PURE_PYTHON CERCORE_DEBUG_BUILD CERCORE_REQUIRE_EXTENSION \
    CERCORE_DISABLE_EXTENSION

# A Python 3.13 found as .ci/run finds it (PATH, then pyenv); none is not an error on a laptop.
if [ -z "${WHEEL_PYTHONS:-}" ]; then
    WHEEL_PYTHONS="$PYTHON"
    for cand in python3.13 "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.13*/bin/python3.13; do
        if "$cand" --version >/dev/null 2>&1; then
            if [ "$("$cand" -c 'import sys; print(sys.version_info[:2])')" != \
                 "$("$PYTHON" -c 'import sys; print(sys.version_info[:2])')" ]; then
                WHEEL_PYTHONS="$WHEEL_PYTHONS $cand"
            fi
            break
        fi
    done
fi

cp_tag() { "$1" -c 'import sys; print(f"cp{sys.version_info[0]}{sys.version_info[1]}")'; }
# Absolute interpreter paths (a relative one would break after the cd below).
abs_python() { "$1" -c 'import sys; print(sys.executable)'; }
PYTHON="$(abs_python "$PYTHON")"
pythons=""
for py in $WHEEL_PYTHONS; do pythons="$pythons $(abs_python "$py")"; done
WHEEL_PYTHONS="${pythons# }"

# Everything runs from a temp directory, so no `import cercore` can find the checkout.
WORK="$(mktemp -d "${TMPDIR:-/tmp}/cercore-wheel.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
cd "$WORK"
DIST="$WORK/dist"
# The tools venv lives across runs (like .ci/run's pycer venv): build and twine are tools of
# this script, not dependencies of cercore, so they stay out of the user's extras.
TOOLS="${CERCORE_WHEEL_TOOLS:-${TMPDIR:-/tmp}/cercore-ci-wheel-tools-$(cp_tag "$PYTHON")}"

START=$SECONDS
STEP_START=$SECONDS
end_step() {  # how long the step under way took
    if [ -n "${STEP_NAME:-}" ]; then echo "-- $((SECONDS - STEP_START)) s: $STEP_NAME"; fi
    STEP_NAME=""
}
step() {  # end the step under way, announce the next one
    end_step
    STEP_NAME="$1"
    STEP_START=$SECONDS
    echo "== $1"
}
fail() { echo "check_wheel: FAILED: $*" >&2; exit 1; }
unpack_sdist() {  # a fresh copy of the sdist's tree, so no build sees another's leftovers
    mkdir -p "$WORK/$1" && tar -xzf "$SDIST" -C "$WORK/$1"
    echo "$WORK/$1/$(basename "$SDIST" .tar.gz)"
}
fresh_venv() {  # a new venv whose only cercore is the wheel given
    "$1" -m venv "$2"
    "$2/bin/python" -m pip install -q "$3"
}
run_installed() {  # the README's demo, then the smoke test (which asserts the backend)
    local venv="$1" backend="$2"
    "$venv/bin/cercore" demo > demo.out 2>&1 || { tail -n 30 demo.out; fail "cercore demo"; }
    head -n 1 demo.out
    "$venv/bin/python" "$ROOT/ci/smoke_wheel.py" --backend "$backend"
    CHECKED=$((CHECKED + 1))
}
CHECKED=0

step "tools venv ($TOOLS): build, twine"
"$TOOLS/bin/python" -c '' 2>/dev/null || "$PYTHON" -m venv --clear "$TOOLS"
"$TOOLS/bin/python" -m pip install -q --upgrade build twine
"$TOOLS/bin/python" --version

# Every wheel is built from the sdist, in an isolated env that has only pyproject's
# [build-system] requires (as pip does for a user installing the sdist): a file missing from the
# sdist or an undeclared build dependency fails here, not on a user's machine.
step "python -m build --sdist"
"$TOOLS/bin/python" -m build --sdist --outdir "$DIST" "$ROOT" > "$WORK/build.log" 2>&1 \
    || { tail -n 40 "$WORK/build.log"; fail "python -m build --sdist"; }
SDIST="$(ls "$DIST"/cercore-*.tar.gz)"
ls -l "$SDIST"

step "sdist contents: everything tracked that a build needs, no build artefacts"
tar -tzf "$SDIST" | sed 's|^[^/]*/||' | sort > "$WORK/sdist.txt"
if grep -E '\.(c|cpp|o|so|pyd|pyc|html)$|(^|/)(build|dist|__pycache__)/' "$WORK/sdist.txt"; then
    fail "build artefacts in the sdist (listed above); see MANIFEST.in"
fi
if git -C "$ROOT" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    git -C "$ROOT" ls-files cercore cercore_fast README.md pyproject.toml setup.py MANIFEST.in \
        'LICENSE*' | sort > "$WORK/tracked.txt"
    missing="$(comm -23 "$WORK/tracked.txt" "$WORK/sdist.txt")"
    [ -z "$missing" ] || fail "tracked files missing from the sdist: $missing"
    echo "$(wc -l < "$WORK/tracked.txt") tracked package/build files present, no artefacts"
else
    echo "not a git checkout: skipped the comparison with the tracked files"
fi

# The tools' interpreter builds with python -m build; another one with its own pip (in a venv
# of its own, so the venv that is tested later has nothing but the wheel and its dependencies).
TOOLS_TAG="$(cp_tag "$TOOLS/bin/python")"
for py in $WHEEL_PYTHONS; do
    tag="$(cp_tag "$py")"
    src="$(unpack_sdist "src-$tag")"
    if [ "$tag" = "$TOOLS_TAG" ]; then
        step "$tag: python -m build --wheel of the unpacked sdist"
        build=("$TOOLS/bin/python" -m build --wheel --outdir "$DIST" "$src")
    else
        step "$tag: pip wheel of the unpacked sdist ($py)"
        "$py" -m venv "$WORK/buildenv-$tag"
        build=("$WORK/buildenv-$tag/bin/python" -m pip wheel -q --no-deps --wheel-dir "$DIST"
               "$src")
    fi
    CERCORE_REQUIRE_EXTENSION=1 "${build[@]}" > "$WORK/build-$tag.log" 2>&1 \
        || { tail -n 40 "$WORK/build-$tag.log"; fail "the $tag wheel"; }
    ls "$DIST"/cercore-*-"$tag"-"$tag"-*.whl || fail "no $tag wheel (a pure-Python fallback?)"
done

# CERCORE_DISABLE_EXTENSION=1: no compiler needed, one wheel for every platform and Python.
step "pure-Python wheel (CERCORE_DISABLE_EXTENSION=1)"
CERCORE_DISABLE_EXTENSION=1 "$TOOLS/bin/python" -m build --wheel --outdir "$DIST/pure" \
    "$(unpack_sdist src-pure)" > "$WORK/build-pure.log" 2>&1 \
    || { tail -n 40 "$WORK/build-pure.log"; fail "pure-Python wheel"; }
PURE="$(ls "$DIST"/pure/cercore-*.whl)"
case "$PURE" in
    *-py3-none-any.whl) echo "$(basename "$PURE")" ;;
    *) fail "the pure-Python wheel is tagged $(basename "$PURE"), not py3-none-any" ;;
esac
if "$TOOLS/bin/python" -m zipfile -l "$PURE" | grep -E '\.(so|pyd)\b'; then
    fail "compiled modules in the pure-Python wheel"
fi

step "twine check --strict (metadata and README rendering)"
"$TOOLS/bin/python" -m twine --no-color check --strict "$DIST"/*.tar.gz "$DIST"/*.whl "$PURE"

for py in $WHEEL_PYTHONS; do
    tag="$(cp_tag "$py")"
    wheel="$(ls "$DIST"/cercore-*-"$tag"-"$tag"-*.whl)"
    step "$tag: fresh venv, install $(basename "$wheel"), demo + smoke test (cython)"
    fresh_venv "$py" "$WORK/venv-$tag" "$wheel"
    run_installed "$WORK/venv-$tag" cython
done

# The pure wheel goes onto the last interpreter checked: it was built by the first, so this
# also shows it is not tied to the Python that built it.
last_py="${WHEEL_PYTHONS##* }"
step "$(cp_tag "$last_py"): fresh venv, install the pure-Python wheel, demo + smoke test (python)"
fresh_venv "$last_py" "$WORK/venv-pure" "$PURE"
run_installed "$WORK/venv-pure" python

end_step
echo "check_wheel: OK in $((SECONDS - START)) s (interpreters: $WHEEL_PYTHONS)"
# One line per installed wheel checked, in the plain form CI logs are read for.
echo "check_wheel: $CHECKED passed, 0 failed"
