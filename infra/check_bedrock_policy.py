"""Checks what template.yaml grants and sets for Amazon Bedrock under several parameter sets
(run by scripts/validate-infra.sh with the SAM CLI venv's python).

cfn-lint checks the template's shape; this resolves the Bedrock conditions, the
`InvokeBedrockModels` statement of RuntimeAccessPolicy and the functions' environment the way
CloudFormation would, so a condition or ARN mistake shows up here instead of as an
AccessDeniedException after deploy: nothing is granted with the OpenAI-compatible or offline
provider, and with Bedrock exactly the configured model, inference profile (and the foundation
model behind it) and embeddings model are.
"""

import os
import re
import sys

from cfnlint.decode import decode

NO_VALUE = object()
ACCOUNT, REGION = "123456789012", "us-east-1"


def evaluator(template, params):
    """(ev, condition) for these parameter values: ev resolves CloudFormation's intrinsics in a
    template fragment the way CloudFormation would (Fn::If branches not taken and AWS::NoValue
    drop out), condition(name) says whether a condition holds. A resource's Ref resolves to
    "<Name>", its Fn::GetAtt to "<Name.Attribute>"; a CommaDelimitedList parameter is a list."""
    values = {k: str(v.get("Default", "")) for k, v in template["Parameters"].items()}
    values.update(params)
    for name, spec in template["Parameters"].items():
        if spec.get("Type") == "CommaDelimitedList":
            values[name] = [i for i in values[name].split(",") if i] if values[name] else [""]
    values.update({"AWS::Partition": "aws", "AWS::Region": REGION, "AWS::AccountId": ACCOUNT})
    conditions = {}

    def condition(name):
        if name not in conditions:
            conditions[name] = ev(template["Conditions"][name])
        return conditions[name]

    def sub(text, extra):
        return re.sub(
            r"\$\{([^}]+)\}", lambda m: str(extra.get(m.group(1), values.get(m.group(1), f"<{m.group(1)}>"))), text
        )

    def ev(x):
        if isinstance(x, dict) and len(x) == 1:
            ((k, v),) = x.items()
            if k == "Ref":
                return NO_VALUE if v == "AWS::NoValue" else values.get(v, f"<{v}>")
            if k == "Fn::If":
                return ev(v[1]) if condition(v[0]) else ev(v[2])
            if k == "Condition":
                return condition(v)
            if k == "Fn::Equals":
                return ev(v[0]) == ev(v[1])
            if k == "Fn::Or":
                return any(ev(i) for i in v)
            if k == "Fn::And":
                return all(ev(i) for i in v)
            if k == "Fn::Not":
                return not ev(v[0])
            if k == "Fn::Contains":
                return ev(v[1]) in ev(v[0])
            if k == "Fn::Split":
                return ev(v[1]).split(v[0])
            if k == "Fn::Select":
                return ev(v[1])[int(ev(v[0]))]
            if k == "Fn::Join":
                return v[0].join(ev(i) for i in ev(v[1]))
            if k == "Fn::Sub":
                if isinstance(v, str):
                    return sub(v, {})
                return sub(v[0], {a: ev(b) for a, b in v[1].items()})
            if k == "Fn::GetAtt":
                return "<" + (v if isinstance(v, str) else ".".join(v)) + ">"
        if isinstance(x, dict):
            return {k: r for k, r in ((k, ev(v)) for k, v in x.items()) if r is not NO_VALUE}
        if isinstance(x, list):
            return [r for r in (ev(i) for i in x) if r is not NO_VALUE]
        return x

    return ev, condition


def resolve(template, params):
    ev, _ = evaluator(template, params)
    statements = ev(template["Resources"]["RuntimeAccessPolicy"]["Properties"]["PolicyDocument"]["Statement"])
    bedrock = [s for s in statements if s.get("Sid") == "InvokeBedrockModels"]
    env = ev(template["Globals"]["Function"]["Environment"]["Variables"])
    by_sid = {s["Sid"]: s for s in statements if "Sid" in s}
    return (bedrock[0] if bedrock else None), env, by_sid


def fm(model, region=REGION):
    return f"arn:aws:bedrock:{region}::foundation-model/{model}"


