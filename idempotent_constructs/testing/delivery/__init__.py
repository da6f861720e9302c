"""The delivery loop: a source of the emulator drained into a deployed target as AWS documents its delivery, so
that a test sees a message's whole life: its receives, its executions, its deletion, its move to the
dead-letter queue or its drop.

- ``queues``: an SQS queue through an EventBridge pipe into a state machine (``Pipe``), or through a Lambda
  event source mapping into a starter function (``EventSourceMapping``); ``messages_in`` reads a queue, and
  ``redrive`` moves a dead-letter queue's messages back, as new messages.
- ``streams``: a Kinesis stream, or a DynamoDB table's stream, through a pipe (``StreamPipe``).
- ``loop``: what they share: a ``Cycle`` (one batch and what became of it), ``drain()``, and the reading of a
  partial batch response.

Each rule is cited in the module that plays it.
"""

from .loop import Cycle
from .queues import FIRE_AND_FORGET, REQUEST_RESPONSE, SQS_BATCH_SIZE, EventSourceMapping, Pipe, messages_in, redrive
from .streams import StreamPipe

__all__ = [
    "FIRE_AND_FORGET",
    "REQUEST_RESPONSE",
    "SQS_BATCH_SIZE",
    "Cycle",
    "EventSourceMapping",
    "Pipe",
    "StreamPipe",
    "messages_in",
    "redrive",
]
