"""A put on a bounded queue that gives up when its consumer has stopped (example and batch producer threads)."""

import queue


def put_unless_stopped(target_queue, item, stop):
    """Put `item` on a bounded queue, waiting while it is full, unless `stop` (an Event) is set first.

    Returns whether the item went in.  A plain blocking put would keep a producer thread alive
    forever once its consumer has stopped reading.
    """
    while not stop.is_set():
        try:
            target_queue.put(item, timeout=0.1)
            return True
        except queue.Full:
            continue
    return False
