"""No API key, credential header or credential parameter reaches a recording, whatever the secret (generated), plain
or streamed; the user's `redact=` removes more; and what was redacted still replays, since a replay redacts the
requests it compares the same way."""
import json
import os
import string
from urllib.parse import quote

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from miniagents import Agent, ModelSettings, OpenAIChatCompletionsModel, Runner, UserError, function_tool
from miniagents.recording import REDACTED, Recorder, Replay, ReplayMismatch
from miniagents.recording.redaction import is_credential_name, without_secrets
from miniagents.testing import ModelStep, ScriptedModel, assistant_message, function_call
from openai_server import OpenAITestServer, chat_completion
from replay_support import help_desk, network_closed, run, script_plain, script_streamed

# A key's shape ("sk-" and at least 8 more characters), so that it never is a word the request itself is made of.
SECRET = st.text(string.ascii_letters + string.digits + "-_.~+/=", min_size=8, max_size=48).map(lambda s: "sk-" + s)


def credential_settings(secret: str, model_key: str) -> ModelSettings:
    """Every place a program may put a credential in a request's settings, under names that say so, or as a
    value that says so, or as the model's own key under a name that does not."""
    return ModelSettings(
        extra_headers={"Authorization": f"Bearer {secret}", "api-key": secret, "X-Api-Key": secret,
                       "Cookie": f"session={secret}", "X-Amz-Security-Token": secret, "Proxy-Authorization": secret,
                       "X-Forwarded-Auth": f"Basic {secret}", "X-Upstream": f"Bearer {secret}", "X-Echo": model_key, "X-Team": "desk"},
        extra_query={"key": secret, "access_token": secret, "region": "eu"},
        extra_body={"client_secret": secret, "nested": {"password": secret, "apiKey": secret}},
        metadata={"user_token": secret})


def leaked(text: str, *secrets: str) -> list:
    """The secrets found in a file's text, as they are or as JSON escapes them."""
    return [s for s in secrets if s in text or json.dumps(s)[1:-1] in text]


@settings(max_examples=25, deadline=None)
@given(model_key=SECRET, header_secret=SECRET, env_secret=SECRET, streamed=st.booleans())
def test_no_credential_reaches_the_recording(tmp_path_factory, monkeypatch_module, model_key, header_secret,
                                             env_secret, streamed):
    """The model's key (as api_key=), credentials in headers, query and body, and an environment credential that
    the program put in the prompt: none is in the file, and the recording still replays."""
    path = tmp_path_factory.mktemp("secrets") / "run.jsonl"
    monkeypatch_module.setenv("ACME_SERVICE_TOKEN", env_secret)
    server = OpenAITestServer()
    try:
        (script_streamed if streamed else script_plain)(server)
        question = f"Where is order A-1? My token is {env_secret}."
        agent_settings = credential_settings(header_secret, model_key)
        with Recorder(path) as recorder:
            model = OpenAIChatCompletionsModel("help-desk-model", base_url=server.url, api_key=model_key)
            run("streamed" if streamed else "sync", help_desk(recorder.wrap(model), model_settings=agent_settings),
                question)
        assert server.requests[0]["headers"]["authorization"] == f"Bearer {header_secret}"  # it was sent
    finally:
        server.close()
    text = path.read_text(encoding="utf-8")
    assert leaked(text, model_key, header_secret, env_secret) == []
    headers = json.loads(text.splitlines()[1])["request"]["settings"]["extra_headers"]
    assert headers["Authorization"] == headers["api-key"] == headers["Cookie"] == headers["X-Echo"] == REDACTED
    assert headers["X-Team"] == "desk"
    with network_closed():
        replayed = Runner.run_sync(help_desk(Replay(path), model_settings=agent_settings), question)
    assert replayed.final_output.strip() == "Order A-1 shipped on 2 May; it should arrive this week."


@pytest.fixture(scope="module")
def monkeypatch_module():
    mp = pytest.MonkeyPatch()
    yield mp
    mp.undo()


@pytest.mark.parametrize("name", ["Authorization", "api-key", "X-Api-Key", "x-goog-api-key", "apiKey", "access_token",
                                  "Ocp-Apim-Subscription-Key", "client_secret", "Cookie", "password",
                                  "OPENAI_API_KEY", "HF_TOKEN", "AWS_SECRET_ACCESS_KEY", "sig", "code", "X-Session"])
def test_credential_names(name):
    assert is_credential_name(name)


@pytest.mark.parametrize("name", ["max_tokens", "OpenAI-Organization", "OpenAI-Project", "X-Team", "temperature",
                                  "include_usage", "top_logprobs", "PATH"])
def test_names_that_are_not_credentials(name):
    assert not is_credential_name(name)


