"""Engram's Python SDK: ``Engram`` (sync) and ``AsyncEngram`` (asyncio) on httpx.

    from engram import Engram

    client = Engram()  # $ENGRAM_API_KEY, $ENGRAM_BASE_URL
    client.memories.create(agent_id="a1", type="notes", content={"content": "hi"})
    hits = client.search(agent_id="a1", query="hi").results
"""

from ._base import DEFAULT_BASE_URL
from ._client import AsyncEngram, Engram
from ._errors import *  # noqa: F403 (the exception classes)
from ._errors import __all__ as _errors_all
from ._models import *  # noqa: F403 (the models)
from ._models import Model
from ._models import __all__ as _models_all
from ._version import __version__

__all__ = ["Engram", "AsyncEngram", "DEFAULT_BASE_URL", "Model", "__version__"] + _errors_all + _models_all
