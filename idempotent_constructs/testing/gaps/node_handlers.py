"""Gap: moto runs a Lambda function in Docker, so no custom resource handler on Node.js runs here.

moto 5.2.5 invokes a function in a Docker container of its runtime (``awslambda/models.py``), not available here;
the harness runs Python functions in process (``testing/lambdas.py``). The CDK's own custom resource handlers are
Node.js functions: ``AwsCustomResource``, log retention, ``auto_delete_objects=True``, the provider framework's
onEvent. And moto packages inline code (``ZipFile``) as ``index.py`` whatever the runtime, where "When you specify
source code inline for a Node.js function, the index file that CloudFormation creates uses the extension .js"
(CloudFormation Template Reference, AWS::Lambda::Function Code).

Here ``gaps.custom_resources`` runs a custom resource's Node.js handler with ``node`` (the first on ``PATH``; the
tests put first ``node_modules/.bin``, npm's ``node`` package), one process per request: a driver loads the
function's code (as deployed; inline code as ``index.js``, CommonJS or ``.mjs``), calls its handler, async or with a
callback, with the event and a context as Lambda's Node.js runtime makes them ("Using the Lambda context object to
retrieve Node.js function information", Lambda developer guide), and ends it at the function's ``Timeout``. Its
environment: the function's own variables, those Lambda sets (``AWS_REGION``, ``AWS_LAMBDA_FUNCTION_NAME``, ...),
fake credentials, no profile of the machine's, and ``AWS_ENDPOINT_URL`` (it "specifies the endpoint that is used
for all service requests", AWS SDKs and Tools Reference Guide, Service-specific endpoints) on a loopback port where
the harness hands each request of the AWS SDK for JavaScript v3 to moto as boto3's reach it, by the service and
region of its signature: what the handler makes is on the emulator, and a function it invokes (the provider framework's user
handler) runs in the harness. The SDK's clients (``@aws-sdk/client-*``, part of Lambda's Node.js runtimes) come from
the ``node_modules`` of the working directory or a parent, or ``NODE_PATH``: this project's package.json installs
those of the CDK's handlers; a handler whose client is missing fails saying so.

Two adaptations: the CDK's handlers answer with ``https.request({hostname, path})``, the scheme and port of
``ResponseURL`` dropped (on AWS "a presigned S3 bucket", Custom resource request objects), so an HTTPS request to
127.0.0.1 goes to the harness's listener over HTTP; and ``AwsCustomResource``'s handler runs ``npm install`` of the
latest client first (``install_latest_aws_sdk``, by default "The value of
@aws-cdk/customresources:installLatestAwsSdkDefault, otherwise true", AwsCustomResourceProps), which the harness
refuses: the handler logs "Failed to install latest AWS SDK v3. Falling back to pre-installed version" and goes on,
as on AWS when the install fails. What a handler prints is kept with the other functions' output
(``LocalEmulator.lambdas.logs``).

Evidence: tests/emulator/gaps/test_custom_resources.py.
"""

from __future__ import annotations

import contextlib
import datetime
import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import tempfile
import threading
import uuid
import zipfile
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import unquote

