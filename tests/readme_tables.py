"""The README's two generated tables, "The loop in one page": a reading order and the lines per area.

    python tests/readme_tables.py           # print both tables as they would be written
    python tests/readme_tables.py --write   # rewrite them in README.md, between their markers

Both come from the source as it is now (function line ranges found with `ast`, lines counted per module),
so they stay true while the kernel changes; tests/project/test_readme_tables.py fails when README.md is stale.
What this file decides: which functions a learner reads, in which order (`READING_ORDER`), which modules
make up each area (`AREAS`, every module in exactly one), and each area's size budget in code lines
(`BUDGETS`: lines that are not blank, comments or docstrings). A budget is a decision: raise it on purpose,
in its own commit, saying why. Standard library only; it never imports miniagents.
"""
from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "miniagents"
README = ROOT / "README.md"

# (module path under miniagents/, function or Class.method, why a learner reads it), in reading order.
READING_ORDER = [
    ("run.py", "Runner.run_sync", "the entry point; `run` and `run_streamed` drive the same loop"),
    ("run.py", "start_run", "checks the arguments, finds the agents, the plugins and the state"),
    ("run.py", "fresh_state", "a new `RunState`: the input checked, the session's history read once"),
    ("run.py", "choose", "the steps this run's turns take, chosen once by what the run uses (the tables above it)"),
    ("run.py", "chosen", "each table cut to those steps, once for every run that uses the same parts"),
    ("run.py", "drive", "runs the loop; an error leaves with the partial run"),
    ("run.py", "loop", "turn after turn until a result; each way a turn ends has its steps in `run.ends`"),
    ("run.py", "take_turn", "one turn: the steps before it, then a fresh turn's (or a paused turn's) steps"),
    ("run.py", "start_turn", "a fresh turn is counted"),
    ("turn.py", "offer", "what the agent offers this turn: instructions, enabled tools and handoffs, settings"),
    ("turn.py", "call_model", "the transcript goes out"),
    ("turn.py", "get_model", "the `Model` to call: an object, or a name for the provider"),
    ("turn.py", "take_response", "the response counted and kept; call ids made unique where they collide"),
    ("turn.py", "classify", "response items become run items; function calls become `Call`s"),
    ("turn.py", "plan", "each call's fate: unknown tool, waiting for a person, rejected, or run"),
    ("turn.py", "run_calls", "the runnable calls: one after the other, or concurrently"),
    ("turn.py", "run_one", "one call, through the run's way of invoking a tool (`run.invoke`)"),
    ("tool.py", "invoke_tool", "the function called, its result as text for the model, a failure as a message"),
    ("validate.py", "call_args", "the model's JSON arguments checked against the function's signature"),
    ("turn.py", "settle", "every output after the turn's calls, in call order"),
    ("turn.py", "decide", "the four outcomes, in priority order"),
    ("run.py", "close_turn", "the settled turn joins the transcript"),
    ("turn.py", "final_answer", "the last message as the final output"),
    ("run.py", "finish", "the result"),
    ("turn.py", "decide_approval", "a call a person may have to approve"),
    ("run.py", "pause", "a call waits for a person: the turn's settled outputs are kept"),
    ("state.py", "dump_state", "a paused run as versioned JSON"),
    ("state.py", "load_state", "and back, the whole document checked before anything is built"),
    ("steps.py", "reread", "a paused turn resumed: its response read again, no model call"),
    ("run.py", "take_handoff", "the transfer's output, the input filter, the agent switch"),
]

