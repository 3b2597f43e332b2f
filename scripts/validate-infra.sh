#!/usr/bin/env bash
# Validates the deployment side of bounded-rag without an AWS account or network access to AWS:
#   1. installs the pinned aws-sam-cli and cfn-lint into .local/venv-infra (once; needs PyPI)
#   2. sam validate          - SAM transform run locally (needs a region name, no credentials)
#   3. sam validate --lint   - cfn-lint through SAM CLI
#   4. cfn-lint template.yaml (warnings count as failures)
#   5. python -m json.tool on every events/*.json, then payload-shape checks
#   6. the routes `sam local start-api` would serve
#   7. the Bedrock statement and environment, resolved for several parameter sets
#   8. the Aurora knowledge store (cluster, Data API and secret grants, KB_URI, rules), likewise
# Exits non-zero if any step fails; all steps run so one report shows every problem.
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

VENV="$ROOT/.local/venv-infra"
REQS="$ROOT/infra/requirements-infra.txt"
STAMP="$VENV/.requirements-infra.sha256"

# Nothing here talks to AWS: a region name is all the SAM translator needs. No credentials are
# read or required; SAM CLI telemetry is off so no request leaves the machine.
export AWS_DEFAULT_REGION="${AWS_DEFAULT_REGION:-us-east-1}"
export AWS_REGION="${AWS_REGION:-$AWS_DEFAULT_REGION}"
export SAM_CLI_TELEMETRY=0

install_tools() {
    local want
    want="$(sha256sum "$REQS" | cut -d' ' -f1)"
    if [[ -x "$VENV/bin/sam" && -x "$VENV/bin/cfn-lint" && -f "$STAMP" && "$(cat "$STAMP")" == "$want" ]]; then
        return 0
    fi
    echo "==> installing $(grep -v '^#' "$REQS" | xargs) into .local/venv-infra"
    [[ -x "$VENV/bin/python" ]] || python3 -m venv "$VENV" || return 1
    "$VENV/bin/pip" install --quiet --disable-pip-version-check -r "$REQS" || return 1
    echo "$want" >"$STAMP"
}

failures=()
step() {
    local name="$1"
    shift
    echo "==> $name"
    if "$@"; then
        echo "PASS  $name"
    else
        echo "FAIL  $name"
        failures+=("$name")
    fi
}

json_tool_all() {
    local f ok=0
    shopt -s nullglob
    local files=(events/*.json)
    if ((${#files[@]} == 0)); then
        echo "no events/*.json"
        return 1
    fi
    for f in "${files[@]}"; do
        if ! "$VENV/bin/python" -m json.tool "$f" >/dev/null; then
            echo "invalid JSON: $f"
            ok=1
        fi
    done
    echo "${#files[@]} files parsed"
    return $ok
}

if ! install_tools; then
    echo "FAIL  install aws-sam-cli and cfn-lint"
    exit 1
fi

# samconfig.toml sets lint = true for [default.validate]; an environment without settings
# ("transform-only") gives the plain SAM transform check on its own.
step "sam validate (SAM transform, offline)" \
    "$VENV/bin/sam" validate --template-file template.yaml --region "$AWS_DEFAULT_REGION" --config-env transform-only
step "sam validate --lint" \
    "$VENV/bin/sam" validate --template-file template.yaml --region "$AWS_DEFAULT_REGION" --lint
# cfn-lint exits 0 only when nothing (error or warning) matched; informational rules are included.
step "cfn-lint template.yaml" "$VENV/bin/cfn-lint" --include-checks I -- template.yaml
step "json.tool events/*.json" json_tool_all
step "event payload shapes" "$VENV/bin/python" infra/check_events.py
step "sam local start-api routes" "$VENV/bin/python" infra/check_sam_local_routes.py
step "Bedrock permissions and environment" "$VENV/bin/python" infra/check_bedrock_policy.py
step "Aurora knowledge store: resources, permissions, KB_URI" "$VENV/bin/python" infra/check_aurora_policy.py

echo
if ((${#failures[@]})); then
    echo "validate-infra: FAILED (${#failures[@]}): ${failures[*]}"
    exit 1
fi
echo "validate-infra: all checks passed"