# Loads the handler as Lambda's Node.js runtime does, calls it once, writes {value} or {error} to job.result.
DRIVER = r"""'use strict';
const fs = require('fs'), http = require('http'), https = require('https'), path = require('path');
const url = require('url'), childProcess = require('child_process');
const job = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
// An HTTPS request to 127.0.0.1 (no port, 443 or the listener's) goes to the listener over HTTP.
const httpsRequest = https.request;
https.request = function (target, ...rest) {
  const options = rest.length && typeof rest[0] === 'object' ? rest.shift() : undefined;
  const parsed = typeof target === 'string' || target instanceof URL ? new URL(String(target)) : { ...target };
  const [host, hostPort] = String(parsed.hostname || parsed.host || '').split(':');
  if (host !== '127.0.0.1' || !['', '443', String(job.responsePort)].includes(String(parsed.port || hostPort || ''))) {
    return httpsRequest.call(this, target, ...(options ? [options] : []), ...rest);
  }
  const base = parsed instanceof URL ? { path: parsed.pathname + parsed.search } : parsed;
  for (const key of ['agent', 'protocol', 'host', 'port']) delete base[key];
  return http.request({ ...base, ...options, hostname: host, port: job.responsePort }, ...rest);
};
const execSync = childProcess.execSync;  // AwsCustomResource's installLatestAwsSdk: no npm install here
childProcess.execSync = function (command, ...rest) {
  if (/\bnpm\s+install\b/.test(String(command))) throw new Error('the emulator installs no package (' + command + ')');
  return execSync.call(this, command, ...rest);
};
const describe = (error, type) => ({ errorType: type || (error && error.name) || 'Error',
  errorMessage: (error && error.message) || String(error), trace: String((error && error.stack) || error).split('\n') });
let finished = false;
function finish(error, value) {
  if (finished) return;
  finished = true;
  const failed = error !== undefined && error !== null;
  const outcome = failed ? { error: error.errorType ? error : describe(error) } : { value: value === undefined ? null : value };
  fs.writeFileSync(job.result, JSON.stringify(outcome));
  process.exit(0);
}
process.on('uncaughtException', (error) => finish(error));
process.on('unhandledRejection', (error) => finish(describe(error, 'Runtime.UnhandledPromiseRejection')));
process.on('beforeExit', () => finish(null, null));  // a callback never called: Lambda returns null
(async () => {
  const base = path.resolve(job.root, job.module);
  let handler;
  try {
    const found = ['.js', '.cjs', '.mjs'].find((extension) => fs.existsSync(base + extension));
    handler = (found === '.mjs' ? await import(url.pathToFileURL(base + found).href) : require(base + (found || '')))[job.export];
  } catch (error) {
    return finish(describe({ message: `${error.name}: ${error.message}`, stack: error.stack }, 'Runtime.ImportModuleError'));
  }
  if (typeof handler !== 'function') {
    return finish(describe(new Error(`${job.module}.${job.export} is undefined or not exported`), 'Runtime.HandlerNotFound'));
  }
  const deadline = Date.now() + job.timeout * 1000;
  const context = { ...job.context, callbackWaitsForEmptyEventLoop: true, getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()),
    done: finish, succeed: (value) => finish(null, value), fail: (error) => finish(error) };
  try {
    const returned = handler(job.event, context, finish);
    if (returned && typeof returned.then === 'function') returned.then((value) => finish(null, value), (error) => finish(error));
    else if (handler.length < 3) finish(null, returned);
  } catch (error) {
    finish(error);
  }
})();
"""
_SCOPE = re.compile(r"Credential=[^/,\s]+/\d{8}/([^/]+)/([^/,\s]+)/aws4_request")  # a SigV4 signature's region, service
_GLOBAL_HOSTS = {"iam": "iam.amazonaws.com", "route53": "route53.amazonaws.com", "cloudfront": "cloudfront.amazonaws.com"}


def node() -> str | None:
    """The ``node`` the harness runs handlers with: the first on ``PATH``."""
    return shutil.which("node")


def node_path() -> str:
    """Where ``require`` finds the SDK's clients: ``NODE_PATH``, then the nearest ``node_modules`` from the working
    directory up."""
    found = [str(folder / "node_modules") for folder in [Path.cwd(), *Path.cwd().parents] if (folder / "node_modules").is_dir()]
    return os.pathsep.join([path for path in os.environ.get("NODE_PATH", "").split(os.pathsep) if path] + found[:1])


def request_body(request: BaseHTTPRequestHandler) -> bytes:
    """A request's body, by its ``Content-Length`` or chunked."""
    if "chunked" not in request.headers.get("Transfer-Encoding", ""):
        return request.rfile.read(int(request.headers.get("Content-Length") or 0))
    chunks = []
    while size := int(request.rfile.readline().split(b";")[0].strip() or b"0", 16):
        chunks.append(request.rfile.read(size + 2)[:size])
    while request.rfile.readline() not in (b"\r\n", b"\n", b""):
        pass  # the trailers
    return b"".join(chunks)


class _Endpoint(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Forward)  # an ephemeral port


