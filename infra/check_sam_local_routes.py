"""Checks that `sam local start-api` would serve every HTTP API route of template.yaml
(run by scripts/validate-infra.sh with the SAM CLI venv's python).

Uses SAM CLI's own template readers, so it catches what cfn-lint cannot: a resource order or
route shape that makes sam local silently drop routes. Internal SAM CLI API: pinned version in
infra/requirements-infra.txt.
"""

import os
import sys

from samcli.lib.providers.api_provider import ApiProvider
from samcli.lib.providers.sam_stack_provider import SamLocalStackProvider

EXPECTED = {
    ("POST", "/workflow/run"),
    ("POST", "/workflow/runs"),
    ("GET", "/workflow/runs/{run_id}"),
    ("GET", "/workflow/runs"),
    ("POST", "/workflow/runs/{run_id}/cancel"),
    ("POST", "/workflow/runs/{run_id}/fork"),
    ("POST", "/workflow/runs/{run_id}/resume"),
    ("GET", "/workflow/runs/{run_id}/steps"),
    ("GET", "/threads"),
    ("GET", "/threads/{thread_id}"),
    ("DELETE", "/threads/{thread_id}"),
}


def main():
    template = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "template.yaml")
    stacks, _ = SamLocalStackProvider.get_stacks(template)
    # Same as samconfig.toml [default.local_start_api] disable_authorizer = true.
    api = ApiProvider(stacks, disable_authorizer=True)
    found = set()
    for route in api.get_all():
        for r in route.routes:
            if r.function_name != "ApiFunction" or r.payload_format_version != "2.0":
                print(f"sam local route {r.methods} {r.path}: function {r.function_name}, payload {r.payload_format_version}")
                return 1
            found.update((m, r.path) for m in r.methods)
    if found != EXPECTED:
        print(f"sam local routes: expected {sorted(EXPECTED)}, found {sorted(found)}")
        return 1
    print(f"sam local routes: {len(found)}/{len(EXPECTED)} -> ApiFunction (payload 2.0)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
