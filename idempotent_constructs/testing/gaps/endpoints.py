"""Gap: moto does not route two hosts the SDK (botocore 1.40's endpoint rules) sends calls to, so each call
answers 404, "Not yet implemented":

- ``sync-states.<region>.amazonaws.com``, where StartSyncExecution goes (the operation's endpoint prefix
  ``sync-``; moto routes ``states.<region>`` only);
- ``<account>.streams-ddb.<region>.amazonaws.com``, DynamoDB Streams' account-based endpoint (moto routes
  ``streams.dynamodb.<region>`` only).

AWS serves both. A starter function calls StartSyncExecution (``gaps.start_sync_execution`` answers it), and a
pipe from a DynamoDB stream (``testing.delivery.StreamPipe``) reads the stream.

Here each host is routed to moto's service.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..patches import Patch

_HOSTS = {
    "stepfunctions": re.compile(r"https?://sync-states\.(.+)\.amazonaws\.com"),
    "dynamodbstreams": re.compile(r"https?://\d{12}\.streams-ddb\.(.+)\.amazonaws\.com"),
}


def install(patch: Patch) -> None:
    from moto import backend_index
    from moto.dynamodbstreams import urls as streams_urls
    from moto.stepfunctions import urls as stepfunctions_urls

    for service, urls in (("stepfunctions", stepfunctions_urls), ("dynamodbstreams", streams_urls)):
        patch(urls, "url_bases", [*urls.url_bases, _HOSTS[service].pattern])
    patch(backend_index, "backend_url_patterns", [*_HOSTS.items(), *backend_index.backend_url_patterns])
