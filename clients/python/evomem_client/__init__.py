"""The light EvoMemState client (distribution ``evomem-client``; needs only httpx and pydantic).

    from evomem_client import MemoryClient
    mem = MemoryClient("http://127.0.0.1:8080", api_key="...", user_id="maya")
    print(mem.search("Suggest a vacation for me").context.text)
"""

from evomem_client.client import *  # noqa: F403  (the names of its __all__)
from evomem_client.client import __all__ as __all__
