"""Checks what template.yaml creates, grants and sets for the PostgreSQL knowledge store on Aurora
(AuroraKnowledgeStore none / create / existing) under several parameter sets (run by
scripts/validate-infra.sh with the SAM CLI venv's python).

cfn-lint checks the template's shape; this resolves its conditions, rules, the Aurora resources,
every IAM statement and the functions' KB_URI the way CloudFormation would, so a mistake shows up
here instead of after a deploy: without Aurora nothing about it is created or granted; with it
the Data API actions (statements and transactions) are granted on that one cluster and
GetSecretValue on that one secret, to the search functions (RuntimeAccessPolicy) and, when it
syncs, to the sync function, and to nothing else; the cluster has the Data API on, scales to
zero and lets RDS manage its password; the rules refuse a second store and an `existing`
without ARNs.
"""

import os
import sys

from cfnlint.decode import decode

from check_bedrock_policy import ACCOUNT, REGION, evaluator

DATA_API_ACTIONS = sorted([
    "rds-data:ExecuteStatement",
    "rds-data:BatchExecuteStatement",
    "rds-data:BeginTransaction",
    "rds-data:CommitTransaction",
    "rds-data:RollbackTransaction",
])
SECRET_READ = "secretsmanager:GetSecretValue"
CREATED_CLUSTER = "<AuroraCluster.DBClusterArn>"
CREATED_SECRET = "<AuroraCluster.MasterUserSecret.SecretArn>"
CLUSTER_ARN = f"arn:aws:rds:{REGION}:{ACCOUNT}:cluster:team-knowledge"
SECRET_ARN = f"arn:aws:secretsmanager:{REGION}:{ACCOUNT}:secret:rds!cluster-5f1c6a2e-AbCdEf"
AURORA_RESOURCES = ["AuroraSubnetGroup", "AuroraCluster", "AuroraInstance"]
SYNC = {"SyncSourceUri": "s3://docs-bucket/docs", "CreateKnowledgeBaseBucket": "true"}

# (parameters, expected): expected["grants"] maps each policy holder (the managed policy or a
# role) to the cluster and secret it may use; "resources" the Aurora resources created; "kb_uri"
# the functions' KB_URI.
CASES = [
    ({}, {"grants": {}, "resources": [], "kb_uri": ""}),
    (
        {"AuroraKnowledgeStore": "create"},
        {
            "grants": {"RuntimeAccessPolicy": (CREATED_CLUSTER, CREATED_SECRET)},
            "resources": ["AuroraCluster", "AuroraInstance"],
            "kb_uri": f"rds-data://{CREATED_CLUSTER}/bounded_rag?secret={CREATED_SECRET}",
        },
    ),
    (
        {"AuroraKnowledgeStore": "create", "AuroraSubnetIds": "subnet-0a1b,subnet-2c3d", "AuroraMaxCapacity": "16",
         "AuroraDatabase": "kb", **SYNC},
        {
            "grants": {
                "RuntimeAccessPolicy": (CREATED_CLUSTER, CREATED_SECRET),
                "SyncFunctionRole": (CREATED_CLUSTER, CREATED_SECRET),
            },
            "resources": AURORA_RESOURCES,
            "kb_uri": f"rds-data://{CREATED_CLUSTER}/kb?secret={CREATED_SECRET}",
            "subnets": ["subnet-0a1b", "subnet-2c3d"],
            "max_capacity": "16",
        },
    ),
    (
        {"AuroraKnowledgeStore": "existing", "AuroraClusterArn": CLUSTER_ARN, "AuroraSecretArn": SECRET_ARN},
        {
            "grants": {"RuntimeAccessPolicy": (CLUSTER_ARN, SECRET_ARN)},
            "resources": [],
            "kb_uri": f"rds-data://{CLUSTER_ARN}/bounded_rag?secret={SECRET_ARN}",
        },
    ),
    (
        {"AuroraKnowledgeStore": "existing", "AuroraClusterArn": CLUSTER_ARN, "AuroraSecretArn": SECRET_ARN, **SYNC},
        {
            "grants": {"RuntimeAccessPolicy": (CLUSTER_ARN, SECRET_ARN), "SyncFunctionRole": (CLUSTER_ARN, SECRET_ARN)},
            "resources": [],
            "kb_uri": f"rds-data://{CLUSTER_ARN}/bounded_rag?secret={SECRET_ARN}",
        },
    ),
]

# Parameter sets the rules must refuse, with the rule that refuses each.
REFUSED = [
    ({"AuroraKnowledgeStore": "create", "KnowledgeBaseUri": "s3://kb-bucket/kb"}, "AuroraIsTheOnlyStore"),
    ({"AuroraKnowledgeStore": "existing", "AuroraClusterArn": CLUSTER_ARN, "AuroraSecretArn": SECRET_ARN,
      "BedrockKnowledgeBaseId": "KB12345678"}, "AuroraIsTheOnlyStore"),
    ({"AuroraKnowledgeStore": "existing"}, "ExistingAuroraNeedsArns"),
    ({"AuroraKnowledgeStore": "existing", "AuroraClusterArn": CLUSTER_ARN}, "ExistingAuroraNeedsArns"),
]