# area -> module paths under miniagents/ ("folder/": every module in it); every module is in exactly one area. The
# kernel's areas come first; each shell (a folder other than models/) is an area of its own.
AREAS = {
    "loop": ["run.py", "turn.py", "steps.py", "result.py", "config.py", "caller.py", "seams.py"],
    "agents, items, guardrails": ["__init__.py", "agent.py", "handoffs.py", "guardrails.py", "items.py",
                                  "context.py", "errors.py"],
    "tools and schemas": ["tool.py", "schema.py", "validate.py", "docstrings.py", "agent_output.py"],
    "state and sessions": ["state.py", "session.py", "sql_session.py", "sql_dialect.py", "sqlite_session.py",
                           "ledger.py"],
    "HTTP adapters": ["models/"],
    "shell: tracing": ["tracing/"],
    "shell: retries": ["retry/"],
    "shell: capabilities and Workspace": ["capabilities/"],
    "shell: upstream compatibility": ["upstream/"],
    "shell: recording and replay": ["recording/"],
    "shell: offline model": ["testing/"],
    "shell: DB-API sessions": ["dbapi/"],
    "shell: MCP servers": ["mcp/"],
    "shell: vendoring": ["vendor/"],
}
KERNEL_AREAS = [area for area in AREAS if not area.startswith("shell:")]
BUDGETS = {  # code lines per area: a decision, raised or lowered on purpose in its own commit, saying why
    "loop": 1775,  # 1775: a wrong value quoted in its error by items.described (config, seams import it);
    # 1772: what a session's get_items and a model provider's get_model return checked where it is
    # taken (run.session_items, turn.get_model): a bare TypeError/AttributeError deep in the loop before;
    # 1761: issue 29: a turn of steps chosen once per run (steps.py); the runner replacement left for
    # upstream/; the session's new input carried by a step of its own (a run without a session never enters it);
    # upstream's error_handlers left for upstream/ (the kernel's answer_error seam); then upstream's RunConfig
    # callbacks (session_input_callback, call_model_input_filter, tool_error_formatter: their seams stay); the turn
    # seam a chosen step (steps.observed_turn), so a plain run never enters it
    # raised to 1420 for what a run takes from outside checked where it comes in: a plugin's change its seam cannot
    # take (seams.returned) and an agent met late, whose guardrails were skipped (run.meet)
    # raised to 1430 for a RunConfig's handoff_input_filter and model checked where it is made
    # raised to 1465 for what attacks on streamed runs and the ledger found: a cancel that swallowed a tripwire, lost
    # a racing input guardrail's trip and the run's new input, softened by a later cancel, never reaching an agent
    # tool's inner run; streams waiting forever for a closed event loop or behind the executor they wait for; a
    # custom model's stream unchecked; a finished state run again. 1469: a run's aborts
    # registered in one place, caller.abortable (an async call's and an agent tool's inner run's); 1486 for what an
    # attack on the loop's composition found: a paused agent-tool call counted twice, a racing guardrail left behind
    # by a custom model's own error, a plugin that kept the journal open, run options and a tool concurrency taken
    # as they came, an agent tool switched off while its inner run waited; 1498 for what an attack on sessions
    # found: the failure a run raises kept for its journal (a session that failed leaves its turn, as a crash), run
    # session settings read as upstream gives them, limit_turns refused for a session that cannot take it; 1499,
    # agents 950, HTTP 2036, tracing 957, upstream 1803 for what an attack on the upstream shell found: a session
    # that is none and an approval of what is no interruption were bare AttributeErrors, a key set after the first
    # run was never sent (api_key_of), a batch of traces was lost at exit, run options unchecked in the shell; 1504,
    # agents 951 (SessionStoreError beside the run's other errors), tools 995, HTTP 2047 for what second attacks on
    # today's fixes found: a session failure inside an agent tool told to the model as a tool error, a cancelled
    # stream resumed while still stopping, a removed agent tool's call uncounted, Responses items streamed with no
    # index, twice or only in part, an empty completed response taken for an answer; agents 960 for errors.file_name,
    # the one home of what a file path given to a session, a recording or a trace must be (state and the shells
    # shrink by as much); 1522 for a turn that fails after some of its calls ran: it keeps them, with their outputs,
    # in the state and the session (run.keep_what_ran), where it dropped them and the history said nothing ran;
    # 1548 (and agents 972) for what an attack on that rule found: a call that raised once started, a handoff or a
    # plugin failing at the turn's end, a cancel in an async step, an agent tool paused inside, a call a crash left
    # unsure, each still dropped; a cancel during an output guardrail that ran the tool again; an error's run_data
    # the inner run's; a tuple of output items refused; 1551 for what a second attack found: Ctrl-C or an exit
    # mid-turn closed the journal (it now leaves the turn, as a crash does), a cancel in a resumed turn's async step
    # dropped its approved call, a custom session that stored a turn and raised was asked to store it again; 1555
    # for what a third attack found: Ctrl-C during a model call wedged the session, an awaited Runner.run cancelled
    # after a call ran lost it (no one got the paused state); 1556 for the offline model named among the shells
    # (seams.SHELLS), which it became: the kernel loses its 166 code lines; 1558 (and tools 998) for an async tool a
    # cancel stopped while it ran, kept as stopped midway (Cancelled.started), where it ran again on resume; 1566 (and
    # upstream 1828) for what an attack on that found: a cancel heard by a plugin (an on_tool_end hook, a custom data
    # extractor) after the call returned ran it again; the stopped call's text taken for a final output by
    # stop_on_first_tool; a call stopped in its async input guardrail never run on resume with the ledger; a tool's
    # own cancelled task taken for the run's cancel; 1567 for what a second attack found: the stopped text still
    # taken for a final output once the paused turn resumed (the texts a cut-short call gets, turn.CUT_SHORT), and a
    # callable's own CancelledError escaping the run bare (a UserError now); 1568 for a custom model's return that is
    # no ModelResponse, refused where the turn takes it (it was a bare AttributeError); 1571 for a failed streamed
    # turn's kept outputs told to the stream's reader (it heard the calls, never their outputs); 1585 for one RunState
    # object never run twice at once (run.take, run.release: a paused state given to a second run, an awaited run that
    # was cancelled still finishing its step, ran an approved call twice); 1591 for an agent tool's own usage limits
    # counted from where its inner run starts (UsageLimits.after): counted over the whole run, an own limit below what
    # the caller had spent stopped the run for good; 1620 for what an attack on that rule found: a state left taken for
    # good (a run seam raising as it was entered, a journal that could not be closed, a streamed result never read), a
    # state a limit stopped between turns run twice at once, a failed streamed turn's outputs unheard after a cancel
    # after the turn or a failed handoff (run.held, surround, announce_kept); 1623 for run input and
    # RunState.add_input's repaired of lone surrogates where they enter; 1630 for a server-managed response whose calls
    # do not each have an id of their own refused (both ran, answered as one), and a run seam that raises as it is
    # entered leaving no cancel callbacks; 1632 a server that keeps the conversation and numbers its calls per response:
    # a call given an earlier call's id is decided anew (turn.assign_call_ids); 1634 a failed turn where the server
    # keeps the conversation answers the calls that never started (NEVER_STARTED): the server holds them; 1641 where the
    # server keeps the conversation: a transfer that failed is answered as not run, and a handoff input filter refused
    # when the run starts (one home: it was refused at the transfer, after its output joined the history the server
    # keeps); 1646 input guardrails racing the model refused with conversation_id when the run starts: a trip cannot
    # take the response the server put in the conversation out of it; 1649 for every given RunState taken; 1663 for what an attack on
    # taking states found: an awaited run cancelled before its worker thread began (a busy executor) left the state
    # taken for good, a streamed result cancelled before it was read ran later on a state another run held, and a
    # cancel for a run that had ended (a finished stream's, a late wait_for's) stopped the run holding the state next; 1669 for what a second attack on that found: a
    # stream's reader cancelled after its run ended stopped the next run (run.cancel_streamed: a stream's cancel
    # reaches the state only while its run holds it), a cancel racing a stream's first read freed the state the stream was
    # running, a late cancel decided apart from its making, an executor that refused the job left the state taken; 1672 for a streamed continue holding the state it
    # continues (it held its own, so a second run could take the journal's state while the stream ran it)
    # lowered to 1645: the usage lock's one home is context.py (steps.py imports it)
    # 1649 every given state taken by its run whatever it holds (run.given): one with no model response yet, stopped by
    # a request limit of 0 or made by hand, was run by two runs at once
    # 1677 for a RunConfig's model_settings, usage_limits and guardrail lists of the wrong kind refused where it is
    # made (5 was a bare AttributeError deep in the run; inside an agent tool, a failure the model was told)
    # 1683 for a request that starts after an immediate cancel stopped at once (caller.Aborts): cancelled while a
    # guardrail ran, the run sent it anyway, waited on the server and retried
    # lowered to 1682, its size once a session's store failing had one home in the ledger (ledger.stored)
    # lowered to 1678 when an immediate cancel's mark stopped only a request (models/http.py), not every abort
    # 1679 (+1) for RunConfig's usage_limits and model_settings dicts with a key their class lacks refused as a UserError
    # naming it and the fields (context.from_fields; a bare TypeError, for a key that is no string too)
    # 1681 for a call whose tool input guardrail saw the run cancelled kept from starting (it started anyway; an
    # async one was stopped at its first await, half done)
    # 1688 for a RunState made by hand, given with a session, reading its history and bringing its input as new
    # input (it ran without the conversation, and the session kept an answer with no question)
    # 1690 (and state 1253) for the mark a state made by a run with a session, or loaded, carries so (history_unread):
    # one with no new input stopped before its first turn read the history again over the history it held
    # lowered to 1688 when a run's input had its lone surrogates repaired in one home, RunState (run.fresh_state did too)
    # 1691 for a handoff input filter's input_items given to the next agent, checked as its other items are (they
    # were ignored: the next agent saw what the filter meant to hide)
    # 1692 for a server-managed response with no id: what it saw is the server's only when the next request names a
    # state holding it (with auto_previous_response_id the next request named none, and carried the output alone)
    # 1693 (and agents 1040) for an output whose call the server holds (a conversation, a previous response) sent,
    # not dropped as an orphan: the server refused every later request for want of it
    # 1697 for tool_use_behavior's final output the text the model was given for the tool's value (a value no text
    # shows ended the run with a bare ValueError or RuntimeError after the tool ran; content parts as their fields)
    # 1699 for add_input's items entering the transcript by its pairing rule (rebuilt, what it drops leaving the
    # items): an output for no open call was sent, and a reload dropped one, shifting the saved server_known
    # 1700 for tool_use_behavior's final output the chosen call's text (a list two tools returned was the first's)
    # 1701 for a trace_path set on a RunConfig after it was made refused in a copy without tracing, as at its making
    # (the environment variables' rule only warned, and the run wrote no trace)
    # 1702 for a plugin around a step that suppressed its error (a run 'completed' with no output, or failed later
    # with a bare KeyError): each plugin's __exit__ is pushed with what it returns ignored (seams.around)
    # 1703 for a server-managed call id no session can key (NUL, a lone surrogate) named in the server's mistake
    # 1705 for an agent tool's input guardrails run once: not again when its paused inner run goes on (two verdicts
    # for one call, and whatever a guardrail does done twice)
    # 1710 for a call id no session can key replaced by one derived from it, not a random one: repeated in one
    # response or replayed in a later turn, it ran again (every other id is dropped as a repeat or a replay)
    # 1717 for a guardrail list added to after its owner was made, checked when the run starts (a bare
    # AttributeError when the run reached a plain function in it)
    # 1724 for what an attack on streamed runs found: a custom model's stream_response returning no iterable (None,
    # a coroutine) was a bare TypeError; a streamed result's items, responses and last agent now fill as the run goes,
    # as docs/porting.md says (last_agent was None while the events were read)
    # 1725 for that check made a helper of its own (steps.model_events), which the retry shell asks too; 1728 for a
    # shell loaded again (dropped from sys.modules and imported anew) whose plugins take the place of its earlier
    # load's (each rule ran twice a run); 1730 the two branches merged (each counted from its own base)
    # (counted from 1717 on its branch) 1723 for turn.as_kept, a model's message kept as the assistant's whatever
    # role it claims (one claiming "user" or "developer" stood in a session's history as their words, sent as
    # theirs every later turn; one with no role or content null made a paused state no load read), and a token
    # count past a float's largest refused where the run takes a response; 1738 for that, merged with the above
    # 1730 when those two rules moved to where a ModelResponse is made (items.py), beside its other checks of a
    # model's answer: a plain run's path took them on every turn (the hello world read 259 lines, over its 250)
    # 1732: an awaited run cancelled between its calls, with a session that keeps no ledger, stops its turn midway
    # (turn.decide): its pause reached no one, and the calls that ran never reached the session's history
    # 1734: Ctrl-C during an async tool on Python 3.11+ (asyncio.run cancels its task) interrupts the run
    # (caller.resolve): it was taken for the tool cancelling itself, told to the model, and the run went on
    # (counted from 1730) 1734 for what a second attack on handoffs and guardrails found: a handoff input filter and a tool (or its
    # guardrail, through ToolContext.tool_call) that edited in place what they were shown rewrote the history the
    # session kept; each is now given copies; 1738 for a stream's reader (an agent tool's on_stream too) given its
    # own copy of each event's data or item: one that edited it in place changed the arguments a tool ran with; 1742 the branches merged
    # 1747 for what an attack on the text and objects a run keeps found: a handoff input filter's result and a custom
    # session's history kept a lone surrogate as given (the next request and a paused state's text failed on it), and
    # a model or a model_input plugin that tidied its input in place rewrote the history (each now gets copies)
    # 1750: a custom model's stream event nested deeper than Python copies is a ModelBehaviorError (run.hand_over);
    # the reader's copy raised a bare RecursionError out of the run; 1751: a custom session's history too deep to copy,
    # or holding itself, a UserError as it is read (run.load_session_history): it was kept as given, and an input
    # guardrail's or a handoff input filter's copy raised a bare RecursionError
    # 1757: a stream's cancel() racing the run's end no longer replaces the run's own result with its snapshot
    # (RunResultStreaming._complete: the end wins; a paused run's interruptions were lost), and a streamed run
    # keeps the context variables of where run_streamed was called (the reader's were used)
    # 1758: a lone (or one-at-a-time) sync tool call runs in a copy of the run's context, as calls in threads and
    # upstream's to_thread do (what it set leaked into the rest of the run, and run_sync's into its caller)
    # 1756: RunResultStreaming.cancel's early return for a finished result gone (cancel_streamed's guard, and the
    # run's end winning over a cancel's account of it, each already kept what it guarded)
    # 1755: the session history's copy refused through items.cannot_copy, one wording for the run's three entries
    # 1759: a handoff input filter's result the run cannot copy a UserError (items.cannot_copy), both copies taken
    # before the state changes: it was a bare RecursionError, TypeError or RuntimeError
    # 1761: the session rule a function of its own (run.check_session), which an agent tool's is checked by too
    "agents, items, guardrails": 1128,  # 1128: items.described, a repr for a message that Python can print
    # (a value nested too deep, or an int too long, named by its kind: was a bare RecursionError/ValueError);
    # 1123: issue 29: ItemHelpers, awaitable shims, upstream's names and per-request
    # usage entries left; then output_guardrail_blocked_message (its blocked_output seam stays); then RawItem (raw
    # items read by attribute: the kernel's are plain dicts); then upstream's lifecycle hooks (hooks.py, Agent.hooks:
    # a run observed through plugins, `plugins=`)
    # raised to 927 for a Handoff built by hand checked where it is made, as handoff()'s arguments are; to 932 for
    # a caller's cancel reaching an agent tool's inner run, whose state is then the call's; lowered to 928 when that
    # cancel's registration left for caller.abortable; 945 for a tool guardrail's behavior, instructions a function
    # returns and stop_at_tool_names checked, and an agent tool's own usage limits kept within its caller's; 946 for
    # ModelHTTPError.retry_headers (what the server said of retrying, for a retry policy); 970 for a custom model's
    # malformed ModelResponse (an output that is no list of item dicts, a usage that is no Usage) refused where it
    # is made, not met as an AttributeError deep in the loop; 975 for an agent tool's max_turns checked when it is made,
    # and 0 no longer taken for the default; 989 for drop_orphans keeping one call per id, a tool output list checked
    # part by part, and approvals found in a set kept beside their lists (n calls approved and resumed read every
    # decided call for each); 997 for decision lists that keep the set beside them true however they are changed
    # (context.CallIds: an approval withdrawn by editing the list in place still counted); 1000 for a loaded document's
    # decision lists made CallIds (context.call_ids_of): a resume of a loaded state looked each call up in plain lists,
    # n² again; 1007 RunContextWrapper.forget: the decisions about one call id dropped, not those about every call of
    # the tool; 1003 lowered: drop_orphans pairs each call with the first output after it, in one pass (and keeps pairs
    # that reuse an id where the server keeps the conversation)
    # 1016 for a custom model's message whose content is no list of text parts, and its usage whose token counts
    # are no whole numbers, refused where the ModelResponse is made (bare TypeErrors deep in the loop), and a
    # usage shared by agent tools running at once added to under one lock (tokens were lost)
    # 1019 for a wrapped handoff input sent bare told as a missing 'response' key (it was "expected integer, got
    # null")
    # 1028: UnfinishedTurnError also names a pause for approval after calls of its turn ran, and how to go on
    # 1027: a model's message checked for only what would fail the run where its text is read
    # (items._answer_problem), not as an input item: the first check refused servers' messages without a role,
    # with no content or with parts of their own kinds, which ran before
    # 1031: errors.file_name refuses a path holding a lone surrogate (a bare UnicodeEncodeError where it was opened)
    # 1037: context.from_fields, the retry shell's check of a settings dict's keys moved to the kernel, one home for
    # model settings, usage limits and retry settings (a key they lack, or one that is no string, was a bare TypeError)
    # 1039: a rejection message that is no text refused when given (it failed deep in an adapter when the run resumed)
    # 1045 (state 1268, upstream 1882) for an output kept as the server's only where the request names a state, and
    # only if what it was made of has no call before it (auto_previous_response_id alone sent an orphan naming no
    # state; a call_model_input_filter that took a call out sent its output as the server's)
    # 1047 for items.keyable, the one rule of what a session can key by: a call id holding NUL or a lone surrogate
    # (a server's \u0000 escape) could never be claimed, and each continue of its turn failed alike (a stuck session)
    # 1050 for a guardrail whose function is not callable, refused where it is listed (a bare "not callable" mid-run)
    # 1052 for handoff() given something other than an Agent: a UserError (a bare AttributeError reading its name)
    # 1055 for items.derived_id, the one recipe of an id made from a text (a call id no session can key, an old
    # document's run id), which left turn.py and state.py
    # 1058 for errors.needs telling a module missing from the copy (a shell's file deleted) from one the Python lacks:
    # it said "the standard-library module 'miniagents.mcp.stdio', which this Python was built without"
    # 1066 for agent tools nested at most agent.MAX_NESTING deep (an agent that is its own tool ran until a
    # RecursionError deep in the kernel was told to the model, and a run paused past ~65 levels wrote a state and a
    # session journal no load could read, wedging the session)
    # 1070 for a custom model's response_id or request_id that is no string refused in ModelResponse (a run kept it,
    # and the state it paused in was refused when loaded: the paused work lost)
    # 1071 for a model's total token count under its own input and output counts added as those (Usage.add): a total of
    # 1 for 100 output tokens, or one made negative by a negative input count, never tripped total_tokens_limit
    # 1075 for items.answer_problem, a custom model's item checked whatever marks it (an item whose type is no string
    # broke turn.classify with a bare TypeError, and a message known by its role alone reached message_text
    # unchecked), and its token counts past a float's largest refused (a paused state summing one could not load)
    # 1071: that last check moved to turn.take_response (where a run takes a response; a state's document may hold
    # a count up to 10**400, so it is no rule of every ModelResponse)
    # (fix-deep, counted from 1066) 1074 for a custom model's response_id and request_id that are no strings refused where its ModelResponse is
    # made (a state paused after such a response was written, then refused when loaded: "expected string")
    # 1078 the branches merged (the response id check written once); 1086 for turn.as_kept and the token count's
    # bound moved here, to ModelResponse (see the loop's 1730); 1087 for each input guardrail given its own copy of
    # the input (one that redacted it in place rewrote the user's words the session kept); 1096 for items.copied,
    # the copy those and the loop's copies are made with, which keeps a shell's dict type (RawItem, read by attribute)
    # 1088 for a model's message part with no type left out of what the run keeps (a state paused beside it was
    # written, then refused when loaded: the person's decision lost)
    # 1098 the two branches merged (1087 and 1096 counted from 1086 on theirs)
    # 1108 for what an attack on the text a run keeps found: a custom model's lone surrogates (in its items and ids)
    # kept in the final output, the next request and a paused state's text, now repaired where its ModelResponse is
    # made, which keeps its own copy of each item (clean_json keeps a dict's type; an item too deep to walk is kept as
    # given, refused with its path when written); an Agent named with a lone surrogate refused where it is made
    # 1109: a custom model's item too deep to copy, or holding itself, refused where its ModelResponse is made: kept as
    # given, a tool's, a stream reader's or a handoff filter's copy of it raised a bare RecursionError
    # 1113: an item the run cannot copy as it enters, for any reason (a read-only dict subclass, one whose copy
    # raises: their own bare TypeError or RuntimeError), refused in one wording for its three entries (cannot_copy)
    # 1123: an agent tool's run_config, session and callables checked where as_tool is called (each call failed,
    # told to the model as the tool's failure)
    "tools and schemas": 1128,  # 1128: a name_override that is no string refused before messages name the tool
    # by it; 1126: issue 29: hosted tools, structured tool outputs and custom tool data left for
    # upstream/; raised to 960 (and agents to 925) for guardrail lists checked where their owner is made
    # raised to 965 for a tool's is_enabled and error functions checked where it is made
    # raised to 994 for what a model sends and what a signature asks checked where they meet: a float beyond any
    # float or not finite, set items that cannot be hashed, an InitVar, a result that cannot be shown as text, JSON
    # nested deeper than Python walks; docstring sections read at their own indentation; 1026 for what an attack on
    # schemas and arguments found: a recursive union checked in time exponential in its depth, model-chosen keys
    # quoted whole, a **kw key that replaced another parameter, a default holding itself, an integer key beyond
    # Python's digits, a docstring read in quadratic time, lone surrogates in a final output, bare typing.Tuple,
    # strict mixed tuples the model could send in any order, enum arrays compared as Python compares them, a
    # hand-written strict schema's bare TypeError; 1034 a **kwargs key naming the context parameter refused where it is
    # converted, as one naming any other parameter (it was a redacted TypeError in the call); 1041 a **kwargs key naming
    # a parameter the call fills before the model's arguments (a bound method's self, a callable object's, a partial's
    # positional argument) refused as the model's mistake
    # 1044 for a non-strict output type validated as its schema was sent (keys it does not name ignored) and a
    # NamedTuple written as the object its schema describes
    # 1046 for a lone $ref in a hand-written strict schema checked where the tool is made (a remote or missing
    # one failed only at the server); 1050 for a tool timeout checked where the tool is made as a number a thread can
    # wait (a string was a bare TypeError, True one second, inf an OverflowError in every call after the tool started)
    # 1054 for a generator function refused where the tool is made (a call only made the generator: the model was told
    # its repr, and nothing ran)
    # 1056 for a coroutine an async tool returned unawaited refused as a generator is (its body never ran; the
    # model was told its repr), closed so no "never awaited" warning follows the error
    # 1065 for a keyword a functools.partial binds (an API key) left out of the schema and the call (its value was
    # sent to the model as a default, and the model's replaced it), the tool named and described by the function
    # 1078 for what strict endpoints refuse refused where the tool or output type is made, not at every request: a
    # root that is no object, an object without properties (closed silently), an array without items, no type
    # 1097 for types no value could build refused where they are made: a dataclass whose own __init__ takes not every
    # field (a bare TypeError out of the run), an enum with no members, a chain of dataclasses deeper than Python
    # recurses (a bare RecursionError); a class named with "/" or "~" defined under a JSON Pointer token (its $ref
    # named nothing); a final output that is no text a ModelBehaviorError, not a bare TypeError
    # 1121 for a keyword a partial binds behind functools.wraps (the upstream shell's function_tool) left out as a
    # bare partial's is (it was sent, and replaced by the model's), a chain of wrappers and partials bounded; a bound
    # keyword's annotation not resolved; a pydantic model's $defs name another type has changed for a free one (a
    # UserError, order-dependent), a generic model defined once; a dataclass built by Exception's __init__ refused
    # 1123 for a strict schema whose $defs are no object (an MCP server's) a UserError, not a bare AttributeError
    # 1126 for a task or future an async tool returned unawaited a UserError (the model was told "<Future pending>")
    # 1293: a settle_call output no JSON holds (a set in a part, nested too deep) a UserError, not a bare TypeError
    # or RecursionError; 1289: a write_journal entry that is no string a UserError (a dict was the driver's bare ProgrammingError, an int
    # stored as a corrupt entry that stopped every later run, None stored as NULL)
    "state and sessions": 1311,  # 1311: add_input takes a run's input through state.input_items, checked and
    # copied as a run's input is (its own check and JSON round trip gone; a list of non-dicts, an item too deep or
    # holding itself were bare errors); 1314: a run's input (or a RunState made by hand) too deep to copy, or holding
    # itself, a UserError (state.input_items): it was a bare RecursionError; 1311: two checks fix-crash's later fix made redundant gone (a continue now passes
    # over any pause claimed with no outcome, so claim_pause's early refusal and open_journal's look at a paused
    # entry's claim guarded nothing a test or a run could tell apart: their curated mutants ran into the timeout)
    # 1314: the two attacks' branches merged (each counted from 1292); state._is_id since replaced by items.keyable
    # 1305: the depth of a state written found level by level (state._deeper), the
    # loader's own walk taken only to name the path: walking every value made to_json, and each journal write, twice
    # as slow; 1297: only a string is taken for a call id the run used (state._is_id): an item
    # that is no call holding a call_id that is a list or an object (from input, a session, a model) was a bare
    # TypeError; 1295: a state holding a value nested deeper than MAX_DEPTH refused when written
    # (dump_state runs load_state's _not_json): to_string wrote a paused run from_string refused (the person's decision
    # lost), and a session's journal of it raised a bare RecursionError (3000 deep) or was one no continue could read;
    # 1303: a journal entry whose state's run id is not the entry's refused as one miniagents did not write (its
    # calls ran again, as another run's)
    # 1302: a continue passes over the pause a take-over claimed and died before it journaled (the continue claimed
    # it, raised AlreadyResumedError and emptied the journal: the run never got its answer)
    # 1300: a ledger row whose output is no text (a BLOB a hand edit wrote) a SessionStoreError naming the row (its
    # bytes became the call's output: every continue failed, on a UserError about the RunState's JSON)
    # 1295: a resume whose turn is written is refused before it claims its pause (a take-over's claim, refused as
    # "completed", was the one a continue of the turn still journaled claims: the run never got its answer)
    # 1286: a journal entry with a lone surrogate (a custom model's text) stored replaced,
    # as items are (the driver's UTF-8 refused it: the run failed); 1285: a write whose row count the driver cannot tell (PEP 249's rowcount -1) a
    # SessionStoreError (a claim read it as "claimed before": the call never ran; a once-append stored nothing);
    # 1278: a journal row edited to NULL (read as none) written over as none (every run
    # stopped with AlreadyResumedError, and write_journal(read_journal(), "") changed nothing); 1277: a worker whose own journal entry is gone stops, whoever journals now (a
    # continue took its turn over and ended, another run journaled: it went on set aside and ran the tool again);
    # 1276: a journal write over an empty journal looks its turn claim up again (a
    # take-over may have run the turn and emptied it: both asked the model, the tool ran twice), and a first resume
    # whose paused turn is written stops as completed (a take-over wrote it; it took the next turn over); 1272: a turn claim a stale worker left with no outcome taken over by the run whose
    # own entry the journal holds (a resume that took its run over stopped there), except a claim its claimant marked
    # unjournaled (set aside, no journal write stops it: both ran the turn's tool); lowered to 1252 when SessionSettings.coerce used context.from_fields (a dict with
    # a key it lacks a UserError naming it; keys of two kinds were a bare TypeError sorting them); lowered to 1255 when a version 1-2 document's decisions about inner calls were
    # dropped, not moved (a stale one ran a call no one approved); a cancelled store call marks the store failed;
    # lowered to 1262 when a state JSON cannot hold became one UserError, in dump_state
    # (to_string and the journal alike; the ledger's own catches went); 1264 (with 1240 below) for a state the journal cannot hold (a datetime in an
    # input item, inf in a custom model's item) a UserError before a call of its turn runs (it was a bare TypeError or
    # ValueError), and whatever a session's store raises in a run the store failing (ledger.stored, store_failed): a
    # write or claim refused with the driver's own error lost the turn (the tool ran, the history empty, the journal
    # closed) and a claim that failed said its call may have happened;
    # 1240 for what an attack on RunState found: a count past any a run makes loaded
    # (the next turn could not be written), loading against no Agent a bare AttributeError, a RunState made by hand
    # unchecked (content 7 sent to the model), a version 1-2 decision about an agent tool's inner call never found;
    # 1195: an immediate cancel marks the run's aborts (one added later is called at
    # once); 1193 for pop_item stopping on a table whose ids are no key (it returned one item
    # for ever, or spun holding the write lock); 1190 for table names quoted (a keyword such as "order" is a name)
    # and two table arguments naming one table refused as such (they failed as another program's table)
    # 1184: a pause a continue gives again claimed as the state returned is (a pause
    # journaled as the run paused marked so, its claim looked up, so two continues at once never both lose); 1181 (1182
    # less the context given to a continued state by loading it) for a pause for approval after calls of its turn ran kept in the session's
    # journal until its resume ends (emptied as the run paused, a process that died before the state was saved
    # started the run over: a call that ran, ran again unasked)
    # 1139 for what an attack on RunState documents found: a paused turn that disagrees with itself, its items or the
    # current agent (an approved call ran twice; another agent's tool ran unapproved), counts below 0 that loosened
    # limits, document content quoted whole, a context JSON cannot hold a bare TypeError, lone surrogates kept; 1146 for
    # a state's text capped where it comes in (RunState.from_string refuses one over MAX_TEXT before parsing it) and
    # where it is written (to_string refuses what could not be read back); 1148 for a rejection message's lone
    # surrogates repaired where it is given (RunState.reject); 1173 for what a second attack on the load checks found:
    # documents of versions 1-5 with a repeated call id, a paused response holding an item the loop skips, a provider's
    # negative usage and version 1-2 turns without the hosted items that code skipped, each refused though legitimate;
    # the context's lone surrogates repaired at dump; bytes measured as bytes; a v1 run id derived from the document as
    # given; 1174 such a state paused at the repeated id loads; 1177 a journal entry longer than a state may be
    # (state.MAX_TEXT) refused before it is parsed, saying so; 1178 a paused agent tool found by the paused turn's own
    # call; 1179 the journal cap on what a session gives only (a run's own entry is never refused), and a journal that
    # is no text refused as one not written by miniagents
    # 1180 a SQLite file the system refuses to create says what to do for the reason it gives (only a folder this
    # process may not write is told to be made writable; a full disk or a long name was told so too)
    # 1181 a state at an agent behind a hand-built Handoff says to use handoff(agent), which from_string can follow
    # 1257: a closed in-memory SQLiteSession a SessionStoreError (it became a new, empty database: no history, no
    # ledger)
    # 1260: add_items given what is no list (or tuple) of items a UserError naming it (a dict was read as its keys, None
    # a bare TypeError)
    # 1262: RunState.from_json given to_string's text says to use from_string (it said the state lacked a schema
    # version)
    "HTTP adapters": 2196,  # 2196: endpoint's own repr helper left for items.described; 2200: a server's NaN or Infinity refused as the JSON it is not, and sent never
    # (one STRICT_JSON, imported twice); a setting quoted in an error by a repr Python can print (endpoint.described:
    # one nested too deep, or an int too long, was a bare RecursionError/ValueError); 2192: that check by a table of field names made once (walking fields() cost 5 us
    # a settings object, seen as 39 k more instructions a turn of a 2-turn run); 2190: a ModelSettings field of another kind than it declares refused where the
    # settings are made (interface.FIELD_KINDS): sent one letter an entry, or failed deep in a request; 2183: a query parameter that is no string or number refused before anything is sent
    # (its repr was sent; a RecursionError nested deep); 2178 (+8): a "text" part whose text is no string, a reasoning item whose summary or
    # content is no list, and an assistant refusal that is no text (a custom model's, kept in a session), refused
    # where a Chat request is built (bare TypeErrors); issue 20: every request bounded, json_object fallback; issues 30 and 33 together: every
    # secret a request holds kept out of messages, proxy credentials, and the forms llama-server reads; lowered when
    # upstream's provider API, openai_client= and the retry advice left models/; raised to 1995 for what an attack on
    # the adapters found: JSON nested deeper than Python reads, a timeout or retry count no clock can keep, a proxy
    # URL with a stray bracket, a Content-Type holding the key; to 2005 for a secret echoed percent-encoded, and a
    # header that cannot be sent refused naming it (it was quoted in the error, and retried); to 2008 for a secret a
    # server echoes as JSON escapes in a body that does not parse (it was shown as it came); to 2011 for the
    # server's Retry-After and x-should-retry kept on the error, which runner-managed retries never heard; to 2027 for
    # what an attack on stream content found: a streamed call run twice or merged, found quadratically, a completed
    # response disagreeing with its stream or not complete, finish_reason "error" taken for an answer (2034: the
    # same fixes unpacked, their errors saying what they mean); 2083 for a Responses stream's text, refusal and
    # call arguments compared with what response.completed carries there (a server sending no .done items was
    # never compared: a tool could run with arguments nobody streamed); 2084: the place found by item_id first
    # (Ollama streams a message and the call after it at one index)
    # 2096 for an answer set aside to resend the request adding its usage to the answer returned (its tokens
    # were billed, and the run's token limits never saw them), a Retry-After date past any year a datetime holds
    # read as no delay, the backoff's exponent capped, and a Responses turn of calls or blank text no sign that
    # text.format was ignored (an empty part beside a call resent the request and threw the call away)
    # 2101 for the rule of which environment variables are secrets (is_secret_variable, beside is_credential_name),
    # moved here from the tracing shell when the recording shell took it too: one home for the rule both shells use
    # 2103 for a streamed request answered with JSON: the server's error in it, or that it ignored stream: true (it
    # was a stream cut short); the idle-connection pool that bounds open sockets took 5 lines fewer than per thread;
    # 2104 for a Python without unicodedata (no idna codec, which host names are looked up by) a MissingFeatureError
    # at a new connection (every HTTP model call was a bare LookupError); 2105 for the User-Agent's version read from
    # the package's __version__ (it said 0.1 of a package at 0.2.0); 2113 for an idle connection the server closed or
    # sent bytes on never reused (with the pool, an answer nobody asked for became another thread's answer); 2108
    # for an https URL on a Python without ssl the MissingFeatureError of errors.needs (a UserError of its own); 2110
    # for the system's own selector checking an idle connection (select.select refuses a descriptor past 1023)
    # 2112 for a request that starts after an immediate cancel stopped before it is sent (it is the one thing that
    # starts after a cancel the Aborts mark stops: a session's write or a tool starting then runs as it would)
    # lowered by 1 (2111) once ModelSettings.from_dict used context.from_fields (with 2 lines for a usage count past
    # the largest float told as such); 2128 for ModelSettings.resolve layering retry settings field by field, as
    # upstream (a run's backoff replaced the agent's retry settings whole: its max_retries and policy were lost)
    # 2131 for a Responses answer whose status is cancelled, queued, in_progress or unknown refused (its partial
    # text was taken as the final answer)
    # 2134 for a Retry-After of inf or nan read as none (a reader was told to wait "inf s"; the other header unread)
    # 2135 for a secret percent-encoded with lowercase hex (%2f) hidden as the uppercase form is (secret_values: a
    # recording and a trace kept it readable)
    # 2140 for hex of both cases mixed in one value (%2f...%2B) and JSON escapes wherever they stand (after a prefix,
    # nested) read through by one rule the trace, the recording and the adapters' messages share (percent_upper,
    # unescaped): the recording kept all three, a trace the first
    # 2151 for what an attack with a hostile server found: an error body's secrets' forms worked out once, not per
    # string (a 5 MB body of short strings took 17 s, one at the cap minutes); deltas sent to one place under many
    # item ids read its completed value once (20,000 took a minute: quadratic); a header http.client cannot send
    # (a value None: a bare TypeError) and a base URL with a space or control character (retried as a connection
    # error, the query's key in the chained InvalidURL) refused before anything is sent
    # 2153 for a byte order mark starting an event stream skipped, as the SSE standard says (the first event was lost)
    # 2157 for a base URL read two ways refused (a password of digits then an unencoded "/" is a port and a path to
    # http.client: the request went to the user name as a host, the password in its error's URL)
    # 2163 for the same rule's one home (read_two_ways) read for a proxy URL too: its password's start was the port
    # 2170 (+7) for an API key or base URL that is no text (bytes, a number) refused as a UserError where it is set or
    # the model made (a bare TypeError or AttributeError out of the run's first request; set_default_openai_key
    # took it silently)
    "shell: tracing": 1184,  # 1184: a batch processor's sizes that are no whole numbers refused when it is made
    # 1041 for what an attack on trace files found: the environment's API key, nested credential-named values
    # and Bearer tokens written to trace files (now one redaction pass, tracing/redaction.py, on every record a
    # processor writes), bare NaN in lines, the trace reader printing a file's control characters and waiting
    # forever on a FIFO, and a nested run's span counting its caller's usage
    # 1075 for what the second attack on the trace redaction found: names checked only inside configuration
    # (model settings, metadata, a custom span's data), so a code interpreter's code, a session_id or a
    # logprob's token stay; name=value only in a URL's query, so code such as key=len stays; a secret split
    # across a message's text parts or spelled by logprobs, a dataclass's or a Mapping's credentials,
    # Basic/Token/Digest values and secrets behind escaped slashes hidden
    # 1110 for the redaction's cost: the walk in Python over every value had made a traced turn 3x slower (a
    # 2-turn run 204 -> 584 µs per turn, 200 turns 320 -> 1572); a list whose JSON text (json's C encoder) shows
    # nothing to hide is read back as it is, and the environment is read once per trace, not for each record
    # 1115 for passwords traces still held: variables the adapters' rule does not call credentials (PGPASSWORD,
    # DB_PASS, GITHUB_PAT) and the password of a URL (a DATABASE_URL a tool echoes)
    # 1119 for what an attack on those changes found: a token a tool exports during a run reached the trace (the
    # environment is read for each record again, its names sorted out only when they change), variables naming
    # where a secret is (PGPASSFILE, SSH_ASKPASS, *_DIR) hid paths, a secret outside the BMP in json.dumps's escapes
    # 1114 when that rule of secret variables moved to models/protocol.py, which the recording shell uses too
    # 1125 for a span whose data no JSON holds (a number of 5,000 digits, a str() that raises, nesting past the
    # limit): its line was lost, and the tree showed it unfinished; it is written with its ids and an error
    # 1126 for a URL's password in JSON text that escapes its slashes (mysql:\/\/root:pw@db, as PHP writes JSON)
    # 1127 for the URL password's regex in two lines, now that a comment must say why it is so: linear (a scheme
    # starts no run of scheme characters: \b inside `a-a-a-...` made it quadratic), a user holding @, an authority
    # ending at / ? # (a query's `10:00&ann@x` was cut as a password)
    # 1137 for a run without task spans (include_task_and_turn_spans False) joining its caller's trace: its spans
    # took the caller's sensitive-data rule and processors (tool arguments traced against the run's rule, its own
    # trace_path written nothing and left open); the caller's span or trace is joined as a copy carrying the run's
    # own processors and rule
    # 1148 for a run's model key hidden only while among the 64 most recently remembered (process-wide): 64 other
    # keyed runs during one run's tool call let its key into its trace; each run now holds its secrets until it ends
    # (an agent tool's inner run until its caller does), and only ended runs' are dropped, oldest first
    # 1151 for a credential the model sends in a default header (a gateway's X-Api-Key) hidden as its API key is (only
    # the transport's secrets were taken: a tool echoing the header's value wrote it to the trace)
    # 1164 (from 1149, its size once the agent span's tools came from the turn's offer) for a line a full disk cut
    # short ended before the next record, by the same processor or the next run's, which reads the file's last byte
    # (the next record was glued onto the half line, and the reader skipped both)
    # 1169 for a secret percent-encoded with hex of both cases in one value (%2f...%2B) searched for as such
    # 1168 for an inner run that outlives its caller (in a tool's thread a timeout left running): it kept its key in
    # the ended caller's list, held forever; each run now has its own list, handed to its caller only while that runs
    # 1175 for the trace reader's output on a terminal whose encoding lacks a file's characters (a traceback, now shown
    # escaped) or read by a reader that leaves early (`| head`: a BrokenPipeError traceback, twice)
    # 1176 for the trace reader's indent capped (a file's chain of spans each inside the last printed its n-th line
    # n levels deep: 600 MB of output and 2.8 GB of memory from a file of 4.5 MB)
    # 1177 for the trace reader's top-level span ids gathered once (rebuilt for each span: 20,000 top-level spans, a
    # file of 4.5 MB, took a minute; a file of 256 MiB, days)
    # 1181 for model settings nested past what the trace's redaction walks shown as an error (a bare RecursionError
    # out of a traced run that untraced succeeded)
    # 344 for a RetryingModel deep-copied as the model it is, shared (it was its wrapped model: no retries left)
    "shell: retries": 346,  # 346: items.described imported
    # 332 for each retry counted as a request and checked against the run's usage limits before it is sent
    # (request_limit=1 allowed four model calls)
    # 346 for retry settings given as dicts checked (a key they lack, a jitter that is no bool) and a model's retry
    # advice of the wrong kind a UserError naming it, an async one awaited (each was a bare error mid-run)
    # lowered to 340 when the check of a settings dict's keys moved to the kernel (context.from_fields)
    # 342 for a RetryingModel (which a plugin's model_call sees) copied: copy.copy was a bare RecursionError
    # 345 for a custom model's stream_response that returns no iterable, told by the kernel's UserError
    # (steps.model_events): the shell iterated it itself, a bare TypeError
    "shell: capabilities and Workspace": 820,  # issue 30: the regex child ends itself and bounds its reads; names escaped
    # lowered to 740, its size: the room left since it was made is not a decision anyone took; 743 for an agent met
    # during a run (a hand-built Handoff's) whose capabilities were left out of its turns; 795 for what an attack on
    # the Workspace found: a search's work uncounted (entries passed over, whole huge folders read), a path's names
    # walked and folders held open unbounded, long lines and unreadable folders failing a search, a backslash taken
    # for '/', a read-only file replaced, a named file search skips answered "No matches"; lowered to 779, what the
    # fixes took; 830 for what a second attack found: search showing paths read_file refuses, a working link listed
    # as broken, a refused write leaving folders, a false line cut, a backslash shown as an escape's, folders of mode
    # 0711 not gone through; lowered to 820, what the fixes took
    "shell: upstream compatibility": 1995,  # issue 29: upstream's runner, classes, tool outputs and hosted tools moved
    # here from the kernel, beside the zero-edit runner and the helpers its programs import; issue 33:
    # MultiProviderMap, set_default_openai_client and MCPToolChoice too; then OpenAIProvider, MultiProvider,
    # set_default_openai_key/_api and the adapters' openai_client= (providers.py), moved out of models/; per-request
    # usage entries, error_handlers, stored prompts, custom tool data and the hosted tools' base; upstream's RunConfig
    # callbacks (run_callbacks.py: +109, their classes and the checks of what each returns); RawItem (+56 in all,
    # raw_items.py: the class, and what makes a model's items, its stream events and a loaded RunState's items
    # readable by attribute); upstream's lifecycle hooks (hooks.py from the kernel, Agent.hooks and hooks= made a
    # per-run plugin: +83); +3 for a turn continued from a session's journal, made readable when the run starts;
    # 1825 for an upstream keyword of a left-out feature (RunConfig(nest_handoff_history=...)) refused, named, as
    # names and paths are (NotProvidedTypeError, LEFT_OUT_KEYWORDS); 1830 for a custom model's return that is no
    # ModelResponse left for the kernel to refuse (the readable model read its output first: an AttributeError); 1832
    # for upstream's omitted reasoning ids leaving a return that is no ModelResponse to the kernel's UserError
    # 1837 for an error handler's final output that JSON cannot write refused naming it (it was a bare
    # TypeError); 1839 for the hooks of an agent met during a run (a hand-built Handoff's), which never fired; 1847
    # for a context, conversation id or previous response id given beside a RunState replacing the state's, as
    # upstream resumes (they were ignored: a state loaded without its context ran its tools with None); 1848 for the
    # hooks of the agent a resumed state is at, found from that agent (they never fired when the starting agent given
    # did not reach it); 1864 for what is given beside a RunState written only by the run that took it (GivenBeside,
    # at prepare_run: two runs started at once both passed the check before either took the state), its steps chosen
    # again for a conversation id given, and the state left as it was when that is refused; 1868 for the context
    # given reaching an agent tool's paused inner run (its approved tool ran with the previous user's context); 1880
    # (+8, +4) for the kernel's
    # MissingFeatureError re-raised for a name or path of a shell a copy left out (`from agents import trace` was a
    # bare ImportError, `agents.tracing` "miniagents has no 'tracing'", hasattr(agents, "turn_span") raised); 1876
    # for a copy named under `agents` refused by the alias with a UserError (the runner recursed forever)
    # 1881 for ItemHelpers.tool_call_output_item giving what the model reads for a tool's value (a dict kept as it
    # came made an item every run refused as input); 1884 for the awaited model a plugin sees made copyable (copy.copy
    # was a bare RecursionError); 1893 for a custom model's stream the shell's wrappers (ReadableModel, and
    # WithoutReasoningIds) iterated and read before the kernel checked it: a bare TypeError or AttributeError; then
    # 81 more (1974), each figure below counted from 1884, for what an attack on the shell found: 1888 for a
    # stream's malformed event under reasoning_item_id_policy="omit" left to the kernel's ModelBehaviorError (the policy's rewrite raised a bare KeyError or AttributeError); 1904 for the
    # runner's -m saying a module that is not there in one line, as Python does (runpy's traceback came out); 1906
    # for a .pyc program run as Python runs it (the runner compiled its bytecode as source: a SyntaxError); 1919 for
    # ItemHelpers answering "" or None for an item that is no message, a part that is no object or a text of None,
    # as upstream's do, and a UserError for what is no call item or input (bare AttributeErrors and TypeErrors);
    # 1934 for the hooks' defaults returning an already-done awaitable, one return line each, so an async override
    # may `await super().on_...()` as upstream's may (None: a bare TypeError out of the run); 1936 for the runner's
    # program reading `__builtins__` as the builtins module, as in Python's `__main__` (exec alone gave a dict);
    # 1939 for the children's folder removed by the program's own process only (a forked child's exit removed it);
    # 1942 for the shell's plugins made once by their modules (importlib.reload registered new ones beside them);
    # 1946 for Runner handing the default agent runner every option by keyword, defaults too, as upstream's does;
    # 1953 for an Agent subclass overriding get_system_prompt, get_all_tools or get_prompt refused when defined (a
    # run never calls them: the model silently got the fields' instructions, tools or prompt); 1954 for the demo
    # loop's runs made by the shell's runner (the kernel's fired no AgentHooks and routed no model-name prefix);
    # 1961 for a hosted tool's tool_config that is no dict refused where the tool is made (a bare TypeError when a
    # request was built); 1963 for the runner's `-m agents[.<path>]` said to have no code to run (runpy's bare
    # AttributeError: the alias's loader has no get_code); 1965 for a custom_data_extractor that cannot be called
    # refused where the tool is made (a bare TypeError once its first call had run); 1977 for a tool_error_formatter
    # that raises or returns no text leaving the default message, logged, as upstream's does (it stopped the run);
    # 1993 for the runner's `-c CODE` and `-` (stdin) run as Python runs them (refused as "no such program"); 1995
    # for the program compiled without the runner's own `from __future__ import annotations` (its annotations were
    # strings: a tool's parameter of a type local to a function could not be resolved)
    "shell: recording and replay": 791,  # issue 30: secrets cut across deltas, one recorder per file, files checked at load
    # 728 for what an attack found: a stream with no response.completed, or an answer a replay refuses, written
    # as a line that made the whole file unreadable; a failed write leaving a torn line later calls were glued
    # onto; values hidden by name in the settings written by value elsewhere, a secret split across logprob
    # tokens, redact= missing keys and escaped JSON; a line size cap; wrap() of a name refused
    # 730 for a write an interrupt (Ctrl-C) stops part-way cut back as a full disk's is (the torn line made the
    # recording unreadable); 728, its size, when a URL's password is cut out as a secret is and every record is
    # searched (the searches no longer stop early when no secret is known)
    # 741 for what an attack on the URL passwords found: the password a URL reveals (also percent-encoded or behind
    # JSON's \/) made a secret of the whole call, searched by value as the others are (url_passwords: the model
    # repeated it in a tool call's arguments, the next request's input), and its regex linear (+2: a comment says why)
    # 742 for the most URL passwords of a call searched for by value (a page of thousands made each call quadratic)
    # 746 for a number past the largest float (1e400, read as inf) refused at load, as NaN and Infinity are
    # 772 for what an attack on the recording shell found: a replay redacting the recorded request and the run's
    # alike (URL passwords, an older recording's credential) and no mismatch message showing what the recording hid;
    # secrets searched with JSON-escaped slashes (\/, nested); parts' done events cut across; the hook's changed
    # texts losing their logprobs; an existing file made owner-only; objects and arrays weighed against the size cap
    # 773 for secrets behind JSON escapes where no one JSON parse decodes them (after a prefix, 3-4 levels deep: a
    # fixed list of escaped slashes) and hex of both cases in one value, read as the trace's redaction reads them
    # 782 for the redact= hook seeing a message's text parts joined and an item's streamed parts joined, as the docs
    # said (a name cut across two parts was written as it came)
    # 786 for a call nested hundreds of levels deep refused with its RecordingError before redaction walks it (the
    # recursive walk was a bare RecursionError on a run that works unrecorded)
    # 789 for a replayed request nested past what a recording holds refused with a RecordingError before redaction
    # walks it (a bare RecursionError)
    # 791 for a number hidden by its credential name searched for by value too, as the docs say of every value so
    # hidden (`extra_body={"password": 918273645512}` was written where the model repeated it)
    "shell: offline model": 193,  # issue 29: ScriptedModel left the kernel; a run with a real model never loads it
    # 171 a scripted step checked by ModelResponse's own rules when it is added, and a call given no arguments replayed
    # as an empty delta
    # 175 for a stream_events function's result that holds no events (None: a forgotten return) an InvalidModelStep,
    # not a bare TypeError out of the streamed run; 176 for that check in one home the upstream shell's model uses too
    # 193 for what an attack on it found: a responder's bad result naming the call it answered (it said step #1), steps
    # copied as the run copies a model's items (deepcopy: a bare TypeError for a lock, RecursionError 3000 deep), steps
    # that are no list refused whole, a responder given a copy of the request (its edits reached the run's items)
    # 209 for an async driver's open connection (psycopg's AsyncConnection: cursor() too, its statements coroutines
    # never run) refused with a UserError, its close() coroutine closed; 206 for a connection whose rows are objects (psycopg's class_row) a UserError, not a bare TypeError
    "shell: DB-API sessions": 209,  # the PostgreSQL dialect, its SQLSTATE retries and paged reads left the kernel for it;
    # raised to 185 for a thread-bound sqlite3 connection and a paramstyle the driver refuses, each said; 187 for
    # PostgreSQL's quoted table names, in lower case (the table the unquoted name was folded to); 189 for the
    # session's own SessionStoreError raised as it is (its text was read as the driver's error, and retried); 191
    # for a sqlite3 database locked past every retry said so, as SQLiteSession says it; 198 for a factory that
    # returns no connection (None, a cursor, an async driver's coroutine) a UserError saying so, not AttributeError;
    # 205 for a connection whose rows are mappings (dict_row), or its text bytes, refused when the session is made
    # (the history read empty, every row taken for its column names, and a claim was a bare KeyError)
    "shell: MCP servers": 1230,  # issue 32: MCP over stdio in the standard library
    # lowered to 1087, its size, for the same reason; 1082 when every drive holds the servers it connects (a
    # server of an agent met during a run was never ended); 1103 for what an attack on the shell found: env values
    # shown JSON- or repr-escaped, a timeout or cancel waiting for the reader's write (the write lock's wait
    # bounded), a listing's size in all its pages, failure_error_function never called, an error code shown whole
    # 1129 for what a second attack found: a cancel not waking a call writing its request or waiting to (the write
    # lock's wait and the write look at the cancel), env values shown as Go, Jackson or JSON-in-JSON escape them or
    # as repr() shows their bytes (secret_forms), and a preview that searched 16 MiB to show 200 characters; 1141 for
    # what a third attack found: the kept stderr's cut front showing part of a secret, and the listing command's
    # traceback on a terminal whose encoding lacks a character the server sent; 1152 for two env values that overlap
    # in a text hidden as one (replaced one after the other, part of the second showed); 1154 for a request that
    # would begin after the run's immediate cancel (its handshake or listing) never sent nor waited for; 1156 for a
    # forked child's interpreter exit no longer ending the servers its parent still uses (atexit ran in both); 1230
    # for what a server started outside its process group (a daemon's setsid) ended with it: found in /proc as its
    # descendant or by a mark in its environment, stopped before it is killed, signalled by pidfd (mcp/processes.py)
    "shell: vendoring": 480,  # issue 31: `python -m miniagents.vendor`; raised to 412 when an attack found tracebacks
    # for what could not be written, a symlinked copy and a damaged VENDORED.json (read in one checked place now);
    # 426 for a model of the check's own (the offline model became a shell a copy may leave out); 441 for --as names
    # refused: one in a package of the standard library (sys.stdlib_module_names, on 3.9 its folders), and one under
    # `agents` with the upstream shell kept (the check passed; the copy shadowed `http`, or the runner recursed)
    # 449: --replace moves the earlier copy aside until the new one is written whole (it was removed first: a disk
    # that filled up mid-copy left a half copy that the next --replace refused, and no earlier copy)
    # 453: a Python without select copies and says why it cannot check the copy (it was a traceback, nothing copied)
    # 480: a copy appears whole or not at all, written beside its place and renamed into place (a zip, VENDORED.json
    # too), an earlier copy kept in place until then: a command killed midway left a half copy --replace refused
}

