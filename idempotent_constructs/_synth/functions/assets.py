"""The shared functions' code: the handlers of ``lambda_src`` and the packages bundled with them."""

from __future__ import annotations

import atexit
import functools
import hashlib
import importlib.metadata
import importlib.util
import shutil
import tempfile
import zipfile
from importlib import resources
from pathlib import Path

from aws_cdk import Stage
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

RUNTIME = lambda_.Runtime.PYTHON_3_14
DISABLE_ASSET_STAGING = "aws:cdk:disable-asset-staging"  # the context `cdk synth --no-staging` sets


# Bundled with the handlers: Powertools' Logger and Metrics, pure Python, and what they import that the
# Lambda runtime lacks. Copied at synth time (no Docker, no layer version to pin per region).
BUNDLED_PACKAGES = ("aws_lambda_powertools", "typing_extensions")


def lambda_code(scope: Construct) -> lambda_.Code:
    """The shared functions' code: ``lambda_src`` plus ``BUNDLED_PACKAGES`` as installed here. Its
    hash covers the handlers' bytes and the packages' versions, so the functions are updated exactly
    when either changes."""
    handlers = sorted(path for path in lambda_source_dir().glob("*.py") if path.name != "__init__.py")
    digest = hashlib.sha256()
    for path in handlers:
        digest.update(path.name.encode() + path.read_bytes())
    for name in BUNDLED_PACKAGES:
        digest.update(f"{name}=={importlib.metadata.version(name.replace('_', '-'))}".encode())
    asset_hash = digest.hexdigest()
    # With asset staging disabled (`cdk synth --no-staging`, for SAM local), the cloud assembly points
    # at the staged directory itself: keep it, beside the assembly, instead of a temporary one.
    stage = Stage.of(scope)
    keep_in = Path(stage.outdir) if stage is not None and scope.node.try_get_context(DISABLE_ASSET_STAGING) else None
    staged = _staged(asset_hash, tuple(handlers), keep_in)
    # Zipped once a process: the CDK copies one file into each cloud assembly, not the packages' hundreds.
    # (Kept a directory where staging is disabled: SAM reads the code where the assembly points.)
    return lambda_.Code.from_asset(str(staged if keep_in is not None else _zipped(staged)), asset_hash=asset_hash)


@functools.cache
def _zipped(staged: Path) -> Path:
    """The directory ``staged`` as a zip file, in a temporary directory of its own (private to this user), removed
    when the process exits. Each file is readable by all (Lambda runs the code as another user) and dated
    1980-01-01, whatever its installed mode and date (a zip holds no earlier date: Nix's files are dated 1970)."""
    archive = Path(tempfile.mkdtemp(prefix=f"{staged.name}-zip-")) / "code.zip"
    atexit.register(shutil.rmtree, archive.parent, ignore_errors=True)
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as written:
        for path in sorted(staged.rglob("*")):
            if path.is_file():
                entry = zipfile.ZipInfo(path.relative_to(staged).as_posix(), date_time=(1980, 1, 1, 0, 0, 0))
                entry.external_attr = 0o100644 << 16
                entry.compress_type = zipfile.ZIP_DEFLATED
                written.writestr(entry, path.read_bytes())
    return archive


@functools.cache
def _staged(asset_hash: str, handlers: tuple[Path, ...], keep_in: Path | None = None) -> Path:
    """The handlers and the packages, copied once per process (and content) into a directory of its
    own (``mkdtemp``: private to this user), which the CDK then copies into the cloud assembly; it is
    removed when the process exits, unless it is made in ``keep_in``. Local copying, no Docker, no
    Lambda layer to pin per region."""
    if keep_in is not None:
        keep_in.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f"idempotent-constructs-asset-{asset_hash[:12]}-", dir=keep_in))
    if keep_in is None:
        atexit.register(shutil.rmtree, staging, ignore_errors=True)
    for path in handlers:
        shutil.copy2(path, staging / path.name)
    for name in BUNDLED_PACKAGES:
        spec = importlib.util.find_spec(name)
        assert spec is not None and spec.origin is not None, f"{name} is a dependency of this package"
        origin = Path(spec.origin)
        if origin.name == "__init__.py":
            ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
            shutil.copytree(origin.parent, staging / origin.parent.name, ignore=ignore)
        else:
            shutil.copy2(origin, staging / origin.name)
    return staging


def lambda_source_dir() -> Path:
    """The directory that becomes the Lambda asset (``idempotent_constructs/lambda_src``)."""
    return Path(str(resources.files("idempotent_constructs.lambda_src")))