def test_what_the_adapters_hide_by_name_is_not_recorded_nor_shown_by_a_mismatch(tmp_path):
    """The recording's rule is the adapters' (`sig`, `code`, a session header), and a replay given other values
    there matches, so a mismatch never shows one."""
    settings = ModelSettings(extra_query={"sig": "sv2024SASsignatureXYZ", "code": "AzureFnCodeABCDEF123"},
                             extra_headers={"X-Session": "sessSECRET12345"})
    with Recorder(tmp_path / "run.jsonl") as recorder:
        agent = Agent(name="Desk", model=recorder.wrap(ScriptedModel([[assistant_message("Hi")]])),
                      model_settings=settings)
        Runner.run_sync(agent, "Hello")
    assert leaked((tmp_path / "run.jsonl").read_text(encoding="utf-8"), "sv2024SASsignatureXYZ",
                  "AzureFnCodeABCDEF123", "sessSECRET12345") == []
    other = ModelSettings(extra_query={"sig": "NEWsasSignature999", "code": "AzureFnCodeABCDEF123"},
                          extra_headers={"X-Session": "sessSECRET12345"})
    replayed = Runner.run_sync(agent.clone(model=Replay(tmp_path / "run.jsonl"), model_settings=other), "Hello")
    assert replayed.final_output == "Hi"


def test_a_secret_percent_encoded_is_not_recorded(tmp_path, monkeypatch):
    """A key a URL or a form carries (`quote`, `quote_plus`), in the user's input and the model's answer, is found as
    the adapters find it in a message; also with lowercase hex (`%2f`), as valid as uppercase."""
    from urllib.parse import quote, quote_plus
    secret = "sk-AbC/dEf+GhI=jKl 0123"
    monkeypatch.setenv("ACME_API_KEY", secret)
    encoded = [quote(secret, safe=""), quote(secret), quote_plus(secret)]
    encoded.append(encoded[0].replace("%2F", "%2f").replace("%2B", "%2b").replace("%3D", "%3d"))
    with Recorder(tmp_path / "run.jsonl") as recorder:
        answer = [assistant_message(f"See https://example.com/?key={encoded[0]}&k={encoded[2]}&l={encoded[3]}")]
        agent = Agent(name="Desk", model=recorder.wrap(ScriptedModel([answer])))
        Runner.run_sync(agent, f"Fetch https://example.com{encoded[1]}")
    assert leaked((tmp_path / "run.jsonl").read_text(encoding="utf-8"), secret, *encoded) == []


def test_a_password_variable_the_adapters_do_not_name_is_not_recorded(tmp_path, monkeypatch):
    """Traces and recordings hide the same variables (`is_secret_variable`): a database password, a token named
    `*_PAT`; a variable that names where a secret is (`PGPASSFILE`: a path) is kept."""
    monkeypatch.setenv("PGPASSWORD", "pg-0123456789")
    monkeypatch.setenv("GITHUB_PAT", "ghp_0123456789")
    monkeypatch.setenv("PGPASSFILE", "/home/user/.pgpass")
    with Recorder(tmp_path / "run.jsonl") as recorder:
        answer = [assistant_message("Connected with pg-0123456789 and ghp_0123456789, read /home/user/.pgpass")]
        agent = Agent(name="Desk", model=recorder.wrap(ScriptedModel([answer])))
        Runner.run_sync(agent, "Connect")
    text = (tmp_path / "run.jsonl").read_text(encoding="utf-8")
    assert leaked(text, "pg-0123456789", "ghp_0123456789") == [] and "/home/user/.pgpass" in text


def test_the_redact_hook_removes_context_derived_text_from_requests_and_responses(tmp_path):
    email = "ada@example.org"

    def instructions(context, agent):
        return f"The customer is {context.context['email']}."
    hide = lambda text: text.replace(email, "<email>")  # noqa: E731
    steps = [[assistant_message(f"I wrote to {email}.")]]
    with Recorder(tmp_path / "run.jsonl", redact=hide) as recorder:
        agent = Agent(name="Desk", instructions=instructions, model=recorder.wrap(ScriptedModel(steps)))
        recorded = Runner.run_sync(agent, f"Reach me at {email}", context={"email": email})
    text = (tmp_path / "run.jsonl").read_text(encoding="utf-8")
    assert recorded.final_output == f"I wrote to {email}."
    assert email not in text and text.count("<email>") == 3  # instructions, input, answer
    replayed = Runner.run_sync(agent.clone(model=Replay(tmp_path / "run.jsonl", redact=hide)),
                               f"Reach me at {email}", context={"email": email})
    assert replayed.final_output == "I wrote to <email>."  # what the recording holds is what a replay serves
    with pytest.raises(ReplayMismatch) as caught:  # without the hook, the request is not the recorded one
        Runner.run_sync(agent.clone(model=Replay(tmp_path / "run.jsonl")), f"Reach me at {email}",
                        context={"email": email})
    assert (caught.value.field, caught.value.recorded) == ("instructions", "The customer is <email>.")


