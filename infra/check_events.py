"""Shape checks for the sample events in events/ (run by scripts/validate-infra.sh).

Tests load these files as real Lambda payloads, so beyond "is JSON" this checks what AWS would
guarantee: API Gateway HTTP API / function URL payload v2 fields that agree with each other,
SQS records whose md5OfBody matches the body, and EventBridge scheduled events.
"""

import hashlib
import json
import pathlib
import sys

EVENTS = pathlib.Path(__file__).resolve().parent.parent / "events"

HTTP_TOP = ["version", "routeKey", "rawPath", "rawQueryString", "headers", "requestContext", "isBase64Encoded"]
HTTP_CTX = ["accountId", "apiId", "domainName", "domainPrefix", "http", "requestId", "routeKey", "stage", "time", "timeEpoch"]
HTTP_HTTP = ["method", "path", "protocol", "sourceIp", "userAgent"]
SQS_RECORD = ["messageId", "receiptHandle", "body", "attributes", "messageAttributes", "md5OfBody",
              "eventSource", "eventSourceARN", "awsRegion"]
SQS_ATTRS = ["ApproximateReceiveCount", "SentTimestamp", "SenderId", "ApproximateFirstReceiveTimestamp"]
S3_RECORD = ["eventVersion", "eventSource", "awsRegion", "eventTime", "eventName", "s3"]
S3_OBJECT = ["key", "sequencer"]
SCHEDULE_TOP = ["version", "id", "detail-type", "source", "account", "time", "region", "resources", "detail"]


def missing(obj, keys):
    return [k for k in keys if k not in obj]


def check_http(ev):
    errs = []
    errs += [f"missing {k}" for k in missing(ev, HTTP_TOP)]
    ctx = ev.get("requestContext", {})
    errs += [f"missing requestContext.{k}" for k in missing(ctx, HTTP_CTX)]
    http = ctx.get("http", {})
    errs += [f"missing requestContext.http.{k}" for k in missing(http, HTTP_HTTP)]
    if errs:
        return errs
    if ev["version"] != "2.0":
        errs.append("version must be \"2.0\"")
    if ev["routeKey"] != ctx["routeKey"]:
        errs.append("routeKey differs from requestContext.routeKey")
    if ev["rawPath"] != http["path"]:
        errs.append("rawPath differs from requestContext.http.path")
    if ctx["stage"] != "$default":
        errs.append("stage must be $default")
    if ev["routeKey"] != "$default":
        method, _, template = ev["routeKey"].partition(" ")
        if method != http["method"]:
            errs.append("routeKey method differs from requestContext.http.method")
        params = ev.get("pathParameters", {})
        path = template
        for name, value in params.items():
            path = path.replace("{" + name + "}", value)
        if "{" in path or path != ev["rawPath"]:
            errs.append("routeKey template with pathParameters does not give rawPath")
    if any(k != k.lower() for k in ev["headers"]):
        errs.append("header names must be lower case (payload v2)")
    if ev["isBase64Encoded"] is not False:
        errs.append("isBase64Encoded must be false")
    if "body" in ev:
        if not isinstance(ev["body"], str):
            errs.append("body must be a string")
        else:
            try:
                json.loads(ev["body"])
            except json.JSONDecodeError:
                errs.append("body is not JSON")
            length = ev["headers"].get("content-length")
            if length != str(len(ev["body"].encode())):
                errs.append("content-length header does not match body")
    return errs


def check_sqs(ev):
    errs = []
    records = ev.get("Records")
    if not records:
        return ["Records must be a non-empty list"]
    for i, rec in enumerate(records):
        errs += [f"Records[{i}] missing {k}" for k in missing(rec, SQS_RECORD)]
        attrs = rec.get("attributes", {})
        errs += [f"Records[{i}].attributes missing {k}" for k in missing(attrs, SQS_ATTRS)]
        if any(not isinstance(v, str) for v in attrs.values()):
            errs.append(f"Records[{i}].attributes values must be strings")
        if rec.get("eventSource") != "aws:sqs":
            errs.append(f"Records[{i}].eventSource must be aws:sqs")
        body = rec.get("body")
        if isinstance(body, str) and rec.get("md5OfBody") != hashlib.md5(body.encode()).hexdigest():
            errs.append(f"Records[{i}].md5OfBody does not match body")
    return errs


def check_s3(ev):
    """An S3 event notification (what S3 puts on the sync queue), or S3's test event."""
    if "Records" not in ev:
        if ev.get("Service") != "Amazon S3" or ev.get("Event") != "s3:TestEvent":
            return ["an S3 test event has Service \"Amazon S3\" and Event s3:TestEvent"]
        return []
    errs = []
    for i, rec in enumerate(ev["Records"]):
        errs += [f"Records[{i}] missing {k}" for k in missing(rec, S3_RECORD)]
        obj = rec.get("s3", {}).get("object", {})
        errs += [f"Records[{i}].s3.object missing {k}" for k in missing(obj, S3_OBJECT)]
        name = rec.get("eventName", "")
        if not (name.startswith("ObjectCreated:") or name.startswith("ObjectRemoved:")):
            errs.append(f"Records[{i}].eventName must be ObjectCreated:* or ObjectRemoved:*")
        if name.startswith("ObjectCreated:") and "eTag" not in obj:
            errs.append(f"Records[{i}] ObjectCreated carries s3.object.eTag")
        if "bucket" not in rec.get("s3", {}):
            errs.append(f"Records[{i}].s3 missing bucket")
    return errs


def is_s3(ev):
    records = ev.get("Records") or [{}]
    return records[0].get("eventSource") == "aws:s3" or ev.get("Service") == "Amazon S3"


def check_schedule(ev):
    errs = [f"missing {k}" for k in missing(ev, SCHEDULE_TOP)]
    if errs:
        return errs
    if ev["detail-type"] != "Scheduled Event" or ev["source"] != "aws.events":
        errs.append("a scheduled event has detail-type \"Scheduled Event\" and source aws.events")
    if not all(str(r).startswith("arn:aws:events:") for r in ev["resources"]):
        errs.append("resources must be EventBridge rule ARNs")
    if ev["detail"] != {}:
        errs.append("detail of a scheduled event is {}")
    return errs


def main():
    files = sorted(EVENTS.glob("*.json"))
    if not files:
        print(f"no events in {EVENTS}")
        return 1
    failed = 0
    for path in files:
        try:
            ev = json.loads(path.read_text())
        except json.JSONDecodeError as err:
            print(f"{path.name}: invalid JSON: {err}")
            failed += 1
            continue
        if is_s3(ev):
            errs = check_s3(ev)
        elif "Records" in ev:
            errs = check_sqs(ev)
        elif "detail-type" in ev:
            errs = check_schedule(ev)
        else:
            errs = check_http(ev)
        for err in errs:
            print(f"{path.name}: {err}")
        failed += bool(errs)
    print(f"events: {len(files) - failed}/{len(files)} well-formed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
