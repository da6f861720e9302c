"""Evaluates JSONata with jsonata-js 2.0.6 (npm, the JSONata that Step Functions implements) in Node.js,
with Step Functions' ``$hash``, ``$parse`` and ``$partition`` as AWS documents them: an independent reference for our JSONata texts."""

from __future__ import annotations

import json
import subprocess
from typing import Any

_RUNNER = """
const jsonata = require('jsonata');
const crypto = require('crypto');
const algorithms = {'MD5': 'md5', 'SHA-1': 'sha1', 'SHA-256': 'sha256', 'SHA-384': 'sha384', 'SHA-512': 'sha512'};
let text = '';
process.stdin.on('data', chunk => text += chunk).on('end', async () => {
  const {expression, bindings} = JSON.parse(text);
  const compiled = jsonata(expression);
  compiled.registerFunction('hash', (data, algorithm) =>
    crypto.createHash(algorithms[algorithm]).update(data, 'utf8').digest('hex'), '<ss:s>');
  compiled.registerFunction('parse', (json) => JSON.parse(json), '<s:j>');
  compiled.registerFunction('partition', (items, size) => {
    const chunks = [];
    for (let start = 0; start < items.length; start += size) chunks.push(items.slice(start, start + size));
    return chunks;
  }, '<an:a>');
  try {
    const value = await compiled.evaluate({}, bindings);
    process.stdout.write(JSON.stringify({value: value === undefined ? null : value, undefined: value === undefined}));
  } catch (error) {
    process.stdout.write(JSON.stringify({error: error.message || String(error)}));
  }
});
"""


class JSONataJsError(Exception):
    pass


def evaluate(expression: str, bindings: dict[str, Any], *, cwd: str) -> Any:
    """The value of ``expression``; raises ``JSONataJsError`` with jsonata-js's message if it throws."""
    done = subprocess.run(
        ["node", "-e", _RUNNER],
        input=json.dumps({"expression": expression, "bindings": bindings}),
        capture_output=True,
        text=True,
        cwd=cwd,
        check=True,
        timeout=120,
    )
    result = json.loads(done.stdout)
    if "error" in result:
        raise JSONataJsError(result["error"])
    return result["value"]