def test_a_recorded_text_with_many_redactions_is_compared_in_linear_time(tmp_path):
    """Each recorded `[REDACTED]` stands for any text; a request that does not match is a mismatch at once, however
    many markers the recorded text holds (a regex of them backtracked for ever)."""
    with Recorder(tmp_path / "run.jsonl", redact=lambda text: text.replace("key", REDACTED)) as recorder:
        agent = Agent(name="Desk", instructions="keya" * 12 + "b", model=recorder.wrap(ScriptedModel([
            [assistant_message("Hi")]])))
        Runner.run_sync(agent, "Hello")
    replayed = Runner.run_sync(agent.clone(instructions="sk-1a" * 12 + "b", model=Replay(tmp_path / "run.jsonl")),
                               "Hello")
    assert replayed.final_output == "Hi"
    for instructions in ("a" * 40, "keya" * 12, "keya" * 11 + "b", "b" + "keya" * 12):
        with pytest.raises(ReplayMismatch) as caught:
            Runner.run_sync(agent.clone(instructions=instructions, model=Replay(tmp_path / "run.jsonl")), "Hello")
        assert caught.value.recorded == f"{REDACTED}a" * 12 + "b"


def test_a_redact_hook_that_does_not_return_text_is_a_user_error(tmp_path):
    with Recorder(tmp_path / "run.jsonl", redact=lambda text: None) as recorder:
        agent = Agent(name="Desk", model=recorder.wrap(ScriptedModel([[assistant_message("Hi")]])))
        with pytest.raises(UserError, match="the redact= function must return a str, got NoneType"):
            Runner.run_sync(agent, "Hello")
    with pytest.raises(UserError, match="redact= must be a function"):
        Recorder(tmp_path / "other.jsonl", redact="<email>")


def all_strings(value) -> list:
    """Every string a file's JSON holds, keys included, and every string inside a string that is JSON text (as a
    reader decodes a tool call's arguments): where a hidden value could still be read."""
    if isinstance(value, str):
        inner = decoded_json(value)
        return [value] + (all_strings(inner) if inner is not None else [])
    if isinstance(value, dict):
        return [found for key, inner in value.items() for found in all_strings(key) + all_strings(inner)]
    if isinstance(value, list):
        return [found for inner in value for found in all_strings(inner)]
    return []


def decoded_json(text: str):
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, (dict, list, str)) else None


def file_strings(path) -> str:
    return "\n".join(all_strings([json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]))


@function_tool
def fetch(url: str) -> str:
    """Fetch a URL."""
    return "fetched"


CREDENTIAL_PLACES = {  # where a program puts a credential by name in the settings
    "header": lambda secret: ModelSettings(extra_headers={"X-Api-Key": secret}),
    "bearer": lambda secret: ModelSettings(extra_headers={"X-Upstream": f"Bearer {secret}"}),
    "query": lambda secret: ModelSettings(extra_query={"access_token": secret}),
    "body": lambda secret: ModelSettings(extra_body={"auth": {"client_secret": [secret]}}),
    "metadata": lambda secret: ModelSettings(metadata={"session": secret}),
}
ECHOES = {  # where the model or the run repeats it
    "answer": lambda secret: [[assistant_message(f"Your header was {secret}.")]],
    "arguments": lambda secret: [[function_call("fetch", {"url": f"https://x.example/?q=1&token={secret}"},
                                                call_id="c1")], [assistant_message("Done.")]],
    "escaped arguments": lambda secret: [[function_call("fetch", json.dumps({"url": secret.replace("/", "\\/")}),
                                                        call_id="c1")], [assistant_message("Done.")]],
}


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(secret=SECRET, place=st.sampled_from(sorted(CREDENTIAL_PLACES)), echo=st.sampled_from(sorted(ECHOES)),
       in_question=st.booleans())
def test_a_credential_hidden_by_name_is_hidden_by_value_everywhere_in_the_call(tmp_path_factory, secret, place, echo,
                                                                               in_question):
    """A credential the settings hold under a credential name is also searched for by value: where the model echoes
    it, a tool's arguments carry it, or the question holds it; the recording still replays under those settings."""
    path = tmp_path_factory.mktemp("named") / "run.jsonl"
    agent_settings = CREDENTIAL_PLACES[place](secret)
    question = f"Use {secret} for it." if in_question else "Go."
    with Recorder(path) as recorder:
        agent = Agent(name="A", tools=[fetch], model=recorder.wrap(ScriptedModel(ECHOES[echo](secret))),
                      model_settings=agent_settings)
        Runner.run_sync(agent, question)
    assert secret not in file_strings(path)
    replayed = Runner.run_sync(agent.clone(model=Replay(path)), question)
    assert secret not in str(replayed.final_output)


