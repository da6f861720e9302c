"""Lambda functions run in this process, imported as the Lambda runtime imports them, their output kept
apart as CloudWatch Logs would keep it."""

from __future__ import annotations

import contextlib
import datetime
import hashlib
import importlib
import io
import json
import os
import sys
import tempfile
import threading
import traceback
import types
import uuid
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..lambda_src import schema

if TYPE_CHECKING:
    from .patches import Patch


# Variables a function's invocation leaves set, not removed: removing one while another thread reads the
# environment (boto3 looking for proxies as it makes a client iterates os.environ, then reads each name) raises
# KeyError in that thread. The release function's table list: only the release functions read it, and each
# invocation sets its own first. Every other variable is removed again, as a function's environment is its own.
_LEFT_SET = frozenset({schema.TABLES_ENV})


class InProcessLambda:
    """Gap: moto runs Lambda functions in Docker, which is not available here.

    Instead the handler named by the function is imported from the function's deployed code (the
    synthesized asset, as uploaded by CloudFormation) and called in this process, imported as Lambda
    imports it (a top-level module) but kept apart from other bundles' modules of the same name.
    Functions that have environment variables are invoked one at a time, since ``os.environ`` is
    shared by the whole process.
    """

    def __init__(self) -> None:
        # What each function printed, by function name: Lambda sends it to the function's log group.
        self.logs: dict[str, list[str]] = {}
        self._root = Path(tempfile.mkdtemp(prefix="idempotent-constructs-lambda-"))
        self._modules: dict[tuple[str, str], types.ModuleType] = {}
        self._lock = threading.Lock()
        self._environment_lock = threading.Lock()

    def _module(self, function: Any) -> types.ModuleType:
        code = function.code_bytes
        digest = hashlib.sha256(code).hexdigest()[:16]
        module_name = function.handler.rpartition(".")[0].replace("/", ".")
        with self._lock:
            cached = self._modules.get((digest, module_name))
            if cached is not None:
                return cached
            target = self._root / digest
            if not target.exists():
                with zipfile.ZipFile(io.BytesIO(code)) as archive:
                    archive.extractall(target)
            # Imported with the function's output kept apart, so that a logger the module makes with
            # the sys.stdout of the moment (Powertools' default handler) writes to the function's log
            # ever after, from any thread, whatever a test runner does to sys.stdout meanwhile.
            with self._environment(function), FunctionOutput.captured() as printed:
                module = import_isolated(target, module_name)
            self.logs.setdefault(function.function_name, []).extend(printed.getvalue().splitlines())
            self._modules[(digest, module_name)] = module
            return module

    @contextlib.contextmanager
    def _environment(self, function: Any) -> Iterator[None]:
        variables = dict(function.environment_vars or {})
        if not variables:
            yield
            return
        with self._environment_lock:
            saved = {name: os.environ.get(name) for name in variables}
            os.environ.update({name: str(value) for name, value in variables.items()})
            try:
                yield
            finally:
                for name, value in saved.items():
                    if value is not None:
                        os.environ[name] = value
                    elif name not in _LEFT_SET:
                        os.environ.pop(name, None)

    def install(self, patch: Patch) -> None:
        """Make moto call functions here instead of in Docker."""
        from moto.awslambda.models import LambdaFunction

        def invoke(function: Any, event: Any = None) -> tuple[str, bool, str]:
            return self.invoke(function, event if event is not None else {})

        patch(LambdaFunction, "_invoke_lambda", invoke)

    def invoke(self, function: Any, event: Any) -> tuple[str, bool, str]:
        handler = getattr(self._module(function), function.handler.rpartition(".")[2])
        # Lambda's Python context object (Lambda developer guide, "AWS Lambda context object in Python"); the CDK's
        # custom resource handlers and cfnresponse put the log stream's name in their response.
        day = datetime.datetime.now(tz=datetime.UTC).strftime("%Y/%m/%d")
        context = types.SimpleNamespace(
            function_name=function.function_name,
            function_version="$LATEST",
            invoked_function_arn=function.function_arn,
            memory_limit_in_mb=function.memory_size,
            aws_request_id=str(uuid.uuid4()),
            log_group_name=f"/aws/lambda/{function.function_name}",
            log_stream_name=f"{day}/[$LATEST]{uuid.uuid4().hex}",
            get_remaining_time_in_millis=lambda: int(function.timeout) * 1000,
        )
        with self._environment(function), FunctionOutput.captured() as printed:
            try:
                result = handler(event, context)
            except Exception as error:  # reported to the caller like Lambda does
                payload = {
                    "errorMessage": str(error),
                    "errorType": type(error).__name__,
                    "stackTrace": traceback.format_tb(error.__traceback__),
                }
                return json.dumps(payload), True, ""
            finally:
                self.logs.setdefault(function.function_name, []).extend(printed.getvalue().splitlines())
        return json.dumps(result), False, ""


class FunctionOutput(io.TextIOBase):
    """Stands in for ``sys.stdout`` while functions run: what a function prints goes to its own log
    (Lambda sends it to the function's log group), not to the terminal; anything printed by another
    thread meanwhile still goes where it went. Installed on each invocation, since test runners swap
    ``sys.stdout`` between tests."""

    _lock = threading.Lock()
    _local = threading.local()

    def __init__(self, real: Any) -> None:
        self.real = real

    def _target(self) -> Any:
        return getattr(self._local, "buffer", None) or self.real

    def write(self, text: str) -> int:
        return int(self._target().write(text))

    def flush(self) -> None:
        self._target().flush()

    @classmethod
    @contextlib.contextmanager
    def captured(cls) -> Iterator[io.StringIO]:
        with cls._lock:
            if not isinstance(sys.stdout, cls):
                sys.stdout = cls(sys.stdout)
        cls._local.buffer = io.StringIO()
        try:
            yield cls._local.buffer
        finally:
            cls._local.buffer = None


def import_isolated(root: Path, module_name: str) -> types.ModuleType:
    """Import ``module_name`` the way Lambda does (top level, ``root`` first on ``sys.path``), then
    take the modules it loaded from ``root`` out of ``sys.modules`` again, so that another bundle's
    module of the same name (every other ``index.py``) gets its own copy. The imported modules keep
    references to each other, so the handler works as it would in Lambda."""
    own_names = {path.stem for path in root.iterdir() if path.suffix == ".py" or path.is_dir()}
    shadowed = {name: sys.modules.pop(name) for name in list(sys.modules) if name.split(".")[0] in own_names}
    sys.path.insert(0, str(root))
    try:
        return importlib.import_module(module_name)
    finally:
        sys.path.remove(str(root))
        for name in [name for name in sys.modules if name.split(".")[0] in own_names]:
            del sys.modules[name]
        sys.modules.update(shadowed)