class _Forward(BaseHTTPRequestHandler):
    """Hands an AWS SDK request to moto as boto3's reach it (``botocore_stubber``), at its service's AWS host."""

    protocol_version = "HTTP/1.1"  # keep-alive, and ``Expect: 100-continue`` answered

    def do_GET(self) -> None:
        from botocore.awsrequest import AWSPreparedRequest
        from botocore.compat import HTTPHeaders
        from moto.core.models import botocore_stubber

        body = request_body(self)
        scope = _SCOPE.search(self.headers.get("Authorization", "")) or _SCOPE.search(unquote(self.path))
        if scope is None:
            self._reply(400, {}, _error("MissingAuthenticationToken", "no SigV4 signature names the service"))
            return
        region, service = scope.groups()
        host = _GLOBAL_HOSTS.get(service, f"{service}.{region}.amazonaws.com")
        headers = HTTPHeaders()
        for name, value in self.headers.items():
            if name.lower() not in ("host", "expect", "transfer-encoding", "connection", "content-length"):
                headers[name] = value
        headers["Host"], headers["Content-Length"] = host, str(len(body))
        request = AWSPreparedRequest(self.command, f"https://{host}{self.path}", headers, body, stream_output=False)
        try:
            answer = botocore_stubber.process_request(request)
        except NotImplementedError as error:
            answer = 501, {}, _error("NotImplemented", f"the emulator (moto) does not implement this: {error}")
        except Exception as error:  # answered as an internal error of AWS, saying what went wrong
            answer = 500, {}, _error("InternalFailure", f"the emulator failed: {type(error).__name__}: {error}")
        self._reply(*(answer or (404, {}, _error("UnknownOperationException", f"the emulator serves no {service} here"))))

    do_PUT = do_POST = do_DELETE = do_HEAD = do_PATCH = do_GET

    def _reply(self, status: int, headers: Any, body: Any) -> None:
        data = body if isinstance(body, bytes) else str(body or "").encode() if isinstance(body, str | None) else b"".join(body)
        given = {str(name).lower(): str(value) for name, value in dict(headers or {}).items()}
        self.send_response(int(status))
        for name, value in given.items():
            if name not in ("content-length", "transfer-encoding", "connection", "server", "date", "status"):
                self.send_header(name, value)
        self.send_header("Content-Length", given.get("content-length", "0") if self.command == "HEAD" else str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        """Nothing on the terminal."""


def _error(code: str, message: str) -> str:
    return json.dumps({"__type": code, "message": message})


class _Runner:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._endpoint: _Endpoint | None = None
        self._root = Path()

    def _start(self) -> int:
        with self._lock:
            if self._endpoint is None:
                self._endpoint, self._root = _Endpoint(), Path(tempfile.mkdtemp(prefix="idempotent-constructs-node-"))
                (self._root / "driver.js").write_text(DRIVER)
                threading.Thread(target=self._endpoint.serve_forever, name="aws-sdk-endpoint", daemon=True).start()
            return int(self._endpoint.server_address[1])

    def _code(self, function: Any, module: str) -> Path:
        """The function's code, unpacked once; moto's ``index.py`` of inline code named ``index.js``."""
        target = self._root / hashlib.sha256(function.code_bytes).hexdigest()[:16]
        with self._lock:
            if not target.exists():
                with zipfile.ZipFile(io.BytesIO(function.code_bytes)) as archive:
                    archive.extractall(target)
                if module == "index" and (target / "index.py").exists() and not any(target.glob("index.*js")):
                    (target / "index.py").rename(target / "index.js")
        return target

    def run(self, function: Any, event: dict[str, Any], response_port: int) -> tuple[dict[str, Any], list[str]]:
        """``{"value": ...}`` or ``{"error": ...}`` of the handler of ``function`` on ``event``, and what it printed."""
        port, executable = self._start(), node()
        if executable is None:
            return {"error": {"errorType": "NodeNotFound", "errorMessage": "no node on PATH"}}, []
        module, _, export = str(function.handler).rpartition(".")
        timeout, root, name = int(function.timeout or 3), self._code(function, module), function.function_name
        stream = f"{datetime.datetime.now(tz=datetime.UTC):%Y/%m/%d}/[$LATEST]{uuid.uuid4().hex}"
        context = {"functionName": name, "functionVersion": "$LATEST", "invokedFunctionArn": function.function_arn}
        context |= {"memoryLimitInMB": str(function.memory_size), "awsRequestId": str(uuid.uuid4())}
        context |= {"logGroupName": f"/aws/lambda/{name}", "logStreamName": stream}
        with tempfile.TemporaryDirectory(dir=self._root) as work:
            job, result = Path(work) / "job.json", Path(work) / "result.json"
            job.write_text(
                json.dumps(
                    {"root": str(root), "module": module, "export": export, "event": event, "context": context}
                    | {"timeout": timeout, "responsePort": response_port, "result": str(result)}
                )
            )
            environment = {
                "PATH": os.environ.get("PATH", ""),
                "NODE_PATH": node_path(),
                "TZ": "UTC",
                "AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}",
                **{"AWS_REGION": function.region, "AWS_DEFAULT_REGION": function.region},
                **dict.fromkeys(("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"), "testing"),
                # No profile of the machine's: its endpoints or credentials would lead elsewhere than the emulator.
                **dict.fromkeys(("AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE"), str(Path(work) / "none")),
                **{"AWS_EXECUTION_ENV": f"AWS_Lambda_{function.run_time}", "LAMBDA_TASK_ROOT": str(root)},
                **{"AWS_LAMBDA_FUNCTION_NAME": name, "AWS_LAMBDA_FUNCTION_VERSION": "$LATEST"},
                **{"AWS_LAMBDA_FUNCTION_MEMORY_SIZE": str(function.memory_size), "AWS_LAMBDA_LOG_STREAM_NAME": stream},
                "AWS_LAMBDA_LOG_GROUP_NAME": f"/aws/lambda/{name}",
                **{key: str(value) for key, value in dict(function.environment_vars or {}).items()},
            }
            command = [executable, str(self._root / "driver.js"), str(job)]
            try:  # a second on top of the function's time, for node's own start
                ran = subprocess.run(command, capture_output=True, text=True, timeout=timeout + 1, env=environment, cwd=work)
            except subprocess.TimeoutExpired as expired:
                printed = [line for output in (expired.stdout, expired.stderr) for line in _text(output).splitlines()]
                error = {"errorType": "Sandbox.Timedout", "errorMessage": f"Task timed out after {timeout}.00 seconds"}
                return {"error": error}, printed
            printed = [*ran.stdout.splitlines(), *ran.stderr.splitlines()]
            if not result.exists():
                tail = " | ".join(ran.stderr.strip().splitlines()[-3:])
                message = f"node exited with status {ran.returncode}: {tail}"
                return {"error": {"errorType": "Runtime.ExitError", "errorMessage": message}}, printed
            return dict(json.loads(result.read_text())), printed

    def close(self) -> None:
        with self._lock:
            endpoint, self._endpoint = self._endpoint, None
        if endpoint is not None:
            endpoint.shutdown()
            endpoint.server_close()
            shutil.rmtree(self._root, ignore_errors=True)


def _text(output: Any) -> str:
    return output.decode(errors="replace") if isinstance(output, bytes) else str(output or "")


RUNNER = _Runner()


def refusal(backend: Any, function: Any) -> str | None:
    """Why the harness cannot run a custom resource's Node.js handler ``function``, or None."""
    name, variables = function.function_name, dict(function.environment_vars or {})
    if node() is None:
        return f"its handler, the function {name}, runs on {function.run_time}, and there is no node on PATH to run it"
    if variables.get("USER_IS_COMPLETE_FUNCTION_ARN"):
        return (
            "its provider framework has an is_complete_handler, which the framework's waiter state machine would poll while "
            "the stack is created, where the harness runs a state machine of the stack once the deploy is done, and its "
            "Lambda runs no Node.js function: deploy this stack to AWS to test it"
        )
    user = variables.get("USER_ON_EVENT_FUNCTION_ARN")  # the provider framework's onEvent invokes it through Lambda
    runtime = str(backend.get_function(user).run_time or "a container image") if user else ""
    if user and not runtime.startswith("python"):
        return (
            f"its provider framework's on_event_handler, the function {user.rpartition(':')[2]}, runs on {runtime}, and the "
            "emulator's Lambda runs Python functions only (in process): deploy this stack to AWS to test it"
        )
    return None


def invoke(function: Any, event: dict[str, Any], response_port: int) -> tuple[Any, bool]:
    """Run a Node.js function's handler on ``event``: what it returned, or its error as Lambda reports one (a missing
    AWS SDK client named), and whether it failed. What it printed goes to the running emulators' ``lambdas.logs``."""
    outcome, printed = RUNNER.run(function, event, response_port)
    from .. import LocalEmulator

    for emulator in LocalEmulator.running():
        emulator.lambdas.logs.setdefault(function.function_name, []).extend(printed)
    error = outcome.get("error")
    if error is None:
        return outcome.get("value"), False
    missing = re.search(r"Cannot find module '(@aws-sdk/[^']+)'", str(error.get("errorMessage")))
    if missing is not None:
        hint = f"npm install {missing.group(1)}: the harness loads the AWS SDK from node_modules, Lambda's runtime includes it"
        error["errorMessage"] = f"{error['errorMessage']} ({hint})"
    return error, True


def close() -> None:
    """Stop the SDK's endpoint and remove the handlers' code (the emulator's exit); the next run starts them again."""
    with contextlib.suppress(Exception):
        RUNNER.close()
