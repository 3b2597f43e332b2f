"""Creates the bounded-rag resources in a moto server (or any AWS-compatible endpoint).

Mirrors template.yaml: the checkpoint table (pk S / sk S, on-demand, TTL on expires_at, the
sparse `leases` index the sweeper queries, the `by_owner` index of GET /threads), the work queue with its dead-letter queue (redrive
after 3 receives), the API-keys secret and the knowledge-base bucket (the functions get
KB_URI=s3://BUCKET/PREFIX; scripts/local-stack.sh publishes the sample bundle there). Safe to
run again: existing resources are kept (a table without the index gets it), the secret gets the
new value. Finally writes the env file that `cargo lambda watch --env-file` gives the
functions: the local resources, plus every setting of the configuration chapter's table (docs/src/configuration.md) that is
set in this environment (the API keys go into the secret instead).

    provision.py --endpoint http://127.0.0.1:5000 --env-file .local/lambda.env

Runs with the boto3 that moto brings into .local/venv (scripts/setup-test-tools.sh). The secret
value is never printed.
"""

import argparse
import json
import os
import pathlib
import re
import sys

import boto3
from botocore.config import Config

REGION = "us-east-1"
# Dummy credentials: moto accepts anything, and fixed values keep real ones out of the env file.
ACCESS_KEY = "testing"
SECRET_KEY = "testing"
README = pathlib.Path(__file__).resolve().parents[2] / "docs" / "src" / "configuration.md"
# Documented settings that never go into the env file: the keys live in the secret, the rest is
# what this script provisions.
NOT_FORWARDED = {
    "LLM_API_KEY",
    "WEB_SEARCH_API_KEY",
    "EMBEDDINGS_API_KEY",
    "CHECKPOINT_TABLE",
    "WORK_QUEUE_URL",
    "SECRETS_ID",
}
LEASE_INDEX = {
    "IndexName": "leases",
    "KeySchema": [
        {"AttributeName": "lease_shard", "KeyType": "HASH"},
        {"AttributeName": "lease_expires_at", "KeyType": "RANGE"},
    ],
    "Projection": {
        "ProjectionType": "INCLUDE",
        "NonKeyAttributes": ["lease_owner", "requeued_for", "requeued_at"],
    },
}
# A caller's threads (owner "threads#<digest>") and runs, newest first (GET /threads).
OWNER_INDEX = {
    "IndexName": "by_owner",
    "KeySchema": [
        {"AttributeName": "owner", "KeyType": "HASH"},
        {"AttributeName": "owner_sort", "KeyType": "RANGE"},
    ],
    "Projection": {"ProjectionType": "ALL"},
}
INDEXES = [LEASE_INDEX, OWNER_INDEX]
ATTRIBUTES = [
    {"AttributeName": "pk", "AttributeType": "S"},
    {"AttributeName": "sk", "AttributeType": "S"},
    {"AttributeName": "lease_shard", "AttributeType": "S"},
    {"AttributeName": "lease_expires_at", "AttributeType": "N"},
    {"AttributeName": "owner", "AttributeType": "S"},
    {"AttributeName": "owner_sort", "AttributeType": "S"},
]


def client(service, endpoint):
    return boto3.client(
        service,
        endpoint_url=endpoint,
        region_name=REGION,
        aws_access_key_id=ACCESS_KEY,
        aws_secret_access_key=SECRET_KEY,
        config=Config(retries={"max_attempts": 2, "mode": "standard"}),
    )


def create_table(ddb, name):
    try:
        ddb.create_table(
            TableName=name,
            AttributeDefinitions=ATTRIBUTES,
            KeySchema=[
                {"AttributeName": "pk", "KeyType": "HASH"},
                {"AttributeName": "sk", "KeyType": "RANGE"},
            ],
            GlobalSecondaryIndexes=INDEXES,
            BillingMode="PAY_PER_REQUEST",
        )
        ddb.get_waiter("table_exists").wait(TableName=name, WaiterConfig={"Delay": 1})
        state = "created"
    except ddb.exceptions.ResourceInUseException:
        state = "exists"
        indexes = ddb.describe_table(TableName=name)["Table"].get("GlobalSecondaryIndexes", [])
        for index in INDEXES:
            if not any(i["IndexName"] == index["IndexName"] for i in indexes):
                ddb.update_table(
                    TableName=name,
                    AttributeDefinitions=ATTRIBUTES,
                    GlobalSecondaryIndexUpdates=[{"Create": index}],
                )
                state = f"exists, {index['IndexName']} index added"
    ddb.update_time_to_live(
        TableName=name,
        TimeToLiveSpecification={"AttributeName": "expires_at", "Enabled": True},
    )
    return state


def create_queues(sqs, name, dlq_name):
    """Returns (queue_url, dlq_url). create_queue is idempotent for identical attributes."""
    dlq_url = sqs.create_queue(
        QueueName=dlq_name, Attributes={"MessageRetentionPeriod": "1209600"}
    )["QueueUrl"]
    dlq_arn = sqs.get_queue_attributes(QueueUrl=dlq_url, AttributeNames=["QueueArn"])[
        "Attributes"
    ]["QueueArn"]
    redrive = json.dumps({"deadLetterTargetArn": dlq_arn, "maxReceiveCount": "3"})
    attributes = {
        "VisibilityTimeout": "780",
        "MessageRetentionPeriod": "345600",
        "RedrivePolicy": redrive,
    }
    try:
        queue_url = sqs.create_queue(QueueName=name, Attributes=attributes)["QueueUrl"]
    except sqs.exceptions.QueueNameExists:
        queue_url = sqs.get_queue_url(QueueName=name)["QueueUrl"]
        sqs.set_queue_attributes(QueueUrl=queue_url, Attributes=attributes)
    return queue_url, dlq_url