MARKERS = {
    "reading order": ("<!-- reading order: generated by tests/readme_tables.py -->",
                      "<!-- end of reading order -->"),
    "lines per area": ("<!-- lines per area: generated by tests/readme_tables.py -->",
                       "<!-- end of lines per area -->"),
}


class StaleTable(Exception):
    """The source no longer has what this file names: say what to edit."""


def modules() -> list:
    return sorted(p.relative_to(PACKAGE).as_posix() for p in PACKAGE.rglob("*.py"))


def definition(module: str, name: str) -> ast.AST:
    """The `def` or `class` called `name` ("Class.method" for a method) at the top of `module`."""
    path = PACKAGE / module
    if not path.exists():
        raise StaleTable(f"READING_ORDER names miniagents/{module}, which no longer exists: edit tests/readme_tables.py")
    body = ast.parse(path.read_text(encoding="utf-8")).body
    node = None
    for part in name.split("."):
        node = next((n for n in body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                     and n.name == part), None)
        if node is None:
            raise StaleTable(f"READING_ORDER names {name} in miniagents/{module}, which is not there any more: "
                             "edit tests/readme_tables.py")
        body = node.body
    return node


def line_range(node: ast.AST) -> tuple:
    first = min([d.lineno for d in getattr(node, "decorator_list", [])] + [node.lineno])
    return first, node.end_lineno


