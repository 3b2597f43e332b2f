"""schemathesis hooks for scripts/api-fuzz.sh (loaded through SCHEMATHESIS_HOOKS).

The local stack's function URL emulator (`cargo lambda watch`) builds the API Gateway v2 event
with header values and a JSON body as UTF-8 text, and answers 500 by itself, before any
function runs, when they hold other bytes: obs-text header values such as b"\\xd7\\xf8" (which
schemathesis sends as negative `Idempotency-Key` values) or a body that is not UTF-8. API
Gateway and Lambda function URLs do carry such requests to the function, which answers 400
(see openapi.yaml). So right before each call, in every phase, those bytes are escaped
(`\\xd7`): the emulator's limit is not reported as a server error of ours, and the function
still gets malformed keys (spaces, control characters, overlong values) and malformed bodies
to refuse. Paths are left alone.
"""

import schemathesis


def _escaped(text):
    return text.encode("ascii", "backslashreplace").decode("ascii")


@schemathesis.hook
def before_call(context, case, kwargs):
    for name, value in list((case.headers or {}).items()):
        if isinstance(value, str) and not value.isascii():
            case.headers[name] = _escaped(value)
    if isinstance(case.body, (bytes, bytearray)):
        try:
            bytes(case.body).decode("utf-8")
        except UnicodeDecodeError:
            case.body = bytes(case.body).decode("utf-8", "backslashreplace").encode("utf-8")
