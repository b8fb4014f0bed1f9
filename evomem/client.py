"""``evomem.client``: the HTTP client, re-exported from the light distribution ``evomem_client``
(clients/python/, installed with evomem), which is its only copy; see that package for the verbs."""

from evomem_client.client import *  # noqa: F403  (the names of its __all__)
from evomem_client.client import __all__ as __all__