def put_secret(sm, secret_id, value):
    try:
        sm.create_secret(Name=secret_id, SecretString=value)
        return "created"
    except sm.exceptions.ResourceExistsException:
        sm.put_secret_value(SecretId=secret_id, SecretString=value)
        return "updated"


def documented_settings(readme=README):
    """The variable names of the configuration chapter's table (docs/src/configuration.md), in order."""
    text = readme.read_text(encoding="utf-8")
    section = text.split("\n## Configuration", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"^\| `([A-Z][A-Z0-9_]*)` \|", section, flags=re.MULTILINE)


def forwarded_settings(environ=os.environ):
    """Documented settings set (non-empty) in `environ` that go into the env file."""
    return {
        name: environ[name]
        for name in documented_settings()
        if name not in NOT_FORWARDED and environ.get(name)
    }


def create_bucket(s3, name):
    try:
        s3.create_bucket(Bucket=name)
        return "created"
    except (s3.exceptions.BucketAlreadyOwnedByYou, s3.exceptions.BucketAlreadyExists):
        return "exists"


def env_line(key, value):
    # cargo-lambda reads the file with env-file-reader: single quotes keep the value verbatim.
    if "'" in value or "\n" in value:
        sys.exit(f"provision: {key} holds a quote or newline; not supported in the env file")
    return f"{key}='{value}'\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--endpoint", required=True, help="e.g. http://127.0.0.1:5000")
    parser.add_argument("--table", default="bounded-rag-checkpoints")
    parser.add_argument("--queue", default="bounded-rag-work")
    parser.add_argument("--dlq", default="bounded-rag-work-dlq")
    parser.add_argument("--secret-id", default="bounded-rag/api-keys")
    parser.add_argument("--kb-bucket", default="bounded-rag-kb", help="bucket for bundles")
    parser.add_argument("--kb-prefix", default="sample", help="prefix the functions load (KB_URI)")
    parser.add_argument("--env-file", required=True, help="where to write KEY='value' lines")
    parser.add_argument(
        "--llm-provider", default=os.environ.get("LLM_PROVIDER", "offline"), help="offline | openai"
    )
    args = parser.parse_args()

    # Keys come from the environment (never from the command line, which `ps` shows).
    secret = json.dumps(
        {
            "LLM_API_KEY": os.environ.get("LLM_API_KEY", "local-dev-llm-key"),
            "WEB_SEARCH_API_KEY": os.environ.get("WEB_SEARCH_API_KEY", ""),
            "EMBEDDINGS_API_KEY": os.environ.get("EMBEDDINGS_API_KEY", ""),
        }
    )

    table_state = create_table(client("dynamodb", args.endpoint), args.table)
    queue_url, dlq_url = create_queues(client("sqs", args.endpoint), args.queue, args.dlq)
    secret_state = put_secret(client("secretsmanager", args.endpoint), args.secret_id, secret)
    s3 = boto3.client(
        "s3",
        endpoint_url=args.endpoint,
        region_name=REGION,
        aws_access_key_id=ACCESS_KEY,
        aws_secret_access_key=SECRET_KEY,
        config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 2}),
    )
    bucket_state = create_bucket(s3, args.kb_bucket)
    kb_uri = f"s3://{args.kb_bucket}/{args.kb_prefix}"

    env = {
        "AWS_ENDPOINT_URL": args.endpoint,
        "AWS_REGION": REGION,
        "AWS_DEFAULT_REGION": REGION,
        "AWS_ACCESS_KEY_ID": ACCESS_KEY,
        "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
        "AWS_EC2_METADATA_DISABLED": "true",
        "CHECKPOINT_TABLE": args.table,
        "WORK_QUEUE_URL": queue_url,
        "SECRETS_ID": args.secret_id,
        "RUST_LOG": os.environ.get("RUST_LOG") or "bounded_rag=info,warn",
        "KB_URI": kb_uri,
        "KB_REFRESH_SECONDS": "30",
    }
    env.update(forwarded_settings())
    env["LLM_PROVIDER"] = args.llm_provider
    os.makedirs(os.path.dirname(os.path.abspath(args.env_file)), exist_ok=True)
    with open(args.env_file, "w", encoding="utf-8") as out:
        out.write("# Written by infra/local/provision.py for `cargo lambda watch --env-file`.\n")
        out.writelines(env_line(k, v) for k, v in env.items())

    print(f"table   {args.table} ({table_state})")
    print(f"queue   {queue_url}")
    print(f"dlq     {dlq_url} (maxReceiveCount 3)")
    print(f"secret  {args.secret_id} ({secret_state}; value not shown)")
    print(f"kb      {kb_uri} (bucket {bucket_state})")
    print(f"env     {args.env_file}")


if __name__ == "__main__":
    main()
