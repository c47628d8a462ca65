"""Fixtures for the HTTP adapter tests: a live test server and fast retries.

Imported explicitly by the adapter test modules (`from conftest_http import server, fast_retries`),
because tests/conftest.py belongs to the kernel tests.
"""
import pytest

from miniagents.models import protocol
from openai_server import OpenAITestServer


@pytest.fixture
def server():
    srv = OpenAITestServer()
    yield srv
    srv.close()


@pytest.fixture(autouse=True)
def fast_retries(monkeypatch):
    """Backoff of a millisecond, so retry tests stay fast; no OPENAI_* env leaks into the tests."""
    monkeypatch.setattr(protocol, "INITIAL_RETRY_DELAY", 0.001)
    monkeypatch.setattr(protocol, "MAX_RETRY_DELAY", 0.002)
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_DEFAULT_MODEL", "OPENAI_ORG_ID",
                 "OPENAI_PROJECT_ID", "OPENAI_CUSTOM_HEADERS", "http_proxy", "https_proxy",
                 "HTTP_PROXY", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)
