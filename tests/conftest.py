"""What every test module gets: hypothesis profiles, the local OpenAI-compatible test server, fast retries, and
the PostgreSQL server fixture (tests/postgres.py; its tests skip with the reason when there is none).

Hypothesis profiles:

- "default": what `./run.sh test` uses; small enough for CI (the loop's property tests play 100
  generated conversations each). Tests that pass their own `max_examples` keep it in every profile.
- "mutation": derandomised (the same examples on every run), 30 examples, no example database: the mutation
  check runs the suite with it, so a mutant's verdict is repeatable and a surviving mutant's full-suite run
  stays short.
- "long": 2,000 examples for every property that takes its count from the profile.

Choose one with `pytest --hypothesis-profile=long`, or `MINIAGENTS_HYPOTHESIS_PROFILE=long ./run.sh test`.

The kernel's tests (tests/loop, state, adapters, schemas) run plain: pytest imports every test module before the
first test runs, so every shell a test module imports has registered its plugin for the whole process; a kernel
test's runs leave them out (`plain_runs`), as a program that imports no shell runs, unless the test is marked
`with_shells` (it tests a shell's plugin: the retry shell, upstream's error_handlers).
"""
import os

import pytest
from hypothesis import HealthCheck, settings

from miniagents import seams
from miniagents.models import protocol
from openai_server import OpenAITestServer

pytest_plugins = ("postgres",)  # the postgres_server fixture: one server for the whole test session

PROFILE_ENV = "MINIAGENTS_HYPOTHESIS_PROFILE"
KERNEL_TESTS = ("loop", "state", "adapters", "schemas")  # folders of tests/ whose runs are plain

settings.register_profile("default", max_examples=100, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.register_profile("mutation", parent=settings.get_profile("default"), derandomize=True, database=None,
                          max_examples=30)
settings.register_profile("long", parent=settings.get_profile("default"), max_examples=2000)
settings.load_profile(os.environ.get(PROFILE_ENV) or "default")


@pytest.fixture(autouse=True)
def plain_runs(request):
    """A kernel test's runs are plain: no shell's plugin takes part (see the module's docstring). A shell the test
    imports first registers its plugin for the rest of the session as usual. `fast_retries` asks for it before
    `monkeypatch`, so it is set up before that fixture and left after it: a test that patches `seams.plugins` has
    its patch undone first, then this puts the registry back."""
    if request.path.parent.name not in KERNEL_TESTS or request.node.get_closest_marker("with_shells"):
        yield
        return
    registered, seams.plugins = seams.plugins, ()
    yield
    registered_now, seams.plugins = seams.plugins, registered
    for plugin in registered_now:  # a shell first imported by this test
        seams.register(plugin)


@pytest.fixture
def server():
    """A live OpenAI-compatible server on loopback that plays scripted replies (tests/openai_server.py)."""
    srv = OpenAITestServer()
    yield srv
    srv.close()


@pytest.fixture(autouse=True)
def fast_retries(plain_runs, monkeypatch):
    """Backoff of a millisecond, so retry tests stay fast; no OPENAI_* or proxy variable leaks into a test."""
    monkeypatch.setattr(protocol, "INITIAL_RETRY_DELAY", 0.001)
    monkeypatch.setattr(protocol, "MAX_RETRY_DELAY", 0.002)
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_DEFAULT_MODEL", "OPENAI_ORG_ID",
                 "OPENAI_PROJECT_ID", "OPENAI_CUSTOM_HEADERS", "http_proxy", "https_proxy",
                 "HTTP_PROXY", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)


def pytest_configure(config):
    config.addinivalue_line("markers", "with_shells: the test's runs take part with the shells' plugins registered "
                                       "by imports (a kernel test's runs are plain otherwise)")