def test_a_credential_named_default_header_of_the_adapter_is_hidden_by_value(tmp_path, server):
    secret = "sk-default-header-value-123"
    server.reply(chat_completion(f"You sent {secret}."))
    with Recorder(tmp_path / "run.jsonl") as recorder:
        model = OpenAIChatCompletionsModel("m", base_url=server.url, api_key="x",
                                           default_headers={"X-Api-Key": secret})
        Runner.run_sync(Agent(name="A", model=recorder.wrap(model)), "Hi")
    assert server.requests[0]["headers"]["x-api-key"] == secret  # it was sent
    assert secret not in (tmp_path / "run.jsonl").read_text(encoding="utf-8")


@st.composite
def tokenised(draw, text):
    """`text` cut into logprob tokens at generated places."""
    cuts = sorted(draw(st.sets(st.integers(1, len(text) - 1), max_size=6)))
    bounds = [0] + cuts + [len(text)]
    return [text[a:b] for a, b in zip(bounds, bounds[1:])]


def logprob(token: str) -> dict:
    return {"token": token, "logprob": -0.1, "bytes": list(token.encode()),
            "top_logprobs": [{"token": token, "logprob": -0.1, "bytes": list(token.encode())}]}


def recorded_stream(tmp_path_factory, text, data, with_logprobs=False) -> list:
    """The events a recorder wrote for a run whose model streams `text` cut into deltas at generated places (each
    with its logprobs, if asked), then a completed response holding it."""
    import asyncio
    events = [{"type": "response.output_text.delta", "item_id": "m", "output_index": 0, "content_index": 0,
               "delta": delta, **({"logprobs": [logprob(delta)]} if with_logprobs else {})}
              for delta in data.draw(tokenised(text))]
    events.append({"type": "response.completed", "response": {"id": "r", "output": [assistant_message(text)],
                                                               "usage": None}})
    path = tmp_path_factory.mktemp("streamed") / "run.jsonl"

    async def drain(agent):
        async for _ in Runner.run_streamed(agent, "Hi").stream_events():
            pass
    with Recorder(path) as recorder:
        asyncio.run(drain(Agent(name="A", model=recorder.wrap(ScriptedModel([ModelStep(stream_events=events)])))))
    return json.loads(path.read_text(encoding="utf-8").splitlines()[1])["response"]["events"]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data(), secret=SECRET, before=st.sampled_from(["", "key ", "the key is: "]))
def test_a_secret_split_across_logprob_tokens_never_reaches_the_recording(tmp_path_factory, monkeypatch_module,
                                                                          data, secret, before):
    """A part's logprobs spell its text again, token by token (and byte by byte): when a secret was cut out of the
    text, its logprobs go too."""
    monkeypatch_module.setenv("ACME_SERVICE_TOKEN", secret)
    text = before + secret + " end"
    message = assistant_message(text)
    message["content"][0]["logprobs"] = [logprob(token) for token in data.draw(tokenised(text))]
    path = tmp_path_factory.mktemp("logprobs") / "run.jsonl"
    with Recorder(path) as recorder:
        Runner.run_sync(Agent(name="A", model=recorder.wrap(ScriptedModel([[message]]))), "Hi")
    [line] = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()[1:]]
    [part] = line["response"]["output"][0]["content"]
    assert part["logprobs"] == [] and secret not in part["text"]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data(), secret=SECRET)
def test_a_secret_split_across_streamed_deltas_loses_their_logprobs(tmp_path_factory, monkeypatch_module, data,
                                                                    secret):
    """Streamed, each delta carries its own tokens' logprobs: a delta a secret was cut out of loses them."""
    monkeypatch_module.setenv("ACME_SERVICE_TOKEN", secret)
    recorded = recorded_stream(tmp_path_factory, "key " + secret + " end", data, with_logprobs=True)
    tokens = "".join(entry["token"] for event in recorded for entry in event.get("logprobs", []))
    assert secret not in tokens and secret not in json.dumps(recorded)


URLS = ["postgres://app:P@ssw0rd!@db:5432/shop", "redis://default:it'sAsecret99@cache:6379/0"]


