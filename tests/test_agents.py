"""LM agents: the scripted agent's known mistakes audited exactly, the optimal reference on every
arithmetic family, the HTTP agent against an in-process stub server, and the CLI's files."""

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from jaxcredit.agents import ChatCompletionsAgent, OptimalAgent, ScriptedAgent, play
from jaxcredit.analysis.lm_audit import audit_transcripts, credit_labels
from jaxcredit.cli import main
from jaxcredit.envs import FAMILIES, make, problem_set
from jaxcredit.envs.transcripts import read_transcripts

# One environment for every test here (one compile of each solver): numbers up to 99 hold every family's problems.
ENV = make("arithmetic", max_number=99)
COMBINES = ["<ACT>COMBINE 2 + 3 = 5</ACT>", "<ACT>COMBINE 4 + 5 = 9</ACT>", "<ACT>COMBINE 5 + 9 = 14</ACT>"]
# A: an illegal COMBINE (wrong result), a needless UNDO, a misformatted FINAL on the last turn: fails.
SCRIPT_A = ["<ACT>COMBINE 2 + 3 = 6</ACT>", *COMBINES, "<ACT>UNDO</ACT>", COMBINES[2], "<ACT>FINAL 14</ACT>"]
# B: a misformatted FINAL with turns to spare, then the right one: succeeds.
SCRIPT_B = [*COMBINES, "<ACT>FINAL 14</ACT>", "<FINAL>14</FINAL>"]


@pytest.fixture(scope="module")
def scripted_audit():
    problem = ENV.make_problem([2, 3, 4, 5], 14)
    transcripts = play(ENV, ScriptedAgent(SCRIPT_A + SCRIPT_B), [problem, problem], agent_name="scripted")
    return transcripts, audit_transcripts(transcripts)


def test_scripted_mistakes_get_the_expected_categories_and_classes(scripted_audit):
    transcripts, audit = scripted_audit
    assert [t["outcome"]["status"] for t in transcripts] == ["out of turns", "solved"]
    a = [r for r in audit["turns"] if r["transcript"] == "p0"]
    b = [r for r in audit["turns"] if r["transcript"] == "p1"]
    assert [r["category"] for r in a] == ["illegal", None, None, None, None, None, "misformatted"]
    assert [r["category"] for r in b] == [None, None, None, "misformatted", None]
    assert a[0]["intended"] == "COMBINE 0 + 1" and a[6]["intended"] == b[3]["intended"] == "FINAL 3"
    assert [r["type"] for r in a] == ["invalid", "COMBINE", "COMBINE", "COMBINE", "UNDO", "COMBINE", "invalid"]
    # Optimal reference (V* = 1 while the turns left suffice): only the last wasted turn of A is harmful.
    assert [r["class_optimal"] for r in a] == ["decorative"] * 6 + ["harmful"]
    assert [r["class_optimal"] for r in b] == ["decorative"] * 5
    assert a[6]["gap_optimal"] == 1.0 and all(r["gap_optimal"] == 0.0 for r in a[:6] + b)
    # Uniform reference, hand-computed: 14 alone with t turns left has V(1) = 1/2 (FINAL or UNDO),
    # V(2) = 1/2, V(3) = 1/2 + 1/2 V({5, 9}, 2) = 9/16 with V({5, 9}, 2) = (1/2 + 1/2) / 8 = 1/8
    # (8 legal moves, two of them make 14), V(4) = 1/2 + 1/2 V({5, 9}, 3) = 37/64, V({5, 9}, 3) = 5/32.
    assert [x for r in a[4:] for x in (r["v_uniform"], r["advantage_uniform"])] == pytest.approx(
        [9 / 16, 1 / 8 - 9 / 16, 1 / 8, 1 / 2 - 1 / 8, 1 / 2, -1 / 2], abs=1e-6)
    assert (b[3]["v_uniform"], b[3]["advantage_uniform"]) == pytest.approx((37 / 64, -1 / 64), abs=1e-6)
    assert [r["class_uniform"] for r in a[4:]] == ["harmful", "load-bearing", "harmful"]
    assert [r["class_uniform"] for r in b[3:]] == ["harmful-but-recovered", "load-bearing"]
    s = audit["summary"]
    assert s["success_rate"] == 0.5 and s["repairs"] == {"type": "UNDO", "count": 1, "transcripts_using": 1,
                                                         "share_of_turns": 1 / 12}
    assert {c: s["invalid"][c]["count"] for c in s["invalid"]} == {"unparseable": 0, "misformatted": 2, "illegal": 1}
    # answers: intended FINALs at a7, b3 and the accepted b4, all with 14 alone; the UNDO turn a4 also had it
    assert s["answers"]["reached"]["turns"] == 4 and s["answers"]["reached"]["answer_chosen"] == 3
    assert s["answers"]["not reached"]["answer_chosen"] == 0