def reading_order() -> str:
    rows = ["| # | read | in | why |", "|---|---|---|---|"]
    for number, (module, name, why) in enumerate(READING_ORDER, 1):
        first, last = line_range(definition(module, name))
        rows.append(f"| {number} | `{name}` | `miniagents/{module}:{first}-{last}` | {why} |")
    return "\n".join(rows)


def counts(path: Path) -> tuple:
    """(lines, code lines): code lines are neither blank, nor comments, nor docstrings."""
    text = path.read_text(encoding="utf-8")
    docstrings = set()
    for node in ast.walk(ast.parse(text)):
        body = getattr(node, "body", None)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and body:
            first = body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) \
                    and isinstance(first.value.value, str):
                docstrings.update(range(first.lineno, first.end_lineno + 1))
    lines = text.splitlines()
    code = sum(1 for n, line in enumerate(lines, 1)
               if line.strip() and not line.strip().startswith("#") and n not in docstrings)
    return len(lines), code


def expand(members: list) -> list:
    """Module paths, a "folder/" entry standing for every module in it."""
    return [found for m in members for found in ([x for x in modules() if x.startswith(m)] if m.endswith("/") else [m])]


def area_sizes() -> dict:
    """area -> (modules, lines, code lines); every module must have exactly one area."""
    placed = [m for members in AREAS.values() for m in expand(members)]
    missing, gone = sorted(set(modules()) - set(placed)), sorted(set(placed) - set(modules()))
    twice = sorted({m for m in placed if placed.count(m) > 1})
    if missing or gone or twice:
        raise StaleTable(f"AREAS in tests/readme_tables.py is out of date: give these modules an area: {missing}; "
                         f"remove these (gone): {gone}; these are in two areas: {twice}")
    sizes = {}
    for area, members in AREAS.items():
        per_module = [counts(PACKAGE / m) for m in expand(members)]
        sizes[area] = (members, sum(c[0] for c in per_module), sum(c[1] for c in per_module))
    return sizes