def without_secret_variables(monkeypatch):
    """No variable of the environment is a secret (the module's other tests leave one set): nothing is searched for
    by value."""
    from miniagents.models.protocol import is_secret_variable
    for name in [name for name in os.environ if is_secret_variable(name)]:
        monkeypatch.delenv(name)


def test_the_password_of_a_url_is_not_recorded_and_the_replay_still_matches(tmp_path, monkeypatch):
    """A `DATABASE_URL` a tool or the model echoes: its password is no variable's value, so no search by value knows
    it; it is cut out wherever a URL holds one (to the URL's last `@`), and a replay of the run still matches."""
    without_secret_variables(monkeypatch)
    answer = [assistant_message(f"Connected to {URLS[0]}; the cache is {URLS[1]}.")]
    with Recorder(tmp_path / "run.jsonl") as recorder:
        agent = Agent(name="Desk", model=recorder.wrap(ScriptedModel([answer])))
        Runner.run_sync(agent, f"Check {URLS[0]}")
    text = (tmp_path / "run.jsonl").read_text(encoding="utf-8")
    assert "P@ssw0rd!" not in text and "ssw0rd" not in text and "sAsecret99" not in text
    assert f"postgres://app:{REDACTED}@db:5432/shop" in text
    replayed = Runner.run_sync(agent.clone(model=Replay(tmp_path / "run.jsonl")), f"Check {URLS[0]}")
    assert replayed.final_output == f"Connected to postgres://app:{REDACTED}@db:5432/shop; the cache is " \
                                    f"redis://default:{REDACTED}@cache:6379/0."


STREAMED_URLS = {  # a text holding a URL, and what is recorded of it
    f"use {URLS[0]} now": f"use postgres://app:{REDACTED}@db:5432/shop now",
    f"已连接{URLS[0]}": f"已连接postgres://app:{REDACTED}@db:5432/shop",  # no `\b` between a letter and the scheme
    "dsn_postgres://admin@srv:Hunter22Secret@srv.example.com/db":  # Azure's user@server: the password to the last @
        f"dsn_postgres://admin@srv:{REDACTED}@srv.example.com/db",
    "cache redis://u:pw-1@cache": f"cache redis://u:{REDACTED}@cache"}  # too short to search for: cut where it stands


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data(), text=st.sampled_from(sorted(STREAMED_URLS)))
def test_the_password_of_a_url_streamed_across_deltas_is_not_recorded(tmp_path_factory, monkeypatch, data, text):
    """Cut into deltas at generated places, the URL is searched whole (its deltas joined), as a secret is; also
    right after a letter or `_` (where no `\\b` stands), when its user holds an `@`, and when the password is too
    short to search for by value elsewhere in the call."""
    without_secret_variables(monkeypatch)
    recorded = recorded_stream(tmp_path_factory, text, data)
    assert not [piece for piece in ("ssw0rd", "P@", "22Secret", "pw-1")
                if piece in json.dumps(recorded, ensure_ascii=False)]
    assert "".join(event["delta"] for event in recorded[:-1]) == STREAMED_URLS[text]


@function_tool
def connect(host: str, user: str, password: str) -> str:
    """Connect to a database."""
    return f"connected to {host} as {user}"


URL_FORMS = {  # how a prompt may carry a URL: as it is, a query's value, JSON text in a line that is not JSON
    "plain": lambda url: f"Connect to {url}",
    "percent-encoded": lambda url: "Open https://console.example.com/connect?dsn=" + quote(url, safe=""),
    "escaped slashes": lambda url: 'HTTP 200 {"dsn":"' + url.replace("/", "\\/") + '"}'}


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(password=st.text(string.ascii_letters + string.digits + "-_.~!*@:#?%", min_size=8, max_size=24),
       form=st.sampled_from(sorted(URL_FORMS)))
def test_the_password_a_url_reveals_is_kept_out_of_the_whole_call(tmp_path_factory, monkeypatch, password, form):
    """The model repeats the password of a URL it was given (a tool call's arguments, then its answer; the next
    request's input holds them again): a secret of every call the URL is in, searched for by value, as written and
    percent-decoded, also when the URL comes percent-encoded or with JSON's `\\/`; the recording still replays."""
    without_secret_variables(monkeypatch)
    prompt = URL_FORMS[form](f"postgres://app:{quote(password, safe='')}@db/shop")
    arguments = json.dumps({"host": "db", "user": "app", "password": password})
    steps = [[function_call("connect", arguments, call_id="c1")], [assistant_message(f"Done; password {password}")]]
    path = tmp_path_factory.mktemp("url") / "run.jsonl"
    agent = Agent(name="A", tools=[connect])
    with Recorder(path) as recorder:
        Runner.run_sync(agent.clone(model=recorder.wrap(ScriptedModel(steps))), prompt)
    calls = path.read_text(encoding="utf-8").split("\n", 1)[1]  # not the header: "recordin" is no leak there
    assert not leaked(calls, password, quote(password, safe=""))
    replayed = Runner.run_sync(agent.clone(model=Replay(path)), prompt)
    assert replayed.final_output == f"Done; password {REDACTED}"