def test_credit_labels_export(scripted_audit):
    transcripts, audit = scripted_audit
    rows = credit_labels(audit)
    assert len(rows) == 12 and rows[0]["prompt"] == transcripts[0]["turns"][0]["prompt"]
    assert rows[0]["reply"] == SCRIPT_A[0] and rows[0]["outcome"] == 0.0 and rows[-1]["outcome"] == 1.0
    assert rows[-1]["advantage_uniform"] == pytest.approx(7 / 16, abs=1e-6)
    assert rows[-1]["class_optimal"] == "decorative"


def test_optimal_agent_solves_every_family_through_text():
    for family in FAMILIES:
        transcripts = play(ENV, OptimalAgent(), problem_set(family, 3, seed=11))
        assert all(t["outcome"]["success"] for t in transcripts), family
        # the quickest optimal path: C - 1 combinations then FINAL, never a refusal
        assert all(len(t["turns"]) == ENV.count and not any(x["refusal"] for x in t["turns"]) for t in transcripts)


class _Stub(BaseHTTPRequestHandler):
    modes: list = []
    seen: list = []

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        _Stub.seen.append((body, self.headers.get("Authorization")))
        mode = _Stub.modes.pop(0) if _Stub.modes else ("ok", "<ACT>UNDO</ACT>")
        if mode[0] == "slow":
            time.sleep(0.6)
        if mode[0] == "503":
            self.send_response(503)
            self.end_headers()
            return
        payload = b"<html>oops</html>" if mode[0] == "malformed" else json.dumps(
            {"choices": [{"message": {"role": "assistant", "content": mode[1] if len(mode) > 1 else ""}}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def stub():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Stub)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()


def test_http_agent_plays_retries_and_keeps_what_was_played_on_errors(stub, monkeypatch):
    monkeypatch.setenv("JAXCREDIT_TEST_KEY", "secret")
    agent = ChatCompletionsAgent(stub, "stub-model", api_key_env="JAXCREDIT_TEST_KEY", timeout=0.3, retries=1,
                                 backoff=0.0)
    problem = ENV.make_problem([2, 3, 4, 5], 14)
    _Stub.modes[:] = [("503",), ("ok", COMBINES[0]), ("ok", COMBINES[1]), ("ok", COMBINES[2]),
                      ("ok", "<FINAL>14</FINAL>"), ("ok", COMBINES[0]), ("slow",), ("slow",)]
    _Stub.seen.clear()
    transcripts = play(ENV, agent, [problem, problem, problem], agent_name="http:stub-model")
    assert transcripts[0]["outcome"]["status"] == "solved" and agent.calls == 8  # one 503 retried, one timeout retried
    assert _Stub.seen[0][0]["model"] == "stub-model" and _Stub.seen[0][1] == "Bearer secret"
    assert _Stub.seen[0][0]["messages"][-1]["content"] == transcripts[0]["turns"][0]["prompt"]
    second = transcripts[1]
    assert len(transcripts) == 2 and second["outcome"]["status"] == "error"
    assert "timed out after 0.3 s" in second["error"]
    assert [t["reply"] for t in second["turns"]] == [COMBINES[0], None]  # the played turn is kept
    _Stub.modes[:] = [("malformed",)]
    failed = play(ENV, agent, [problem])[0]
    assert "malformed response" in failed["error"] and failed["turns"][0]["reply"] is None


def test_cli_agent_play_and_audit_transcripts(stub, tmp_path, capsys):
    _Stub.modes[:] = [("ok", COMBINES[0]), ("malformed",)]
    out = tmp_path / "play"
    code = main(["agent", "play", "--agent", "http", "--base-url", stub, "--model", "m", "--problems", "2",
                 "--retries", "0", "--out", str(out), "--no-progress"])
    assert code == 2 and "the agent failed: malformed response" in capsys.readouterr().err
    kept = read_transcripts(str(out / "transcripts.jsonl"))
    assert len(kept) == 1 and kept[0]["turns"][0]["reply"] == COMBINES[0]
    # an external tool's minimal transcript: env, problem, replies
    minimal = tmp_path / "minimal.jsonl"
    minimal.write_text(json.dumps({"env": "arithmetic", "env_config": {"max_number": 99},
                                   "problem": {"numbers": [2, 3, 4, 5], "target": 14},
                                   "turns": [{"reply": r} for r in SCRIPT_B]}) + "\n")
    assert main(["audit", "transcripts", str(minimal), "--out", str(tmp_path / "audit"), "--no-progress",
                 "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["summary"]["success_rate"] == 1.0 and printed["summary"]["invalid"]["misformatted"]["count"] == 1
    for name in ("audit.json", "turns.jsonl", "credit_labels.jsonl", "card.md", "report.md", "plots/gap-by-turn.png"):
        assert (tmp_path / "audit" / name).exists(), name
    assert main(["audit", "transcripts", "--out", str(tmp_path / "x")]) == 2
