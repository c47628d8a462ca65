"""Hypothesis profiles for the suite.

- "default": what `./run.sh test` uses; small enough for CI (the loop's property tests play 100
  generated conversations each). Tests that pass their own `max_examples` keep it in every profile.
- "mutation": derandomised (the same examples on every run), 30 examples, no example database: the mutation
  check runs the suite with it, so a mutant's verdict is repeatable and a surviving mutant's full-suite run
  stays short.
- "long": 2,000 examples for every property that takes its count from the profile.

Choose one with `pytest --hypothesis-profile=long`, or `MINIAGENTS_HYPOTHESIS_PROFILE=long ./run.sh test`.
"""
import os

from hypothesis import HealthCheck, settings

PROFILE_ENV = "MINIAGENTS_HYPOTHESIS_PROFILE"

settings.register_profile("default", max_examples=100, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.register_profile("mutation", parent=settings.get_profile("default"), derandomize=True, database=None,
                          max_examples=30)
settings.register_profile("long", parent=settings.get_profile("default"), max_examples=2000)
settings.load_profile(os.environ.get(PROFILE_ENV) or "default")
