"""Feeds the local work queue to the `worker` function, like Lambda's SQS event source does.

`cargo lambda watch` emulates Lambda but not its event source mappings, so asynchronous runs
(POST /workflow/runs) would sit in the moto queue. This loop receives up to 10 messages, invokes
the worker through the watch emulator with a real SQS event, and deletes every message that is
not listed in the answer's `batchItemFailures` (those become visible again and, after 3
receives, move to the dead-letter queue, as in AWS).

    sqs_pump.py --endpoint http://127.0.0.1:5000 --queue-url URL --invoke http://127.0.0.1:9000

Stops on Ctrl-C or SIGTERM.
"""

import argparse
import hashlib
import json
import signal
import sys
import time
import urllib.error
import urllib.request

import boto3

REGION = "us-east-1"


def sqs_event(messages, queue_arn):
    records = []
    for m in messages:
        attributes = dict(m.get("Attributes", {}))
        records.append(
            {
                "messageId": m["MessageId"],
                "receiptHandle": m["ReceiptHandle"],
                "body": m["Body"],
                "attributes": attributes,
                "messageAttributes": {},
                "md5OfBody": hashlib.md5(m["Body"].encode()).hexdigest(),
                "eventSource": "aws:sqs",
                "eventSourceARN": queue_arn,
                "awsRegion": REGION,
            }
        )
    return {"Records": records}


def invoke(url, event, timeout):
    request = urllib.request.Request(
        url, data=json.dumps(event).encode(), headers={"content-type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=timeout) as response:
        return json.loads(response.read() or b"null")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--endpoint", required=True, help="moto endpoint")
    parser.add_argument("--queue-url", required=True)
    parser.add_argument("--invoke", required=True, help="cargo lambda watch base URL")
    parser.add_argument("--function", default="worker")
    parser.add_argument("--timeout", type=float, default=900, help="seconds per invocation")
    args = parser.parse_args()

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    sqs = boto3.client(
        "sqs",
        endpoint_url=args.endpoint,
        region_name=REGION,
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )
    queue_arn = sqs.get_queue_attributes(QueueUrl=args.queue_url, AttributeNames=["QueueArn"])[
        "Attributes"
    ]["QueueArn"]
    url = f"{args.invoke}/2015-03-31/functions/{args.function}/invocations"
    print(f"sqs-pump: {args.queue_url} -> {args.function}", flush=True)
    while True:
        try:
            messages = sqs.receive_message(
                QueueUrl=args.queue_url,
                MaxNumberOfMessages=10,
                WaitTimeSeconds=1,
                AttributeNames=["All"],
            ).get("Messages", [])
        except Exception as error:  # moto restarting, connection refused: try again shortly
            print(f"sqs-pump: receive failed: {error}", file=sys.stderr, flush=True)
            time.sleep(2)
            continue
        if not messages:
            continue
        try:
            answer = invoke(url, sqs_event(messages, queue_arn), args.timeout)
        except (urllib.error.URLError, OSError, ValueError) as error:
            # Nothing deleted: the messages come back after the visibility timeout.
            print(f"sqs-pump: invoke failed: {error}", file=sys.stderr, flush=True)
            time.sleep(2)
            continue
        failed = {
            item.get("itemIdentifier")
            for item in (answer or {}).get("batchItemFailures", [])
            if isinstance(item, dict)
        }
        done = [m for m in messages if m["MessageId"] not in failed]
        if done:
            sqs.delete_message_batch(
                QueueUrl=args.queue_url,
                Entries=[
                    {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(done)
                ],
            )
        print(f"sqs-pump: {len(messages)} delivered, {len(failed)} failed", flush=True)


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:
        pass
