"""Load test: asynchronous runs through the whole local stack.

    .local/venv/bin/python bench/load/local_stack_load.py [--runs 1000] [--write] [--release]

Starts a scripted OpenAI-compatible model (50 ms per reply) and `scripts/local-stack.sh` (moto,
provisioning, `cargo lambda watch`, the SQS pump, which also invokes the sweeper every minute),
submits RUNS asynchronous runs through the `api` function's URL (POST /workflow/runs), and
waits until every run is terminal, reading the checkpoints from moto's DynamoDB.

Checks, and fails unless all hold:
  - every run is terminal (`completed`), within --timeout seconds;
  - each was routed exactly once: one `route_query` model call per run, 7 calls per run in all,
    and every queued message delivered to the worker once (the pump's counts: deliveries =
    runs, no failed record, nothing re-queued by a sweep).
Reports runs per second (runs / (last terminal - first submit)) and the p50 / p99 time to
terminal (from the start of a run's POST to the end of its last step, as its checkpoint
records it). With --write, replaces the load-test section of BENCHMARKS.md between its
markers (and refuses if they are missing). Progress on stderr, the table on stdout.

Everything listens on 127.0.0.1; the stack and the model server stop when this script ends.
"""

import argparse
import base64
import concurrent.futures
import datetime
import gzip
import http.server
import json
import os
import pathlib
import re
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

import boto3

ROOT = pathlib.Path(__file__).resolve().parents[2]
BENCHMARKS = ROOT / "BENCHMARKS.md"
BEGIN = "<!-- BEGIN GENERATED: local-stack load test -->"
END = "<!-- END GENERATED: local-stack load test -->"
QUESTION = "What causes patch canker in durian?"
MARKER = re.compile(r"Load run (\d{5})")
REPLY_DELAY = 0.050
CALLS_PER_RUN = 7
TABLE = "bounded-rag-checkpoints"  # provision.py's default


