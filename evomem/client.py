"""``evomem.client``: the HTTP client, re-exported from the light distribution ``evomem_client``
(clients/python/, installed with evomem), which is its only copy; see that package for the verbs."""

from evomem_client.client import (ERROR_CLASSES, AsyncMemoryClient, AuthenticationError, ConflictError,
                                  EvoMemConnectionError, EvoMemError, InvalidRequestError, MemoryClient,
                                  NotConfiguredError, NotFoundError, PermissionDeniedError, RateLimitError,
                                  ServerError, UpstreamError, UpstreamTimeoutError, error_from_response)

__all__ = ["ERROR_CLASSES", "AsyncMemoryClient", "AuthenticationError", "ConflictError", "EvoMemConnectionError",
           "EvoMemError", "InvalidRequestError", "MemoryClient", "NotConfiguredError", "NotFoundError",
           "PermissionDeniedError", "RateLimitError", "ServerError", "UpstreamError", "UpstreamTimeoutError",
           "error_from_response"]
