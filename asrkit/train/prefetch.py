"""Batches made in a background thread, so the TF step does not wait for HDF5 reads and copies.

The thread fills a bounded queue (the input queue whose depth the trainer logs);
NumPy copies and h5py reads release the GIL often enough, and TensorFlow runs
its kernels without it, so batch preparation overlaps the training step.  An
exception in the thread is re-raised in the consumer.
"""

import queue
import threading

from asrkit.training_examples.queues import put_unless_stopped

_END = object()


class _Failure:
    def __init__(self, error):
        self.error = error


class Prefetcher:
    def __init__(self, batches, capacity=4):
        self.capacity = capacity
        self._queue = queue.Queue(maxsize=capacity)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._fill, args=(batches,), name="asrkit-batches", daemon=True)
        self._thread.start()

    def _put(self, item):
        return put_unless_stopped(self._queue, item, self._stop)

    def _fill(self, batches):
        try:
            for batch in batches:
                if not self._put(batch):
                    return
        except BaseException as error:  # handed to the consumer, which re-raises it with its traceback
            self._put(_Failure(error))
            return
        self._put(_END)

    def depth(self):
        return self._queue.qsize()

    def __iter__(self):
        while True:
            item = self._queue.get()
            if item is _END:
                return
            if isinstance(item, _Failure):
                raise item.error
            yield item

    def close(self):
        self._stop.set()
        self._thread.join(timeout=5)