def log(message):
    print(f"load: {message}", file=sys.stderr, flush=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Model(http.server.ThreadingHTTPServer):
    """The scripted model: every grade yes, route kg_retrieval, one fixed answer."""

    daemon_threads = True

    def __init__(self, address):
        super().__init__(address, ModelHandler)
        self.lock = threading.Lock()
        self.calls = {}  # run index -> {schema name: count}
        self.unattributed = 0


REPLIES = {
    "route_query": {"data_source": "kg_retrieval"},
    "grade_documents": {"binary_score": "yes"},
    "grade_hallucinations": {"binary_score": "yes"},
    "grade_answer": {"binary_score": "yes"},
    "refine_query": {"refined_question": "refined question"},
    "generate_answer": {"answer": "Scripted answer [1]."},
}


class ModelHandler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *_):
        pass

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))) or b"{}")
        name = body.get("response_format", {}).get("json_schema", {}).get("name", "")
        found = MARKER.search(json.dumps(body.get("messages", [])))
        with self.server.lock:
            if found:
                per_run = self.server.calls.setdefault(int(found.group(1)), {})
                per_run[name] = per_run.get(name, 0) + 1
            else:
                self.server.unattributed += 1
        time.sleep(REPLY_DELAY)
        reply = {
            "id": "chatcmpl-load",
            "object": "chat.completion",
            "created": 0,
            "model": body.get("model", "scripted"),
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": json.dumps(REPLIES.get(name, {}))},
                    "finish_reason": "stop",
                }
            ],
            "usage": {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110},
        }
        data = json.dumps(reply).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def http_json(method, url, body=None, timeout=60):
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(
        url, data=data, method=method, headers={"content-type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, json.loads(response.read() or b"null")
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"null")


def end_of_run(checkpoint):
    """Epoch seconds at which the last recorded step ended."""
    last = checkpoint["records"][-1]
    started = datetime.datetime.fromisoformat(last["timestamp"].replace("Z", "+00:00"))
    return started.timestamp() + last["processing_time"]


def outcome(checkpoint):
    """`completed`, `best_effort`, `suspended`, or None while the workflow has not ended."""
    return (checkpoint["state"].get("outcome") or {}).get("kind")


def decode(item):
    stored = item["body"]["B"]
    stored = stored if isinstance(stored, bytes) else base64.b64decode(stored)
    if item["enc"]["S"] == "gzip":
        stored = gzip.decompress(stored)
    return json.loads(stored)


def percentile(values, p):
    ordered = sorted(values)
    rank = max(0, min(len(ordered) - 1, round(p / 100 * len(ordered) + 0.5) - 1))
    return ordered[rank]


def table(result):
    rows = [
        ("runs", f"{result['runs']} asynchronous (`POST /workflow/runs`), each 6 steps / 7 model calls"),
        ("model", f"scripted OpenAI-compatible server, {REPLY_DELAY * 1000:.0f} ms per reply"),
        ("stack", "`scripts/local-stack.sh`: moto, `cargo lambda watch` with the "
         f"{'release' if result['release'] else 'debug (unoptimized)'} functions, the SQS pump "
         "(batches of 10, one worker instance), the sweeper every 60 s"),
        ("terminal", f"{result['terminal']} of {result['runs']} `completed`"),
        ("routed once", f"{result['routed_once']} of {result['runs']} (one `route_query` call each); "
         f"{result['model_calls']} model calls; {result['deliveries']} deliveries, "
         f"{result['failed_records']} failed records, {result['requeued']} re-queued by sweeps"),
        ("throughput", f"{result['runs_per_second']:.1f} runs/s "
         f"({result['runs']} runs in {result['span']:.1f} s, first submit to last terminal)"),
        ("time to terminal", f"p50 {result['p50']:.2f} s, p99 {result['p99']:.2f} s, max {result['max']:.2f} s"),
    ]
    lines = [
        f"- **Date:** {result['date']}",
        f"- **Revision:** {result['revision']}",
        f"- **Command:** `{result['command']}`",
        "",
        "| | |",
        "|---|---|",
    ]
    lines += [f"| {name} | {value} |" for name, value in rows]
    return "\n".join(lines) + "\n"


def write_benchmarks(section):
    text = BENCHMARKS.read_text(encoding="utf-8")
    if BEGIN not in text or END not in text:
        sys.exit(f"load: {BENCHMARKS} has no {BEGIN} ... {END} markers; not writing")
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    BENCHMARKS.write_text(f"{head}{BEGIN}\n{section}{END}{tail}", encoding="utf-8")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--timeout", type=float, default=1800, help="seconds for all runs to end")
    parser.add_argument("--start-timeout", type=float, default=1800,
                        help="seconds for the stack to answer (the first `cargo run` may compile)")
    parser.add_argument("--submitters", type=int, default=8, help="concurrent POSTs")
    parser.add_argument("--release", action="store_true", help="run the functions' release builds")
    parser.add_argument("--write", action="store_true", help="rewrite BENCHMARKS.md's load section")
    args = parser.parse_args()
    if args.write:
        text = BENCHMARKS.read_text(encoding="utf-8")
        if BEGIN not in text or END not in text:
            sys.exit(f"load: {BENCHMARKS} has no load-test markers; not measuring")

    model = Model(("127.0.0.1", 0))
    threading.Thread(target=model.serve_forever, daemon=True).start()
    moto_port, lambda_port = free_port(), free_port()
    workdir = tempfile.TemporaryDirectory(prefix="bounded-rag-load-")
    stack_log = pathlib.Path(workdir.name) / "local-stack.log"
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith("AWS_") and key not in ("LLM_API_KEY", "WEB_SEARCH_API_KEY")
    }
    env.update(
        MOTO_PORT=str(moto_port),
        LAMBDA_PORT=str(lambda_port),
        LAMBDA_ENV_FILE=str(pathlib.Path(workdir.name) / "lambda.env"),
        LLM_PROVIDER="openai",
        LLM_BASE_URL=f"http://127.0.0.1:{model.server_address[1]}/v1",
        LLM_MODEL="scripted-model",
        LLM_API_KEY="sk-load-test",
        SWEEP_EVERY="60",
    )
    command = [str(ROOT / "scripts/local-stack.sh")]
    if args.release:
        command += ["--", "--release"]
    log(f"starting the local stack (moto :{moto_port}, lambda :{lambda_port}), log {stack_log}")
    with open(stack_log, "w", encoding="utf-8") as out:
        stack = subprocess.Popen(
            command, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    base = f"http://127.0.0.1:{lambda_port}/lambda-url/api"
    try:
        result = measure(args, model, stack, stack_log, base, moto_port)
    finally:
        stop(stack)
        model.shutdown()
    section = table(result)
    print(section, end="")
    if args.write:
        write_benchmarks(section)
        log(f"wrote {BENCHMARKS}")
    failures = []
    if result["terminal"] != result["runs"]:
        failures.append(f"{result['runs'] - result['terminal']} runs not terminal")
    if result["routed_once"] != result["runs"] or result["model_calls"] != CALLS_PER_RUN * result["runs"]:
        failures.append("a run was not routed exactly once")
    if result["deliveries"] != result["runs"] or result["failed_records"] or result["requeued"]:
        failures.append("a message was delivered more than once, failed or re-queued")
    if failures:
        sys.exit("load: FAILED: " + "; ".join(failures))


def stop(stack):
    if stack.poll() is None:
        stack.send_signal(signal.SIGTERM)  # its trap stops moto, the pump and the emulator
        try:
            stack.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(stack.pid, signal.SIGKILL)
            stack.wait()


def pump_counts(stack_log):
    """(deliveries, failed records, runs re-queued by sweeps) from the pump's log lines."""
    text = stack_log.read_text(encoding="utf-8", errors="replace")
    delivered = failed = requeued = 0
    for found in re.finditer(r"sqs-pump: (\d+) delivered, (\d+) failed", text):
        delivered += int(found.group(1))
        failed += int(found.group(2))
    for found in re.finditer(r"sqs-pump: sweep (\{.*\})", text):
        requeued += json.loads(found.group(1)).get("requeued", 0)
    return delivered, failed, requeued


def measure(args, model, stack, stack_log, base, moto_port):
    deadline = time.monotonic() + args.start_timeout
    while True:
        if stack.poll() is not None:
            sys.exit(f"load: the local stack exited ({stack.returncode}); see {stack_log}")
        try:
            status, _ = http_json("GET", f"{base}/workflow/runs/warm-up-probe", timeout=args.start_timeout)
            if status == 404:
                break
        except (urllib.error.URLError, OSError, ValueError):
            pass
        if time.monotonic() > deadline:
            sys.exit(f"load: the api function did not answer within {args.start_timeout:.0f} s")
        time.sleep(1)
    ddb = boto3.client(
        "dynamodb",
        endpoint_url=f"http://127.0.0.1:{moto_port}",
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )

    def statuses(run_ids):
        """run_id -> checkpoint, for the runs whose checkpoint exists."""
        found = {}
        ids = list(run_ids)
        for start in range(0, len(ids), 100):
            keys = [{"pk": {"S": f"run#{r}"}, "sk": {"S": "head"}} for r in ids[start : start + 100]]
            request = {TABLE: {"Keys": keys, "ConsistentRead": True}}
            while request:
                answer = ddb.batch_get_item(RequestItems=request)
                for item in answer["Responses"].get(TABLE, []):
                    found[item["pk"]["S"][4:]] = decode(item)
                request = answer.get("UnprocessedKeys") or None
        return found

    def wait_terminal(run_ids, timeout):
        pending, ended = set(run_ids), {}
        limit = time.monotonic() + timeout
        while pending and time.monotonic() < limit:
            for run_id, cp in statuses(pending).items():
                if cp["phase"] in ("finished", "failed") or (
                    cp["phase"] == "stopped" and outcome(cp) != "suspended"
                ):
                    ended[run_id] = cp
                    pending.discard(run_id)
            if pending:
                time.sleep(0.5)
        return ended

    # One warm-up run: the worker's first invocation starts its process.
    status, body = http_json("POST", f"{base}/workflow/runs", {"question": f"Warm-up: {QUESTION}"})
    if status != 202:
        sys.exit(f"load: warm-up POST answered {status}: {body}")
    if not wait_terminal([body["run_id"]], args.start_timeout):
        sys.exit("load: the warm-up run did not finish")
    warm_deliveries, _, _ = pump_counts(stack_log)

    log(f"submitting {args.runs} asynchronous runs")
    submitted = {}

    def submit(i):
        started = time.time()
        status, body = http_json(
            "POST", f"{base}/workflow/runs", {"question": f"Load run {i:05d}: {QUESTION}"}
        )
        if status != 202:
            raise RuntimeError(f"POST /workflow/runs answered {status}: {body}")
        return i, body["run_id"], started

    with concurrent.futures.ThreadPoolExecutor(args.submitters) as pool:
        for i, run_id, started in pool.map(submit, range(args.runs)):
            submitted[run_id] = (i, started)
    log(f"all submitted; waiting for {args.runs} runs to end")
    ended = wait_terminal(submitted, args.timeout)
    deliveries, failed, requeued = pump_counts(stack_log)
    times, ends, routed_once, terminal = [], [], 0, 0
    for run_id, (i, started) in submitted.items():
        cp = ended.get(run_id)
        if cp is None:
            continue
        terminal += cp["phase"] == "finished" and outcome(cp) == "completed"
        end = end_of_run(cp)
        times.append(end - started)
        ends.append(end)
        routed_once += model.calls.get(i, {}).get("route_query", 0) == 1
    first_submit = min(started for _, started in submitted.values())
    span = (max(ends) - first_submit) if ends else float("nan")
    model_calls = sum(sum(c.values()) for i, c in model.calls.items())
    revision = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
    ).stdout.strip()
    return {
        "runs": args.runs,
        "release": args.release,
        "terminal": terminal,
        "routed_once": routed_once,
        "model_calls": model_calls,
        "deliveries": deliveries - warm_deliveries,
        "failed_records": failed,
        "requeued": requeued,
        "runs_per_second": len(ends) / span if ends else 0.0,
        "span": span,
        "p50": percentile(times, 50) if times else float("nan"),
        "p99": percentile(times, 99) if times else float("nan"),
        "max": max(times) if times else float("nan"),
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "revision": revision or "unknown",
        "command": " ".join(["bench/load/local_stack_load.py"] + sys.argv[1:]),
    }


if __name__ == "__main__":
    main()