def test_the_first_passwords_of_a_calls_urls_are_searched_for_by_value_in_the_order_they_come():
    """A tool's output may hold thousands of URLs, each with a password: each searched for by value is one more
    search of every text of the call, so only the first MOST_URL_PASSWORDS are (the rest are cut where they stand)."""
    from miniagents.recording.redaction import MOST_URL_PASSWORDS, url_passwords

    passwords = [f"secret-{n:04}-pw" for n in range(3 * MOST_URL_PASSWORDS)][::-1]
    page = "\n".join(f"postgres://app:{password}@db{n}/shop" for n, password in enumerate(passwords))
    assert url_passwords([{"output": page}, {"p%40ss": "mysql://u:p%40ssword-1@h"}]) == passwords[:MOST_URL_PASSWORDS]
    assert url_passwords({"a": "mysql://u:p%40ssword-1@h"}) == ["p%40ssword-1", "p@ssword-1"]
    written = without_secrets(f"{page} and again {passwords[0]} {passwords[-1]}", url_passwords(page))
    assert passwords[0] not in written and written.endswith(f"and again {REDACTED} {passwords[-1]}")


@pytest.mark.parametrize("text", ["https://cal.example.com?start=10:00&attendee=ann@example.com",
                                  "https://cal.example.com#at=10:00&ann@example.com",
                                  "https://x.example/a:b@c", "see 1a://u:pw@h"])
def test_text_that_holds_no_password_of_a_url_is_recorded_as_it_is(text):
    """What urlsplit reads no password in is kept (a tool's argument the replay gives back must be the recorded
    run's): an authority ends at `/`, `?` or `#`, so a query's `10:00&ann@example.com` is no user and password; and
    a scheme begins with a letter where no scheme character stands before it."""
    assert without_secrets(text, []) == text


NAMES = st.text(st.characters(min_codepoint=0xC0, max_codepoint=0x24F), min_size=3, max_size=12).map(
    lambda s: "Zoë " + s)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=NAMES, escaped=st.booleans())
def test_the_redact_hook_reaches_keys_and_json_escaped_text(tmp_path_factory, name, escaped):
    """A customer's name the hook hides is hidden where it is an object's key (metadata) and where a tool call's
    arguments carry it behind JSON escapes (`Zo\\u00eb`, as json.dumps writes it); the recording still replays
    with the same hook."""
    hide = lambda text: text.replace(name, "[NAME]")  # noqa: E731
    arguments = json.dumps({"url": name}, ensure_ascii=escaped)
    steps = [[function_call("fetch", arguments, call_id="c1")], [assistant_message("Done.")]]
    path = tmp_path_factory.mktemp("hook") / "run.jsonl"
    agent = Agent(name="A", tools=[fetch], model_settings=ModelSettings(metadata={name: "vip"}))
    with Recorder(path, redact=hide) as recorder:
        Runner.run_sync(agent.clone(model=recorder.wrap(ScriptedModel(steps))), f"Find {name}")
    assert name not in file_strings(path)
    replayed = Runner.run_sync(agent.clone(model=Replay(path, redact=hide)), f"Find {name}")
    assert replayed.final_output == "Done."


def test_a_mismatch_shows_no_password_the_recording_cut_out(tmp_path, monkeypatch):
    """A tool's output that repeats a URL's password changes a little in the replay: the replay cuts the password
    the request's URL reveals out of what it compares, as the recording did; and where the recording hid a part of
    the value (here the password came only in the model's answer, which the replay serves redacted), the message
    does not show the received value, which may hold it."""
    without_secret_variables(monkeypatch)
    password, build = "Tr0ub4dor-long-pw", {"v": "1"}

    @function_tool
    def connect(dsn: str) -> str:
        """Connect to a database."""
        return f"connected (build {build['v']}); the password {password} was accepted"
    for prompt, dsn in ((f"connect to postgres://app:{password}@db/x", "the one I gave"),
                        ("connect", f"postgres://app:{password}@db/x")):
        build["v"] = "1"
        steps = [[function_call("connect", {"dsn": dsn}, call_id="call_1")], [assistant_message("done")]]
        agent = Agent(name="A", tools=[connect])
        with Recorder(tmp_path / "run.jsonl") as recorder:
            Runner.run_sync(agent.clone(model=recorder.wrap(ScriptedModel(steps))), prompt)
        assert password not in (tmp_path / "run.jsonl").read_text(encoding="utf-8")
        build["v"] = "2"
        with pytest.raises(ReplayMismatch) as caught:
            Runner.run_sync(agent.clone(model=Replay(tmp_path / "run.jsonl")), prompt)
        assert caught.value.field == "input[2].output" and password not in str(caught.value)
    build["v"], prompt = "1", f"connect to postgres://app:{password}@db/x"
    steps = [[function_call("connect", {"dsn": "the one I gave"}, call_id="call_1")], [assistant_message("done")]]
    with Recorder(tmp_path / "run.jsonl") as recorder:
        Runner.run_sync(agent.clone(model=recorder.wrap(ScriptedModel(steps))), prompt)
    build["v"] = "2"
    with pytest.raises(ReplayMismatch) as caught:  # the request's URL reveals it: the replay cuts it out too
        Runner.run_sync(agent.clone(model=Replay(tmp_path / "run.jsonl")), prompt)
    assert caught.value.received == f"connected (build 2); the password {REDACTED} was accepted"