def lines_per_area() -> str:
    rows = ["| area | modules | lines | code lines | budget |", "|---|---|---:|---:|---:|"]
    sizes = area_sizes()
    for area, (members, lines, code) in sizes.items():
        rows.append(f"| {area} | {', '.join(m if m.endswith('/') else m[:-3] for m in members)} | {lines:,} | {code:,} | {BUDGETS[area]:,} |")
        if area == KERNEL_AREAS[-1]:
            kernel = [sizes[a] for a in KERNEL_AREAS]
            rows.append(f"| **the kernel** | {sum(len(expand(sizes[a][0])) for a in KERNEL_AREAS)} modules | "
                        f"{sum(s[1] for s in kernel):,} | {sum(s[2] for s in kernel):,} | "
                        f"{sum(BUDGETS[a] for a in KERNEL_AREAS):,} |")
    total_lines, total_code = sum(s[1] for s in sizes.values()), sum(s[2] for s in sizes.values())
    rows.append(f"| **all of miniagents/** | {len(modules())} modules | {total_lines:,} | {total_code:,} | "
                f"{sum(BUDGETS.values()):,} |")
    return "\n".join(rows)


def over_budget() -> list:
    """Areas whose code lines exceed their budget, as sentences."""
    return [f"{area}: {code} code lines, budget {BUDGETS[area]}" for area, (_, _, code) in area_sizes().items()
            if code > BUDGETS[area]]


def tables() -> dict:
    return {"reading order": reading_order(), "lines per area": lines_per_area()}


def rewrite(readme: str) -> str:
    """`readme` with each table replaced by its generated text (the markers must be there, once each)."""
    for name, table in tables().items():
        start, end = MARKERS[name]
        if readme.count(start) != 1 or readme.count(end) != 1 or readme.index(start) > readme.index(end):
            raise StaleTable(f"README.md must hold the {name} markers once each, in order: {start} ... {end}")
        before, rest = readme.split(start, 1)
        readme = before + start + "\n" + table + "\n" + end + rest.split(end, 1)[1]
    return readme


def main(argv: list) -> int:
    try:
        if argv == ["--write"]:
            README.write_text(rewrite(README.read_text(encoding="utf-8")), encoding="utf-8")
            print(f"rewrote the reading order and the lines per area in {README}")
        elif not argv:
            for name, table in tables().items():
                print(f"{name}:\n{table}\n")
        else:
            print("usage: python tests/readme_tables.py [--write]", file=sys.stderr)
            return 2
    except StaleTable as problem:
        print(f"readme_tables: {problem}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
