"""A test function that takes as long as it is told to (to make a task time out)."""

import time


def handler(event, context=None):
    time.sleep(float(event.get("seconds", 0)))
    return event