def test_an_older_recording_that_holds_a_credential_replays_and_a_mismatch_shows_none(tmp_path, monkeypatch):
    """A recording made before a value was found secret holds it: the replay redacts the recorded request as it does
    the run's, so the same run matches, and a mismatch shows the credential on neither side."""
    secret = "tok-0123456789abcdef"
    monkeypatch.setenv("ACME_API_TOKEN", secret)
    request = {"instructions": f"Use the token {secret} when asked.", "input": [{"content": "hi", "role": "user"}],
               "tools": [], "handoffs": [], "output_schema": None, "settings": {}, "previous_response_id": None,
               "conversation_id": None, "prompt": None}
    response = {"output": [assistant_message("hello")], "usage": None, "response_id": None, "request_id": None}
    (tmp_path / "old.jsonl").write_text(json.dumps({"version": 1, "kind": "miniagents recording"}) + "\n" + json.dumps(
        {"n": 1, "model": "m", "stream": False, "request": request, "response": response}) + "\n", encoding="utf-8")
    agent = Agent(name="A", instructions=f"Use the token {secret} when asked.")
    assert Runner.run_sync(agent.clone(model=Replay(tmp_path / "old.jsonl")), "hi").final_output == "hello"
    with pytest.raises(ReplayMismatch) as caught:
        Runner.run_sync(agent.clone(instructions=f"Use the token {secret} now.", model=Replay(tmp_path / "old.jsonl")),
                        "hi")
    assert caught.value.field == "instructions" and secret not in str(caught.value)
    assert caught.value.recorded == f"Use the token {REDACTED} when asked."


@pytest.mark.parametrize("shape", ["a JSON text inside JSON", "JSON text after a prefix"])
def test_a_secret_whose_slashes_json_escaped_in_nested_or_prefixed_json_is_not_recorded(tmp_path, monkeypatch, shape):
    """A secret holding `/` (an AWS secret key) as a server writes it in JSON, `\\/`, in a body kept as text inside a
    tool's JSON output (`\\\\/` there) or after a status line (no JSON parser reads either) is cut out."""
    import re
    secret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", secret)
    body = json.dumps({"credentials": {"secret": secret}}).replace("/", "\\/")

    @function_tool
    def fetch_body(url: str):
        """Fetch a URL."""
        return {"status": 200, "body": body} if shape == "a JSON text inside JSON" else "HTTP 200 " + body
    steps = [[function_call("fetch_body", {"url": "https://sts/x"}, call_id="call_1")], [assistant_message("ok")]]
    with Recorder(tmp_path / "run.jsonl") as recorder:
        Runner.run_sync(Agent(name="A", tools=[fetch_body], model=recorder.wrap(ScriptedModel(steps))), "go")
    assert secret not in re.sub(r"\\+/", "/", (tmp_path / "run.jsonl").read_text(encoding="utf-8"))


SLASHED_SECRET = "sk-live/AbC+dEf/0123456789xyz"
NESTED = '{"k":"' + SLASHED_SECRET.replace("/", "\\/") + '"}'


@pytest.mark.parametrize("shown", [
    SLASHED_SECRET.replace("/", "%2f", 1).replace("+", "%2B").replace("/", "%2F"),  # percent-encoding's hex mixed
    'HTTP 200 {"k": "' + SLASHED_SECRET.replace("/", "\\u002f") + '"}',  # \u escapes after a prefix
    "x " + json.dumps(json.dumps(NESTED)), "x " + json.dumps(json.dumps(json.dumps(NESTED)))])  # JSON 3, 4 deep