def statements(template, ev, condition):
    """Every IAM statement of the stack, as (holder, statement), for the resources created."""
    found = []
    for name, resource in template["Resources"].items():
        if "Condition" in resource and not condition(resource["Condition"]):
            continue
        props = resource.get("Properties", {})
        documents = []
        if resource["Type"] == "AWS::IAM::ManagedPolicy":
            documents.append(props["PolicyDocument"])
        if resource["Type"] == "AWS::IAM::Role":
            documents.extend(p["PolicyDocument"] for p in props.get("Policies", []))
        for document in documents:
            for statement in ev(document["Statement"]):
                found.append((name, statement))
    return found


def as_list(value):
    return value if isinstance(value, list) else [value]


def one(values):
    """A one-element list as its element (what the expectations name), any other list as is."""
    return values[0] if len(values) == 1 else values


def refused_by(template, ev):
    """Names of the rules whose assertions fail."""
    refused = []
    for name, rule in template["Rules"].items():
        if "RuleCondition" in rule and not ev(rule["RuleCondition"]):
            continue
        if not all(ev(a["Assert"]) for a in rule["Assertions"]):
            refused.append(name)
    return refused


def check(template, params, expected):
    ev, condition = evaluator(template, params)
    problems = []
    grants = {}
    for holder, statement in statements(template, ev, condition):
        actions = as_list(statement["Action"])
        resources = as_list(statement["Resource"])
        if any(a.startswith("rds-data:") for a in actions):
            if sorted(actions) != DATA_API_ACTIONS:
                problems.append(f"{holder} {statement.get('Sid')}: Data API actions {actions}")
            grants.setdefault(holder, [None, None])[0] = one(resources)
        if SECRET_READ in actions and resources != ["<ApiKeysSecret>"]:
            grants.setdefault(holder, [None, None])[1] = one(resources)
    got = {holder: tuple(granted) for holder, granted in grants.items()}
    if got != expected["grants"]:
        problems.append(f"Data API grants {got}, expected {expected['grants']}")

    created = [r for r in AURORA_RESOURCES if condition(template["Resources"][r]["Condition"])]
    if created != expected["resources"]:
        problems.append(f"Aurora resources {created}, expected {expected['resources']}")
    if "AuroraCluster" in created:
        cluster = ev(template["Resources"]["AuroraCluster"]["Properties"])
        scaling = cluster["ServerlessV2ScalingConfiguration"]
        wanted = {
            "Engine": "aurora-postgresql",
            "EnableHttpEndpoint": True,
            "ManageMasterUserPassword": True,
            "StorageEncrypted": True,
            "DatabaseName": params.get("AuroraDatabase", "bounded_rag"),
        }
        for key, value in wanted.items():
            if cluster.get(key) != value:
                problems.append(f"AuroraCluster {key}={cluster.get(key)!r}, expected {value!r}")
        if scaling.get("MinCapacity") != 0 or scaling.get("MaxCapacity") != expected.get("max_capacity", "4"):
            problems.append(f"AuroraCluster scaling {scaling}")
        if "MasterUserPassword" in cluster:
            problems.append("AuroraCluster sets MasterUserPassword (RDS should manage it)")
        subnets = expected.get("subnets")
        if cluster.get("DBSubnetGroupName") != ("<AuroraSubnetGroup>" if subnets else None):
            problems.append(f"AuroraCluster DBSubnetGroupName={cluster.get('DBSubnetGroupName')!r}")
        if subnets and ev(template["Resources"]["AuroraSubnetGroup"]["Properties"])["SubnetIds"] != subnets:
            problems.append("AuroraSubnetGroup does not hold AuroraSubnetIds")
        instance = ev(template["Resources"]["AuroraInstance"]["Properties"])
        if (instance.get("DBInstanceClass"), instance.get("DBClusterIdentifier")) != ("db.serverless", "<AuroraCluster>"):
            problems.append(f"AuroraInstance {instance}")

    env = ev(template["Globals"]["Function"]["Environment"]["Variables"])
    if env.get("KB_URI") != expected["kb_uri"]:
        problems.append(f"KB_URI={env.get('KB_URI')!r}, expected {expected['kb_uri']!r}")
    refused = refused_by(template, ev)
    if refused:
        problems.append(f"refused by {refused}")
    return problems


def main():
    template, matches = decode(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "template.yaml"))
    if matches:
        print(matches)
        return 1
    failed = 0
    for params, expected in CASES:
        problems = check(template, params, expected)
        for problem in problems:
            print(f"{params}: {problem}")
        failed += bool(problems)
    print(f"aurora store: {len(CASES) - failed}/{len(CASES)} parameter sets as expected")
    rules_failed = 0
    for params, rule in REFUSED:
        ev, _ = evaluator(template, params)
        refused = refused_by(template, ev)
        if refused != [rule]:
            print(f"{params}: refused by {refused}, expected [{rule!r}]")
            rules_failed += 1
    print(f"aurora rules: {len(REFUSED) - rules_failed}/{len(REFUSED)} parameter sets refused as expected")
    return 1 if failed or rules_failed else 0


if __name__ == "__main__":
    sys.exit(main())
