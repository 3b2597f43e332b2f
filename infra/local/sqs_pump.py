"""Feeds the local work queue to the `worker` function, like Lambda's SQS event source does.

`cargo lambda watch` emulates Lambda but not its event source mappings, so asynchronous runs
(POST /workflow/runs) would sit in the moto queue. This loop receives up to 10 messages, invokes
the worker through the watch emulator with a real SQS event, and deletes every message that is
not listed in the answer's `batchItemFailures` (those become visible again and, after 3
receives, move to the dead-letter queue, as in AWS). It stands in for the EventBridge schedule
too: every `--sweep-every` seconds it invokes the `sweeper` function with a scheduled event.

Each invocation waits as long as Lambda would let the function run: the function's `Timeout`
in template.yaml (WorkerFunction, SweeperFunction), read from the template, not repeated here.

    sqs_pump.py --endpoint http://127.0.0.1:5000 --queue-url URL --invoke http://127.0.0.1:9000
    sqs_pump.py --show-config      # the timeouts and schedule it would use, as JSON

Stops on Ctrl-C or SIGTERM.
"""

import argparse
import datetime
import hashlib
import json
import pathlib
import re
import signal
import sys
import time
import urllib.error
import urllib.request
import uuid

REGION = "us-east-1"
TEMPLATE = pathlib.Path(__file__).resolve().parents[2] / "template.yaml"
# Lambda's own default when neither the function nor Globals sets one.
LAMBDA_DEFAULT_TIMEOUT = 3


def function_timeout(resource, template=TEMPLATE):
    """`Timeout` (seconds) of `resource` in the SAM template, else of Globals.Function.

    Read as text: the template's short-form intrinsics (!Ref, !GetAtt) are not plain YAML.
    """
    text = pathlib.Path(template).read_text(encoding="utf-8")

    def block(header, indent):
        match = re.search(rf"^{indent}{header}:\n((?:(?:{indent}  .*)?\n)*)", text, re.MULTILINE)
        return match.group(1) if match else ""

    for body in (block(resource, "  "), block("Function", "  ")):
        found = re.search(r"^\s+Timeout: (\d+)\s*$", body, re.MULTILINE)
        if found:
            return int(found.group(1))
    return LAMBDA_DEFAULT_TIMEOUT


def scheduled_event():
    """An EventBridge "Scheduled Event", as the SweeperFunction schedule sends it."""
    return {
        "version": "0",
        "id": str(uuid.uuid4()),
        "detail-type": "Scheduled Event",
        "source": "aws.events",
        "account": "123456789012",
        "time": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "region": REGION,
        "resources": ["arn:aws:events:us-east-1:123456789012:rule/local-sweeper-schedule"],
        "detail": {},
    }


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
    parser.add_argument("--endpoint", help="moto endpoint")
    parser.add_argument("--queue-url")
    parser.add_argument("--invoke", help="cargo lambda watch base URL")
    parser.add_argument("--function", default="worker")
    parser.add_argument(
        "--timeout",
        type=float,
        default=function_timeout("WorkerFunction"),
        help="seconds per worker invocation (default: WorkerFunction's Timeout in template.yaml)",
    )
    parser.add_argument("--sweeper", default="sweeper", help="the sweeper function")
    parser.add_argument(
        "--sweep-every",
        type=float,
        default=60,
        help="seconds between two sweeps, like the EventBridge schedule; 0 = never",
    )
    parser.add_argument(
        "--sweep-timeout",
        type=float,
        default=function_timeout("SweeperFunction"),
        help="seconds per sweeper invocation (default: SweeperFunction's Timeout in template.yaml)",
    )
    parser.add_argument("--show-config", action="store_true", help="print the settings as JSON and exit")
    args = parser.parse_args()
    if args.show_config:
        print(json.dumps({
            "function": args.function,
            "timeout": args.timeout,
            "sweeper": args.sweeper,
            "sweep_every": args.sweep_every,
            "sweep_timeout": args.sweep_timeout,
        }))
        return
    missing = [name for name in ("endpoint", "queue_url", "invoke") if not getattr(args, name)]
    if missing:
        parser.error("required: " + ", ".join("--" + m.replace("_", "-") for m in missing))

    import boto3  # only needed to pump

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
    sweeper_url = f"{args.invoke}/2015-03-31/functions/{args.sweeper}/invocations"
    print(
        f"sqs-pump: {args.queue_url} -> {args.function} (timeout {args.timeout:g} s); "
        f"{args.sweeper} every {args.sweep_every:g} s",
        flush=True,
    )
    next_sweep = time.monotonic() + args.sweep_every
    while True:
        if args.sweep_every > 0 and time.monotonic() >= next_sweep:
            next_sweep = time.monotonic() + args.sweep_every
            try:
                report = invoke(sweeper_url, scheduled_event(), args.sweep_timeout)
                print(f"sqs-pump: sweep {json.dumps(report)}", flush=True)
            except (urllib.error.URLError, OSError, ValueError) as error:
                print(f"sqs-pump: sweep failed: {error}", file=sys.stderr, flush=True)
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