def test_a_secret_in_any_encoding_a_trace_hides_is_not_recorded(tmp_path, monkeypatch, shown):
    """What the trace's redaction reads through, the recording does too: hex of either case mixed in one value, and
    JSON's escapes wherever they stand (after a prefix, however deeply nested), which no one JSON parse decodes."""
    monkeypatch.setenv("ACME_API_KEY", SLASHED_SECRET)
    with Recorder(tmp_path / "run.jsonl") as recorder:
        Runner.run_sync(Agent(name="A", model=recorder.wrap(ScriptedModel([[assistant_message(shown)]]))), "hi")
    text = (tmp_path / "run.jsonl").read_text(encoding="utf-8")
    assert "0123456789xyz" not in text and "AbC" not in text  # no piece of it, in any encoding


def test_the_redact_hook_sees_a_messages_parts_and_an_items_streamed_parts_joined(tmp_path):
    """A name cut across two content parts, as written and as streamed (the deltas of two parts of one item): the
    hook sees the text whole, as whoever reads it does; it ends in the first part, the others emptied."""
    from miniagents.recording.redaction import user_hook
    hide = lambda text: text.replace("Ann Lee", "[NAME]")  # noqa: E731
    message = {"type": "message", "id": "m1", "role": "assistant", "status": "completed", "content": [
        {"type": "output_text", "text": "Hi Ann", "annotations": []},
        {"type": "output_text", "text": " Lee!", "annotations": []}]}
    with Recorder(tmp_path / "run.jsonl", redact=hide) as recorder:
        Runner.run_sync(Agent(name="A", model=recorder.wrap(ScriptedModel([[message]]))), "hi")
    text = (tmp_path / "run.jsonl").read_text(encoding="utf-8")
    assert "Hi [NAME]!" in text and "Ann" not in text
    delta = lambda part, text: {"type": "response.output_text.delta", "item_id": "m1", "output_index": 0,  # noqa
                                "content_index": part, "delta": text}
    assert [event["delta"] for event in user_hook(hide).events([delta(0, "Hi Ann"), delta(1, " Lee!")])] == [
        "Hi [NAME]!", ""]


def test_a_secret_that_holds_a_percent_escape_of_its_own_is_cut_out_as_written():
    """A password may hold `%0a` itself: a text is searched with its hex in uppercase, so the secret is too."""
    assert without_secrets("connect with 00000%0a now", ["00000%0a"]) == f"connect with {REDACTED} now"


def test_a_text_the_redact_hook_changed_loses_its_logprobs(tmp_path):
    """The logprobs' tokens of a part spell its text: where the hook changed the text, they go; elsewhere they stay."""
    tokens = lambda *words: [{"token": w, "logprob": -0.1, "bytes": list(w.encode()), "top_logprobs": []}  # noqa
                             for w in words]
    message = {"type": "message", "id": "m1", "role": "assistant", "status": "completed", "content": [
        {"type": "output_text", "text": "Hello Ann Lee!", "annotations": [],
         "logprobs": tokens("Hello", " Ann", " Lee!")},
        {"type": "output_text", "text": " Bye.", "annotations": [], "logprobs": tokens(" Bye.")}]}
    with Recorder(tmp_path / "run.jsonl", redact=lambda s: s.replace("Ann Lee", "[CUSTOMER]")) as recorder:
        Runner.run_sync(Agent(name="A", model=recorder.wrap(ScriptedModel([[message]]))), "hi")
    parts = json.loads((tmp_path / "run.jsonl").read_text(encoding="utf-8").splitlines()[1])["response"]["output"][0][
        "content"]
    assert [(part["text"], part["logprobs"]) for part in parts] == [("Hello [CUSTOMER]!", []),
                                                                    (" Bye.", tokens(" Bye."))]


def test_a_number_hidden_by_its_credential_name_is_also_searched_for_by_value(tmp_path):
    """`extra_body={"password": 918273645512}`: hidden by name in the settings, and, as the docs say of every value so
    hidden, wherever else the call holds it (the model repeats it); a replay of the same run still matches."""
    settings = ModelSettings(extra_body={"password": 918273645512})
    steps = [[assistant_message("Your password 918273645512 is set.")]]
    with Recorder(tmp_path / "run.jsonl") as recorder:
        Runner.run_sync(Agent(name="A", model=recorder.wrap(ScriptedModel(steps)), model_settings=settings), "Set it.")
    text = (tmp_path / "run.jsonl").read_text(encoding="utf-8")
    assert "918273645512" not in text and f"Your password {REDACTED} is set." in text
    replay = Replay(tmp_path / "run.jsonl")
    Runner.run_sync(Agent(name="A", model=replay, model_settings=settings), "Set it.")
    replay.assert_complete()