CASES = [
    ({}, None, {"LLM_PROVIDER": "offline", "EMBEDDINGS_PROVIDER": ""}),
    ({"LlmProvider": "openai"}, None, {"LLM_MODEL": "gpt-4o-mini", "EMBEDDINGS_PROVIDER": ""}),
    (
        {"LlmProvider": "bedrock", "BedrockModelId": "anthropic.claude-3-5-haiku-20241022-v1:0"},
        [fm("anthropic.claude-3-5-haiku-20241022-v1:0")],
        {"LLM_PROVIDER": "bedrock", "LLM_MODEL": "anthropic.claude-3-5-haiku-20241022-v1:0"},
    ),
    (
        {
            "LlmProvider": "bedrock",
            "BedrockModelId": "us.anthropic.claude-3-5-haiku-20241022-v1:0",
            "BedrockEmbeddingModelId": "amazon.titan-embed-text-v2:0",
            "BedrockEmbeddingDimensions": "512",
        },
        [
            f"arn:aws:bedrock:{REGION}:{ACCOUNT}:inference-profile/us.anthropic.claude-3-5-haiku-20241022-v1:0",
            fm("anthropic.claude-3-5-haiku-20241022-v1:0", "*"),
            fm("amazon.titan-embed-text-v2:0"),
        ],
        {
            "LLM_MODEL": "us.anthropic.claude-3-5-haiku-20241022-v1:0",
            "EMBEDDINGS_PROVIDER": "bedrock",
            "EMBEDDINGS_MODEL": "amazon.titan-embed-text-v2:0",
            "EMBEDDINGS_DIMENSIONS": "512",
        },
    ),
    (
        {"LlmProvider": "openai", "BedrockEmbeddingModelId": "amazon.titan-embed-text-v2:0"},
        [fm("amazon.titan-embed-text-v2:0")],
        {"LLM_PROVIDER": "openai", "EMBEDDINGS_PROVIDER": "bedrock"},
    ),
]


# A Bedrock knowledge base and Bedrock rerank: (parameters, {Sid: (Action, Resource)}, env).
STORE_CASES = [
    ({}, {}, {"RERANK_PROVIDER": ""}),
    (
        {"BedrockKnowledgeBaseId": "KB12345678"},
        {
            "RetrieveFromBedrockKnowledgeBase": (
                "bedrock:Retrieve",
                f"arn:aws:bedrock:{REGION}:{ACCOUNT}:knowledge-base/KB12345678",
            )
        },
        {"KB_URI": "bedrock-kb://KB12345678", "RERANK_PROVIDER": ""},
    ),
    (
        {"BedrockRerankModelId": "amazon.rerank-v1:0"},
        {
            "RerankWithBedrock": ("bedrock:Rerank", "*"),
            "InvokeBedrockRerankModel": ("bedrock:InvokeModel", fm("amazon.rerank-v1:0")),
        },
        {"RERANK_PROVIDER": "bedrock", "RERANK_MODEL": "amazon.rerank-v1:0"},
    ),
]
STORE_SIDS = ["RetrieveFromBedrockKnowledgeBase", "RerankWithBedrock", "InvokeBedrockRerankModel"]


def main():
    template, matches = decode(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "template.yaml"))
    if matches:
        print(matches)
        return 1
    failed = 0
    for params, resources, env in CASES:
        statement, got_env, _ = resolve(template, params)
        got = statement and statement["Resource"]
        if statement and sorted(statement["Action"]) != [
            "bedrock:InvokeModel",
            "bedrock:InvokeModelWithResponseStream",
        ]:
            print(f"{params}: actions {statement['Action']}")
            failed += 1
        if got != resources:
            print(f"{params}: Bedrock resources {got}, expected {resources}")
            failed += 1
        for var, value in env.items():
            if got_env.get(var) != value:
                print(f"{params}: {var}={got_env.get(var)!r}, expected {value!r}")
                failed += 1
    print(f"bedrock policy: {len(CASES) - failed}/{len(CASES)} parameter sets as expected")
    store_failed = 0
    for params, expected, env in STORE_CASES:
        _, got_env, by_sid = resolve(template, params)
        for sid in STORE_SIDS:
            got = by_sid.get(sid)
            got = got and (got["Action"], got["Resource"])
            if got != expected.get(sid):
                print(f"{params}: {sid} {got}, expected {expected.get(sid)}")
                store_failed += 1
        for var, value in env.items():
            if got_env.get(var) != value:
                print(f"{params}: {var}={got_env.get(var)!r}, expected {value!r}")
                store_failed += 1
    print(f"bedrock stores: {len(STORE_CASES) - store_failed}/{len(STORE_CASES)} parameter sets as expected")
    return 1 if failed or store_failed else 0


if __name__ == "__main__":
    sys.exit(main())
