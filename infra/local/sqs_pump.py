"""Feeds the local work queue to the `worker` function, like Lambda's SQS event source does.

`cargo lambda watch` emulates Lambda but not its event source mappings, so asynchronous runs
(POST /workflow/runs) would sit in the moto queue. This loop receives up to 10 messages, invokes
the worker through the watch emulator with a real SQS event, and deletes every message that is
not listed in the answer's `batchItemFailures` (those become visible again and, after 3
receives, move to the dead-letter queue, as in AWS). It stands in for the EventBridge schedule
too: every `--sweep-every` seconds it invokes the `sweeper` function with a scheduled event.

Each invocation waits as long as Lambda would let the function run: the function's `Timeout`
in template.yaml (WorkerFunction, SweeperFunction), read from the template, not repeated here.

`cargo lambda watch` never starts a function again once its process died (killed, crashed):
every later invocation of it waits until it times out. After `--dead-after` invocations of one
function in a row got no answer (timed out, or the emulator could not be reached), the pump
says so and what to do: restart the local stack.

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


class Health:
    """Counts one function's invocations in a row that got no answer, and says when to act."""

    def __init__(self, function, invoke, dead_after):
        self.function = function
        self.invoke = invoke
        self.dead_after = dead_after
        self.missed = 0

    def answered(self):
        self.missed = 0

    def missed_one(self, error):
        """The message to print once `dead_after` invocations in a row went unanswered."""
        self.missed += 1
        if self.dead_after <= 0 or self.missed < self.dead_after:
            return None
        if self.missed > self.dead_after:
            return (
                f"sqs-pump: {self.function} still does not answer ({self.missed} invocations "
                f"in a row); restart the local stack"
            )
        if refused(error):
            what = (
                f"nothing answers at {self.invoke}: `cargo lambda watch` is not running "
                f"(or listens elsewhere)"
            )
        else:
            what = (
                f"`cargo lambda watch` no longer runs {self.function}: once a function's process "
                f"died (killed, crashed, out of memory) the emulator never starts it again, and "
                f"every invocation of it times out"
            )
        return (
            f"sqs-pump: {self.function} has not answered {self.missed} invocations in a row "
            f"(last: {error}); {what}. Restart the local stack (Ctrl-C, then "
            f"scripts/local-stack.sh); interrupted runs are checkpointed and the sweeper "
            f"re-queues them once their lease lapses."
        )


def refused(error):
    """True when the emulator could not be reached at all (nothing listens)."""
    reason = getattr(error, "reason", error)
    return isinstance(reason, ConnectionRefusedError)


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
    parser.add_argument(
        "--dead-after",
        type=int,
        default=2,
        help="unanswered invocations of one function in a row before saying to restart; 0 = never",
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
            "dead_after": args.dead_after,
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
    worker = Health(args.function, args.invoke, args.dead_after)
    sweeper = Health(args.sweeper, args.invoke, args.dead_after)
    next_sweep = time.monotonic() + args.sweep_every
    while True:
        if args.sweep_every > 0 and time.monotonic() >= next_sweep:
            next_sweep = time.monotonic() + args.sweep_every
            try:
                report = invoke(sweeper_url, scheduled_event(), args.sweep_timeout)
                sweeper.answered()
                print(f"sqs-pump: sweep {json.dumps(report)}", flush=True)
            except (urllib.error.URLError, OSError, ValueError) as error:
                print(f"sqs-pump: sweep failed: {error}", file=sys.stderr, flush=True)
                say(sweeper, error)
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
            worker.answered()
        except (urllib.error.URLError, OSError, ValueError) as error:
            # Nothing deleted: the messages come back after the visibility timeout.
            print(f"sqs-pump: invoke failed: {error}", file=sys.stderr, flush=True)
            say(worker, error)
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


def say(health, error):
    """Counts an unanswered invocation; prints what to do once there are enough in a row."""
    if isinstance(error, (ValueError, urllib.error.HTTPError)):
        health.answered()  # an answer, just not a good one: the function is there
        return
    message = health.missed_one(error)
    if message:
        print(message, file=sys.stderr, flush=True)


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:
        pass
