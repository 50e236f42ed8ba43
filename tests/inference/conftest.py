"""The recognizer's tiny model dirs (random networks of every registry type for the toy task) serve the
inference core's tests too."""

from tests.recognizer.conftest import model_dirs, toy_task  # noqa: F401  (fixtures)
