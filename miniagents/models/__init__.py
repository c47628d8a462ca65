"""Models: the `Model` protocol the kernel calls, and the HTTP adapters that implement it.

Only `interface` is imported eagerly; the adapters load urllib/http.client/ssl when first used.
"""
